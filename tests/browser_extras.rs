//! Issue 15 part B against a real headless Chromium: the primitives the seed-001 tool family
//! needs beyond R-BRW-ACT's — hover, drag (mouse and HTML5 drag-and-drop), mouse move/drag by
//! coordinates, viewport resize, console messages, network requests (redacted), file upload
//! and downloads — each proven by a real effect (beacons counted by the fixture server, values
//! read back from the page), with stale refusals that send nothing.

mod support;

use jevgate::browser::*;
use jevgate::observation::{Control, Observation};
use jevgate::unstable::confine_upload;
use jevgate::untrusted::unwrap_text;
use std::os::unix::fs::PermissionsExt;
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::pages::{DOWNLOAD_BODY, SECRET_TOKEN};
use support::{shared_browser, Closing, Server};

fn setup(page: &str) -> (Server, Closing, LocalTab, Observation) {
    let server = Server::start();
    let browser = Closing(shared_browser());
    let tab = browser.0.open_tab().expect("open tab");
    tab.navigate(&server.url(page)).unwrap();
    let obs = tab.observe().unwrap();
    (server, browser, tab, obs)
}

fn named<'a>(obs: &'a Observation, name: &str) -> &'a Control {
    obs.controls
        .iter()
        .find(|c| c.name == name)
        .unwrap_or_else(|| panic!("no control named {name}: {:?}", obs.controls))
}

fn op(tag: &str) -> String {
    format!("{tag}-{}-{}", std::process::id(), next())
}

fn next() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

/// The page's value of `expr` as JSON text (unwrapped).
fn js(tab: &LocalTab, expr: &str) -> String {
    let r = tab
        .javascript(JavascriptArgs {
            operation_id: op("js"),
            code: expr.into(),
        })
        .unwrap();
    unwrap_text(&r.value).unwrap_or_default().to_string()
}

/// Polls `f` (bounded) until it is true.
fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn issue15_page_hover_moves_the_real_mouse_and_css_hover_applies() {
    let (server, _b, tab, obs) = setup("/p/hover");
    let target = named(&obs, "Hover target").reference.clone();
    let before = js(
        &tab,
        "getComputedStyle(document.getElementById('h')).backgroundColor",
    );
    assert_ne!(before, "\"rgb(255, 0, 0)\"");
    let res = tab
        .page_hover(HoverArgs {
            operation_id: op("hover"),
            generation: obs.generation,
            reference: target.clone(),
        })
        .unwrap();
    assert_eq!(res.tool, "page_hover");
    assert_eq!(server.wait_count("hover", 1), 1, "one trusted mouseover");
    assert_eq!(server.count("untrusted:hover"), 0);
    assert_eq!(
        js(
            &tab,
            "getComputedStyle(document.getElementById('h')).backgroundColor"
        ),
        "\"rgb(255, 0, 0)\"",
        "CSS :hover applies"
    );

    // A ref of a page that changed since (reloaded) is refused, and nothing is sent.
    tab.navigate(&server.url("/p/hover")).unwrap();
    let fresh = tab.observe().unwrap();
    let err = tab
        .page_hover(HoverArgs {
            operation_id: op("hover-stale"),
            generation: obs.generation,
            reference: target.clone(),
        })
        .unwrap_err();
    assert_eq!(err.code(), "STALE_OBSERVATION");
    assert_eq!(server.wait_count("hover", 1), 1);
    // The fresh generation works; a hover through BrowserTools (what a paired device serves)
    // does too.
    tab.mouse_move(MouseMoveArgs {
        operation_id: op("away"),
        generation: fresh.generation,
        x: 5.0,
        y: 5.0,
    })
    .unwrap();
    let tools = BrowserTools::new(Arc::new(tab.clone()));
    let v = tools
        .run(
            "page_hover",
            &serde_json::json!({"operationId": op("tools-hover"), "generation": fresh.generation,
                "ref": named(&fresh, "Hover target").reference}),
        )
        .unwrap();
    assert_eq!(v["tool"], "page_hover");
    assert_eq!(server.wait_count("hover", 2), 2);
    tab.close().unwrap();
}

