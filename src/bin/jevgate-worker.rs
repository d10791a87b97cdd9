//! `jevgate-worker`: the reference device worker. Starts a local headless Chromium, connects to
//! a gateway's device-worker channel with a device token (protocol 2) and serves the nine
//! browser tools and the backend primitives until the gateway closes the channel.
//!
//! The token is read from a file or the `JEVGATE_DEVICE_TOKEN` environment variable, never from
//! the command line (other users can read command lines). With `--reconnect` it connects again
//! after a broken connection or a gateway restart. Exit status: 0 when the gateway closed the
//! channel normally or the worker was asked to stop, 1 on a refusal, an unpair or a broken
//! connection, 2 on a usage error.

use std::process::ExitCode;
use std::sync::Arc;

use jevgate::browser::{BrowserTools, LaunchOptions, LocalBrowser};
use jevgate::device::{
    read_device_token, serve_worker, ServeEnd, ToolExecutor, WorkerControl, WorkerOptions,
};

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
    let token = match read_device_token(args.token_file.as_deref()) {
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
    let tools: Arc<dyn ToolExecutor> = Arc::new(BrowserTools::new(Arc::new(browser.clone())));
    let control = Arc::new(WorkerControl::default());
    if args.exit_on_stdin_eof {
        control.stop_on_stdin_eof();
    }
    let end = serve_worker("jevgate-worker", &options, &tools, &control, args.reconnect);
    browser.close();
    match end {
        ServeEnd::Normal => ExitCode::SUCCESS,
        ServeEnd::Failed => ExitCode::from(1),
    }
}
