//! `jevgate-worker`: the reference device worker. Starts a local headless Chromium, connects to
//! a gateway's device-worker channel with a device token (protocol 2) and serves the nine
//! browser tools and the backend primitives until the gateway closes the channel.
//!
//! The token is read from a file or the `JEVGATE_DEVICE_TOKEN` environment variable, never from
//! the command line (other users can read command lines). With `--reconnect` it connects again
//! after a broken connection or a gateway restart. Exit status: 0 when the gateway closed the
//! channel normally or the worker was asked to stop, 1 on a refusal, an unpair or a broken
//! connection, 2 on a usage error.

use std::io::Read;
use std::process::ExitCode;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use jevgate::browser::{BrowserTools, LaunchOptions, LocalBrowser};
use jevgate::device::{DeviceToken, DeviceWorker, ToolExecutor, WorkerOptions};

/// The longest pause between two reconnection attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

const USAGE: &str = "usage: jevgate-worker --url ws://HOST:PORT/v1/device-worker/channel \
[--token-file PATH] [--ca-file PEM] [--chromium PATH] [--reconnect] [--exit-on-stdin-eof]

The device token is read from --token-file, else from JEVGATE_DEVICE_TOKEN.
--ca-file       trust these PEM certificates for wss:// instead of the public web roots
--chromium      the Chromium executable (default: JEVGATE_CHROMIUM, /usr/bin/chromium, …)
--reconnect     when the connection breaks or the gateway goes away (1001), connect again
                (backoff 0.5 s doubling to 30 s), also when the gateway is at its connection
                limit (1013); never after a refusal, an unpair (1008) or a newer connection of
                the same device (4000)
--exit-on-stdin-eof  stop (closing the browser) when standard input closes";

struct Args {
    url: String,
    token_file: Option<String>,
    ca_file: Option<String>,
    chromium: Option<String>,
    exit_on_stdin_eof: bool,
    reconnect: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut args = std::env::args().skip(1);
    let mut parsed = Args {
        url: String::new(),
        token_file: None,
        ca_file: None,
        chromium: None,
        exit_on_stdin_eof: false,
        reconnect: false,
    };
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        match arg.as_str() {
            "--url" => parsed.url = value("--url")?,
            "--token-file" => parsed.token_file = Some(value("--token-file")?),
            "--ca-file" => parsed.ca_file = Some(value("--ca-file")?),
            "--chromium" => parsed.chromium = Some(value("--chromium")?),
            "--exit-on-stdin-eof" => parsed.exit_on_stdin_eof = true,
            "--reconnect" => parsed.reconnect = true,
            "-h" | "--help" => return Err(String::new()),
            other if other.starts_with('-') => return Err(format!("unknown option {other}")),
            _ => {
                return Err(
                    "unexpected argument (the token is never given on the command line)".into(),
                )
            }
        }
    }
    if parsed.url.is_empty() {
        return Err("--url is required".into());
    }
    Ok(parsed)
}

fn token(args: &Args) -> Result<DeviceToken, String> {
    let raw = match &args.token_file {
        Some(path) => std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read the token file: {}", e.kind()))?,
        None => std::env::var("JEVGATE_DEVICE_TOKEN")
            .map_err(|_| "no token: pass --token-file or set JEVGATE_DEVICE_TOKEN".to_string())?,
    };
    let token = raw.trim();
    if token.is_empty() {
        return Err("the device token is empty".into());
    }
    Ok(DeviceToken::new(token))
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(message) => {
            if !message.is_empty() {
                eprintln!("jevgate-worker: {message}");
            }
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    let token = match token(&args) {
        Ok(t) => t,
        Err(message) => {
            eprintln!("jevgate-worker: {message}");
            return ExitCode::from(2);
        }
    };
    let mut options = WorkerOptions::new(args.url.clone(), token);
    if let Some(path) = &args.ca_file {
        match std::fs::read(path) {
            Ok(pem) => options.tls_roots_pem = Some(pem),
            Err(e) => {
                eprintln!("jevgate-worker: cannot read the CA file: {}", e.kind());
                return ExitCode::from(2);
            }
        }
    }
    let browser = match LocalBrowser::launch(LaunchOptions {
        executable: args.chromium.as_ref().map(Into::into),
        ..LaunchOptions::default()
    }) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("jevgate-worker: {} {e}", e.code());
            return ExitCode::from(1);
        }
    };
    let tools: Arc<BrowserTools> = Arc::new(BrowserTools::new(Arc::new(browser.clone())));
    let control = Arc::new(Control::default());
    if args.exit_on_stdin_eof {
        let control = control.clone();
        // Detached on purpose: it blocks in read until stdin closes, then stops the worker.
        let _ = std::thread::Builder::new()
            .name("stdin-lifeline".into())
            .spawn(move || {
                let mut sink = [0u8; 256];
                let mut stdin = std::io::stdin();
                while matches!(stdin.read(&mut sink), Ok(n) if n > 0) {}
                control.stop();
            });
    }
    let code = serve(&options, &tools, &control, args.reconnect);
    browser.close();
    code
}

