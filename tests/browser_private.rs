//! The local Chromium is private to its host (issue 12 §1): DevTools runs over a pipe, never a
//! TCP port another local process could attach to; the profile is owner-only (0700); a
//! temporary profile is removed on every exit path — close, a failed launch, Chromium dying
//! under us — and one left by a host killed with SIGKILL is swept by the next launch, while a
//! live process's profile is never touched.

mod support;

use std::collections::HashSet;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use jevgate::browser::*;
use support::{children_of, group_members, track_pid, wait_group_gone, Server};

/// The `--user-data-dir` Chromium `pid` was started with.
fn profile_of(pid: u32) -> PathBuf {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap();
    cmdline
        .split(|&b| b == 0)
        .filter_map(|a| std::str::from_utf8(a).ok())
        .find_map(|a| a.strip_prefix("--user-data-dir="))
        .map(PathBuf::from)
        .expect("Chromium runs with --user-data-dir")
}

/// Socket inodes held open by the processes of group `pgid`.
fn socket_inodes(pgid: u32) -> HashSet<u64> {
    let mut out = HashSet::new();
    for pid in group_members(pgid) {
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            let Ok(link) = std::fs::read_link(fd.path()) else {
                continue;
            };
            if let Some(inode) = link
                .to_str()
                .and_then(|l| l.strip_prefix("socket:["))
                .and_then(|l| l.strip_suffix(']'))
                .and_then(|l| l.parse().ok())
            {
                out.insert(inode);
            }
        }
    }
    out
}

/// `(local address, inode)` of every TCP socket in LISTEN state on this host.
fn listening_tcp() -> Vec<(String, u64)> {
    let mut out = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(table) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            // sl local rem st tx:rx tr:when retrnsmt uid timeout inode
            if f.len() > 9 && f[3] == "0A" {
                if let Ok(inode) = f[9].parse() {
                    out.push((f[1].to_string(), inode));
                }
            }
        }
    }
    out
}

#[test]
fn issue12_local_chromium_listens_on_no_tcp_port_and_has_no_devtools_endpoint() {
    let browser = LocalBrowser::launch(LaunchOptions::default()).unwrap();
    let pid = browser.pid().unwrap();
    track_pid(pid);
    // Make it do real work first (a page load spawns the renderer and network service).
    let server = Server::start();
    browser.navigate(&server.url("/p/buttons")).unwrap();
    let ours = socket_inodes(pid);
    assert!(
        !ours.is_empty(),
        "the DevTools pipe is a socket Chromium holds"
    );
    let listening: Vec<(String, u64)> = listening_tcp()
        .into_iter()
        .filter(|(_, inode)| ours.contains(inode))
        .collect();
    assert!(
        listening.is_empty(),
        "Chromium listens on TCP {listening:?}: any local process could attach"
    );
    let cmdline = String::from_utf8_lossy(&std::fs::read(format!("/proc/{pid}/cmdline")).unwrap())
        .replace('\0', " ");
    assert!(cmdline.contains("--remote-debugging-pipe"), "{cmdline}");
    assert!(!cmdline.contains("--remote-debugging-port"), "{cmdline}");
    let profile = profile_of(pid);
    assert!(
        !profile.join("DevToolsActivePort").exists(),
        "a DevTools port file was written"
    );
    browser.close();
    assert_eq!(
        wait_group_gone(pid, Duration::from_secs(5)),
        Vec::<u32>::new()
    );
}

#[test]
fn issue12_profiles_are_created_owner_only_and_the_temporary_one_is_removed_on_close() {
    let browser = LocalBrowser::launch(LaunchOptions::default()).unwrap();
    let pid = browser.pid().unwrap();
    track_pid(pid);
    let profile = profile_of(pid);
    let mode = std::fs::metadata(&profile).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "temporary profile mode {mode:o}");
    browser.close();
    assert!(!profile.exists(), "the temporary profile outlived close");

    // A persistent profile directory that does not exist yet: every level created 0700.
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("profiles").join("one");
    let browser = LocalBrowser::launch(LaunchOptions {
        profile_dir: Some(dir.clone()),
        ..LaunchOptions::default()
    })
    .unwrap();
    track_pid(browser.pid().unwrap());
    for d in [root.path().join("profiles"), dir.clone()] {
        let mode = std::fs::metadata(&d).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700, "{} mode {mode:o}", d.display());
    }
    browser.close();
    assert!(dir.exists(), "a persistent profile is kept");
}