#[test]
fn issue15_page_drag_reorders_an_html5_drag_and_drop_list() {
    let (server, _b, tab, obs) = setup("/p/dnd");
    let a = named(&obs, "Item A").reference.clone();
    let c = named(&obs, "Item C").reference.clone();
    // Stale first: nothing moves.
    let err = tab
        .page_drag(DragArgs {
            operation_id: op("drag-stale"),
            generation: obs.generation + 1,
            from_ref: a.clone(),
            to_ref: c.clone(),
        })
        .unwrap_err();
    assert_eq!(err.code(), "STALE_OBSERVATION");
    let res = tab
        .page_drag(DragArgs {
            operation_id: op("drag"),
            generation: obs.generation,
            from_ref: a,
            to_ref: c,
        })
        .unwrap();
    assert_eq!(res.tool, "page_drag");
    // A dropped after C, and the drop carried the dragstart's data (A).
    assert_eq!(server.wait_count("drop:BCA:A", 1), 1);
    assert_eq!(
        js(
            &tab,
            "Array.from(document.querySelectorAll('li')).map(l => l.textContent).join()"
        ),
        "\"Item B,Item C,Item A\""
    );
    tab.close().unwrap();
}

#[test]
fn issue15_mouse_move_and_drag_by_coordinates_reach_the_canvas() {
    let (server, _b, tab, obs) = setup("/p/canvas");
    tab.mouse_move(MouseMoveArgs {
        operation_id: op("move"),
        generation: obs.generation,
        x: 123.0,
        y: 77.0,
    })
    .unwrap();
    assert_eq!(js(&tab, "window.lastMove"), "[123,77,true,0]");
    tab.mouse_drag(MouseDragArgs {
        operation_id: op("mdrag"),
        generation: obs.generation,
        from_x: 50.0,
        from_y: 60.0,
        to_x: 200.0,
        to_y: 150.0,
    })
    .unwrap();
    assert_eq!(server.wait_count("down:50,60", 1), 1);
    assert_eq!(server.wait_count("up:200,150", 1), 1);
    assert_eq!(js(&tab, "window.lastMove"), "[200,150,true,1]");
    // Outside the viewport: refused, nothing sent.
    let err = tab
        .mouse_move(MouseMoveArgs {
            operation_id: op("move-out"),
            generation: obs.generation,
            x: -1.0,
            y: 10.0,
        })
        .unwrap_err();
    assert_eq!(err.code(), "INVALID_ARGUMENT");
    let err = tab
        .mouse_drag(MouseDragArgs {
            operation_id: op("mdrag-stale"),
            generation: obs.generation + 1,
            from_x: 10.0,
            from_y: 10.0,
            to_x: 20.0,
            to_y: 20.0,
        })
        .unwrap_err();
    assert_eq!(err.code(), "STALE_OBSERVATION");
    assert_eq!(server.wait_count("down:10,10", 0), 0);
    tab.close().unwrap();
}

#[test]
fn issue15_page_resize_sets_the_viewport_within_bounds() {
    let (_server, _b, tab, obs) = setup("/p/canvas");
    tab.page_resize(ResizeArgs {
        operation_id: op("resize"),
        width: 500,
        height: 400,
    })
    .unwrap();
    assert_eq!(js(&tab, "[innerWidth, innerHeight]"), "[500,400]");
    // Coordinates are now checked against the new viewport.
    let err = tab
        .mouse_move(MouseMoveArgs {
            operation_id: op("beyond"),
            generation: tab.observe().unwrap().generation,
            x: 550.0,
            y: 10.0,
        })
        .unwrap_err();
    assert_eq!(err.code(), "INVALID_ARGUMENT");
    for (w, h) in [(199, 400), (500, 4097), (0, 0), (u32::MAX, 300)] {
        let err = tab
            .page_resize(ResizeArgs {
                operation_id: op("resize-bad"),
                width: w,
                height: h,
            })
            .unwrap_err();
        assert_eq!(err.code(), "INVALID_ARGUMENT");
    }
    assert_eq!(js(&tab, "[innerWidth, innerHeight]"), "[500,400]");
    let _ = obs;
    tab.close().unwrap();
}

