//! Finding, starting and ending a local Chromium process (R-BRW local backend, issue 8 §1).
//!
//! This module owns the child process: where the executable comes from, the command line that
//! keeps it headless and off the network, the DevTools pipe it is handed (fds 3 and 4, never a
//! TCP port), its owner-only (0700) profile directory, the sweep of temporary profiles whose
//! process is gone, and killing and reaping it (and every process it started) on close and on
//! drop. It never speaks the DevTools protocol and never reads a page.

use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::clock::{self, Clock, Grace, SharedClock};
use crate::store::temp_dirs;
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
    /// A persistent profile directory (authenticated sessions; created mode 0700 when missing);
    /// `None` uses a fresh temporary directory, mode 0700, removed on close, on drop, after a
    /// failed launch and when Chromium exits by itself — and, after a host killed outright, by
    /// the next launch in any process of the same user.
    pub profile_dir: Option<PathBuf>,
    /// The viewport size in CSS pixels.
    pub window_size: (u32, u32),
    /// How long Chromium may take to answer its first DevTools call.
    pub launch_timeout: Duration,
    /// The deadline of every single DevTools call.
    pub call_timeout: Duration,
    /// How long a navigation may take to settle before `tab_navigate` returns unsettled.
    pub navigation_timeout: Duration,
    /// Extra command-line flags, appended after jevgate's own. Flags that would open a
    /// DevTools endpoint or move the profile (`--remote-debugging-*`, `--remote-allow-origins`,
    /// `--user-data-dir`) are refused with `INVALID_ARGUMENT`: the DevTools pipe stays the
    /// only way in.
    pub extra_args: Vec<String>,
    /// Show a window (needs a display: without one Chromium does not start and the launch is
    /// `BROWSER_UNAVAILABLE`). Default `false`: headless.
    pub headed: bool,
    /// The clock every deadline and timeout of the browser is on (start-up, DevTools calls,
    /// navigation settling, waits, close); the system clock unless a test or simulation gives
    /// its own (R-CLK).
    pub clock: SharedClock,
    /// Strict data handling (seed 001 "Strict data handling"): the browser keeps no console or
    /// network journal (the DevTools domains that feed it are never enabled) and refuses
    /// downloads (nothing is written to disk). Default `false`.
    pub strict: bool,
    /// At most this many tabs at once (default 10; 0 reads as 1), the page's own popups
    /// included: `tabs new` past it is `TAB_LIMIT` and a popup past it is closed at once
    /// (issue 20 item 7).
    pub max_tabs: usize,
    /// The largest file `set_input_files` hands the page, in bytes (default 100 MiB): each file
    /// is copied into the session's private staging directory first, and a larger one is refused
    /// with `INVALID_ARGUMENT` (issue 20 item 5).
    pub max_upload_bytes: u64,
}

/// The default of [`LaunchOptions::max_tabs`].
pub const DEFAULT_MAX_TABS: usize = 10;
/// The default of [`LaunchOptions::max_upload_bytes`] (100 MiB).
pub const DEFAULT_MAX_UPLOAD_BYTES: u64 = 100 << 20;

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
            headed: false,
            clock: clock::system(),
            strict: false,
            max_tabs: DEFAULT_MAX_TABS,
            max_upload_bytes: DEFAULT_MAX_UPLOAD_BYTES,
        }
    }
}

/// The JSON shape of the launch options the C ABI takes.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct LaunchJson {
    #[serde(default)]
    executable: Option<String>,
    #[serde(default)]
    profile_dir: Option<String>,
    #[serde(default)]
    max_tabs: Option<usize>,
    #[serde(default)]
    max_upload_bytes: Option<u64>,
}

