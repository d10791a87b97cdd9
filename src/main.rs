//! `jevgate` — the command line for people and scripts.
//!
//! Exit codes: 0 success, 1 a negative verdict (invalid configuration, failed check),
//! 2 a usage error (unknown command, missing argument, unreadable file).

mod cli;
mod common;
mod mcp;

use cli::Usage;
use std::process::ExitCode;

const USAGE: &str = r#"usage: jevgate <command> [args]

commands:
  check-config FILE|-                 validate a configuration; prints `ok` or one JSON error line
  doctor --config FILE|- [--data-dir DIR]
                                      local readiness checks (no network); prints a JSON report
  evaluate --config FILE --agent ID [--data-dir DIR] [REQUEST.json|-]
                                      one Jev evaluation; prints the evaluation JSON
                                      or one JSON error line
  parse [--jsonl] [TEXT]              the intent of a user command (step-command grammar)
  steps [--jsonl] [--parts] [TEXT]    split a message into steps ({"steps":[...]|null}),
                                      or one step into parts ({"parts":[...]})
  validate --jsonl                    validate Jev responses: stdin lines {"questions","response"}
  validate --questions Q.json [RESPONSE.json|-]
                                      validate one response; prints the answers or the reason
  tools [--set browser|agent] [--format mcp|openai]
                                      the nine browser tool definitions (default) or the ten
                                      agent task tools, as JSON (default mcp)
  observe URL [--format json|snapshot] [--repeat N]
                                      load URL in a fresh local Chromium and print what a model
                                      sees (observation JSON or snapshot); with --repeat, stderr
                                      ends with `observe: median_ms=<n> p90_ms=<n> chars=<n>`
  task run [--data-dir DIR] [--config FILE|-] [--url URL] [--agent ID] COMMANDS
                                      run a person's commands (one command or a step list,
                                      Thai or English) on a local headless Chromium, with the
                                      local evaluator and browser tasks and step lists on
                                      unless --config says otherwise (a --config must turn
                                      on features.browserTasks, else ORCHESTRATION_DISABLED);
                                      prints
                                      each outcome line as it settles, then a summary line;
                                      exit 0 only when every step is done (state completed).
                                      Without --data-dir the task's store is a temporary
                                      directory removed at the end
  task list --data-dir DIR [--json] [--limit N]
                                      every task of DIR with its receipts: state, reason,
                                      outcome line, requests, operation ids, tools, statuses
                                      (a request cut off by a crash shows
                                      BROWSER_EXECUTION_INTERRUPTED); never results or page
                                      content; --json prints one JSON object per task
  mcp [--headed] [--profile-dir DIR | --isolated] [--strict] [--caps tabs,files,vision]
      [--workspace DIR] [--config FILE] [--data-dir DIR] [--device DEVICE_ID [--channel ADDR]]
      [--agent ID] [--principal ID] [--conversation ID]
                                      a Model Context Protocol server on stdio (JSON-RPC lines;
                                      logs on stderr): the seed-001 browser_* tools on a local
                                      headless Chromium started on first use, task_* tools,
                                      jev_evaluate. Browser sessions are authenticated (one
                                      profile kept in the data directory's profiles/) unless
                                      --isolated; --strict is strict data handling: isolated
                                      sessions only, no file, console or network tools, no
                                      screenshot or download written to disk.
                                      Without --data-dir (or --profile-dir DIR, the same as
                                      --data-dir DIR) its data lives in a temporary directory
                                      removed at exit. --headed shows the window (needs a
                                      display). --device drives the principal's paired device
                                      over a channel served on ADDR (default 127.0.0.1:0; the
                                      URL is printed on stderr). Without --config: the local
                                      evaluator with browser tasks and step lists on (a
                                      --config must turn on features.browserTasks for the
                                      task_* tools). Ends on EOF or SIGTERM, closing every
                                      Chromium it started
  version                             print the version
  help                                print this help
"#;

fn main() -> ExitCode {
    // `std::env::args` panics (exit 101) on an argument that is not UTF-8: read them as
    // `OsString` and refuse such an argument as a usage error, naming its position only.
    let args = match utf8_args(std::env::args_os().skip(1)) {
        Ok(args) => args,
        Err(usage) => return usage_error(usage),
    };
    match run(&args) {
        Ok(code) => code,
        Err(usage) => usage_error(usage),
    }
}

fn usage_error(Usage(msg): Usage) -> ExitCode {
    eprintln!("jevgate: {msg}\n\n{USAGE}");
    ExitCode::from(2)
}

/// The arguments as UTF-8 strings; the first one that is not is a usage error (its bytes are
/// never printed: an argument can be a secret).
fn utf8_args(args: impl Iterator<Item = std::ffi::OsString>) -> Result<Vec<String>, Usage> {
    args.enumerate()
        .map(|(i, a)| {
            a.into_string()
                .map_err(|_| Usage(format!("argument {} is not valid UTF-8", i + 1)))
        })
        .collect()
}

fn run(args: &[String]) -> Result<ExitCode, Usage> {
    let Some(command) = args.first() else {
        return Err(Usage("missing command".into()));
    };
    let rest = &args[1..];
    match command.as_str() {
        "check-config" => cli::config::check_config(rest),
        "doctor" => cli::config::doctor(rest),
        "evaluate" => cli::evaluate::evaluate(rest),
        "parse" => cli::grammar::parse(rest),
        "steps" => cli::grammar::steps(rest),
        "validate" => cli::jev::validate(rest),
        "tools" => cli::device::tools(rest),
        "observe" => cli::browser::observe(rest),
        "task" => cli::task::task(rest),
        "mcp" => cli::mcp::mcp(rest),
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
