//! The serve loop of a channel worker command (`jevgate-worker`, `jevgate-computer serve`):
//! connect a [`DeviceWorker`] with an executor, serve until the channel closes, and with
//! `reconnect` connect again after a broken connection or a gateway restart (backoff 0.5 s
//! doubling to 30 s), also when the gateway is at its connection limit (1013) — never after a
//! refusal, an unpair (1008) or a newer connection of the same device (4000).
//! [`WorkerControl`] stops it from another thread (a signal, standard input closing).
//!
//! Owns only that loop and its stop switch; the connection itself is `worker.rs`'s. It must
//! never log a token or a command, and writes one line per connection event to standard error
//! (what a person running the command reads), prefixed with the command's name.

use super::executor::ToolExecutor;
use super::worker::{DeviceWorker, WorkerOptions};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// The longest pause between two reconnection attempts.
pub const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// How a serve loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServeEnd {
    /// Stopped through [`WorkerControl::stop`], or the gateway closed the channel normally
    /// (1000, or 1001 without `reconnect`): exit status 0.
    Normal,
    /// A refusal, an unpair, a replaced or broken connection: exit status 1.
    Failed,
}

/// Stops a serve loop from another thread: closes the live connection and ends any pause.
#[derive(Default)]
pub struct WorkerControl {
    stopping: Mutex<bool>,
    woken: Condvar,
    live: Mutex<Option<Arc<DeviceWorker>>>,
}

impl std::fmt::Debug for WorkerControl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkerControl")
            .field("stopping", &self.stopping())
            .finish_non_exhaustive()
    }
}

impl WorkerControl {
    /// Stops the loop: the live connection is closed (1000) and no new one is made.
    pub fn stop(&self) {
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

    /// Stops the loop when standard input closes (a parent process's lifeline): a detached
    /// thread blocked in `read` until then.
    pub fn stop_on_stdin_eof(self: &Arc<Self>) {
        let control = Arc::clone(self);
        let _ = std::thread::Builder::new()
            .name("stdin-lifeline".into())
            .spawn(move || {
                use std::io::Read;
                let mut sink = [0u8; 256];
                let mut stdin = std::io::stdin();
                while matches!(stdin.read(&mut sink), Ok(n) if n > 0) {}
                control.stop();
            });
    }
}

/// The close code in a refusal (`the gateway refused the worker: 1008 …`), if it is one.
fn refusal_code(e: &crate::Error) -> Option<u16> {
    let text = e.to_string();
    let at = text.find("refused the worker: ")? + "refused the worker: ".len();
    text[at..].split_whitespace().next()?.parse().ok()
}

/// Serves connections with `executor` until stopped, refused, or (without `reconnect`) the first
/// one ends. `name` prefixes the lines written to standard error.
pub fn serve_worker(
    name: &str,
    options: &WorkerOptions,
    executor: &Arc<dyn ToolExecutor>,
    control: &WorkerControl,
    reconnect: bool,
) -> ServeEnd {
    let mut backoff = Duration::from_millis(500);
    let mut connected_once = false;
    loop {
        let worker = match DeviceWorker::connect(options.clone(), Arc::clone(executor)) {
            Ok(w) => Arc::new(w),
            Err(e) => {
                eprintln!("{name}: {} {e}", e.code());
                // A refusal (unpaired, bad token, out of date) or a first failure is final; a
                // gateway at its connection limit (1013 CONNECTION_LIMIT) is tried again later.
                let code = refusal_code(&e);
                let try_later = code == Some(1013);
                if !reconnect || (!try_later && (!connected_once || code.is_some())) {
                    return ServeEnd::Failed;
                }
                if !control.pause(backoff) {
                    return ServeEnd::Normal;
                }
                backoff = (backoff * 2).min(MAX_BACKOFF);
                continue;
            }
        };
        connected_once = true;
        backoff = Duration::from_millis(500);
        eprintln!("{name}: ready device={}", worker.device_id());
        *control.live.lock().unwrap_or_else(|e| e.into_inner()) = Some(Arc::clone(&worker));
        if control.stopping() {
            worker.close();
        }
        let exit = worker.wait();
        *control.live.lock().unwrap_or_else(|e| e.into_inner()) = None;
        eprintln!(
            "{name}: channel closed ({} {})",
            exit.close_code.map_or("-".to_string(), |c| c.to_string()),
            exit.reason
        );
        if control.stopping() {
            return ServeEnd::Normal;
        }
        // 1008 (unpaired, refused) and 4000 (replaced by a newer connection) are final; a
        // gateway going away (1001) or a broken connection is worth reconnecting to.
        let final_close = matches!(exit.close_code, Some(1008) | Some(4000));
        if !reconnect || final_close {
            let normal = matches!(exit.close_code, Some(1000) | Some(1001));
            return if normal {
                ServeEnd::Normal
            } else {
                ServeEnd::Failed
            };
        }
        if !control.pause(backoff) {
            return ServeEnd::Normal;
        }
    }
}

/// A worker command's device token: the file at `path` (trimmed), else the
/// `JEVGATE_DEVICE_TOKEN` environment variable — never a command-line argument (other users can
/// read command lines). `Err` with a message for a person (never the token).
pub fn read_device_token(path: Option<&str>) -> Result<super::DeviceToken, String> {
    let raw = match path {
        Some(path) => std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read the token file: {}", e.kind()))?,
        None => std::env::var("JEVGATE_DEVICE_TOKEN")
            .map_err(|_| "no token: pass --token-file or set JEVGATE_DEVICE_TOKEN".to_string())?,
    };
    let token = raw.trim();
    if token.is_empty() {
        return Err("the device token is empty".into());
    }
    Ok(super::DeviceToken::new(token))
}
