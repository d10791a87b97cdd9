//! `jevgate mcp` (issue 15 items 3 and 4): parses the options and hands them to the server in
//! `crate::mcp`. Holds no protocol logic. Messages name a flag, never an argument's value.

use super::Usage;
use crate::mcp::{Caps, Options};
use std::path::PathBuf;
use std::process::ExitCode;

/// The owner triple's defaults: the person at this machine, through an MCP client.
const AGENT: &str = "mcp";
const PRINCIPAL: &str = "local";
const CONVERSATION: &str = "mcp";

pub fn mcp(args: &[String]) -> Result<ExitCode, Usage> {
    let opts = parse(args)?;
    Ok(ExitCode::from(crate::mcp::serve(opts)))
}

fn parse(args: &[String]) -> Result<Options, Usage> {
    let mut opts = Options {
        agent: AGENT.into(),
        principal: PRINCIPAL.into(),
        conversation: CONVERSATION.into(),
        ..Options::default()
    };
    let mut it = args.iter().enumerate();
    while let Some((i, arg)) = it.next() {
        let mut value = |flag: &str| {
            it.next()
                .map(|(_, v)| v.clone())
                .ok_or_else(|| Usage(format!("mcp: {flag} needs a value")))
        };
        match arg.as_str() {
            "--headed" => opts.headed = true,
            "--isolated" => opts.isolated = true,
            "--strict" => opts.strict = true,
            "--profile-dir" => opts.profile_dir = Some(PathBuf::from(value("--profile-dir")?)),
            "--caps" => opts.caps = Caps::parse(&value("--caps")?).map_err(Usage)?,
            "--workspace" => opts.workspace = Some(PathBuf::from(value("--workspace")?)),
            "--config" => {
                let v = value("--config")?;
                if v == "-" {
                    return Err(Usage(
                        "mcp: --config takes a file (stdin carries the protocol)".into(),
                    ));
                }
                opts.config = Some(PathBuf::from(v));
            }
            "--data-dir" => opts.data_dir = Some(PathBuf::from(value("--data-dir")?)),
            "--device" => opts.device = Some(value("--device")?),
            "--channel" => opts.channel = Some(value("--channel")?),
            "--agent" => opts.agent = value("--agent")?,
            "--principal" => opts.principal = value("--principal")?,
            "--conversation" => opts.conversation = value("--conversation")?,
            _ => {
                return Err(Usage(format!(
                    "mcp: argument {} is not a known flag",
                    i + 2
                )))
            }
        }
    }
    if opts.isolated && opts.profile_dir.is_some() {
        return Err(Usage(
            "mcp: --isolated and --profile-dir exclude each other".into(),
        ));
    }
    if opts.data_dir.is_some() && opts.profile_dir.is_some() {
        return Err(Usage(
            "mcp: --profile-dir and --data-dir exclude each other (the profile is kept in the data directory's profiles/)".into(),
        ));
    }
    for (name, v) in [
        ("--agent", &opts.agent),
        ("--principal", &opts.principal),
        ("--conversation", &opts.conversation),
    ] {
        if v.is_empty() || v.len() > 256 || v.chars().any(char::is_control) {
            return Err(Usage(format!(
                "mcp: {name} must be 1 to 256 bytes without control characters"
            )));
        }
    }
    Ok(opts)
}
