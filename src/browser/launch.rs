//! Finding, starting and ending a local Chromium process (R-BRW local backend, issue 8 §1).
//!
//! This module owns the child process: where the executable comes from, the command line that
//! keeps it headless and off the network, reading the DevTools endpoint from its stderr, its
//! fresh profile directory, and killing and reaping it (and every process it started) on
//! close and on drop. It never speaks the DevTools protocol and never reads a page.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::{Error, Result};

/// How a local Chromium is started.
///
/// ```
/// let opts = jevgate::browser::LaunchOptions::default();
/// assert!(opts.executable.is_none());
/// assert_eq!(opts.window_size, (1280, 800));
/// ```
#[derive(Debug, Clone)]
pub struct LaunchOptions {
    /// The Chromium executable; `None` searches `JEVGATE_CHROMIUM`, `/usr/bin/chromium`,
    /// `chromium`, `chromium-browser`, `google-chrome` in that order.
    pub executable: Option<PathBuf>,
    /// A persistent profile directory (authenticated sessions); `None` uses a fresh temporary
    /// directory that is removed on close.
    pub profile_dir: Option<PathBuf>,
    /// The viewport size in CSS pixels.
    pub window_size: (u32, u32),
    /// How long Chromium may take to print its DevTools endpoint.
    pub launch_timeout: Duration,
    /// The deadline of every single DevTools call.
    pub call_timeout: Duration,
    /// How long a navigation may take to settle before `tab_navigate` returns unsettled.
    pub navigation_timeout: Duration,
    /// Extra command-line flags, appended after jevgate's own.
    pub extra_args: Vec<String>,
}

impl Default for LaunchOptions {
    fn default() -> LaunchOptions {
        LaunchOptions {
            executable: None,
            profile_dir: None,
            window_size: (1280, 800),
            launch_timeout: Duration::from_secs(20),
            call_timeout: Duration::from_secs(10),
            navigation_timeout: Duration::from_secs(30),
            extra_args: Vec::new(),
        }
    }
}

/// Finds the Chromium executable: `explicit`, then `JEVGATE_CHROMIUM`, then the usual names.
///
/// ```
/// // A path that does not exist is never "found".
/// let found = jevgate::browser::find_chromium(Some(std::path::Path::new("/nonexistent/chrome")));
/// assert_eq!(found.unwrap_err().code(), "BROWSER_UNAVAILABLE");
/// ```
pub fn find_chromium(explicit: Option<&Path>) -> Result<PathBuf> {
    if let Some(path) = explicit {
        return runnable(path)
            .ok_or_else(|| unavailable("the configured Chromium path is not an executable file"));
    }
    if let Some(env) = std::env::var_os("JEVGATE_CHROMIUM").filter(|v| !v.is_empty()) {
        return runnable(Path::new(&env))
            .ok_or_else(|| unavailable("JEVGATE_CHROMIUM is not an executable file"));
    }
    if let Some(p) = runnable(Path::new("/usr/bin/chromium")) {
        return Ok(p);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for name in [
        "chromium",
        "chromium-browser",
        "google-chrome",
        "google-chrome-stable",
    ] {
        for dir in std::env::split_paths(&path) {
            if let Some(p) = runnable(&dir.join(name)) {
                return Ok(p);
            }
        }
    }
    Err(unavailable(
        "no Chromium found (set JEVGATE_CHROMIUM or install chromium)",
    ))
}

fn runnable(path: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(path).ok()?;
    (meta.is_file() && meta.permissions().mode() & 0o111 != 0).then(|| path.to_path_buf())
}

fn unavailable(reason: &str) -> Error {
    Error::BrowserUnavailable {
        reason: reason.to_string(),
    }
}

fn running_as_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|euid| euid == "0"))
        })
        .unwrap_or(false)
}

