//! `jevgate-computer`: the Linux reference computer helper (issue 25). `serve` connects it to a
//! gateway's device channel as a paired device of capability `computer` (protocol 2, the same
//! channel client and serve loop as `jevgate-worker`) and answers the helper contract version 1
//! (`observe`, `computer_action`, `operation_status`, `computer_access`). `approve` and `revoke`
//! are the person's consent: pairing alone authorizes nothing. `observe`, `press` and `key` are
//! one-shot commands for people and tests.
//!
//! It observes the front application of the desktop through AT-SPI (the accessibility bus of
//! `DBUS_SESSION_BUS_ADDRESS`, or `AT_SPI_BUS_ADDRESS`) and acts through AT-SPI actions and
//! XTest keys (`DISPLAY`). The device token is read from a file or `JEVGATE_DEVICE_TOKEN`, never
//! from the command line. It must never print a sensitive field's value and never write an
//! application's names or text anywhere but its standard output, as the answer to the one-shot
//! command that asked. Exit status: 0 on success, 1 when the desktop or the gateway refused or
//! failed (the error's code on standard error), 2 on a usage error.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use jevgate::clock;
use jevgate::device::{
    read_device_token, serve_worker, ServeEnd, ToolExecutor, WorkerControl, WorkerOptions,
};
use jevgate::unstable::computer::{model, state, ComputerHelper, HelperOptions, Keyboard, Session};

const USAGE: &str = "usage: jevgate-computer serve --url ws://HOST:PORT/v1/device-worker/channel \
--state-dir DIR [--token-file PATH] [--app NAME] [--reconnect] [--exit-on-stdin-eof]
       jevgate-computer approve --state-dir DIR --app NAME [--app NAME]… --minutes N
       jevgate-computer revoke --state-dir DIR
       jevgate-computer status --state-dir DIR
       jevgate-computer [--app NAME] observe
       jevgate-computer [--app NAME] press LABEL
       jevgate-computer key NAME

serve     serve the gateway as a paired computer (the token from --token-file, else
          JEVGATE_DEVICE_TOKEN); consent, access requests and receipts live in --state-dir
approve   approve access to these applications (accessible names) for N minutes (1 to 1440)
revoke    withdraw the approval
status    show the approval and a pending access request
observe   print the front application's observation (JSON)
press     press the one control whose name is exactly LABEL (an AT-SPI action)
key       press and release one key through XTest (Return, BackSpace, 5, +, …)
--app     the application with this accessible name instead of the front one";

#[derive(Default)]
struct Args {
    apps: Vec<String>,
    url: Option<String>,
    state_dir: Option<PathBuf>,
    token_file: Option<String>,
    minutes: Option<u64>,
    reconnect: bool,
    exit_on_stdin_eof: bool,
    rest: Vec<String>,
}

fn parse() -> Result<Args, String> {
    let mut a = Args::default();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        match arg.as_str() {
            "--app" => a.apps.push(value("--app")?),
            "--url" => a.url = Some(value("--url")?),
            "--state-dir" => a.state_dir = Some(value("--state-dir")?.into()),
            "--token-file" => a.token_file = Some(value("--token-file")?),
            "--minutes" => {
                a.minutes = Some(
                    value("--minutes")?
                        .parse()
                        .map_err(|_| "--minutes takes a whole number")?,
                )
            }
            "--reconnect" => a.reconnect = true,
            "--exit-on-stdin-eof" => a.exit_on_stdin_eof = true,
            "-h" | "--help" => return Err(String::new()),
            other if other.starts_with("--") => return Err(format!("unknown option {other}")),
            _ => a.rest.push(arg),
        }
    }
    Ok(a)
}

fn main() -> ExitCode {
    let a = match parse() {
        Ok(a) => a,
        Err(message) if message.is_empty() => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            eprintln!("jevgate-computer: {message}");
            return usage();
        }
    };
    let app = a.apps.first().cloned();
    let rest: Vec<&str> = a.rest.iter().map(String::as_str).collect();
    match rest.as_slice() {
        ["serve"] => serve(&a),
        ["approve"] => {
            let (Some(dir), Some(minutes)) = (&a.state_dir, a.minutes) else {
                return usage();
            };
            let duration = Duration::from_secs(minutes.saturating_mul(60));
            match state::approve(dir, &a.apps, duration, &*clock::system()) {
                Ok(c) => {
                    println!(
                        "approved {} application(s) until {} (Unix ms)",
                        c.applications.len(),
                        c.expires_at
                    );
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("jevgate-computer: {e}");
                    ExitCode::from(1)
                }
            }
        }
        ["revoke"] => {
            let Some(dir) = &a.state_dir else {
                return usage();
            };
            run(|| Ok(state::revoke(dir)?))
        }
        ["status"] => {
            let Some(dir) = &a.state_dir else {
                return usage();
            };
            let now = clock::system().wall_millis();
            let consent = state::read_consent(dir);
            let status = serde_json::json!({
                "approved": state::check_consent(consent.as_ref(), now, None).is_ok(),
                "approval": consent,
                "pendingAccessRequestSince": state::pending_access_request(dir),
            });
            println!("{status:#}");
            ExitCode::SUCCESS
        }
        ["observe"] => run(|| {
            let mut s = Session::connect()?;
            let obs = s.observe(app.as_deref())?;
            println!(
                "{}",
                serde_json::to_string_pretty(&obs).unwrap_or_else(|_| "{}".into())
            );
            Ok(())
        }),
        ["press", label] => run(|| {
            let mut s = Session::connect()?;
            let obs = s.observe(app.as_deref())?;
            let found = model::find_by_name(&obs, label);
            match found.as_slice() {
                [one] => Ok(s.press(&one.reference)?),
                [] => Err("TARGET_NOT_FOUND: no control with that name".into()),
                _ => Err("TARGET_AMBIGUOUS: more than one control with that name".into()),
            }
        }),
        ["key", name] => run(|| Ok(Keyboard::connect()?.key(name)?)),
        _ => usage(),
    }
}

fn serve(a: &Args) -> ExitCode {
    let (Some(url), Some(dir)) = (&a.url, &a.state_dir) else {
        return usage();
    };
    let token = match read_device_token(a.token_file.as_deref()) {
        Ok(t) => t,
        Err(message) => {
            eprintln!("jevgate-computer: {message}");
            return ExitCode::from(2);
        }
    };
    let helper: Arc<dyn ToolExecutor> = Arc::new(ComputerHelper::new(HelperOptions {
        state_dir: dir.clone(),
        app: a.apps.first().cloned(),
        a11y_bus: None,
        display: None,
        clock: clock::system(),
    }));
    let control = Arc::new(WorkerControl::default());
    if a.exit_on_stdin_eof {
        control.stop_on_stdin_eof();
    }
    let options = WorkerOptions::new(url.clone(), token);
    match serve_worker("jevgate-computer", &options, &helper, &control, a.reconnect) {
        ServeEnd::Normal => ExitCode::SUCCESS,
        ServeEnd::Failed => ExitCode::from(1),
    }
}

fn usage() -> ExitCode {
    eprintln!("{USAGE}");
    ExitCode::from(2)
}

fn run(f: impl FnOnce() -> Result<(), Box<dyn std::error::Error>>) -> ExitCode {
    match f() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("jevgate-computer: {e}");
            ExitCode::from(1)
        }
    }
}