#[test]
fn issue15_console_messages_and_page_errors_are_kept_from_the_tab_start() {
    let (_server, _b, tab, _obs) = setup("/p/console");
    let mut log = tab.console_messages(LogArgs::default()).unwrap();
    eventually("the uncaught error", || {
        log = tab.console_messages(LogArgs::default()).unwrap();
        log.messages
            .iter()
            .any(|m| m.text.contains("boom-uncaught"))
    });
    let find = |needle: &str| {
        log.messages
            .iter()
            .find(|m| m.text.contains(needle))
            .unwrap_or_else(|| panic!("{needle} missing: {:?}", log.messages))
    };
    assert_eq!(find("hello-log").level, "log");
    assert_eq!(find("hello-log").text, "hello-log 42");
    assert_eq!(find("careful-warn").level, "warning");
    assert_eq!(find("bad-error").level, "error");
    assert_eq!(find("boom-uncaught").level, "error");
    // Since a mark: only what came after.
    let mark = log.next;
    js(&tab, "console.info('after-mark'), 1");
    let later = tab
        .console_messages(LogArgs {
            since: Some(mark),
            max: None,
        })
        .unwrap();
    // (The browser's own favicon 404 entry may land after the mark too.)
    assert!(later.messages.iter().all(|m| m.seq >= mark));
    assert!(!later.messages.iter().any(|m| m.text.contains("hello-log")));
    let after: Vec<_> = later
        .messages
        .iter()
        .filter(|m| !m.text.starts_with("Failed to load resource"))
        .collect();
    assert_eq!(after.len(), 1, "{:?}", later.messages);
    assert_eq!(after[0].level, "info");
    assert_eq!(after[0].text, "after-mark");
    tab.close().unwrap();
}

#[test]
fn issue15_a_console_flood_stays_bounded() {
    let (_server, _b, tab, _obs) = setup("/p/flood");
    let mut log = tab.console_messages(LogArgs::default()).unwrap();
    eventually("the last flood message", || {
        log = tab
            .console_messages(LogArgs {
                since: Some(0),
                max: Some(1_000_000),
            })
            .unwrap();
        log.messages
            .iter()
            .any(|m| m.text.starts_with("flood 9999 "))
    });
    assert!(log.next >= 10_000);
    assert_eq!(log.messages.len(), 200, "one answer is bounded");
    assert!(log.dropped >= 9_800);
    assert!(log.messages.iter().all(|m| m.text.chars().count() <= 2000));
    let last = log
        .messages
        .iter()
        .find(|m| m.text.starts_with("flood 9999 "));
    assert_eq!(
        last.unwrap().text.chars().count(),
        2000,
        "one message is cut"
    );
    tab.close().unwrap();
}