/// A running Chromium: the child process (leader of its own process group), its DevTools
/// browser endpoint, and the profile directory it owns.
pub(crate) struct ChromiumProcess {
    child: Option<Child>,
    /// `sh -c 'read x; kill -KILL -<pgid>'` reading a pipe only we hold: if this process
    /// dies without closing the browser, the pipe closes and the watchdog ends the group.
    watchdog: Option<Child>,
    pid: u32,
    endpoint: String,
    temp_profile: Option<PathBuf>,
    stderr_drain: Option<JoinHandle<()>>,
}

static PROFILE_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Why one start attempt failed.
enum Started {
    /// Chromium closed its output before printing the endpoint (worth one more try).
    ExitedEarly,
    /// Anything else.
    Failed(Error),
}

impl Started {
    fn into_error(self) -> Error {
        match self {
            Started::ExitedEarly => {
                unavailable("Chromium exited before reporting its DevTools endpoint")
            }
            Started::Failed(e) => e,
        }
    }
}

impl From<Error> for Started {
    fn from(e: Error) -> Started {
        Started::Failed(e)
    }
}

impl ChromiumProcess {
    /// Starts Chromium and waits (bounded) for `DevTools listening on ws://…`. A Chromium that
    /// exits before reporting it (a start-up failure seen on loaded machines) is started once
    /// more before `BROWSER_UNAVAILABLE` is reported.
    pub(crate) fn start(opts: &LaunchOptions) -> Result<ChromiumProcess> {
        let exe = find_chromium(opts.executable.as_deref())?;
        match ChromiumProcess::start_once(opts, &exe) {
            Err(Started::ExitedEarly) => {
                log::warn!("Chromium exited during start-up; starting it once more");
                ChromiumProcess::start_once(opts, &exe).map_err(Started::into_error)
            }
            other => other.map_err(Started::into_error),
        }
    }

