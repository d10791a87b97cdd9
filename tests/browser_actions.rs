//! R-BRW-ACT and R-BRW-STALE against a real headless Chromium: every primitive sends real
//! input exactly once (the fixture server counts beacons), refusals send nothing.

mod support;

use jevgate::browser::*;
use jevgate::grammar::{HistoryDirection, Key, ScrollDirection};
use jevgate::observation::{Control, Observation};
use jevgate::untrusted::unwrap_text;
use std::time::{Duration, Instant};
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
    format!("{tag}-{}", std::process::id())
}

fn click(tab: &LocalTab, id: &str, generation: u64, r: &str) -> jevgate::Result<ActionResult> {
    tab.page_click(ClickArgs {
        operation_id: id.into(),
        generation,
        reference: r.into(),
    })
}

fn status(tab: &LocalTab, id: &str) -> OperationRecord {
    tab.operation_status(id).unwrap()
}

#[test]
fn issue12_fixtures_count_only_trusted_clicks_a_script_click_is_not_a_real_click() {
    // Guards every real-click test: a click made by page script (what a backend that "clicked"
    // through `el.click()` would do) is not counted as the control's beacon.
    let (server, _b, tab, obs) = setup("/p/buttons");
    tab.javascript(JavascriptArgs {
        operation_id: op("script-click"),
        code: "document.getElementById('go').click(); 1".into(),
    })
    .unwrap();
    assert_eq!(
        server.wait_count("untrusted:go", 1),
        1,
        "the script click ran"
    );
    assert_eq!(server.count("go"), 0, "a script click counted as real");
    click(
        &tab,
        &op("real-click"),
        obs.generation,
        &named(&obs, "Press me").reference,
    )
    .unwrap();
    assert_eq!(server.wait_count("go", 1), 1);
    assert_eq!(server.count("untrusted:go"), 1);
    tab.close().unwrap();
}

#[test]
fn r_brw_act_page_click_sends_one_real_click_and_is_recorded() {
    let (server, _b, tab, obs) = setup("/p/buttons");
    let id = op("click");
    let res = click(
        &tab,
        &id,
        obs.generation,
        &named(&obs, "Press me").reference,
    )
    .unwrap();
    assert_eq!(res.tool, "page_click");
    assert_eq!(server.wait_count("go", 1), 1);
    let rec = status(&tab, &id);
    assert_eq!(rec.status, OperationState::Executed);
    assert_eq!(rec.outcome, OperationOutcome::Completed);
    assert_eq!(rec.tool.as_deref(), Some(res.tool.as_str()));
    // The same operation id is never run twice.
    let again = click(
        &tab,
        &id,
        obs.generation,
        &named(&obs, "Press me").reference,
    );
    assert_eq!(again.unwrap_err().code(), "INVALID_ARGUMENT");
    assert_eq!(server.wait_count("go", 1), 1);
    assert_eq!(status(&tab, "never-seen").status, OperationState::Unknown);
    tab.close().unwrap();
}

#[test]
fn r_brw_stale_covered_target_is_target_obscured_and_nothing_is_clicked() {
    let (server, _b, tab, obs) = setup("/p/overlay");
    let id = op("covered");
    let err = click(&tab, &id, obs.generation, &named(&obs, "Covered").reference).unwrap_err();
    assert_eq!(err.code(), "STALE_OBSERVATION");
    assert_eq!(err.stale_cause(), Some(StaleCause::TargetObscured));
    assert_eq!(status(&tab, &id).status, OperationState::NotExecuted);
    assert_eq!(
        status(&tab, &id).error_code.as_deref(),
        Some("STALE_OBSERVATION")
    );
    assert_eq!(server.wait_count("under", 0), 0);
    assert_eq!(server.count("veil"), 0);
    tab.close().unwrap();
}