#[test]
fn issue15_network_requests_are_listed_with_secrets_redacted() {
    let (server, _b, tab, _obs) = setup("/p/network");
    assert_eq!(server.wait_count("fetched", 1), 1);
    assert_eq!(server.wait_count("xhr", 1), 1);
    let log = tab.network_requests(LogArgs::default()).unwrap();
    let all = serde_json::to_string(&log).unwrap();
    assert!(!all.contains(SECRET_TOKEN), "a secret leaked: {all}");
    let fetch = log
        .requests
        .iter()
        .find(|r| r.resource_type == "Fetch")
        .unwrap_or_else(|| panic!("{:?}", log.requests));
    assert_eq!(fetch.method, "GET");
    assert_eq!(fetch.url, server.url("/api?token=REDACTED&q=x"));
    assert_eq!(fetch.status, Some(200));
    let xhr = log
        .requests
        .iter()
        .find(|r| r.resource_type == "XHR")
        .unwrap();
    assert_eq!(xhr.method, "POST");
    assert_eq!(xhr.url, server.url("/api?Session=REDACTED&page=2"));
    assert_eq!(xhr.status, Some(200));
    let doc = log
        .requests
        .iter()
        .find(|r| r.resource_type == "Document")
        .unwrap();
    assert_eq!(doc.url, server.url("/p/network"));
    // Since the mark: nothing new; then one more request.
    let mark = log.next;
    js(
        &tab,
        "fetch('/api?api_key=' + 'k9&x=1').then(r => r.status)",
    );
    let later = tab
        .network_requests(LogArgs {
            since: Some(mark),
            max: None,
        })
        .unwrap();
    let api: Vec<_> = later
        .requests
        .iter()
        .filter(|r| r.url.contains("/api"))
        .collect();
    assert_eq!(api.len(), 1, "{:?}", later.requests);
    assert_eq!(api[0].url, server.url("/api?api_key=REDACTED&x=1"));
    assert!(later.requests.iter().all(|r| r.seq >= mark));
    // Issue 20 item 6: `;` parameters, in the path and in the query, are redacted too.
    let mark = later.next;
    js(
        &tab,
        &format!(
            "fetch('/api;jsessionid={SECRET_TOKEN}?q=1;token={SECRET_TOKEN}').then(r => r.status)"
        ),
    );
    let semi = tab
        .network_requests(LogArgs {
            since: Some(mark),
            max: None,
        })
        .unwrap();
    let all = serde_json::to_string(&semi).unwrap();
    assert!(!all.contains(SECRET_TOKEN), "a secret leaked: {all}");
    assert!(
        semi.requests
            .iter()
            .any(|r| r.url == server.url("/api;jsessionid=REDACTED?q=1;token=REDACTED")),
        "{:?}",
        semi.requests
    );
    tab.close().unwrap();
}