#[test]
fn issue12_a_failed_launch_removes_its_temporary_profiles_after_the_retry() {
    // Something that is not Chromium: it writes down the profile it was given and exits at once
    // (the start-up failure that is retried once).
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("profiles.log");
    let fake = dir.path().join("fake-chromium");
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\nfor a; do case \"$a\" in --user-data-dir=*) echo \"${{a#--user-data-dir=}}\" >> '{}';; esac; done\nexit 1\n",
            log.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let err = LocalBrowser::launch(LaunchOptions {
        executable: Some(fake),
        launch_timeout: Duration::from_secs(10),
        ..LaunchOptions::default()
    })
    .unwrap_err();
    assert_eq!(err.code(), "BROWSER_UNAVAILABLE");
    let text = std::fs::read_to_string(&log).unwrap();
    let profiles: Vec<&str> = text.lines().collect();
    assert_eq!(profiles.len(), 2, "started once more after the early exit");
    for p in profiles {
        assert!(!Path::new(p).exists(), "{p} left behind by a failed launch");
    }
}

#[test]
fn issue12_chromium_dying_under_the_backend_removes_its_temporary_profile() {
    let browser = LocalBrowser::launch(LaunchOptions::default()).unwrap();
    let pid = browser.pid().unwrap();
    track_pid(pid);
    let profile = profile_of(pid);
    assert!(profile.exists());
    let status = std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    // Nobody calls close: the closed pipe alone ends the group and removes the profile.
    let deadline = Instant::now() + Duration::from_secs(10);
    while profile.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!profile.exists(), "the profile outlived Chromium's crash");
    assert_eq!(
        wait_group_gone(pid, Duration::from_secs(5)),
        Vec::<u32>::new()
    );
    assert_eq!(browser.observe().unwrap_err().code(), "BROWSER_UNAVAILABLE");
    browser.close();
}

/// The Chromium started by the CLI process `cli` (it leads its own process group).
fn browser_of(cli: u32) -> u32 {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        if let Some(pid) = children_of(cli)
            .into_iter()
            .find(|p| group_members(*p).contains(p))
        {
            if group_members(pid).len() > 1 {
                return pid;
            }
        }
        assert!(Instant::now() < deadline, "the CLI never started Chromium");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn issue12_a_host_killed_outright_leaves_a_profile_the_next_launch_sweeps_but_a_live_one_is_kept() {
    let server = Server::start();
    // Another process (the CLI) holds a browser, waiting on a slow page.
    let mut cli = std::process::Command::new(env!("CARGO_BIN_EXE_jevgate"))
        .args(["observe", &server.url("/slow?ms=30000&to=buttons")])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let browser_pid = browser_of(cli.id());
    track_pid(browser_pid);
    let profile = profile_of(browser_pid);
    assert!(profile.exists());

    // A launch here while it lives: its profile is not swept.
    let browser = LocalBrowser::launch(LaunchOptions::default()).unwrap();
    track_pid(browser.pid().unwrap());
    assert!(profile.exists(), "a live process's profile was swept");
    browser.close();

    // SIGKILL: the CLI never cleans up; its watchdog ends Chromium, the profile stays.
    cli.kill().unwrap();
    cli.wait().unwrap();
    assert_eq!(
        wait_group_gone(browser_pid, Duration::from_secs(5)),
        Vec::<u32>::new()
    );
    // (Its profile is left behind now; a launch of a test running in parallel may already
    // have swept it, so this is not asserted.)

    // The next launch (in any process of this user) sweeps it.
    let browser = LocalBrowser::launch(LaunchOptions::default()).unwrap();
    track_pid(browser.pid().unwrap());
    assert!(!profile.exists(), "the stale profile was not swept");
    browser.close();
}
