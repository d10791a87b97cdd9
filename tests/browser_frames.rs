//! R-BRW-OBS ("iframes are included"), R-BRW-ACT and R-BRW-STALE for cross-origin iframes,
//! which Chromium renders out of process with their own DevTools target: the fixture page on
//! `127.0.0.1` frames `localhost` on the same port, another site. Their controls and text are
//! observed at the frame's position with `f<N>` refs, clicks are real mouse events at the
//! translated point (counted once by the fixture server), and a change inside a frame makes
//! the old generation stale.

mod support;

use jevgate::browser::*;
use jevgate::observation::{Control, Observation};
use jevgate::untrusted::unwrap_text;
use std::time::{Duration, Instant};
use support::pages::*;
use support::{shared_browser, Closing, Server};

fn setup(page: &str, wait_for: &str) -> (Server, Closing, LocalTab, Observation) {
    let server = Server::start();
    let browser = Closing(shared_browser());
    let tab = browser.0.open_tab().expect("open tab");
    assert!(tab.navigate(&server.url(page)).unwrap().settled);
    let obs = poll_until(&tab, |o| o.controls.iter().any(|c| c.name == wait_for));
    (server, browser, tab, obs)
}

/// Observes until `done` (bounded): a frame's target may attach a moment after the load.
fn poll_until(tab: &LocalTab, done: impl Fn(&Observation) -> bool) -> Observation {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let obs = tab.observe().unwrap();
        if done(&obs) || Instant::now() >= deadline {
            return obs;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
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

fn js(tab: &LocalTab, id: &str, code: &str) -> String {
    let res = tab
        .javascript(JavascriptArgs {
            operation_id: op(id),
            code: code.into(),
        })
        .unwrap();
    unwrap_text(&res.value).unwrap().to_string()
}

#[test]
fn r_brw_obs_cross_origin_frame_controls_and_text_are_observed_in_page_order() {
    let (_server, _b, tab, obs) = setup("/p/xframes", "Cross button");
    // The frame really is cross-origin: its document is out of the page's reach.
    assert_eq!(
        js(
            &tab,
            "xdoc",
            "document.getElementById('xf').contentDocument === null"
        ),
        "true"
    );
    let names: Vec<&str> = obs.controls.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "Top button",
            "Cross button",
            "Cross password",
            "Cross name",
            "Cross add",
            "After button"
        ]
    );
    let refs: Vec<&str> = obs.controls.iter().map(|c| c.reference.as_str()).collect();
    assert_eq!(refs, ["e1", "f1e1", "f1e2", "f1e3", "f1e4", "e2"]);
    let (top, inside, after) = (
        obs.text.find("Cross-origin frame").unwrap(),
        obs.text.find("Inside the cross frame").unwrap(),
        obs.text.find("After the frame").unwrap(),
    );
    assert!(top < inside && inside < after, "{}", obs.text);
    assert!(!obs.truncated.controls);
    // Observing again without a change: the same generation.
    assert_eq!(tab.observe().unwrap().generation, obs.generation);

    let snap = tab.snapshot(SnapshotArgs::default()).unwrap();
    assert!(
        snap.text
            .contains("- iframe \"Cross frame\":\n  - text: Inside the cross frame\n  - button \"Cross button\" [ref=f1e1]"),
        "{}",
        snap.text
    );
    let region = tab
        .snapshot(SnapshotArgs {
            region: Some("f1e1".into()),
            max_chars: None,
        })
        .unwrap();
    assert!(region.text.contains("button \"Cross button\" [ref=f1e1]"));
    assert!(!region.text.contains("Top button"), "{}", region.text);
    let text = tab.get_text(GetTextArgs::default()).unwrap();
    assert!(text.text.contains("Inside the cross frame"));
    let found = tab
        .find(FindArgs {
            query: "cross password".into(),
            max_results: None,
        })
        .unwrap();
    assert_eq!(found.controls.len(), 1);
    assert_eq!(found.controls[0].reference, "f1e2");
    tab.close().unwrap();
}

#[test]
fn r_brw_act_click_in_a_cross_origin_frame_is_one_real_click() {
    let (server, _b, tab, obs) = setup("/p/xframes", "Cross button");
    let id = op("xclick");
    click(
        &tab,
        &id,
        obs.generation,
        &named(&obs, "Cross button").reference,
    )
    .unwrap();
    assert_eq!(server.wait_count("xinner", 1), 1);
    let rec = tab.operation_status(&id).unwrap();
    assert_eq!(rec.status, OperationState::Executed);
    // The main frame's refs still work in the same generation.
    click(&tab, &op("top"), obs.generation, "e1").unwrap();
    assert_eq!(server.wait_count("top", 1), 1);
    assert_eq!(server.count("xinner"), 1);
    // A frame number no observation handed out is not found, and nothing is sent.
    let err = click(&tab, &op("nof"), obs.generation, "f9e1").unwrap_err();
    assert_eq!(err.code(), "TARGET_NOT_FOUND");
    tab.close().unwrap();
}

