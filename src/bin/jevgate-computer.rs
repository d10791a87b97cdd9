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

const USAGE: &str = "usage: jevgate-computer pair --url ws://HOST:PORT/v1/device-worker/channel \
--state-dir DIR --name NAME   (the pairing code on standard input)
       jevgate-computer serve --url ws://HOST:PORT/v1/device-worker/channel \
--state-dir DIR [--token-file PATH] [--app NAME] [--reconnect] [--exit-on-stdin-eof]
       jevgate-computer approve --state-dir DIR --app NAME [--app NAME]… --minutes N
       jevgate-computer revoke --state-dir DIR
       jevgate-computer status --state-dir DIR
       jevgate-computer [--app NAME] observe
       jevgate-computer [--app NAME] press LABEL
       jevgate-computer key NAME

pair      redeem a pairing code the gateway's host minted (read from standard input) at the
          channel listener's /devices/pair; the device token is kept in DIR/token (mode 0600)
serve     serve the gateway as a paired computer (the token from --token-file, else
          JEVGATE_DEVICE_TOKEN, else DIR/token); consent, access requests and receipts live in
          --state-dir
approve   approve access to these applications (accessible names) for N minutes (1 to 1440)
revoke    withdraw the approval (and refuse a pending access request)
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
    name: Option<String>,
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
            "--name" => a.name = Some(value("--name")?),
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
        ["pair"] => pair(&a),
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
    let kept = dir.join("token");
    let token_file = a.token_file.clone().or_else(|| {
        (std::env::var_os("JEVGATE_DEVICE_TOKEN").is_none() && kept.is_file())
            .then(|| kept.to_string_lossy().into_owned())
    });
    let token = match read_device_token(token_file.as_deref()) {
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

/// `pair`: redeems a pairing code (standard input) at the channel listener's pairing route and
/// keeps the device token in DIR/token. Plain `ws://` listeners only (a `wss://` gateway's
/// host pairs with `Gateway::pair_computer` and hands the token over).
fn pair(a: &Args) -> ExitCode {
    let (Some(url), Some(dir), Some(name)) = (&a.url, &a.state_dir, &a.name) else {
        return usage();
    };
    let mut code = String::new();
    if std::io::stdin().read_line(&mut code).is_err() || code.trim().is_empty() {
        eprintln!("jevgate-computer: no pairing code on standard input");
        return ExitCode::from(2);
    }
    run(|| {
        let authority = url
            .strip_prefix("ws://")
            .and_then(|r| r.split('/').next())
            .filter(|h| !h.is_empty())
            .ok_or("pair needs a ws://HOST:PORT/… URL")?;
        let installation = installation_id(dir)?;
        let body = serde_json::json!({
            "installationId": installation,
            "name": name,
            "capability": "computer",
            "pairingCode": code.trim(),
        })
        .to_string();
        let answer = post(authority, "/devices/pair", &body)?;
        let device = answer["deviceId"]
            .as_str()
            .ok_or("no deviceId in the answer")?;
        let token = answer["token"].as_str().ok_or("no token in the answer")?;
        state::write_private(dir, "token", token.as_bytes())?;
        println!("{device}");
        Ok(())
    })
}

/// The helper's stable installation id (DIR/installation), made once.
fn installation_id(dir: &std::path::Path) -> Result<String, Box<dyn std::error::Error>> {
    let path = dir.join("installation");
    if let Ok(id) = std::fs::read_to_string(&path) {
        if !id.trim().is_empty() {
            return Ok(id.trim().to_string());
        }
    }
    let mut bytes = [0u8; 16];
    std::io::Read::read_exact(&mut std::fs::File::open("/dev/urandom")?, &mut bytes)?;
    let id: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let id = format!("computer-{id}");
    state::write_private(dir, "installation", id.as_bytes())?;
    Ok(id)
}

/// One HTTP/1.1 `POST` of a JSON body; the JSON answer of a 200, else an error naming the
/// status and the answer's `errorCode`.
fn post(
    authority: &str,
    path: &str,
    body: &str,
) -> Result<serde_json::Value, Box<dyn std::error::Error>> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(authority)?;
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    let mut answer = Vec::new();
    stream.take(64 * 1024).read_to_end(&mut answer)?;
    let text = String::from_utf8_lossy(&answer);
    let (head, payload) = text.split_once("\r\n\r\n").ok_or("no HTTP answer")?;
    let status = head.split_whitespace().nth(1).unwrap_or("");
    let json: serde_json::Value = serde_json::from_str(payload).unwrap_or_default();
    if status != "200" {
        let code = json["errorCode"].as_str().unwrap_or("-");
        return Err(format!("the gateway refused the pairing: HTTP {status} {code}").into());
    }
    Ok(json)
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
