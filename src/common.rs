//! What the `jevgate` command's families share: the default task configuration, a private
//! temporary data directory, and the one-line JSON form of an error. Below both `cli/` (the
//! subcommands) and `mcp/` (the MCP server), so neither uses the other for them
//! (tests/layers.rs). Holds no command of its own; never prints.

/// The configuration `task run` uses without `--config`: the local evaluator (no network, no
/// key), as the quickstart's.
pub const DEFAULT_CONFIG: &str = r#"{"gateway":{"jev":{"enabled":true,"provider":"local"}}}"#;

/// A fresh private (0700) directory `<temp>/<prefix>-<random>` for a command's data, removed by
/// the command when it ends.
pub fn temp_data_dir(prefix: &str) -> jevgate::Result<std::path::PathBuf> {
    let mut bytes = [0u8; 12];
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut bytes).map_err(|_| {
        jevgate::Error::Internal {
            reason: "the system random source failed".into(),
        }
    })?;
    let name: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let dir = std::env::temp_dir().join(format!("{prefix}-{name}"));
    let mut builder = std::fs::DirBuilder::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(&dir).map_err(|e| jevgate::Error::Internal {
        reason: format!("cannot create a temporary data directory: {}", e.kind()),
    })?;
    Ok(dir)
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