#[test]
fn r_brw_obs_sensitive_field_in_a_cross_origin_frame_is_flagged_and_never_read() {
    let (_server, _b, tab, obs) = setup("/p/xframes", "Cross password");
    let pw = named(&obs, "Cross password");
    assert!(pw.sensitive);
    assert_eq!(pw.value, None);
    let pw = pw.reference.clone();
    tab.page_type(TypeArgs {
        operation_id: op("xpw"),
        generation: obs.generation,
        reference: pw.clone(),
        text: SECRET_TYPED.into(),
        submit: false,
    })
    .unwrap();
    let after = tab.observe().unwrap();
    assert_eq!(after.focus.as_deref(), Some(pw.as_str()));
    let outputs = [
        serde_json::to_string(&obs).unwrap(),
        serde_json::to_string(&after).unwrap(),
        tab.snapshot(SnapshotArgs::default()).unwrap().text,
        tab.get_text(GetTextArgs::default()).unwrap().text,
    ];
    for out in &outputs {
        for secret in [SECRET_PASSWORD, SECRET_TYPED] {
            assert!(!out.contains(secret), "a sensitive value leaked: {out}");
        }
    }
    assert!(outputs[2].contains("textbox \"Cross password\" [ref=f1e2] [sensitive]"));
    tab.close().unwrap();
}

#[test]
fn r_brw_act_type_and_form_input_in_a_cross_origin_frame() {
    let (server, _b, tab, obs) = setup("/p/xframes", "Cross name");
    let field = named(&obs, "Cross name").reference.clone();
    tab.page_type(TypeArgs {
        operation_id: op("xtype"),
        generation: obs.generation,
        reference: field.clone(),
        text: "hello".into(),
        submit: true,
    })
    .unwrap();
    assert_eq!(server.wait_count("xenter:hello", 1), 1);
    let obs = tab.observe().unwrap();
    assert_eq!(named(&obs, "Cross name").value.as_deref(), Some("hello"));
    assert_eq!(obs.focus.as_deref(), Some(field.as_str()));
    tab.form_input(FormInputArgs {
        operation_id: op("xform"),
        generation: obs.generation,
        reference: field.clone(),
        value: "set by form".into(),
    })
    .unwrap();
    let obs = tab.observe().unwrap();
    assert_eq!(
        named(&obs, "Cross name").value.as_deref(),
        Some("set by form")
    );
    // Typing back in the main frame after the frame held the focus.
    let top = tab
        .javascript(JavascriptArgs {
            operation_id: op("addfield"),
            code: "document.body.insertAdjacentHTML('afterbegin', '<input aria-label=\"Top field\">'); 1".into(),
        })
        .unwrap();
    assert!(!top.truncated);
    let obs = tab.observe().unwrap();
    let top_field = named(&obs, "Top field").reference.clone();
    tab.page_type(TypeArgs {
        operation_id: op("toptype"),
        generation: obs.generation,
        reference: top_field,
        text: "main again".into(),
        submit: false,
    })
    .unwrap();
    let obs = tab.observe().unwrap();
    assert_eq!(
        named(&obs, "Top field").value.as_deref(),
        Some("main again")
    );
    assert_eq!(
        named(&obs, "Cross name").value.as_deref(),
        Some("set by form")
    );
    tab.close().unwrap();
}

#[test]
fn r_brw_stale_a_change_inside_a_cross_origin_frame_makes_old_refs_stale() {
    let (server, _b, tab, first) = setup("/p/xframes", "Cross add");
    click(
        &tab,
        &op("xadd"),
        first.generation,
        &named(&first, "Cross add").reference,
    )
    .unwrap();
    assert_eq!(server.wait_count("xadd", 1), 1);
    // The frame grew a control: neither the frame's nor the main frame's old refs hold.
    for (tag, r) in [("stale-top", "e1"), ("stale-x", "f1e1")] {
        let err = click(&tab, &op(tag), first.generation, r).unwrap_err();
        assert_eq!(err.code(), "STALE_OBSERVATION", "{r}");
        assert_eq!(err.stale_cause(), Some(StaleCause::GenerationChanged));
    }
    assert_eq!(server.count("top"), 0);
    assert_eq!(server.count("xinner"), 0);
    let second = tab.observe().unwrap();
    assert!(second.generation > first.generation);
    assert_eq!(named(&second, "Cross added").reference, "f1e5");
    // The frame removed: its refs are stale, nothing is sent.
    js(&tab, "rm", "document.getElementById('xf').remove(); 1");
    let err = click(&tab, &op("gone"), second.generation, "f1e1").unwrap_err();
    assert_eq!(err.code(), "STALE_OBSERVATION");
    let third = tab.observe().unwrap();
    assert!(third.generation > second.generation);
    assert!(third.controls.iter().all(|c| !c.reference.starts_with('f')));
    assert_eq!(server.count("xinner"), 0);
    tab.close().unwrap();
}

