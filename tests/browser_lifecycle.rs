//! The local Chromium's lifetime (issue 8 §1) and screenshots (R-DEV-CAPS): unavailable
//! browser, a browser killed under the backend, no process left after close, screenshots under
//! the cap.

mod support;

use jevgate::browser::*;
use std::time::{Duration, Instant};
use support::{group_members, shared_browser, track_pid, wait_group_gone, Closing, Server};

#[test]
fn r_brw_launch_without_chromium_is_browser_unavailable() {
    let opts = LaunchOptions {
        executable: Some("/nonexistent/chromium".into()),
        ..LaunchOptions::default()
    };
    let err = LocalBrowser::launch(opts).expect_err("no browser");
    assert_eq!(err.code(), "BROWSER_UNAVAILABLE");
    assert_eq!(err.family(), jevgate::ErrorFamily::Browser);
    // Something that is not Chromium: it never prints an endpoint and exits.
    let opts = LaunchOptions {
        executable: Some("/bin/true".into()),
        launch_timeout: Duration::from_secs(5),
        ..LaunchOptions::default()
    };
    let err = LocalBrowser::launch(opts).expect_err("not a browser");
    assert_eq!(err.code(), "BROWSER_UNAVAILABLE");
}

#[test]
fn r_brw_close_leaves_no_chromium_process_and_drop_closes_too() {
    let browser = LocalBrowser::launch(LaunchOptions::default()).unwrap();
    let pid = browser.pid().unwrap();
    track_pid(pid);
    assert!(
        group_members(pid).len() > 1,
        "Chromium runs several processes"
    );
    browser.close();
    assert_eq!(
        wait_group_gone(pid, Duration::from_secs(5)),
        Vec::<u32>::new()
    );
    assert_eq!(browser.observe().unwrap_err().code(), "BROWSER_UNAVAILABLE");
    browser.close(); // idempotent

    let dropped = LocalBrowser::launch(LaunchOptions::default()).unwrap();
    let pid = dropped.pid().unwrap();
    track_pid(pid);
    drop(dropped);
    assert_eq!(
        wait_group_gone(pid, Duration::from_secs(5)),
        Vec::<u32>::new()
    );
}