#[test]
fn r_brw_act_page_type_replaces_text_and_submits_under_one_operation() {
    let (server, _b, tab, obs) = setup("/p/form");
    let q = obs
        .controls
        .iter()
        .find(|c| c.search_like)
        .unwrap()
        .reference
        .clone();
    tab.page_type(TypeArgs {
        operation_id: op("search"),
        generation: obs.generation,
        reference: q.clone(),
        text: "cats".into(),
        submit: true,
    })
    .unwrap();
    assert_eq!(server.wait_count("submit:cats", 1), 1);
    // Typing again replaces the content; non-ASCII goes in whole.
    let obs = tab.observe().unwrap();
    tab.page_type(TypeArgs {
        operation_id: op("thai"),
        generation: obs.generation,
        reference: q.clone(),
        text: "แมว dogs".into(),
        submit: false,
    })
    .unwrap();
    let obs = tab.observe().unwrap();
    let field = obs.controls.iter().find(|c| c.reference == q).unwrap();
    assert_eq!(field.value.as_deref(), Some("แมว dogs"));
    assert_eq!(obs.focus.as_deref(), Some(q.as_str()));
    assert_eq!(server.wait_count("submit:แมว dogs", 0), 0);
    tab.close().unwrap();
}

#[test]
fn r_brw_stale_typing_into_an_unfocusable_target_is_focus_required() {
    let (_server, _b, tab, obs) = setup("/p/form");
    for name in ["Not a field", "Read only"] {
        let id = op(&format!("focus-{name}"));
        let err = tab
            .page_type(TypeArgs {
                operation_id: id.clone(),
                generation: obs.generation,
                reference: named(&obs, name).reference.clone(),
                text: "x".into(),
                submit: false,
            })
            .unwrap_err();
        assert_eq!(err.code(), "FOCUS_REQUIRED", "{name}");
        assert_eq!(status(&tab, &id).status, OperationState::NotExecuted);
    }
    tab.close().unwrap();
}

#[test]
fn r_brw_act_page_keypress_sends_native_keys_count_times() {
    let (server, _b, tab, obs) = setup("/p/form");
    let keys = named(&obs, "Keys").reference.clone();
    // Focus the field with a real click, then press keys to it.
    click(&tab, &op("focus-keys"), obs.generation, &keys).unwrap();
    let obs = tab.observe().unwrap();
    assert_eq!(obs.focus.as_deref(), Some(keys.as_str()));
    tab.page_keypress(KeypressArgs {
        operation_id: op("enter3"),
        generation: obs.generation,
        key: Key::Enter,
        count: 3,
    })
    .unwrap();
    assert_eq!(server.wait_count("enter", 3), 3);
    tab.page_keypress(KeypressArgs {
        operation_id: op("esc"),
        generation: obs.generation,
        key: Key::Escape,
        count: 1,
    })
    .unwrap();
    assert_eq!(server.wait_count("escape", 1), 1);
    // Tab moves focus away from the field.
    tab.page_keypress(KeypressArgs {
        operation_id: op("tab"),
        generation: obs.generation,
        key: Key::Tab,
        count: 1,
    })
    .unwrap();
    let after = tab.observe().unwrap();
    assert_ne!(after.focus.as_deref(), Some(keys.as_str()));
    let err = tab.page_keypress(KeypressArgs {
        operation_id: op("zero"),
        generation: after.generation,
        key: Key::Enter,
        count: 0,
    });
    assert_eq!(err.unwrap_err().code(), "INVALID_ARGUMENT");
    tab.close().unwrap();
}

#[test]
fn r_brw_stale_scroll_moves_and_stops_at_the_limits_without_sending() {
    let (_server, _b, tab, obs) = setup("/p/long");
    assert!(obs.scroll.at_top && !obs.scroll.at_bottom);
    let up = op("up-at-top");
    let err = tab
        .page_scroll(ScrollArgs {
            operation_id: up.clone(),
            generation: obs.generation,
            direction: ScrollDirection::Up,
        })
        .unwrap_err();
    assert_eq!(err.code(), "SCROLL_LIMIT");
    assert_eq!(status(&tab, &up).status, OperationState::NotExecuted);
    let mut obs = obs;
    let mut steps = 0;
    while !obs.scroll.at_bottom {
        tab.page_scroll(ScrollArgs {
            operation_id: op(&format!("down{steps}")),
            generation: obs.generation,
            direction: ScrollDirection::Down,
        })
        .unwrap();
        obs = tab.observe().unwrap();
        steps += 1;
        assert!(steps < 20, "never reached the bottom");
    }
    assert!(steps >= 3, "a 5000px page takes several screens: {steps}");
    assert!(!obs.scroll.at_top);
    let err = tab
        .page_scroll(ScrollArgs {
            operation_id: op("down-at-bottom"),
            generation: obs.generation,
            direction: ScrollDirection::Down,
        })
        .unwrap_err();
    assert_eq!(err.code(), "SCROLL_LIMIT");
    tab.page_scroll(ScrollArgs {
        operation_id: op("back-up"),
        generation: obs.generation,
        direction: ScrollDirection::Up,
    })
    .unwrap();
    assert!(!tab.observe().unwrap().scroll.at_bottom);
    tab.close().unwrap();
}