    fn start_once(
        opts: &LaunchOptions,
        exe: &Path,
    ) -> std::result::Result<ChromiumProcess, Started> {
        let (profile, temp_profile) = match &opts.profile_dir {
            Some(dir) => (dir.clone(), None),
            None => {
                let nanos = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.subsec_nanos())
                    .unwrap_or(0);
                let dir = std::env::temp_dir().join(format!(
                    "jevgate-chromium-{}-{}-{nanos}",
                    std::process::id(),
                    PROFILE_COUNTER.fetch_add(1, Ordering::Relaxed)
                ));
                (dir.clone(), Some(dir))
            }
        };
        std::fs::create_dir_all(&profile).map_err(|e| {
            unavailable(&format!(
                "cannot create the profile directory: {}",
                e.kind()
            ))
        })?;
        let mut cmd = Command::new(exe);
        cmd.arg("--headless")
            .arg("--remote-debugging-port=0")
            .arg(format!("--user-data-dir={}", profile.display()))
            .args([
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-extensions",
                "--disable-default-apps",
                "--disable-dev-shm-usage",
                "--mute-audio",
                "--hide-scrollbars",
                "--password-store=basic",
                // History navigations load for real (a restored page would keep stale refs
                // alive and skip the load events the settle wait relies on).
                "--disable-back-forward-cache",
                // A wheel event scrolls at once, so page_scroll returns on the final position.
                "--disable-smooth-scrolling",
                "--disable-features=BackForwardCache",
            ])
            .arg(format!(
                "--window-size={},{}",
                opts.window_size.0, opts.window_size.1
            ));
        if running_as_root() {
            cmd.arg("--no-sandbox");
        }
        cmd.args(&opts.extra_args)
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        {
            use std::os::unix::process::CommandExt;
            // Its own process group, so close() can end the renderers and zygotes too.
            cmd.process_group(0);
        }
        let mut child = cmd.spawn().map_err(|e| {
            if let Some(dir) = &temp_profile {
                let _ = std::fs::remove_dir_all(dir);
            }
            unavailable(&format!("Chromium failed to start: {}", e.kind()))
        })?;
        let pid = child.id();
        let stderr = child.stderr.take();
        let (tx, rx) = mpsc::channel::<String>();
        let drain = std::thread::Builder::new()
            .name("jevgate-chromium-stderr".into())
            .spawn(move || {
                let Some(stderr) = stderr else { return };
                let mut sent = false;
                let mut reader = BufReader::new(stderr);
                let mut line = Vec::new();
                // Reads until Chromium closes stderr (it exits); the endpoint line is sent once.
                loop {
                    line.clear();
                    match reader.read_until(b'\n', &mut line) {
                        Ok(0) | Err(_) => break,
                        Ok(_) => {
                            if !sent {
                                let text = String::from_utf8_lossy(&line);
                                if let Some(at) = text.find("DevTools listening on ") {
                                    let url = text[at + "DevTools listening on ".len()..].trim();
                                    sent = tx.send(url.to_string()).is_ok();
                                }
                            }
                        }
                    }
                }
            })
            .map_err(|e| unavailable(&format!("cannot start a thread: {}", e.kind())))?;
        let watchdog = Command::new("sh")
            .args(["-c", &format!("read x; kill -KILL -{pid} 2>/dev/null")])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok();
        let mut process = ChromiumProcess {
            child: Some(child),
            watchdog,
            pid,
            endpoint: String::new(),
            temp_profile,
            stderr_drain: Some(drain),
        };
        match rx.recv_timeout(opts.launch_timeout) {
            Ok(url) if url.starts_with("ws://") => {
                process.endpoint = url;
                Ok(process)
            }
            Ok(_) => {
                process.kill();
                Err(unavailable("Chromium printed an unexpected DevTools endpoint").into())
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                process.kill();
                Err(unavailable("Chromium did not report its DevTools endpoint in time").into())
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                process.kill();
                Err(Started::ExitedEarly)
            }
        }
    }

    /// The `ws://127.0.0.1:<port>/devtools/browser/<id>` endpoint.
    pub(crate) fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The process id of the browser process (the leader of its process group).
    pub(crate) fn pid(&self) -> u32 {
        self.pid
    }

    /// Waits up to `grace` for the browser process to exit on its own (after `Browser.close`).
    pub(crate) fn wait_exit(&mut self, grace: Duration) {
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            // Only looks: /proc/<pid>/stat shows a zombie without reaping it, so the process
            // group stays valid for the group kill below.
            if !alive(self.pid) {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Kills the whole process group, reaps the browser process, joins the stderr reader and
    /// removes a temporary profile. Idempotent.
    pub(crate) fn kill(&mut self) {
        if let Some(mut watchdog) = self.watchdog.take() {
            // Ended first, so it can never fire at a reused process group id later.
            let _ = watchdog.kill();
            let _ = watchdog.wait();
        }
        if let Some(mut child) = self.child.take() {
            // The group id equals the leader's pid, which stays reserved until we reap it.
            let group_killed = Command::new("kill")
                .args(["-KILL", "--", &format!("-{}", self.pid)])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .map(|s| s.success())
                .unwrap_or(false);
            if !group_killed {
                let _ = child.kill();
            }
            let _ = child.wait();
        }
        if let Some(drain) = self.stderr_drain.take() {
            // The reader ends at EOF, once every process holding Chromium's stderr is gone;
            // a process that escaped the group could hold it open, so the wait is bounded.
            let deadline = Instant::now() + Duration::from_secs(2);
            while !drain.is_finished() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
            if drain.is_finished() {
                let _ = drain.join();
            }
        }
        if let Some(dir) = self.temp_profile.take() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// The process exists and is not a zombie.
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            // Field 3 (after the parenthesised command name) is the state.
            let state = stat
                .rsplit(')')
                .next()
                .and_then(|rest| rest.split_whitespace().next());
            !matches!(state, Some("Z") | Some("X") | None)
        }
        Err(_) => false,
    }
}

impl Drop for ChromiumProcess {
    fn drop(&mut self) {
        self.kill();
    }
}
