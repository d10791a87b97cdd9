//! `jevgate tools [--set browser|agent] --format mcp|openai`: prints the nine browser tool
//! definitions (R-DEV-TOOLS; the default set) or the ten agent task tools (issue 21 item 8) as
//! one JSON array, for hosts that register them with their model.

use super::Usage;
use jevgate::device::{tool_definitions, ToolFormat};
use std::process::ExitCode;

pub fn tools(args: &[String]) -> Result<ExitCode, Usage> {
    let mut format = ToolFormat::Mcp;
    let mut agent = false;
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "--format" => {
                let value = args
                    .get(i + 1)
                    .ok_or_else(|| Usage("--format needs mcp or openai".into()))?;
                format = value.parse::<ToolFormat>().map_err(|_| {
                    Usage(format!(
                        "unknown format `{}` (mcp or openai)",
                        value.escape_debug()
                    ))
                })?;
                i += 2;
            }
            "--set" => {
                agent = match args.get(i + 1).map(String::as_str) {
                    Some("browser") => false,
                    Some("agent") => true,
                    _ => return Err(Usage("--set needs browser or agent".into())),
                };
                i += 2;
            }
            other => {
                return Err(Usage(format!(
                    "unknown argument `{}`",
                    other.escape_debug()
                )))
            }
        }
    }
    let definitions = if agent {
        jevgate::task::agent_tool_definitions(format)
    } else {
        tool_definitions(format)
    };
    let text = serde_json::to_string_pretty(&definitions)
        .map_err(|_| Usage("cannot print the definitions".into()))?;
    println!("{text}");
    Ok(ExitCode::SUCCESS)
}