#[test]
fn r_brw_stale_history_with_and_without_entries() {
    let server = Server::start();
    let browser = Closing(shared_browser());
    let tab = browser.0.open_tab().unwrap();
    // A fresh tab on about:blank: no entry either way, nothing is sent.
    let blank = tab.observe().unwrap();
    assert!(!blank.navigation.unwrap().can_go_back);
    let id = op("no-back");
    let err = tab
        .tab_history(HistoryArgs {
            operation_id: id.clone(),
            generation: blank.generation,
            direction: HistoryDirection::Back,
        })
        .unwrap_err();
    assert_eq!(err.code(), "HISTORY_UNAVAILABLE");
    assert_eq!(status(&tab, &id).status, OperationState::NotExecuted);
    tab.navigate(&server.url("/p/second")).unwrap();
    tab.navigate(&server.url("/p/third")).unwrap();
    let third = tab.observe().unwrap();
    assert_eq!(third.title, "Third");
    let back = tab
        .tab_history(HistoryArgs {
            operation_id: op("back"),
            generation: third.generation,
            direction: HistoryDirection::Back,
        })
        .unwrap();
    assert!(back.settled && back.navigation_started);
    let second = tab.observe().unwrap();
    assert_eq!(second.title, "Second");
    assert!(second.navigation.unwrap().can_go_forward);
    assert!(second.generation > third.generation);
    tab.tab_history(HistoryArgs {
        operation_id: op("fwd"),
        generation: second.generation,
        direction: HistoryDirection::Forward,
    })
    .unwrap();
    let again = tab.observe().unwrap();
    assert_eq!(again.title, "Third");
    let err = tab
        .tab_history(HistoryArgs {
            operation_id: op("no-fwd"),
            generation: again.generation,
            direction: HistoryDirection::Forward,
        })
        .unwrap_err();
    assert_eq!(err.code(), "HISTORY_UNAVAILABLE");
    tab.close().unwrap();
}