fn workspace(tag: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "jevgate-ws-{tag}-{}-{}",
        std::process::id(),
        next()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn issue15_set_input_files_uploads_a_confined_file_and_refuses_escapes() {
    let (server, _b, tab, obs) = setup("/p/upload");
    let ws = workspace("upload");
    std::fs::write(ws.join("hello.txt"), b"12345").unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink("/etc/passwd", ws.join("evil")).unwrap();
    let input = named(&obs, "Upload file").reference.clone();

    // The workspace refusals (what the tool layer runs before the primitive).
    for bad in ["../../etc/passwd", "evil", "/etc/passwd", "."] {
        let err = confine_upload(&ws, bad).unwrap_err();
        assert_eq!(err.code(), "INVALID_ARGUMENT", "{bad}");
        assert!(!err.to_string().contains("passwd"), "{err}");
    }
    // The primitive itself refuses relative paths and non-regular files.
    for bad in ["hello.txt", "/etc", "/dev/null"] {
        let err = tab
            .set_input_files(SetInputFilesArgs {
                operation_id: op("files-bad"),
                generation: obs.generation,
                reference: input.clone(),
                paths: vec![bad.into()],
            })
            .unwrap_err();
        assert_eq!(err.code(), "INVALID_ARGUMENT", "{bad}");
    }
    // A stale generation sends nothing; a ref that is not a file input is refused.
    let file = confine_upload(&ws, "hello.txt").unwrap();
    let path = file.to_string_lossy().into_owned();
    let stale = tab.set_input_files(SetInputFilesArgs {
        operation_id: op("files-stale"),
        generation: obs.generation + 1,
        reference: input.clone(),
        paths: vec![path.clone()],
    });
    assert_eq!(stale.unwrap_err().code(), "STALE_OBSERVATION");
    let not_file = tab.set_input_files(SetInputFilesArgs {
        operation_id: op("files-button"),
        generation: obs.generation,
        reference: named(&obs, "Not a file input").reference.clone(),
        paths: vec![path.clone()],
    });
    assert_eq!(not_file.unwrap_err().code(), "INVALID_ARGUMENT");
    assert_eq!(server.wait_count("upload:hello.txt:5", 0), 0);

    tab.set_input_files(SetInputFilesArgs {
        operation_id: op("files"),
        generation: obs.generation,
        reference: input,
        paths: vec![path],
    })
    .unwrap();
    assert_eq!(server.wait_count("upload:hello.txt:5", 1), 1);
    assert_eq!(js(&tab, "document.getElementById('f').files[0].size"), "5");
    std::fs::remove_dir_all(&ws).unwrap();
    tab.close().unwrap();
}

/// Replaces `path` by a symlink to `target`.
fn swap_for_link(path: &std::path::Path, target: &std::path::Path) {
    std::fs::remove_file(path).unwrap();
    std::os::unix::fs::symlink(target, path).unwrap();
}

// Issue 20 item 5: `confine_upload` checked a path once and Chromium read it later, so a bait
// file swapped for a link to a file outside the workspace (same size and mtime) reached the
// page. Now the primitive opens what it uploads without following any link and hands Chromium
// a private copy: a swap before the upload is refused, a swap after it is never read, and a
// linked component anywhere in the path is refused.
#[test]
fn issue20_an_upload_swapped_for_a_link_never_reaches_the_page() {
    let (_server, _b, tab, obs) = setup("/p/upload");
    let ws = workspace("swap");
    let outside = workspace("outside").join("secret.txt");
    let bait = ws.join("bait.txt");
    std::fs::write(&bait, b"bait-bytes-0001").unwrap();
    std::fs::write(&outside, b"SECRET-bytes-01").unwrap();
    let mtime = std::fs::metadata(&bait).unwrap().modified().unwrap();
    std::fs::File::options()
        .write(true)
        .open(&outside)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    let input = named(&obs, "Upload file").reference.clone();
    let upload = |paths: Vec<String>| {
        tab.set_input_files(SetInputFilesArgs {
            operation_id: op("swap"),
            generation: obs.generation,
            reference: input.clone(),
            paths,
        })
    };
    let path = confine_upload(&ws, "bait.txt").unwrap();
    let path = path.to_string_lossy().into_owned();

    // Swapped between the check and the upload: refused, nothing reaches the page.
    swap_for_link(&bait, &outside);
    assert_eq!(
        upload(vec![path.clone()]).unwrap_err().code(),
        "INVALID_ARGUMENT"
    );
    assert_eq!(js(&tab, "document.getElementById('f').files.length"), "0");

    // Swapped after the upload: the page reads the copy of what was uploaded.
    std::fs::remove_file(&bait).unwrap();
    std::fs::write(&bait, b"bait-bytes-0001").unwrap();
    std::fs::File::options()
        .write(true)
        .open(&bait)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    upload(vec![path.clone()]).unwrap();
    swap_for_link(&bait, &outside);
    let read = js(&tab, "document.getElementById('f').files[0].text()");
    assert_eq!(read, "\"bait-bytes-0001\"");
    assert_eq!(
        js(&tab, "document.getElementById('f').files[0].name"),
        "\"bait.txt\""
    );

    // A linked component anywhere in the path is refused, inside the workspace or not.
    std::fs::create_dir(ws.join("real")).unwrap();
    std::fs::write(ws.join("real/a.txt"), b"a").unwrap();
    std::os::unix::fs::symlink(ws.join("real"), ws.join("alias")).unwrap();
    assert_eq!(
        confine_upload(&ws, "alias/a.txt").unwrap_err().code(),
        "INVALID_ARGUMENT"
    );
    let through_link = ws.canonicalize().unwrap().join("alias/a.txt");
    assert_eq!(
        upload(vec![through_link.to_string_lossy().into_owned()])
            .unwrap_err()
            .code(),
        "INVALID_ARGUMENT"
    );
    std::fs::remove_dir_all(&ws).unwrap();
    std::fs::remove_dir_all(outside.parent().unwrap()).unwrap();
    tab.close().unwrap();
}

// Issue 20 item 5: the staged copies are the session's: capped by `max_upload_bytes` (a larger
// file is refused with the limit named) and gone when the browser ends — also from a
// persistent profile.
#[test]
fn issue20_staged_uploads_are_capped_and_removed_when_the_session_ends() {
    let server = Server::start();
    let profile = workspace("profile");
    let browser = LocalBrowser::launch(LaunchOptions {
        profile_dir: Some(profile.clone()),
        max_upload_bytes: 8,
        ..LaunchOptions::default()
    })
    .unwrap();
    support::track_pid(browser.pid().unwrap());
    let tab = browser.current_tab().unwrap();
    tab.navigate(&server.url("/p/upload")).unwrap();
    let obs = tab.observe().unwrap();
    let ws = workspace("cap");
    std::fs::write(ws.join("small.txt"), b"12345678").unwrap();
    std::fs::write(ws.join("big.txt"), b"123456789").unwrap();
    let upload = |name: &str| {
        tab.set_input_files(SetInputFilesArgs {
            operation_id: op("cap"),
            generation: obs.generation,
            reference: named(&obs, "Upload file").reference.clone(),
            paths: vec![confine_upload(&ws, name)
                .unwrap()
                .to_string_lossy()
                .into_owned()],
        })
    };
    let err = upload("big.txt").unwrap_err();
    assert_eq!(err.code(), "INVALID_ARGUMENT");
    assert!(err.to_string().contains("limit of 8 bytes"), "{err}");
    upload("small.txt").unwrap();
    assert_eq!(server.wait_count("upload:small.txt:8", 1), 1);
    let staged = profile.join("jevgate-uploads");
    assert_eq!(
        std::fs::metadata(&staged).unwrap().permissions().mode() & 0o777,
        0o700
    );
    browser.close();
    assert!(!staged.exists(), "the staged copies outlived the session");
    std::fs::remove_dir_all(&ws).unwrap();
    let _ = std::fs::remove_dir_all(&profile);
}

#[test]
fn issue15_downloads_are_listed_and_saved_only_inside_the_workspace() {
    let (_server, _b, tab, obs) = setup("/p/download");
    tab.page_click(ClickArgs {
        operation_id: op("dl-click"),
        generation: obs.generation,
        reference: named(&obs, "Download report").reference.clone(),
    })
    .unwrap();
    let mut list = tab.downloads(DownloadsArgs {}).unwrap();
    eventually("the download to complete", || {
        list = tab.downloads(DownloadsArgs {}).unwrap();
        list.downloads.iter().any(|d| d.state == "completed")
    });
    assert_eq!(list.downloads.len(), 1);
    let d = &list.downloads[0];
    assert_eq!(d.name, "report.txt");
    assert_eq!(d.bytes, DOWNLOAD_BODY.len() as u64);

    let ws = workspace("download");
    #[cfg(unix)]
    std::os::unix::fs::symlink("/etc", ws.join("etc-link")).unwrap();
    for bad in [
        "../../tmp/escaped.txt",
        "/tmp/escaped.txt",
        "etc-link/passwd",
    ] {
        let err = tab.save_download("report.txt", &ws, bad).unwrap_err();
        assert_eq!(err.code(), "INVALID_ARGUMENT", "{bad}");
        assert!(!err.to_string().contains("escaped") && !err.to_string().contains("passwd"));
    }
    assert!(!std::path::Path::new("/tmp/escaped.txt").exists());
    let saved = tab.save_download("report.txt", &ws, "out/report.txt");
    // `out/` does not exist: the confined path is fine, the copy cannot create it.
    assert!(saved.is_err());
    let saved = tab.save_download("report.txt", &ws, "report.txt").unwrap();
    assert_eq!(std::fs::read_to_string(&saved).unwrap(), DOWNLOAD_BODY);
    assert!(saved.starts_with(ws.canonicalize().unwrap()));
    assert_eq!(
        tab.save_download("other.txt", &ws, "x.txt")
            .unwrap_err()
            .code(),
        "TARGET_NOT_FOUND"
    );
    // Another tab does not see this tab's downloads.
    let other = _b.0.open_tab().unwrap();
    assert!(other
        .downloads(DownloadsArgs {})
        .unwrap()
        .downloads
        .is_empty());
    other.close().unwrap();
    std::fs::remove_dir_all(&ws).unwrap();
    tab.close().unwrap();
}
