//! What the `jevgate` command's families share: the default task configuration, a private
//! temporary data directory, and the one-line JSON form of an error. Below both `cli/` (the
//! subcommands) and `mcp/` (the MCP server), so neither uses the other for them
//! (tests/layers.rs). Holds no command of its own; never prints.

/// The configuration `task run` and `jevgate mcp` use without `--config`: the local evaluator
/// (no network, no key), as the quickstart's, with browser tasks and step lists on
/// (`features.browserTasks`, `features.browserSteps`: both off by default, and a task refuses
/// to start without the first — `ORCHESTRATION_DISABLED`).
pub const DEFAULT_CONFIG: &str = r#"{"gateway":{"jev":{"enabled":true,"provider":"local","features":{"browserTasks":{"enabled":true},"browserSteps":{"enabled":true}}}}}"#;

/// A fresh private (0700) directory `<temp>/<prefix>-p<pid>-t<start>-<random>` for a command's
/// data, removed by the command when it ends; the ones left by killed processes of this user
/// are swept first (issue 20 item 4).
pub fn temp_data_dir(prefix: &str) -> jevgate::Result<std::path::PathBuf> {
    jevgate::unstable::private_temp_dir(prefix)
}

/// An error as one JSON line: its stable code, its JSON path (configuration errors) and message.
pub fn error_line(err: &jevgate::Error) -> String {
    serde_json::json!({
        "code": err.code(),
        "path": err.path(),
        "message": err.to_string(),
    })
    .to_string()
}
