//! `jevgate` — the command line for people and scripts.
//!
//! Exit codes: 0 success, 1 a negative verdict (invalid configuration, failed check),
//! 2 a usage error (unknown command, missing argument, unreadable file).

use std::io::Read;
use std::process::ExitCode;

const USAGE: &str = "\
usage: jevgate <command> [args]

commands:
  check-config FILE|-                 validate a configuration; prints `ok` or one JSON error line
  doctor --config FILE|- [--data-dir DIR]
                                      local readiness checks (no network); prints a JSON report
  version                             print the version
  help                                print this help
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(code) => code,
        Err(Usage(msg)) => {
            eprintln!("jevgate: {msg}\n\n{USAGE}");
            ExitCode::from(2)
        }
    }
}

struct Usage(String);

fn run(args: &[String]) -> Result<ExitCode, Usage> {
    let Some(command) = args.first() else {
        return Err(Usage("missing command".into()));
    };
    let rest = &args[1..];
    match command.as_str() {
        "check-config" => check_config(rest),
        "doctor" => doctor(rest),
        "version" | "--version" | "-V" => {
            println!("jevgate {}", env!("CARGO_PKG_VERSION"));
            Ok(ExitCode::SUCCESS)
        }
        "help" | "--help" | "-h" => {
            print!("{USAGE}");
            Ok(ExitCode::SUCCESS)
        }
        other => Err(Usage(format!("unknown command `{}`", other.escape_debug()))),
    }
}

/// Reads a file, or stdin for `-`, bounded to the configuration size limit (+1 to detect excess).
fn read_input(source: &str) -> Result<Vec<u8>, Usage> {
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

fn error_line(err: &jevgate::Error) -> String {
    serde_json::json!({
        "code": err.code(),
        "path": err.path(),
        "message": err.to_string(),
    })
    .to_string()
}

fn check_config(args: &[String]) -> Result<ExitCode, Usage> {
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

fn doctor(args: &[String]) -> Result<ExitCode, Usage> {
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
