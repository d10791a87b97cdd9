//! A throw-away Linux desktop for the computer-helper tests (issue 25): scripts/desktop starts
//! Xvfb, a session bus and the AT-SPI bus in a temporary directory; applications started on it
//! (gnome-calculator) expose their accessibility tree there. [`skip`] says why a test cannot run
//! (a failure under `JEVGATE_REQUIRE_DESKTOP=1`, as scripts/test sets).
//!
//! Owns: starting and stopping that desktop (a guard: applications killed and the desktop
//! stopped on every exit path, leaving no process). Never: asserts a behaviour of jevgate.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// Prints why the test is skipped where `cargo test` shows it (a failure when required).
pub fn skip(why: &str) {
    let required = std::env::var("JEVGATE_REQUIRE_DESKTOP").is_ok_and(|v| v == "1");
    assert!(!required, "JEVGATE_REQUIRE_DESKTOP=1 but {why}");
    let _ = writeln!(
        std::io::stderr(),
        "skipped: {why} (scripts/test runs this suite on a throw-away desktop)"
    );
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file()))
}

/// Why a desktop with `apps` cannot be started here, if it cannot (Xvfb, dbus-daemon, the
/// applications and at-spi2-core must be installed).
pub fn missing(apps: &[&str]) -> Option<String> {
    for program in ["Xvfb", "dbus-daemon"].iter().chain(apps) {
        if !on_path(program) {
            return Some(format!("{program} is not installed"));
        }
    }
    if !Path::new("/usr/libexec/at-spi-bus-launcher").exists() {
        return Some("at-spi2-core is not installed".into());
    }
    None
}

/// A desktop from scripts/desktop and the applications started on it; stopped on drop.
pub struct Desk {
    pub dir: tempfile::TempDir,
    pub env: Vec<(String, String)>,
    apps: Vec<Child>,
    /// Process groups of applications that start helpers of their own (Chromium).
    groups: Vec<u32>,
}

impl Desk {
    pub fn start() -> Desk {
        let dir = tempfile::tempdir().expect("temp dir");
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/desktop");
        let out = Command::new(&script)
            .arg("start")
            .arg(dir.path())
            .output()
            .expect("scripts/desktop runs");
        let mut desk = Desk {
            dir,
            env: Vec::new(),
            apps: Vec::new(),
            groups: Vec::new(),
        };
        assert!(
            out.status.success(),
            "scripts/desktop start failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let env = std::fs::read_to_string(desk.dir.path().join("env")).expect("DIR/env");
        for line in env.lines() {
            if let Some((k, v)) = line
                .strip_prefix("export ")
                .and_then(|kv| kv.split_once('='))
            {
                desk.env
                    .push((k.to_string(), v.trim_matches('\'').to_string()));
            }
        }
        desk
    }

    /// A variable of DIR/env (`DISPLAY`, `DBUS_SESSION_BUS_ADDRESS`, …).
    pub fn var(&self, name: &str) -> &str {
        self.env
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .unwrap_or_else(|| panic!("{name} in DIR/env"))
    }

    /// A command with the desktop's environment (and the host's accessibility switches unset).
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut c = Command::new(program);
        c.env_remove("NO_AT_BRIDGE")
            .env_remove("GTK_A11Y")
            .env_remove("AT_SPI_BUS_ADDRESS")
            .envs(self.env.iter().map(|(k, v)| (k, v)));
        c
    }

    /// Starts `program` on the desktop (killed on drop).
    pub fn launch(&mut self, program: &str) {
        let child = self
            .command(program)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("the application starts");
        self.apps.push(child);
    }

    /// Starts Debian's Chromium on the desktop showing `url`, with its browser interface and
    /// web content exposed through AT-SPI, and returns its index for [`Desk::exited`]. What it
    /// takes (found on Chromium 156, issue 25): `ACCESSIBILITY_ENABLED=1` (else it registers
    /// nothing on the accessibility bus: nothing sets `org.a11y.Status.IsEnabled` on this
    /// desktop), `--force-renderer-accessibility` for the page, drawn on Xvfb (not headless);
    /// `--no-sandbox` as root, a throw-away profile under the desktop's directory, no first-run
    /// or default-browser prompts, no GPU. The window fills the screen, so keys sent through
    /// XTest reach it (no window manager: the focus follows the pointer). Its process group is
    /// killed on drop (its zygote and renderers with it).
    pub fn launch_chromium(&mut self, url: &str) -> usize {
        use std::os::unix::process::CommandExt;
        let profile = self.dir.path().join("chromium-profile");
        let child = self
            .command("chromium")
            .env("ACCESSIBILITY_ENABLED", "1")
            .args([
                "--no-sandbox",
                "--force-renderer-accessibility",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-gpu",
                "--disable-sync",
                "--disable-background-networking",
                "--disable-component-update",
                "--password-store=basic",
                "--window-position=0,0",
                "--window-size=1280,800",
            ])
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg(url)
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromium starts");
        self.groups.push(child.id());
        self.apps.push(child);
        self.apps.len() - 1
    }

    /// Whether application `index` (of [`Desk::launch_chromium`]) has exited.
    pub fn exited(&mut self, index: usize) -> bool {
        self.apps[index].try_wait().ok().flatten().is_some()
    }

    /// The accessibility bus's address.
    pub fn a11y_bus(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("a11y-bus"))
            .expect("DIR/a11y-bus")
            .trim()
            .to_string()
    }
}

impl Drop for Desk {
    fn drop(&mut self) {
        for group in &self.groups {
            // Only a real group of ours (never 0 or 1: this process's group or every process).
            if let Ok(pgid) = libc::pid_t::try_from(*group) {
                if pgid > 1 {
                    // SAFETY: kill(2) with a negative pid signals that process group only.
                    unsafe {
                        libc::kill(-pgid, libc::SIGKILL);
                    }
                }
            }
        }
        for app in &mut self.apps {
            let _ = app.kill();
            let _ = app.wait();
        }
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scripts/desktop");
        let _ = Command::new(script)
            .arg("stop")
            .arg(self.dir.path())
            .status();
    }
}