impl LaunchOptions {
    /// The defaults with `{"executable"?: path, "profileDir"?: path, "maxTabs"?: n,
    /// "maxUploadBytes"?: n}` applied, or `INVALID_ARGUMENT` (`options_json`).
    ///
    /// ```
    /// let o = jevgate::browser::LaunchOptions::from_json(r#"{"maxTabs": 3}"#)?;
    /// assert_eq!((o.max_tabs, o.max_upload_bytes), (3, 100 << 20));
    /// # Ok::<(), jevgate::Error>(())
    /// ```
    pub fn from_json(json: &str) -> Result<LaunchOptions> {
        let o: LaunchJson = crate::args::from_json(
            "options_json",
            json,
            "{executable?, profileDir?, maxTabs?, maxUploadBytes?}",
        )?;
        let d = LaunchOptions::default();
        Ok(LaunchOptions {
            executable: o.executable.map(Into::into),
            profile_dir: o.profile_dir.map(Into::into),
            max_tabs: o.max_tabs.unwrap_or(d.max_tabs),
            max_upload_bytes: o.max_upload_bytes.unwrap_or(d.max_upload_bytes),
            ..d
        })
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

/// Flags a host may not pass in `extra_args`: each would open a second way into the browser
/// (a DevTools TCP port, a cross-origin DevTools client) or move the profile out of our 0700
/// directory (issue 12 item 1). Matched case-insensitively on the flag name, with one or two
/// leading dashes, so `-remote-debugging-port=0` is refused too.
const REFUSED_FLAGS: [&str; 3] = ["remote-debugging-", "remote-allow-origins", "user-data-dir"];

fn check_extra_args(args: &[String]) -> Result<()> {
    for arg in args {
        let name = arg.trim_start_matches('-').to_ascii_lowercase();
        if arg.starts_with('-') && REFUSED_FLAGS.iter().any(|f| name.starts_with(f)) {
            return Err(Error::InvalidArgument {
                name: "extra_args",
                reason: "a flag that opens a DevTools endpoint or moves the profile is refused"
                    .into(),
            });
        }
    }
    Ok(())
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

/// A running Chromium: the child process (leader of its own process group) and the profile
/// directory it owns. Its DevTools connection is the socket [`ChromiumProcess::spawn`] returns.
pub(crate) struct ChromiumProcess {
    child: Option<Child>,
    /// `sh -c 'read x; kill -KILL -<pgid>'` reading a pipe only we hold: if this process
    /// dies without closing the browser, the pipe closes and the watchdog ends the group.
    watchdog: Option<Child>,
    pid: u32,
    temp_profile: Option<PathBuf>,
    /// The profile directory in use (temporary or the caller's).
    profile: PathBuf,
}

static PROFILE_COUNTER: AtomicU64 = AtomicU64::new(0);

/// The name prefix of the temporary profiles jevgate creates in the temporary directory:
/// `jevgate-chromium-p<pid>-t<start time>-<counter>-<nanos>` (`store::temp_dirs`), so the next
/// start can tell a profile whose process is gone (swept) from a live one (kept).
const PROFILE_PREFIX: &str = "jevgate-chromium";

/// Why one start attempt failed.
pub(crate) enum Started {
    /// Chromium closed its end of the DevTools pipe before answering (worth one more try).
    ExitedEarly,
    /// Anything else.
    Failed(Error),
}

impl Started {
    pub(crate) fn into_error(self) -> Error {
        match self {
            Started::ExitedEarly => {
                unavailable("Chromium exited before answering on its DevTools pipe")
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
    /// Starts Chromium with `--remote-debugging-pipe`: the DevTools protocol runs over one end
    /// of an anonymous socket pair, which Chromium sees as fds 3 (it reads) and 4 (it writes);
    /// the other end is returned. No TCP port, no `DevToolsActivePort` file: nothing another
    /// local process can connect to. A temporary profile is created mode 0700 (after sweeping
    /// the stale ones of processes that are gone) and removed on every exit path.
    pub(crate) fn spawn(opts: &LaunchOptions, exe: &Path) -> Result<(ChromiumProcess, UnixStream)> {
        check_extra_args(&opts.extra_args)?;
        let (profile, temp_profile) = match &opts.profile_dir {
            Some(dir) => {
                create_private_dir(dir, true)?;
                (dir.clone(), None)
            }
            None => {
                let tmp = std::env::temp_dir();
                sweep_stale_profiles(&tmp);
                let dir = new_temp_profile(&tmp, &*opts.clock)?;
                (dir.clone(), Some(dir))
            }
        };
        let cleanup = |e: Error| {
            if let Some(dir) = &temp_profile {
                let _ = std::fs::remove_dir_all(dir);
            }
            e
        };
        let (ours, theirs) = UnixStream::pair().map_err(|e| {
            cleanup(unavailable(&format!(
                "cannot create the DevTools pipe: {}",
                e.kind()
            )))
        })?;
        // The socket reaches Chromium as the shell's stdin; the shell moves it to fds 3 and 4
        // and execs Chromium in its place (same pid, same process group), so no unsafe
        // pre-exec code is needed. Our end is a socket: a write after Chromium died is an
        // EPIPE error (MSG_NOSIGNAL), never a SIGPIPE in the host. `umask 077`: whatever the
        // host's umask, every file Chromium writes (profile, cookies, downloads) is
        // owner-only (issue 20 item 1).
        let mut cmd = Command::new("/bin/sh");
        cmd.arg("-c")
            .arg(r#"umask 077; exec "$0" "$@" 3<&0 4>&0 0</dev/null"#)
            .arg(exe)
            .args((!opts.headed).then_some("--headless"))
            .arg("--remote-debugging-pipe")
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
            .stdin(Stdio::from(OwnedFd::from(theirs)))
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        {
            use std::os::unix::process::CommandExt;
            // Its own process group, so close() can end the renderers and zygotes too.
            cmd.process_group(0);
        }
        let child = cmd.spawn().map_err(|e| {
            cleanup(unavailable(&format!(
                "Chromium failed to start: {}",
                e.kind()
            )))
        })?;
        // `cmd` still holds Chromium's end of the socket: dropped now, so Chromium's exit is
        // seen as end-of-file on ours.
        drop(cmd);
        let pid = child.id();
        let watchdog = Command::new("sh")
            .args(["-c", &format!("read x; kill -KILL -{pid} 2>/dev/null")])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok();
        Ok((
            ChromiumProcess {
                child: Some(child),
                watchdog,
                pid,
                temp_profile,
                profile: profile.clone(),
            },
            ours,
        ))
    }

    /// The process id of the browser process (the leader of its process group).
    pub(crate) fn pid(&self) -> u32 {
        self.pid
    }

    /// The profile directory the browser runs with.
    pub(crate) fn profile(&self) -> &Path {
        &self.profile
    }

    /// Waits up to `grace` on `clock` for the browser process to exit on its own (after
    /// `Browser.close`); a [`Grace`], so it ends on a manual clock nobody advances too.
    pub(crate) fn wait_exit(&mut self, clock: &dyn Clock, grace: Duration) {
        let mut grace = Grace::new(clock, grace);
        // Only looks: /proc/<pid>/stat shows a zombie without reaping it, so the process
        // group stays valid for the group kill below.
        while alive(self.pid) {
            let Some(slice) = grace.next(Duration::from_millis(10)) else {
                return;
            };
            std::thread::sleep(slice);
        }
    }

    /// Kills the whole process group, reaps the browser process and removes a temporary
    /// profile. Idempotent; never blocks on Chromium (SIGKILL, then the reap of a dead child).
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
        if let Some(dir) = self.temp_profile.take() {
            // A renderer killed with the group may still be exiting; a second pass removes
            // what it wrote meanwhile.
            if std::fs::remove_dir_all(&dir).is_err() {
                let _ = std::fs::remove_dir_all(&dir);
            }
        }
    }
}

/// Creates `dir` mode 0700 (owner only: cookies and saved state live there). `recursive`
/// creates missing parents with the same mode; an existing directory is left as it is.
pub(crate) fn create_private_dir(dir: &Path, recursive: bool) -> Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(recursive)
        .mode(0o700)
        .create(dir)
        .map_err(|e| {
            unavailable(&format!(
                "cannot create the profile directory: {}",
                e.kind()
            ))
        })
}

/// A fresh temporary profile directory named after this process (pid and start time), created
/// mode 0700; never an existing path (a name taken by anything else is skipped).
fn new_temp_profile(tmp: &Path, clock: &dyn Clock) -> Result<PathBuf> {
    let mut last = None;
    for _ in 0..16 {
        let nanos = clock
            .wall()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let counter = PROFILE_COUNTER.fetch_add(1, Ordering::Relaxed);
        let dir = tmp.join(temp_dirs::owned_name(
            PROFILE_PREFIX,
            &format!("{counter}-{nanos}"),
        ));
        match create_private_dir(&dir, false) {
            Ok(()) => return Ok(dir),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| unavailable("cannot create the profile directory")))
}

/// Removes the temporary profiles left in `tmp` by jevgate processes that are gone (a host
/// killed with SIGKILL never ran its cleanup): only directories named with our prefix, owned
/// by this user, whose recorded process (pid and start time) no longer runs. A live process's
/// profile, a name that does not parse, a symlink or anything of another user is never touched
/// (`store::temp_dirs::sweep`). Returns how many were removed.
pub(crate) fn sweep_stale_profiles(tmp: &Path) -> usize {
    let removed = temp_dirs::sweep(tmp, PROFILE_PREFIX);
    if removed > 0 {
        log::info!("removed {removed} stale temporary Chromium profile(s)");
    }
    removed
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::temp_dirs::{owner_of, start_time};
    use std::os::unix::fs::PermissionsExt;

    const TEMP_PREFIX: &str = "jevgate-chromium-p";

    #[test]
    fn extra_args_cannot_reopen_a_devtools_endpoint_or_move_the_profile() {
        for flag in [
            "--remote-debugging-port=0",
            "--REMOTE-DEBUGGING-PORT=9222",
            "-remote-debugging-address=0.0.0.0",
            "--remote-debugging-pipe",
            "--remote-allow-origins=*",
            "--user-data-dir=/tmp/x",
        ] {
            let err = check_extra_args(&["--mute-audio".into(), flag.into()]).unwrap_err();
            assert_eq!(err.code(), "INVALID_ARGUMENT", "{flag}");
        }
        check_extra_args(&["--lang=th".into(), "remote-debugging-port".into()]).unwrap();
    }

    fn gone_pid() -> u32 {
        let mut child = Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        pid
    }

    #[test]
    fn issue12_sweep_removes_only_our_stale_profiles() {
        let tmp = tempfile::tempdir().unwrap();
        let me = std::process::id();
        let my_start = start_time(me).expect("our own start time");
        let dead = gone_pid();
        let path = |name: String| tmp.path().join(name);
        let stale = path(format!("{TEMP_PREFIX}{dead}-t123-0-1"));
        let reused = path(format!("{TEMP_PREFIX}{me}-t{}-0-1", my_start + 1));
        let live = path(format!("{TEMP_PREFIX}{me}-t{my_start}-0-1"));
        let odd = path(format!("{TEMP_PREFIX}{dead}-x"));
        let old_style = path(format!("jevgate-chromium-{dead}-0-1"));
        let other = path(format!("not-ours-{dead}"));
        for d in [&stale, &reused, &live, &odd, &old_style, &other] {
            std::fs::create_dir(d).unwrap();
            std::fs::write(d.join("Cookies"), "x").unwrap();
        }
        // A file and a symlink wearing a stale name: never followed, never removed.
        let file = path(format!("{TEMP_PREFIX}{dead}-t1-0-2"));
        std::fs::write(&file, "x").unwrap();
        let link = path(format!("{TEMP_PREFIX}{dead}-t1-0-3"));
        std::os::unix::fs::symlink(&other, &link).unwrap();
        // Another user's directory (only when we may give one away: running as root).
        let foreign = path(format!("{TEMP_PREFIX}{dead}-t1-0-4"));
        std::fs::create_dir(&foreign).unwrap();
        let foreign_ok = std::os::unix::fs::chown(&foreign, Some(65534), Some(65534)).is_ok();

        let removed = sweep_stale_profiles(tmp.path());
        assert!(!stale.exists(), "a dead process's profile is swept");
        assert!(
            !reused.exists(),
            "a reused pid (other start time) is not our process"
        );
        assert_eq!(removed, if foreign_ok { 2 } else { 3 });
        for kept in [&live, &odd, &old_style, &other, &file, &link] {
            assert!(
                std::fs::symlink_metadata(kept).is_ok(),
                "{}",
                kept.display()
            );
        }
        assert!(
            other.join("Cookies").exists(),
            "a symlink is never followed"
        );
        if foreign_ok {
            assert!(
                foreign.exists(),
                "another user's directory is never removed"
            );
        }
    }

    #[test]
    fn issue12_temporary_profiles_are_created_0700_never_reusing_a_path() {
        let tmp = tempfile::tempdir().unwrap();
        let a = new_temp_profile(tmp.path(), &crate::clock::SystemClock::new()).unwrap();
        let b = new_temp_profile(tmp.path(), &crate::clock::SystemClock::new()).unwrap();
        assert_ne!(a, b);
        for d in [&a, &b] {
            let mode = std::fs::metadata(d).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o700);
            let name = d.file_name().unwrap().to_str().unwrap();
            assert_eq!(
                owner_of(name, PROFILE_PREFIX),
                Some((std::process::id(), start_time(std::process::id()).unwrap()))
            );
        }
        // Ours and alive: kept.
        assert_eq!(sweep_stale_profiles(tmp.path()), 0);
        assert!(a.exists() && b.exists());
    }
}
