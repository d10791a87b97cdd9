//! R-BRW-OBS, R-BRW-SNAP and R-BRW-UNTRUSTED against a real headless Chromium: generations
//! and refs, iframes and open shadow DOM, sensitive fields, truncation, focus, the snapshot.

mod support;

use jevgate::browser::*;
use jevgate::observation::{Control, Observation};
use jevgate::untrusted::unwrap_text;
use support::pages::*;
use support::{shared_browser, Closing, Server};

fn setup() -> (Server, Closing, LocalTab) {
    let server = Server::start();
    let browser = Closing(shared_browser());
    let tab = browser.0.open_tab().expect("open tab");
    (server, browser, tab)
}

fn click(tab: &LocalTab, op: &str, generation: u64, r: &str) -> jevgate::Result<ActionResult> {
    tab.page_click(ClickArgs {
        operation_id: op.into(),
        generation,
        reference: r.into(),
    })
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

#[test]
fn r_brw_obs_observation_has_refs_navigation_scroll_and_text() {
    let (server, _b, tab) = setup();
    let nav = tab.navigate(&server.url("/p/buttons")).unwrap();
    assert!(nav.settled);
    let obs = tab.observe().unwrap();
    assert!(obs.generation >= 1);
    assert_eq!(obs.title, "Buttons");
    assert!(obs.url.ends_with("/p/buttons"));
    assert!(obs.text.contains("Some plain text here."));
    let go = named(&obs, "Press me");
    assert_eq!(go.role, "button");
    assert_eq!(go.actions, vec!["click".to_string()]);
    assert_eq!(named(&obs, "Second page").role, "link");
    let disabled = named(&obs, "Disabled one");
    assert!(disabled.disabled && disabled.actions.is_empty());
    assert!(obs.navigation.unwrap().can_go_back, "about:blank is behind");
    assert!(!obs.navigation.unwrap().can_go_forward);
    assert!(obs.scroll.at_top && obs.scroll.at_bottom);
    assert!(!obs.truncated.controls && !obs.truncated.title && !obs.truncated.url);
    // Nothing changed: the same generation and refs.
    let again = tab.observe().unwrap();
    assert_eq!(again.generation, obs.generation);
    assert_eq!(again.controls, obs.controls);
    tab.close().unwrap();
}

#[test]
fn r_brw_obs_refs_are_valid_only_for_their_generation() {
    let (server, _b, tab) = setup();
    tab.navigate(&server.url("/p/buttons")).unwrap();
    let first = tab.observe().unwrap();
    let add = named(&first, "Add a button").reference.clone();
    let go = named(&first, "Press me").reference.clone();
    click(&tab, &op("add"), first.generation, &add).unwrap();
    assert_eq!(server.wait_count("add", 1), 1);
    // The page grew a control: the old generation's refs no longer hold, nothing is sent.
    let err = click(&tab, &op("go-stale"), first.generation, &go).unwrap_err();
    assert_eq!(err.code(), "STALE_OBSERVATION");
    assert_eq!(err.stale_cause(), Some(StaleCause::GenerationChanged));
    assert_eq!(server.count("go"), 0);
    let second = tab.observe().unwrap();
    assert!(second.generation > first.generation);
    assert!(second.controls.iter().any(|c| c.name == "Added"));
    click(
        &tab,
        &op("go-fresh"),
        second.generation,
        &named(&second, "Press me").reference,
    )
    .unwrap();
    assert_eq!(server.wait_count("go", 1), 1);
    // A generation from the future or a ref never handed out is refused too.
    let err = click(&tab, &op("future"), second.generation + 5, "e1").unwrap_err();
    assert_eq!(err.stale_cause(), Some(StaleCause::GenerationChanged));
    let err = click(&tab, &op("nosuch"), second.generation, "e999").unwrap_err();
    assert_eq!(err.code(), "TARGET_NOT_FOUND");
    tab.close().unwrap();
}

#[test]
fn r_brw_obs_navigation_bumps_the_generation() {
    let (server, _b, tab) = setup();
    tab.navigate(&server.url("/p/buttons")).unwrap();
    let first = tab.observe().unwrap();
    let link = named(&first, "Second page").reference.clone();
    let res = click(&tab, &op("link"), first.generation, &link).unwrap();
    assert_eq!(res.generation_before, first.generation);
    let second = poll_until(&tab, |o| o.title == "Second");
    assert!(second.generation > first.generation);
    let err = click(&tab, &op("old"), first.generation, &link).unwrap_err();
    assert_eq!(err.stale_cause(), Some(StaleCause::GenerationChanged));
    tab.close().unwrap();
}

/// Bounded polling of real browser state: observe until `done` (a pending navigation is
/// re-read, as the gateway does).
fn poll_until(tab: &LocalTab, done: impl Fn(&Observation) -> bool) -> Observation {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        match tab.observe() {
            Ok(o) if done(&o) => return o,
            Ok(_) => {}
            Err(e) => assert_eq!(e.stale_cause(), Some(StaleCause::NavigationPending), "{e}"),
        }
        assert!(
            std::time::Instant::now() < deadline,
            "page never reached the state"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn r_brw_obs_iframe_and_open_shadow_dom_controls_are_present_and_clickable() {
    let (server, _b, tab) = setup();
    tab.navigate(&server.url("/p/frames")).unwrap();
    let obs = poll_until(&tab, |o| {
        o.controls.iter().any(|c| c.name == "Frame button")
    });
    let frame_button = named(&obs, "Frame button").reference.clone();
    let shadow_button = named(&obs, "Shadow button").reference.clone();
    assert!(obs.text.contains("Inside the frame"));
    assert!(obs.text.contains("In the shadow"));
    // A closed shadow root is not readable, by design of the web platform.
    assert!(!obs
        .controls
        .iter()
        .any(|c| c.name == "Closed shadow button"));
    click(&tab, &op("frame"), obs.generation, &frame_button).unwrap();
    assert_eq!(server.wait_count("inner", 1), 1);
    click(&tab, &op("shadow"), obs.generation, &shadow_button).unwrap();
    assert_eq!(server.wait_count("shadow", 1), 1);
    let snap = tab.snapshot(SnapshotArgs::default()).unwrap();
    assert!(
        snap.text.contains("iframe \"Inner frame\""),
        "{}",
        snap.text
    );
    assert!(snap
        .text
        .contains(&format!("button \"Frame button\" [ref={frame_button}]")));
    assert!(snap
        .text
        .contains(&format!("button \"Shadow button\" [ref={shadow_button}]")));
    tab.close().unwrap();
}

#[test]
fn r_brw_obs_sensitive_fields_are_flagged_and_their_values_never_leave_the_page() {
    let (server, _b, tab) = setup();
    tab.navigate(&server.url("/p/sensitive")).unwrap();
    let obs = tab.observe().unwrap();
    for name in ["Password", "Card number", "Security code", "One-time code"] {
        let c = named(&obs, name);
        assert!(c.sensitive, "{name} must be sensitive");
        assert_eq!(c.value, None, "{name} value must not be read");
    }
    let visible = named(&obs, "Name");
    assert!(!visible.sensitive);
    assert_eq!(visible.value.as_deref(), Some("Ann Visible"));
    // Typing into a sensitive field is allowed; its value is still never reported.
    let pw = named(&obs, "Password").reference.clone();
    tab.page_type(TypeArgs {
        operation_id: op("pw"),
        generation: obs.generation,
        reference: pw,
        text: SECRET_TYPED.into(),
        submit: false,
    })
    .unwrap();
    let after = tab.observe().unwrap();
    let outputs = [
        serde_json::to_string(&obs).unwrap(),
        serde_json::to_string(&after).unwrap(),
        tab.snapshot(SnapshotArgs::default()).unwrap().text,
        tab.get_text(GetTextArgs::default()).unwrap().text,
        serde_json::to_string(
            &tab.find(FindArgs {
                query: "code".into(),
                max_results: None,
            })
            .unwrap(),
        )
        .unwrap(),
    ];
    for out in &outputs {
        for secret in [
            SECRET_PASSWORD,
            SECRET_CARD,
            SECRET_OTP,
            SECRET_TYPED,
            "\"123\"",
        ] {
            assert!(!out.contains(secret), "a sensitive value leaked: {out}");
        }
    }
    assert!(outputs[2].contains("[sensitive]"));
    assert!(outputs[2].contains("Ann Visible"));
    assert_eq!(
        after.focus.as_deref(),
        Some(named(&after, "Password").reference.as_str())
    );
    tab.close().unwrap();
}

#[test]
fn r_brw_obs_truncated_flags_under_a_budget() {
    let (server, _b, tab) = setup();
    tab.navigate(&server.url("/p/big")).unwrap();
    let full = tab.observe().unwrap();
    assert!(full.controls.len() >= 1000, "{}", full.controls.len());
    assert!(!full.truncated.controls);
    let cut = tab
        .observe_with(ObserveArgs {
            max_controls: Some(50),
            max_text_chars: Some(100),
        })
        .unwrap();
    assert_eq!(cut.controls.len(), 50);
    assert!(cut.truncated.controls);
    assert!(cut.text.chars().count() <= 100);
    // The budget does not change what the page is: same generation.
    assert_eq!(cut.generation, full.generation);
    let snap = tab
        .snapshot(SnapshotArgs {
            region: None,
            max_chars: Some(2000),
        })
        .unwrap();
    assert!(snap.truncated);
    assert!(snap.text.len() < 2100);
    tab.close().unwrap();
}

#[test]
fn r_brw_snap_snapshot_is_a_compact_tree_with_refs_and_regions_wrapped_untrusted() {
    let (server, _b, tab) = setup();
    tab.navigate(&server.url("/p/form")).unwrap();
    let obs = tab.observe().unwrap();
    let snap = tab.snapshot(SnapshotArgs::default()).unwrap();
    assert_eq!(snap.generation, obs.generation);
    let body = unwrap_text(&snap.text).expect("wrapped in the untrusted envelope");
    assert!(
        body.contains("- heading \"Search form\" [level=1]"),
        "{body}"
    );
    let q = obs
        .controls
        .iter()
        .find(|c| c.search_like)
        .expect("a search-like field");
    assert!(
        body.contains(&format!("searchbox \"Search\" [ref={}]", q.reference)),
        "{body}"
    );
    assert!(body.contains("combobox \"Colour\""));
    assert!(body.contains(": Red"));
    assert!(body.contains("checkbox \"I agree\""));
    // A contenteditable region is one editable textbox, its own text as value.
    let editor = obs
        .controls
        .iter()
        .find(|c| c.name == "Editor")
        .expect("editor");
    assert!(editor.editable && editor.role == "textbox");
    assert_eq!(editor.value.as_deref(), Some("Rich text"));
    assert_eq!(
        obs.controls
            .iter()
            .filter(|c| c.role == "textbox" && c.name.is_empty())
            .count(),
        0
    );
    // One region: the search form only.
    let region = tab
        .snapshot(SnapshotArgs {
            region: Some(q.reference.clone()),
            max_chars: None,
        })
        .unwrap();
    let rbody = unwrap_text(&region.text).unwrap();
    assert!(rbody.starts_with("- searchbox \"Search\""), "{rbody}");
    assert!(!rbody.contains("Colour"));
    let missing = tab.snapshot(SnapshotArgs {
        region: Some("e999".into()),
        max_chars: None,
    });
    assert_eq!(missing.unwrap_err().code(), "TARGET_NOT_FOUND");
    tab.close().unwrap();
}

/// The last line of a snapshot body and the `(shown, total)` it states.
fn note_of(body: &str) -> (&str, usize, usize) {
    let last = body.lines().last().unwrap_or_default();
    let rest = last
        .strip_prefix("[snapshot truncated at ")
        .unwrap_or_else(|| panic!("no truncation note as the last line: {last:?}"));
    let mut nums = rest
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty());
    let shown = nums.next().unwrap().parse().unwrap();
    let total = nums.next().unwrap().parse().unwrap();
    (last, shown, total)
}

#[test]
fn issue12_a_cut_snapshot_says_so_in_its_text_and_how_to_read_the_rest() {
    let (server, _b, tab) = setup();
    // Over the default budget, under the maximum: the note offers the budget that reads it all.
    tab.navigate(&server.url("/p/medium")).unwrap();
    let snap = tab.snapshot(SnapshotArgs::default()).unwrap();
    assert!(snap.truncated);
    let body = unwrap_text(&snap.text).unwrap();
    let (note, shown, total) = note_of(body);
    eprintln!("medium: {note}");
    assert!(
        shown <= 20_000 && total > 20_000 && total <= 30_000,
        "{note}"
    );
    assert_eq!(snap.total_chars, Some(total));
    let tree = &body[..body.len() - note.len() - 1];
    assert_eq!(tree.chars().count(), shown, "{note}");
    assert!(note.contains(&format!("maxChars {total}")), "{note}");
    let all = tab
        .snapshot(SnapshotArgs {
            region: None,
            max_chars: Some(total),
        })
        .unwrap();
    assert!(!all.truncated && all.total_chars.is_none());
    let whole = unwrap_text(&all.text).unwrap();
    assert_eq!(
        whole.chars().count(),
        total,
        "the stated total is the whole tree"
    );
    assert!(whole.starts_with(tree), "the cut keeps whole leading lines");

    // Over the maximum: a larger budget cannot help, the note says how to narrow instead.
    tab.navigate(&server.url("/p/big")).unwrap();
    let snap = tab
        .snapshot(SnapshotArgs {
            region: None,
            max_chars: Some(1_000_000),
        })
        .unwrap();
    assert!(snap.truncated);
    let (note, shown, total) = note_of(unwrap_text(&snap.text).unwrap());
    eprintln!("big: {note}");
    assert!(shown <= 30_000 && total > 30_000, "{note}");
    assert!(note.contains("region") && note.contains("find"), "{note}");

    // The tool says it in its own words (its options: max_chars, browser_find, …).
    let tools = BrowserTools::new(std::sync::Arc::new(tab.clone()));
    let page = tools
        .run("browser_read_page", &serde_json::json!({}))
        .unwrap();
    assert_eq!(page["truncated"], true);
    let text = page["text"].as_str().unwrap();
    let (note, _, total) = note_of(text);
    assert!(total > 30_000 && note.contains("browser_find"), "{note}");
    assert_eq!(
        text.matches("[snapshot truncated at ").count(),
        1,
        "one note"
    );
    assert!(
        text.chars().count() <= 20_000,
        "the tool's note is inside the budget too"
    );
    tab.navigate(&server.url("/p/medium")).unwrap();
    let page = tools
        .run("browser_read_page", &serde_json::json!({}))
        .unwrap();
    let (note, _, total) = note_of(page["text"].as_str().unwrap());
    assert!(note.contains(&format!("max_chars {total}")), "{note}");
    let page = tools
        .run(
            "browser_read_page",
            &serde_json::json!({ "max_chars": total }),
        )
        .unwrap();
    assert_eq!(page["truncated"], false);
    assert!(!page["text"]
        .as_str()
        .unwrap()
        .contains("[snapshot truncated"));
    tab.close().unwrap();
}

// Issue 26 slice A (R-BRW-OBS, R-BRW-UNTRUSTED): each control names its nearest enclosing open
// dialog, else form, with the container's name and bounded visible text; a container's text
// never holds a field's value (input, textarea, select, editable content), sensitive or not;
// a control outside any container names none.
#[test]
fn r_brw_obs_controls_name_their_enclosing_dialog_or_form_without_field_values() {
    let (server, _b, tab) = setup();
    tab.navigate(&server.url("/p/boxes")).unwrap();
    let obs = tab.observe().unwrap();
    let delete = named(&obs, "Delete");
    let cancel = named(&obs, "Cancel");
    assert!(delete.container.is_some());
    assert_eq!(delete.container, cancel.container);
    let dialog = obs.container_of(delete).unwrap();
    assert_eq!(dialog.kind, "dialog");
    assert_eq!(dialog.name, "Delete account?");
    assert!(dialog.text.contains("This cannot be undone."), "{dialog:?}");
    assert!(dialog.text.contains("Delete") && dialog.text.contains("Cancel"));

    let pay = named(&obs, "Pay now");
    let form = obs.container_of(pay).unwrap();
    assert_eq!(
        (form.kind.as_str(), form.name.as_str()),
        ("form", "Payment")
    );
    assert!(form.text.contains("Charged today."), "{form:?}");
    assert!(
        form.text.contains("Card number"),
        "labels are text: {form:?}"
    );
    for value in [
        SECRET_CARD,
        BOX_FIELD_VALUE,
        BOX_TEXTAREA_VALUE,
        BOX_OPTION_TEXT,
        BOX_EDITABLE_VALUE,
    ] {
        let json = serde_json::to_string(&obs.containers).unwrap();
        assert!(!json.contains(value), "{value} in the containers: {json}");
    }
    // The fields of the form name it too; the card field stays sensitive and valueless.
    let card = named(&obs, "Card number");
    assert!(card.sensitive && card.value.is_none());
    assert_eq!(card.container, pay.container);
    assert_ne!(pay.container, delete.container);
    // Outside any container: none.
    assert!(named(&obs, "Home").container.is_none());
    let ids: Vec<&str> = obs.containers.iter().map(|k| k.id.as_str()).collect();
    assert_eq!(ids, ["k1", "k2"], "page order");
    assert!(!obs.truncated.containers);
    tab.close().unwrap();
}

// Issue 26 slice A: a container's text is bounded (300 characters) however long the form, and
// a page of 1,000 forms lists at most 32 containers and says it cut the rest.
#[test]
fn r_brw_obs_container_text_and_count_are_bounded() {
    let (server, _b, tab) = setup();
    tab.navigate(&server.url("/p/boxbig")).unwrap();
    let obs = tab.observe().unwrap();
    let k = obs.container_of(named(&obs, "Send")).unwrap();
    assert_eq!(k.name, "Long form");
    assert!(k.text.chars().count() <= 300, "{}", k.text.len());
    assert!(k.text.starts_with("lorem ipsum"));
    assert!(
        obs.text.len() > 10_000,
        "the page text keeps its own budget"
    );

    tab.navigate(&server.url("/p/forms-1000")).unwrap();
    let obs = tab.observe().unwrap();
    assert_eq!(obs.controls.len(), 1000);
    assert_eq!(obs.containers.len(), 32);
    assert!(obs.truncated.containers);
    let first = obs.container_of(named(&obs, "Send 0")).unwrap();
    assert_eq!(first.name, "Form 0");
    assert_eq!(first.text, "Form 0 Text of form 0. Send 0");
    assert_eq!(obs.container_of(named(&obs, "Send 31")).unwrap().id, "k32");
    assert!(named(&obs, "Send 32").container.is_none());
    tab.close().unwrap();
}

/// The fastest of five observations of `path` (wall time, page already loaded).
fn observe_time(tab: &LocalTab, server: &Server, path: &str) -> std::time::Duration {
    tab.navigate(&server.url(path)).unwrap();
    (0..5)
        .map(|_| {
            // Every observation walks the whole page.
            let t = std::time::Instant::now();
            tab.observe().unwrap();
            t.elapsed()
        })
        .min()
        .unwrap()
}

// Issue 26 slice A (STYLE "linear time in input"): the containers are computed in one pass
// (memoized per container element, text merged upward once): ten times the forms, or ten
// times the controls and text inside one form, takes about ten times as long, not a hundred. A
// ratio of the fastest of five runs, in the style of tests/linear_time.rs, never a time; the
// bound leaves room for a loaded machine (26 was seen at load 13 on 2 cores) and is still far
// below a quadratic walk's 100.
#[test]
fn r_brw_obs_containers_are_linear_in_the_page() {
    const MAX_RATIO: f64 = 40.0;
    let (server, _b, tab) = setup();
    for shape in ["forms", "oneform"] {
        let small = observe_time(&tab, &server, &format!("/p/{shape}-200"));
        let large = observe_time(&tab, &server, &format!("/p/{shape}-2000"));
        let floor = std::time::Duration::from_millis(5);
        let r = large.as_secs_f64() / small.max(floor).as_secs_f64();
        eprintln!("{shape}: 200 {small:?}, 2000 {large:?}, ratio {r:.1}");
        assert!(
            r <= MAX_RATIO,
            "{shape}: 200 took {small:?}, 2000 took {large:?}: ratio {r:.1} (not linear)"
        );
    }
    tab.close().unwrap();
}