#[test]
fn r_brw_stale_slow_navigation_is_navigation_pending_then_settles() {
    let (server, _b, tab, obs) = setup("/p/slowlink");
    click(
        &tab,
        &op("slow"),
        obs.generation,
        &named(&obs, "Slow page").reference,
    )
    .unwrap();
    // Bounded polling of real state: the navigation is reported pending while it loads (the
    // server holds the response 5 s; a loaded CI machine may take a while to start it).
    let deadline = Instant::now() + Duration::from_millis(4500);
    let err = loop {
        match tab.observe() {
            Err(e) => break e,
            Ok(o) => assert_eq!(o.title, "Slow link"),
        }
        assert!(
            Instant::now() < deadline,
            "navigation never reported pending"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    assert_eq!(err.stale_cause(), Some(StaleCause::NavigationPending));
    // An action on the old page is refused with the same cause and sends nothing.
    let id = op("stale-click");
    // (Under heavy load a late load event of the old document can end "pending" just before
    // this click; the generation check then refuses it instead — either way it is refused.)
    let err = click(&tab, &id, obs.generation, &named(&obs, "Stay").reference).unwrap_err();
    assert!(
        matches!(
            err.stale_cause(),
            Some(StaleCause::NavigationPending | StaleCause::GenerationChanged)
        ),
        "{err}"
    );
    assert_eq!(status(&tab, &id).status, OperationState::NotExecuted);
    // Then it settles on the new page.
    let deadline = Instant::now() + Duration::from_secs(10);
    let settled = loop {
        match tab.observe() {
            Ok(o) => break o,
            Err(e) => assert_eq!(e.stale_cause(), Some(StaleCause::NavigationPending)),
        }
        assert!(Instant::now() < deadline, "navigation never settled");
        std::thread::sleep(Duration::from_millis(25));
    };
    assert_eq!(settled.title, "Second");
    assert!(settled.generation > obs.generation);
    assert_eq!(server.count("stale"), 0);
    tab.close().unwrap();
}

#[test]
fn r_brw_act_tab_navigate_refuses_other_schemes_and_reports_network_errors() {
    let (_server, _b, tab, _obs) = setup("/p/buttons");
    for url in [
        "javascript:alert(1)",
        "file:///etc/passwd",
        "data:text/html,hi",
    ] {
        let err = tab
            .tab_navigate(NavigateArgs {
                operation_id: op(url),
                url: url.into(),
            })
            .unwrap_err();
        assert_eq!(err.code(), "NAVIGATION_FAILED");
        assert!(!err.to_string().contains("passwd"));
    }
    // A closed port: a network error class, never the URL.
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/secret-token-abc", dead.local_addr().unwrap());
    drop(dead);
    let id = op("dead");
    let err = tab
        .tab_navigate(NavigateArgs {
            operation_id: id.clone(),
            url,
        })
        .unwrap_err();
    assert_eq!(err.code(), "NAVIGATION_FAILED");
    assert!(!err.to_string().contains("secret-token"), "{err}");
    assert_eq!(status(&tab, &id).status, OperationState::Executed);
    assert_eq!(status(&tab, &id).outcome, OperationOutcome::Failed);
    tab.close().unwrap();
}

#[test]
fn r_brw_act_form_input_javascript_find_and_mouse_click() {
    let (server, _b, tab, obs) = setup("/p/form");
    let agree = named(&obs, "I agree").reference.clone();
    assert_eq!(named(&obs, "I agree").checked, Some(false));
    tab.form_input(FormInputArgs {
        operation_id: op("agree"),
        generation: obs.generation,
        reference: agree.clone(),
        value: "true".into(),
    })
    .unwrap();
    assert_eq!(server.wait_count("agree:true", 1), 1);
    let colour = named(&obs, "Colour").reference.clone();
    tab.form_input(FormInputArgs {
        operation_id: op("colour"),
        generation: obs.generation,
        reference: colour.clone(),
        value: "Green".into(),
    })
    .unwrap();
    let err = tab
        .form_input(FormInputArgs {
            operation_id: op("nocolour"),
            generation: obs.generation,
            reference: colour.clone(),
            value: "Blue".into(),
        })
        .unwrap_err();
    assert_eq!(err.code(), "INVALID_ARGUMENT");
    let after = tab.observe().unwrap();
    assert_eq!(named(&after, "Colour").value.as_deref(), Some("Green"));
    assert_eq!(named(&after, "I agree").checked, Some(true));

    let js = tab
        .javascript(JavascriptArgs {
            operation_id: op("js"),
            code: "document.title + ':' + (1 + 2)".into(),
        })
        .unwrap();
    assert_eq!(unwrap_text(&js.value), Some("\"Form:3\""));
    let err = tab
        .javascript(JavascriptArgs {
            operation_id: op("throw"),
            code: "throw new Error('page secret')".into(),
        })
        .unwrap_err();
    assert_eq!(err.code(), "JAVASCRIPT_ERROR");
    assert_eq!(err.worker_code(), Some("javascript_error"));
    assert!(!err.to_string().contains("page secret"));

    let found = tab
        .find(FindArgs {
            query: "not FIELD".into(),
            max_results: None,
        })
        .unwrap();
    assert_eq!(found.controls.len(), 1);
    assert_eq!(found.controls[0].name, "Not a field");

    // Pixel-coordinate click at the button's centre (the computer tool's fallback).
    let rect = tab
        .javascript(JavascriptArgs {
            operation_id: op("rect"),
            code: "(() => { const r = document.getElementById('notfield').getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()".into(),
        })
        .unwrap();
    let xy: Vec<f64> = serde_json::from_str(unwrap_text(&rect.value).unwrap()).unwrap();
    tab.mouse_click(MouseClickArgs {
        operation_id: op("xy"),
        generation: after.generation,
        x: xy[0],
        y: xy[1],
    })
    .unwrap();
    assert_eq!(server.wait_count("notfield", 1), 1);
    tab.close().unwrap();
}

#[test]
fn r_brw_act_tabs_and_tab_lease() {
    let server = Server::start();
    let browser = Closing(shared_browser());
    let tab = browser.0.open_tab().unwrap();
    let lease = tab
        .tab_lease(TabLeaseArgs {
            action: LeaseAction::Acquire,
            lease_id: None,
        })
        .unwrap();
    assert!(lease.held);
    let err = tab
        .tab_lease(TabLeaseArgs {
            action: LeaseAction::Acquire,
            lease_id: None,
        })
        .unwrap_err();
    assert_eq!(err.code(), "TAB_LEASE_HELD");
    let released = tab
        .tab_lease(TabLeaseArgs {
            action: LeaseAction::Release,
            lease_id: lease.lease_id,
        })
        .unwrap();
    assert!(!released.held);

    let before = tab
        .tabs(TabsArgs {
            action: TabsAction::List,
            tab_id: None,
            url: None,
        })
        .unwrap();
    assert!(before.tabs.iter().any(|t| t.tab_id == tab.id()));
    let list = tab
        .tabs(TabsArgs {
            action: TabsAction::New,
            tab_id: None,
            url: Some(server.url("/p/second")),
        })
        .unwrap();
    let opened = list
        .tabs
        .iter()
        .find(|t| t.current)
        .expect("the new tab is current")
        .clone();
    assert_eq!(opened.title, "Second");
    let list = tab
        .tabs(TabsArgs {
            action: TabsAction::Close,
            tab_id: Some(opened.tab_id.clone()),
            url: None,
        })
        .unwrap();
    assert!(!list.tabs.iter().any(|t| t.tab_id == opened.tab_id));
    let err = tab
        .tabs(TabsArgs {
            action: TabsAction::Select,
            tab_id: Some(opened.tab_id),
            url: None,
        })
        .unwrap_err();
    assert_eq!(err.code(), "TAB_UNAVAILABLE");
    assert_eq!(err.worker_code(), Some("tab_unavailable"));
    tab.close().unwrap();
    assert_eq!(tab.observe().unwrap_err().code(), "TAB_UNAVAILABLE");
}

// R-BRW-ACT: page_scroll scrolls the page even when a box that scrolls on its own covers the
// viewport's centre (the wheel goes where it reaches the page).
#[test]
fn r_brw_act_page_scroll_scrolls_the_page_not_a_box_under_the_centre() {
    let (_server, _b, tab, obs) = setup("/p/scrollbox");
    tab.page_scroll(ScrollArgs {
        operation_id: op("page-not-box"),
        generation: obs.generation,
        direction: ScrollDirection::Down,
    })
    .unwrap();
    assert!(!tab.observe().unwrap().scroll.at_top, "the page moved");
    let box_top = tab
        .javascript(JavascriptArgs {
            operation_id: op("box-top"),
            code: "document.getElementById('box').scrollTop".into(),
        })
        .unwrap();
    assert!(
        box_top.value.contains("\n0\n"),
        "the box stayed: {}",
        box_top.value
    );
    tab.close().unwrap();
}

#[test]
fn issue12_a_refused_address_in_tabs_new_opens_no_tab() {
    // Its own browser, so the tab count is not moved by tests running in parallel.
    let browser = LocalBrowser::launch(LaunchOptions::default()).unwrap();
    support::track_pid(browser.pid().unwrap());
    let list = || {
        browser
            .tabs(TabsArgs {
                action: TabsAction::List,
                tab_id: None,
                url: None,
            })
            .unwrap()
            .tabs
            .len()
    };
    let before = list();
    for url in [
        "file:///etc/passwd",
        "  FILE:///etc/hosts",
        "javascript:alert(1)",
        "chrome://settings",
        "data:text/html,<p>hi</p>",
        "view-source:http://127.0.0.1/",
    ] {
        let err = browser
            .tabs(TabsArgs {
                action: TabsAction::New,
                tab_id: None,
                url: Some(url.into()),
            })
            .unwrap_err();
        assert_eq!(err.code(), "NAVIGATION_FAILED", "{url}");
        assert_eq!(list(), before, "{url} opened a tab");
    }
    // The tool surface too: refused, never rewritten to https://file:/// and opened.
    let tools = BrowserTools::new(std::sync::Arc::new(browser.clone()));
    for url in ["file:///etc/passwd", "javascript:alert(1)"] {
        let refused = tools.run(
            "browser_tabs",
            &serde_json::json!({"action": "new", "url": url}),
        );
        assert!(refused.is_err(), "{url}: {refused:?}");
        assert_eq!(list(), before, "{url} opened a tab through the tool");
    }
    // An address that is allowed still opens one.
    browser
        .tabs(TabsArgs {
            action: TabsAction::New,
            tab_id: None,
            url: Some("about:blank".into()),
        })
        .unwrap();
    assert_eq!(list(), before + 1);
    browser.close();
}

// A click on a link waits (briefly) for the navigation it usually starts; a link whose script
// prevents it must still return — also on a clock nobody advances (the wait is a grace, not a
// deadline on that clock).
#[test]
fn r_brw_act_a_link_that_does_not_navigate_returns_on_a_manual_clock() {
    let server = Server::start();
    let clock = jevgate::clock::ManualClock::new();
    let browser = LocalBrowser::launch(LaunchOptions {
        clock: std::sync::Arc::new(clock.clone()),
        ..LaunchOptions::default()
    })
    .unwrap();
    browser.navigate(&server.url("/p/nonav")).unwrap();
    let obs = browser.observe().unwrap();
    let link = obs.controls.iter().find(|c| c.name == "Stay here").unwrap();
    let started = Instant::now();
    let r = browser
        .page_click(ClickArgs {
            operation_id: "nonav-1".into(),
            generation: obs.generation,
            reference: link.reference.clone(),
        })
        .unwrap();
    assert!(!r.navigation_started);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(server.wait_count("stay", 1), 1);
    browser.close();
}

/// `operation_status` through the JSON surface C and Python call (`execute_json`).
fn asked(backend: &dyn BrowserBackend, id: &str) -> jevgate::Result<serde_json::Value> {
    let command = serde_json::json!({"tool": "operation_status", "args": {"operationId": id}});
    execute_json(backend, &command.to_string()).map(|out| serde_json::from_str(&out).unwrap())
}

// Issue 21 item 6 (R-TSK-RCPT): the browser keeps a record of the operations it ran and
// answers `operation_status` from it — a click sent through `execute` is executed (once: the
// fixture counts real clicks), an id never seen is unknown, a refused click is not executed;
// the answer holds the tool and when, never arguments or page content; a malformed id is a
// clear INVALID_ARGUMENT and is asked about nothing. The tools family (what the reference
// worker serves) reads the same record.
#[test]
fn issue21_operation_status_reads_the_browsers_record_of_what_it_ran() {
    let (server, browser, tab, obs) = setup("/p/buttons");
    let id = op("opstat-click");
    let press = named(&obs, "Press me").reference.clone();
    let click = serde_json::json!({"tool": "page_click", "args": {
        "operationId": id, "generation": obs.generation, "ref": press}});
    execute_json(&tab, &click.to_string()).unwrap();
    assert_eq!(server.wait_count("go", 1), 1);

    let done = asked(&tab, &id).unwrap();
    assert_eq!(done["operationId"], id.as_str());
    assert_eq!(done["status"], "executed");
    assert_eq!(done["outcome"], "completed");
    assert_eq!(done["tool"], "page_click");
    assert!(done["atMs"].as_i64().unwrap() > 1_600_000_000_000, "{done}");
    let keys: Vec<&str> = done
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    for key in &keys {
        assert!(
            ["operationId", "status", "outcome", "tool", "atMs"].contains(key),
            "{key} in {done}"
        );
    }
    // The browser's record, not the tab's: the browser handle reads the same entry.
    assert_eq!(
        browser.0.operation_status(&id).unwrap().status,
        OperationState::Executed
    );

    let never = asked(&tab, &op("opstat-never")).unwrap();
    assert_eq!(
        (never["status"].as_str(), never["outcome"].as_str()),
        (Some("unknown"), Some("not_recorded"))
    );
    assert!(never.get("tool").is_none() && never.get("atMs").is_none());

    // A click on a generation that no longer holds is refused before any input: not executed.
    let stale = op("opstat-stale");
    let refused = serde_json::json!({"tool": "page_click", "args": {
        "operationId": stale, "generation": obs.generation + 100, "ref": press}});
    let err = execute_json(&tab, &refused.to_string()).unwrap_err();
    assert_eq!(err.code(), "STALE_OBSERVATION");
    let r = tab.operation_status(&stale).unwrap();
    assert_eq!(
        (r.status, r.outcome),
        (OperationState::NotExecuted, OperationOutcome::Refused)
    );
    assert_eq!(r.error_code.as_deref(), Some("STALE_OBSERVATION"));
    assert_eq!(
        server.wait_count("go", 1),
        1,
        "the refused click sent nothing"
    );

    // Hostile ids: too long, empty, a control character — refused, for asking and for running.
    for bad in ["x".repeat(201), String::new(), "op\n1".to_string()] {
        assert_eq!(asked(&tab, &bad).unwrap_err().code(), "INVALID_ARGUMENT");
        assert_eq!(
            tab.operation_status(&bad).unwrap_err().code(),
            "INVALID_ARGUMENT"
        );
        let run = serde_json::json!({"tool": "page_click", "args": {
            "operationId": bad, "generation": obs.generation, "ref": press}});
        assert_eq!(
            execute_json(&tab, &run.to_string()).unwrap_err().code(),
            "INVALID_ARGUMENT"
        );
    }
    assert_eq!(server.wait_count("go", 1), 1);

    // The tools family (the reference worker) answers from the same record.
    let tools = BrowserTools::new(std::sync::Arc::new(tab.clone()));
    let via_tools = tools
        .run("operation_status", &serde_json::json!({"operationId": id}))
        .unwrap();
    assert_eq!(via_tools, done);
    let bad = tools
        .run("operation_status", &serde_json::json!({"operationId": 7}))
        .unwrap_err();
    assert_eq!(bad.code, "execution_failed");
    assert!(
        bad.message
            .starts_with("INVALID_ARGUMENT: invalid argument `operationId`"),
        "{}",
        bad.message
    );
    tab.close().unwrap();
}

/// A host's own backend that keeps no record: it refuses `operation_status` like any command
/// it does not know, or answers it with something else.
struct NoRecord {
    answer: Option<Response>,
}

impl BrowserBackend for NoRecord {
    fn execute(&self, _command: &Command) -> jevgate::Result<Response> {
        self.answer.clone().ok_or(jevgate::Error::ExecutionFailed {
            reason: "not supported".into(),
        })
    }
}

// Issue 21 item 6: a backend that keeps no record compiles unchanged and answers unknown; one
// that answers about another operation is read as unknown too.
#[test]
fn issue21_a_backend_without_a_record_answers_unknown() {
    let none = NoRecord { answer: None };
    let r = none.operation_status("op-1").unwrap();
    assert_eq!(
        (r.status, r.outcome),
        (OperationState::Unknown, OperationOutcome::NotRecorded)
    );
    assert_eq!(asked(&none, "op-1").unwrap()["status"], "unknown");
    let mut other = OperationRecord::unknown("op-2");
    other.status = OperationState::Executed;
    other.outcome = OperationOutcome::Completed;
    let liar = NoRecord {
        answer: Some(Response::Operation(other)),
    };
    assert_eq!(
        liar.operation_status("op-1").unwrap(),
        OperationRecord::unknown("op-1")
    );
    assert_eq!(
        none.operation_status(&"x".repeat(201)).unwrap_err().code(),
        "INVALID_ARGUMENT"
    );
}
