//! Subcommands of the `jevgate` binary: one file per command family, thin over the library.

pub mod browser;
pub mod config;
pub mod device;
pub mod evaluate;
pub mod grammar;
pub mod jev;

use std::io::Read;

/// A usage error: printed with the help text, exit code 2.
pub struct Usage(pub String);

/// Reads a file, or stdin for `-`, bounded to the configuration size limit (+1 to detect excess).
pub fn read_input(source: &str) -> Result<Vec<u8>, Usage> {
    let limit = jevgate::config::MAX_CONFIG_BYTES as u64 + 1;
    let mut buf = Vec::new();
    let result = if source == "-" {
        std::io::stdin().take(limit).read_to_end(&mut buf)
    } else {
        std::fs::File::open(source).and_then(|f| f.take(limit).read_to_end(&mut buf))
    };
    result.map_err(|e| {
        Usage(format!(
            "cannot read {}: {}",
            source.escape_debug(),
            e.kind()
        ))
    })?;
    Ok(buf)
}

pub fn error_line(err: &jevgate::Error) -> String {
    serde_json::json!({
        "code": err.code(),
        "path": err.path(),
        "message": err.to_string(),
    })
    .to_string()
}