/// Stops the worker from another thread: closes the live connection and ends any wait.
#[derive(Default)]
struct Control {
    stopping: Mutex<bool>,
    woken: Condvar,
    live: Mutex<Option<Arc<DeviceWorker>>>,
}

impl Control {
    fn stop(&self) {
        *self.stopping.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.woken.notify_all();
        let live = self.live.lock().unwrap_or_else(|e| e.into_inner()).clone();
        if let Some(worker) = live {
            worker.close();
        }
    }

    fn stopping(&self) -> bool {
        *self.stopping.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sleeps `pause` unless stopped first; `false` when stopped.
    fn pause(&self, pause: Duration) -> bool {
        let guard = self.stopping.lock().unwrap_or_else(|e| e.into_inner());
        let (guard, _) = self
            .woken
            .wait_timeout_while(guard, pause, |stopping| !*stopping)
            .unwrap_or_else(|e| e.into_inner());
        !*guard
    }
}

/// The close code in a refusal (`the gateway refused the worker: 1008 …`), if it is one.
fn refusal_code(e: &jevgate::Error) -> Option<u16> {
    let text = e.to_string();
    let at = text.find("refused the worker: ")? + "refused the worker: ".len();
    text[at..].split_whitespace().next()?.parse().ok()
}

/// Serves connections until stopped, refused, or (without `reconnect`) the first one ends.
fn serve(
    options: &WorkerOptions,
    tools: &Arc<BrowserTools>,
    control: &Control,
    reconnect: bool,
) -> ExitCode {
    let mut backoff = Duration::from_millis(500);
    let mut connected_once = false;
    loop {
        let executor: Arc<dyn ToolExecutor> = tools.clone();
        let worker = match DeviceWorker::connect(options.clone(), executor) {
            Ok(w) => Arc::new(w),
            Err(e) => {
                eprintln!("jevgate-worker: {} {e}", e.code());
                // A refusal (unpaired, bad token, out of date) or a first failure is final; a
                // gateway at its connection limit (1013 CONNECTION_LIMIT) is tried again later.
                let code = refusal_code(&e);
                let try_later = code == Some(1013);
                if !reconnect || (!try_later && (!connected_once || code.is_some())) {
                    return ExitCode::from(1);
                }
                if !control.pause(backoff) {
                    return ExitCode::SUCCESS;
                }
                backoff = (backoff * 2).min(MAX_BACKOFF);
                continue;
            }
        };
        connected_once = true;
        backoff = Duration::from_millis(500);
        eprintln!("jevgate-worker: ready device={}", worker.device_id());
        *control.live.lock().unwrap_or_else(|e| e.into_inner()) = Some(worker.clone());
        if control.stopping() {
            worker.close();
        }
        let exit = worker.wait();
        *control.live.lock().unwrap_or_else(|e| e.into_inner()) = None;
        eprintln!(
            "jevgate-worker: channel closed ({} {})",
            exit.close_code.map_or("-".to_string(), |c| c.to_string()),
            exit.reason
        );
        if control.stopping() {
            return ExitCode::SUCCESS;
        }
        // 1008 (unpaired, refused) and 4000 (replaced by a newer connection) are final; a
        // gateway going away (1001) or a broken connection is worth reconnecting to.
        let final_close = matches!(exit.close_code, Some(1008) | Some(4000));
        if !reconnect || final_close {
            let normal = matches!(exit.close_code, Some(1000) | Some(1001));
            return if normal {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            };
        }
        if !control.pause(backoff) {
            return ExitCode::SUCCESS;
        }
    }
}
