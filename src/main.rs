//! `jevgate` — the command line for people and scripts.
//!
//! Exit codes: 0 success, 1 a negative verdict (invalid configuration, failed check),
//! 2 a usage error (unknown command, missing argument, unreadable file).

mod cli;

use cli::Usage;
use std::process::ExitCode;

const USAGE: &str = "\
usage: jevgate <command> [args]

commands:
  check-config FILE|-                 validate a configuration; prints `ok` or one JSON error line
  doctor --config FILE|- [--data-dir DIR]
                                      local readiness checks (no network); prints a JSON report
  observe URL [--format json|snapshot] [--repeat N]
                                      load URL in a fresh local Chromium and print what a model
                                      sees (observation JSON or snapshot); with --repeat, stderr
                                      ends with `observe: median_ms=<n> p90_ms=<n> chars=<n>`
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

fn run(args: &[String]) -> Result<ExitCode, Usage> {
    let Some(command) = args.first() else {
        return Err(Usage("missing command".into()));
    };
    let rest = &args[1..];
    match command.as_str() {
        "check-config" => cli::config::check_config(rest),
        "doctor" => cli::config::doctor(rest),
        "observe" => cli::browser::observe(rest),
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
