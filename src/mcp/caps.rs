//! `--caps`: which optional tool families the MCP server offers. Below the server (`mod.rs`,
//! whose options hold it) and the browser tools (`browser.rs`, which read it), so neither uses
//! the other for it. Parses only; never names an unknown item's text back.

/// Which optional tool families are on (`--caps tabs,files,vision`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Caps {
    /// Tab tools (list, open, select, close).
    pub tabs: bool,
    /// File upload and download (inside the workspace).
    pub files: bool,
    /// Screenshots as images for the model.
    pub vision: bool,
}

impl Caps {
    /// Parses `tabs,files,vision` (any subset; empty for none).
    pub fn parse(list: &str) -> Result<Caps, String> {
        let mut caps = Caps::default();
        for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            match item {
                "tabs" => caps.tabs = true,
                "files" => caps.files = true,
                "vision" => caps.vision = true,
                _ => {
                    return Err("--caps takes a comma-separated list of tabs, files, vision".into())
                }
            }
        }
        Ok(caps)
    }
}