#[test]
fn r_brw_stale_a_covered_cross_origin_frame_is_target_obscured() {
    let (server, _b, tab, obs) = setup("/p/xcovered", "Cross button");
    let err = click(
        &tab,
        &op("covered"),
        obs.generation,
        &named(&obs, "Cross button").reference,
    )
    .unwrap_err();
    assert_eq!(err.stale_cause(), Some(StaleCause::TargetObscured));
    assert_eq!(server.wait_count("xinner", 0), 0);
    assert_eq!(server.count("veil"), 0);
    tab.close().unwrap();
}

#[test]
fn r_brw_act_a_frame_below_the_fold_is_scrolled_into_view_and_clicked() {
    let (server, _b, tab, obs) = setup("/p/xfar", "Cross button");
    assert!(obs.scroll.at_top && !obs.scroll.at_bottom);
    click(
        &tab,
        &op("far"),
        obs.generation,
        &named(&obs, "Cross button").reference,
    )
    .unwrap();
    assert_eq!(server.wait_count("xinner", 1), 1);
    tab.close().unwrap();
}

#[test]
fn r_brw_obs_nested_cross_origin_frames_are_walked_and_clickable() {
    let (server, _b, tab, obs) = setup("/p/xnest", "Deep button");
    let refs: Vec<(&str, &str)> = obs
        .controls
        .iter()
        .map(|c| (c.name.as_str(), c.reference.as_str()))
        .collect();
    assert_eq!(
        refs,
        [
            ("Nest top", "e1"),
            ("Middle button", "f1e1"),
            ("Deep button", "f2e1"),
            ("Middle alert", "f1e2")
        ]
    );
    assert!(obs.text.contains("Deep text"));
    click(&tab, &op("deep"), obs.generation, "f2e1").unwrap();
    assert_eq!(server.wait_count("deep", 1), 1);
    click(&tab, &op("mid"), obs.generation, "f1e1").unwrap();
    assert_eq!(server.wait_count("mid", 1), 1);
    let snap = tab.snapshot(SnapshotArgs::default()).unwrap();
    assert!(
        snap.text.contains("  - iframe \"Deep frame\":\n    - text: Deep text\n    - button \"Deep button\" [ref=f2e1]"),
        "{}",
        snap.text
    );
    tab.close().unwrap();
}

#[test]
fn r_brw_act_a_dialog_opened_inside_a_cross_origin_frame_is_reported_and_handled() {
    let (server, _b, tab, obs) = setup("/p/xnest", "Middle alert");
    let res = click(&tab, &op("xalert"), obs.generation, "f1e2").unwrap();
    let dialog = res.dialog.expect("the click reports the dialog it opened");
    assert_eq!(dialog.kind, "alert");
    assert_eq!(dialog.message, "From the middle");
    assert!(tab.observe().unwrap().controls.is_empty());
    tab.handle_dialog(HandleDialogArgs {
        accept: true,
        prompt_text: None,
    })
    .unwrap();
    assert_eq!(server.wait_count("after-mid-alert", 1), 1);
    assert!(tab.observe().unwrap().dialog.is_none());
    tab.close().unwrap();
}

#[test]
fn r_brw_obs_a_cross_origin_frame_inside_a_same_origin_frame_is_walked_and_clickable() {
    let (server, _b, tab, obs) = setup("/p/xsame", "Deep button");
    let refs: Vec<(&str, &str)> = obs
        .controls
        .iter()
        .map(|c| (c.name.as_str(), c.reference.as_str()))
        .collect();
    assert_eq!(
        refs,
        [
            ("Same top", "e1"),
            ("Same middle", "e2"),
            ("Deep button", "f1e1")
        ]
    );
    assert!(!obs.truncated.controls);
    click(&tab, &op("samedeep"), obs.generation, "f1e1").unwrap();
    assert_eq!(server.wait_count("deep", 1), 1);
    tab.close().unwrap();
}

// Issue 26 slice A (R-BRW-OBS): a cross-origin frame's own form is its controls' container,
// its id prefixed like the frame's refs (`f1k1`), so it never collides with the main frame's
// `k1` and resolves on the composed observation.
#[test]
fn r_brw_obs_a_cross_origin_frame_container_has_a_prefixed_id_that_resolves() {
    let (_server, _b, tab, obs) = setup("/p/xboxes", "Join");
    let join = named(&obs, "Join");
    assert!(join.reference.starts_with("f1e"), "{}", join.reference);
    assert_eq!(join.container.as_deref(), Some("f1k1"));
    let k = obs.container_of(join).expect("the frame's form");
    assert_eq!((k.kind.as_str(), k.name.as_str()), ("form", "Sign up"));
    assert!(k.text.contains("Join the club."), "{k:?}");
    let go = named(&obs, "Go");
    assert_eq!(go.container.as_deref(), Some("k1"));
    assert_eq!(obs.container_of(go).unwrap().name, "Search");
    let ids: Vec<&str> = obs.containers.iter().map(|k| k.id.as_str()).collect();
    assert_eq!(ids, ["k1", "f1k1"]);
    tab.close().unwrap();
}
