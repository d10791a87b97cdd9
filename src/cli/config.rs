//! `jevgate check-config` and `jevgate doctor`.

use super::{read_input, Usage};
use crate::common::error_line;
use std::process::ExitCode;

pub fn check_config(args: &[String]) -> Result<ExitCode, Usage> {
    let [source] = args else {
        return Err(Usage(
            "check-config takes exactly one FILE (or - for stdin)".into(),
        ));
    };
    let bytes = read_input(source)?;
    match jevgate::Config::from_json_slice(&bytes) {
        Ok(_) => {
            println!("ok");
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            println!("{}", error_line(&e));
            Ok(ExitCode::from(1))
        }
    }
}

pub fn doctor(args: &[String]) -> Result<ExitCode, Usage> {
    let mut config = None;
    let mut data_dir = None;
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let value = it
            .next()
            .ok_or_else(|| Usage(format!("{flag} needs a value")));
        match flag.as_str() {
            "--config" => config = Some(value?.clone()),
            "--data-dir" => data_dir = Some(value?.clone()),
            other => return Err(Usage(format!("unknown flag `{}`", other.escape_debug()))),
        }
    }
    let source = config.ok_or_else(|| Usage("doctor needs --config FILE".into()))?;
    let parsed = match jevgate::Config::from_json_slice(&read_input(&source)?) {
        Ok(c) => c,
        Err(e) => {
            println!("{}", error_line(&e));
            return Ok(ExitCode::from(1));
        }
    };
    let report = match data_dir {
        None => jevgate::config::doctor(&parsed, &|name| std::env::var_os(name)),
        Some(dir) => match jevgate::Gateway::open(jevgate::GatewayOptions::new(dir, parsed)) {
            Ok(gw) => {
                let report = gw.doctor();
                let report = match report {
                    Ok(r) => r,
                    Err(e) => {
                        println!("{}", error_line(&e));
                        gw.close();
                        return Ok(ExitCode::from(1));
                    }
                };
                gw.close();
                report
            }
            Err(e) => {
                println!("{}", error_line(&e));
                return Ok(ExitCode::from(1));
            }
        },
    };
    println!("{}", report.to_json());
    Ok(if report.ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