#[test]
fn r_brw_chromium_killed_under_the_backend_is_a_clear_error_not_a_hang() {
    let server = Server::start();
    let browser = LocalBrowser::launch(LaunchOptions::default()).unwrap();
    let pid = browser.pid().unwrap();
    track_pid(pid);
    browser.navigate(&server.url("/p/buttons")).unwrap();
    let obs = browser.observe().unwrap();
    let before = format!("before-kill-{pid}");
    browser
        .page_click(ClickArgs {
            operation_id: before.clone(),
            generation: obs.generation,
            reference: "e1".into(),
        })
        .unwrap();
    let status = std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let started = Instant::now();
    // Every call fails fast with BROWSER_UNAVAILABLE (bounded polling of real state: the
    // connection drop is noticed by the reader thread).
    let (err, refused) = loop {
        let id = format!("after-kill-{}", started.elapsed().as_nanos());
        match browser.page_click(ClickArgs {
            operation_id: id.clone(),
            generation: obs.generation,
            reference: "e1".into(),
        }) {
            Err(e) if e.code() == "BROWSER_UNAVAILABLE" => break (e, id),
            _ => {}
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "no clear error after the kill"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(err.to_string().contains("connection was lost"), "{err}");
    assert_eq!(browser.observe().unwrap_err().code(), "BROWSER_UNAVAILABLE");
    assert!(started.elapsed() < Duration::from_secs(10));
    // Issue 21 item 6: the record belongs to the process that owns the browser, not to
    // Chromium — it still answers after Chromium died, and after close: the click before the
    // kill executed, the refused one after it did not.
    let r = browser.operation_status(&before).unwrap();
    assert_eq!(
        (r.status, r.tool.as_deref()),
        (OperationState::Executed, Some("page_click"))
    );
    let r = browser.operation_status(&refused).unwrap();
    assert_eq!(r.status, OperationState::NotExecuted);
    assert_eq!(r.error_code.as_deref(), Some("BROWSER_UNAVAILABLE"));
    browser.close();
    assert_eq!(
        browser.operation_status(&before).unwrap().status,
        OperationState::Executed
    );
    assert_eq!(
        wait_group_gone(pid, Duration::from_secs(5)),
        Vec::<u32>::new()
    );
}

#[test]
fn r_dev_caps_screenshots_stay_under_the_cap_on_a_large_noisy_page() {
    let server = Server::start();
    let browser = Closing(shared_browser());
    let tab = browser.0.open_tab().unwrap();
    tab.navigate(&server.url("/p/noisy")).unwrap();
    let view = tab.page_screenshot(ScreenshotArgs::default()).unwrap();
    let cap = jevgate::device::DeviceLimits::default().screenshot_max_base64;
    assert!(view.data.len() <= cap, "{}", view.data.len());
    assert!(view.data.starts_with("/9j/"), "JPEG");
    assert!(
        view.quality < 80 || view.scale < 1.0,
        "noise cannot fit at full quality"
    );
    let full = tab
        .page_screenshot(ScreenshotArgs {
            full_page: true,
            ..ScreenshotArgs::default()
        })
        .unwrap();
    assert!(full.data.len() <= cap, "{}", full.data.len());
    assert!(
        full.scale < 1.0,
        "a 4000px noisy page needs scaling: {:?}",
        (full.quality, full.scale)
    );
    assert!(
        full.height > full.width,
        "the whole page: {}x{}",
        full.width,
        full.height
    );
    let zoom = tab
        .page_screenshot(ScreenshotArgs {
            region: Some(Rect {
                x: 0.0,
                y: 0.0,
                width: 100.0,
                height: 50.0,
            }),
            ..ScreenshotArgs::default()
        })
        .unwrap();
    assert_eq!((zoom.width, zoom.height, zoom.scale), (100, 50, 1.0));
    tab.close().unwrap();
}

/// The child processes of `parent` (from /proc).
fn children_of(parent: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let rest: Vec<&str> = stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .split_whitespace()
            .collect();
        if rest.get(1).and_then(|p| p.parse::<u32>().ok()) == Some(parent) {
            out.push(pid);
        }
    }
    out
}

#[test]
fn r_brw_host_killed_mid_call_leaves_no_chromium_behind() {
    let server = Server::start();
    // The CLI waits on a slow page; it is killed without any chance to close the browser.
    let mut cli = std::process::Command::new(env!("CARGO_BIN_EXE_jevgate"))
        .args(["observe", &server.url("/slow?ms=20000&to=second")])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(15);
    let browser_pid = loop {
        // The browser leads its own process group, so it is found by pgid == pid.
        if let Some(pid) = children_of(cli.id())
            .into_iter()
            .find(|p| group_members(*p).contains(p))
        {
            if group_members(pid).len() > 1 {
                break pid;
            }
        }
        assert!(Instant::now() < deadline, "the CLI never started Chromium");
        std::thread::sleep(Duration::from_millis(20));
    };
    track_pid(browser_pid);
    let comm = std::fs::read_to_string(format!("/proc/{browser_pid}/comm")).unwrap_or_default();
    assert!(comm.contains("chrom"), "{comm}");
    cli.kill().unwrap();
    cli.wait().unwrap();
    assert_eq!(
        wait_group_gone(browser_pid, Duration::from_secs(5)),
        Vec::<u32>::new()
    );
}

// Issue 15 (`jevgate mcp --headed`): a headed launch leaves out `--headless`; without a display
// Chromium cannot show a window, and the launch says so (BROWSER_UNAVAILABLE) instead of
// hanging or falling back to headless.
#[test]
fn r_brw_a_headed_launch_without_a_display_is_browser_unavailable() {
    if std::env::var_os("DISPLAY").is_some() || std::env::var_os("WAYLAND_DISPLAY").is_some() {
        return; // a real display: a headed launch would succeed
    }
    let opts = LaunchOptions {
        headed: true,
        launch_timeout: std::time::Duration::from_secs(20),
        ..LaunchOptions::default()
    };
    match LocalBrowser::launch(opts) {
        Err(e) => assert_eq!(e.code(), "BROWSER_UNAVAILABLE"),
        Ok(b) => {
            b.close();
            panic!("a headed Chromium started without a display: it ran headless");
        }
    }
}
