//! `jevgate evaluate --config FILE --agent ID [--data-dir DIR] [REQUEST.json|-]`: one Jev
//! evaluation through a gateway opened for the call. Prints the evaluation JSON (exit 0) or one
//! JSON error line (exit 1). Never prints state, questions or credentials of its own accord.

use super::{read_input, Usage};
use crate::common::error_line;
use std::process::ExitCode;

pub fn evaluate(args: &[String]) -> Result<ExitCode, Usage> {
    let mut config = None;
    let mut agent = None;
    let mut data_dir = None;
    let mut request = None;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = || {
            it.next()
                .cloned()
                .ok_or_else(|| Usage(format!("{arg} needs a value")))
        };
        match arg.as_str() {
            "--config" => config = Some(value()?),
            "--agent" => agent = Some(value()?),
            "--data-dir" => data_dir = Some(value()?),
            flag if flag.starts_with("--") => {
                return Err(Usage(format!("unknown flag `{}`", flag.escape_debug())))
            }
            _ if request.is_some() => return Err(Usage("evaluate takes one REQUEST".into())),
            source => request = Some(source.to_string()),
        }
    }
    let config = config.ok_or_else(|| Usage("evaluate needs --config FILE".into()))?;
    let agent = agent.ok_or_else(|| Usage("evaluate needs --agent ID".into()))?;
    let request = request.unwrap_or_else(|| "-".into());
    if config == "-" && request == "-" {
        return Err(Usage("--config and REQUEST cannot both be stdin".into()));
    }
    let parsed = match jevgate::Config::from_json_slice(&read_input(&config)?) {
        Ok(c) => c,
        Err(e) => {
            println!("{}", error_line(&e));
            return Ok(ExitCode::from(1));
        }
    };
    // The request file may omit agentId; --agent decides it.
    let mut call: serde_json::Value = match serde_json::from_slice(&read_input(&request)?) {
        Ok(serde_json::Value::Object(m)) => serde_json::Value::Object(m),
        _ => {
            let e = jevgate::Error::InvalidRequest {
                path: String::new(),
                reason: "the request is not a JSON object".into(),
            };
            println!("{}", error_line(&e));
            return Ok(ExitCode::from(1));
        }
    };
    call["agentId"] = serde_json::Value::String(agent);
    let (dir, temporary) = match data_dir {
        Some(d) => (std::path::PathBuf::from(d), false),
        // Created exclusively and 0700: a predictable name in the shared temporary directory
        // could be made first by another user (issue 20 item 1).
        None => match crate::common::temp_data_dir("jevgate-evaluate") {
            Ok(d) => (d, true),
            Err(e) => {
                println!("{}", error_line(&e));
                return Ok(ExitCode::from(1));
            }
        },
    };
    let result =
        jevgate::Gateway::open(jevgate::GatewayOptions::new(&dir, parsed)).and_then(|gw| {
            let out = gw.evaluate_json(&call.to_string(), None);
            gw.close();
            out
        });
    if temporary {
        let _ = std::fs::remove_dir_all(&dir);
    }
    match result {
        Ok(json) => {
            println!("{json}");
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            println!("{}", error_line(&e));
            Ok(ExitCode::from(1))
        }
    }
}
