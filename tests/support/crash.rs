//! Processes that die by SIGKILL at a named point, for the crash tests (R-TSK-RCPT, R-RUN): a
//! test re-runs its own binary as a child that runs one `#[test]` function ([`CrashChild`]),
//! which kills itself ([`kill_self`]) at a boundary of the task run loop ([`kill_at`]:
//! `before_checkpoint`, `after_checkpoint`, `after_dispatch`, `after_settle`) or of its device
//! executor; it tells the parent what it does in lines starting [`SAID`] ([`say`]), which the
//! parent waits for ([`CrashChild::expect`]) before it checks the kill ([`CrashChild::killed`]).
//! The boundary is reached by the code under test, never guessed with a sleep.
//!
//! Owns: spawning, hearing and waiting for such a child. Never: asserts a behaviour of jevgate
//! (the tests do) or kills a process it did not start.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

/// What starts a line the child says to its parent (the harness may print its own lines).
pub const SAID: &str = "CRASH: ";

/// This process dies by SIGKILL now: no destructor, no flush, no goodbye.
pub fn kill_self() -> ! {
    // SAFETY: getpid and kill have no preconditions.
    unsafe {
        libc::kill(libc::getpid(), libc::SIGKILL);
    }
    loop {
        std::thread::park();
    }
}

/// Says `line` to the parent (flushed at once: the process may die right after).
pub fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{SAID}{line}");
    let _ = out.flush();
}

/// Installs the checkpoint hook of `tasks` that kills this process at the `n`-th (1-based)
/// time a dispatch passes `boundary`.
pub fn kill_at(tasks: &jevgate::task::Tasks<'_>, boundary: &'static str, n: u32) {
    let seen = AtomicU32::new(0);
    jevgate::unstable::set_checkpoint_hook(
        tasks,
        Some(Arc::new(move |at: &'static str| {
            if at == boundary && seen.fetch_add(1, Ordering::SeqCst) + 1 == n {
                kill_self();
            }
        })),
    );
}

/// A child running one test function of this test binary (`--exact`), with `envs` telling it
/// what to do; killed and reaped on drop if it still runs.
pub struct CrashChild {
    child: Child,
    lines: mpsc::Receiver<String>,
    /// Every line it said so far (without [`SAID`]).
    pub said: Vec<String>,
}

impl CrashChild {
    pub fn spawn(test: &str, envs: &[(&str, &OsStr)]) -> CrashChild {
        let mut command = Command::new(std::env::current_exe().unwrap());
        command
            .args(["--exact", test, "--nocapture", "--test-threads=1"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        for (k, v) in envs {
            command.env(k, v);
        }
        let mut child = command.spawn().expect("the child test process starts");
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                // The harness's own words may come first on the line.
                if let Some((_, l)) = line.split_once(SAID) {
                    let _ = tx.send(l.to_string());
                }
            }
        });
        CrashChild {
            child,
            lines,
            said: Vec::new(),
        }
    }

    /// Waits (bounded by `within`) until the child says a line starting with `prefix`; the rest
    /// of that line.
    pub fn expect(&mut self, prefix: &str, within: Duration) -> String {
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(l) => {
                    self.said.push(l.clone());
                    if let Some(rest) = l.strip_prefix(prefix) {
                        return rest.to_string();
                    }
                }
                Err(_) => panic!("the child never said {prefix:?}; it said {:?}", self.said),
            }
        }
    }

    /// Waits (bounded by `within`) for the child to end and asserts it died by SIGKILL; what it
    /// said.
    pub fn killed(mut self, within: Duration) -> Vec<String> {
        let Some(status) = self.wait(within) else {
            panic!("the child did not die in time; it said {:?}", self.said);
        };
        self.said.extend(self.lines.try_iter());
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(
            status.signal(),
            Some(libc::SIGKILL),
            "the child was not killed ({status:?}); it said {:?}",
            self.said
        );
        std::mem::take(&mut self.said)
    }

    /// Its exit status, or `None` when it still ran at the deadline (then killed by `drop`:
    /// a kill of ours must never pass for the child's own).
    fn wait(&mut self, within: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + within;
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                return Some(s);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for CrashChild {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
