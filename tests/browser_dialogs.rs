//! Dialogs against a real headless Chromium (R-BRW-OBS `dialog`, R-BRW-ACT): a pending
//! alert/confirm is reported, every other action is refused until it is handled, and nothing
//! ever hangs on one.

mod support;

use jevgate::browser::*;
use jevgate::grammar::Key;
use jevgate::observation::Observation;
use support::{shared_browser, Closing, Server};

fn op(tag: &str) -> String {
    format!("{tag}-{}", std::process::id())
}

fn button(obs: &Observation, name: &str) -> String {
    obs.controls
        .iter()
        .find(|c| c.name == name)
        .unwrap()
        .reference
        .clone()
}

#[test]
fn r_brw_act_alert_is_reported_and_blocks_other_actions_until_handled() {
    let server = Server::start();
    let browser = Closing(shared_browser());
    let tab = browser.0.open_tab().unwrap();
    tab.navigate(&server.url("/p/dialogs")).unwrap();
    let obs = tab.observe().unwrap();
    let alert = button(&obs, "Alert");
    let res = tab
        .page_click(ClickArgs {
            operation_id: op("alert"),
            generation: obs.generation,
            reference: alert.clone(),
        })
        .unwrap();
    let dialog = res
        .dialog
        .expect("the click's result reports the dialog it opened");
    assert_eq!(dialog.kind, "alert");
    assert_eq!(dialog.message, "Hello from alert");
    // The observation reports it; no controls can be read meanwhile.
    let blocked = tab.observe().unwrap();
    assert_eq!(
        blocked.dialog.as_ref().map(|d| d.kind.as_str()),
        Some("alert")
    );
    assert!(blocked.controls.is_empty());
    assert!(tab
        .snapshot(SnapshotArgs::default())
        .unwrap()
        .text
        .contains("- dialog \"alert\": Hello from alert"));
    // Every other action is refused and sends nothing.
    let err = tab
        .page_click(ClickArgs {
            operation_id: op("while-open"),
            generation: obs.generation,
            reference: alert.clone(),
        })
        .unwrap_err();
    assert_eq!(err.code(), "DIALOG_OPEN");
    let err = tab
        .page_keypress(KeypressArgs {
            operation_id: op("key-open"),
            generation: obs.generation,
            key: Key::Enter,
            count: 1,
        })
        .unwrap_err();
    assert_eq!(err.code(), "DIALOG_OPEN");
    assert_eq!(
        tab.page_screenshot(ScreenshotArgs::default())
            .unwrap_err()
            .code(),
        "DIALOG_OPEN"
    );
    assert_eq!(server.count("after-alert"), 0);
    tab.handle_dialog(HandleDialogArgs {
        accept: true,
        prompt_text: None,
    })
    .unwrap();
    assert_eq!(server.wait_count("after-alert", 1), 1);
    let after = tab.observe().unwrap();
    assert!(after.dialog.is_none());
    assert!(!after.controls.is_empty());
    let err = tab
        .handle_dialog(HandleDialogArgs {
            accept: true,
            prompt_text: None,
        })
        .unwrap_err();
    assert_eq!(err.code(), "NO_DIALOG");
    tab.close().unwrap();
}

#[test]
fn r_brw_act_confirm_accept_and_dismiss_reach_the_page() {
    let server = Server::start();
    let browser = Closing(shared_browser());
    let tab = browser.0.open_tab().unwrap();
    tab.navigate(&server.url("/p/dialogs")).unwrap();
    for (accept, beacon) in [(true, "confirm:true"), (false, "confirm:false")] {
        let obs = tab.observe().unwrap();
        let res = tab
            .page_click(ClickArgs {
                operation_id: op(beacon),
                generation: obs.generation,
                reference: button(&obs, "Confirm"),
            })
            .unwrap();
        assert_eq!(res.dialog.unwrap().kind, "confirm");
        tab.handle_dialog(HandleDialogArgs {
            accept,
            prompt_text: None,
        })
        .unwrap();
        assert_eq!(server.wait_count(beacon, 1), 1);
    }
    tab.close().unwrap();
}

#[test]
fn r_brw_obs_a_dialog_during_load_is_reported_never_a_hang() {
    let server = Server::start();
    let browser = Closing(shared_browser());
    let tab = browser.0.open_tab().unwrap();
    let started = std::time::Instant::now();
    let nav = tab.navigate(&server.url("/p/onload-alert")).unwrap();
    assert!(!nav.settled);
    assert_eq!(
        nav.dialog.as_ref().map(|d| d.message.as_str()),
        Some("Blocking alert")
    );
    let obs = tab.observe().unwrap();
    assert_eq!(obs.dialog.unwrap().kind, "alert");
    assert!(obs.url.ends_with("/p/onload-alert"));
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    tab.handle_dialog(HandleDialogArgs {
        accept: true,
        prompt_text: None,
    })
    .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let settled = loop {
        match tab.observe() {
            Ok(o) if o.controls.iter().any(|c| c.name == "After") => break o,
            Ok(_) | Err(_) => {}
        }
        assert!(
            std::time::Instant::now() < deadline,
            "page never finished loading"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert!(settled.dialog.is_none());
    tab.close().unwrap();
}
