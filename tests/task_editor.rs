//! Issue 25 item 3 (seed 003 "Direct commands": Text, Erasing text, Unfocused fields, Menu-bar
//! items; "Computer helper contract": `keys` backspace; R-RUN, R-TSK-RCPT): a person's direct
//! commands in a computer task on a GTK text editor (mousepad, GTK 3, its menu bar exposed over
//! AT-SPI) through a paired `jevgate-computer` and the real run loop — typing into the
//! unfocused document (the helper refuses with FOCUS_REQUIRED, the same command focuses the
//! field once and types again without a second decision), a word that is text while the field
//! has focus, erasing by Backspace keys (ลบ 3, ลบๆ) and by rewriting the field (delete 12),
//! and Edit → Copy chosen through Jev's separate menu choice (read back from the X clipboard).
//!
//! Jev is a scripted in-process callback: it proves which options are offered and that the
//! chosen one is pressed, not a model's judgment. Needs a real desktop (scripts/desktop,
//! mousepad, xclip): skipped with the reason printed, a failure under
//! `JEVGATE_REQUIRE_DESKTOP=1`.

mod support;

use jevgate::observation::Control;
use jevgate::task::{SpawnRequest, TaskOwner, TaskStatus};
use jevgate::{Config, Gateway, GatewayOptions};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::desk::{Desk, Layout};

/// The requests Jev was asked, as JSON.
type Asked = Arc<Mutex<Vec<Value>>>;

/// A scripted Jev: "คัดลอก" chooses the menu-bar command `Edit → Copy` (through the menu
/// question, which must offer it); "starwork" is the command's own text to type (the
/// `type_text` option, which must be offered); a command with "zoom" the in-window control
/// naming Zoom; anything else the first control offered (the one field of a field choice).
fn scripted(asked: Asked) -> jevgate::jev::JevCallback {
    Arc::new(move |req: &[u8]| {
        let v: Value = serde_json::from_slice(req).unwrap();
        asked.lock().unwrap().push(v.clone());
        let state = v["state"].as_str().unwrap_or("").to_string();
        let options = |q: &str| v["questions"][q]["criteria"].as_object().cloned();
        let pick = |q: &str, want: &dyn Fn(&str, &str) -> bool| {
            options(q).and_then(|o| {
                o.iter()
                    .find(|(k, d)| want(k, d.as_str().unwrap_or("")))
                    .map(|(k, _)| k.clone())
            })
        };
        let choice = |q: &str, key: String| {
            let probs: serde_json::Map<String, Value> = options(q)
                .unwrap()
                .keys()
                .map(|k| (k.clone(), json!(if *k == key { 1.0 } else { 0.0 })))
                .collect();
            json!({"type": "choice", "choice": key, "probabilities": probs, "confidence": 0.95})
        };
        let mut answers = serde_json::Map::new();
        let control = if state.contains("คัดลอก") {
            let copy = pick("menu", &|_, d| d == "Edit → Copy").expect("Edit → Copy offered");
            answers.insert("menu".into(), choice("menu", copy));
            "menu".to_string()
        } else if state == "starwork" {
            pick("control", &|k, _| k == "type_text").expect("the command offered as text")
        } else if state.contains("zoom") {
            pick("control", &|k, d| k.starts_with('o') && d.contains("Zoom")).expect("a Zoom")
        } else {
            pick("control", &|k, _| k == "o0").expect("a control offered")
        };
        answers.insert("control".into(), choice("control", control));
        if let Some(menu) = options("menu") {
            if !answers.contains_key("menu") {
                let first = menu.keys().next().unwrap().clone();
                answers.insert("menu".into(), choice("menu", first));
            }
        }
        Ok(
            json!({"model": "host", "usage": {"input_tokens": 1, "output_tokens": 1},
                "answers": answers})
            .to_string()
            .into_bytes(),
        )
    })
}

const WAIT: Duration = Duration::from_secs(30);

fn owner() -> TaskOwner {
    TaskOwner::new("assistant", "alice", "conv-1")
}

/// A gateway whose Jev is [`scripted`] and a kept-open session on `desk` (the in-memory page).
fn desk_session(dir: &std::path::Path, desk: &Arc<Desk>, asked: &Asked) -> (Gateway, String) {
    let config = Config::from_json_str(
        r#"{"gateway":{"jev":{"enabled":true,"provider":"callback",
            "features":{"browserTasks":{"enabled":true}}}}}"#,
    )
    .unwrap();
    let gw = Gateway::open(GatewayOptions::new(dir, config)).unwrap();
    gw.set_jev_callback(Some(scripted(asked.clone())));
    let mut request = SpawnRequest::from_person("");
    request.keep_open = true;
    let id = gw
        .tasks()
        .spawn_with_backend(&owner(), request, desk.clone())
        .unwrap();
    gw.tasks().wait(&owner(), &id, WAIT).unwrap();
    (gw, id)
}

fn settle(gw: &Gateway, id: &str, text: &str) -> TaskStatus {
    gw.tasks().command(&owner(), id, text).unwrap();
    let s = gw.tasks().wait(&owner(), id, WAIT).unwrap();
    assert!(!s.state.is_busy(), "{s:#?}");
    s
}

fn menu_item(reference: &str, menu: &str, name: &str) -> Control {
    Control {
        menu: Some(menu.into()),
        ..Control::new(reference, "menu item", name)
    }
}

// Seed 003 "Menu-bar items are Jev's separate menu choice" (issue 25 item 3; R-RUN): menu-bar
// commands are not among the in-window controls Jev chooses from but in a question of their
// own, by place and name; คัดลอก chooses Edit → Copy there and that item is pressed, while
// zoom still chooses the in-window Zoom in over Window → Zoom.
#[test]
fn r_run_menu_bar_commands_are_jevs_separate_menu_choice() {
    let dir = tempfile::tempdir().unwrap();
    let desk = Desk::with(Layout {
        controls: vec![
            Control::new("e1", "button", "Zoom in"),
            menu_item("e2", "Edit", "Copy"),
            menu_item("e3", "Window", "Zoom"),
            Control {
                menu: Some(String::new()),
                ..Control::new("e4", "menu", "Edit")
            },
        ],
        ..Layout::default()
    });
    let asked: Asked = Arc::default();
    let (gw, id) = desk_session(dir.path(), &desk, &asked);
    let s = settle(&gw, &id, "คัดลอก");
    assert_eq!(s.reason.as_deref(), Some("DONE"), "{s:#?}");
    assert_eq!(desk.clicks.lock().clone(), ["Copy"]);
    let request = asked.lock().unwrap().last().unwrap().clone();
    let controls: Vec<String> = request["questions"]["control"]["criteria"]
        .as_object()
        .unwrap()
        .values()
        .map(|d| d.as_str().unwrap().to_string())
        .collect();
    assert!(
        controls.iter().any(|d| d.contains("Zoom in")),
        "{controls:?}"
    );
    assert!(
        !controls
            .iter()
            .any(|d| d.contains("Copy") || d.contains("\"Zoom\"")),
        "menu commands stay out of the control question: {controls:?}"
    );
    let menu: Vec<String> = request["questions"]["menu"]["criteria"]
        .as_object()
        .unwrap()
        .values()
        .map(|d| d.as_str().unwrap().to_string())
        .collect();
    // A menu-bar title (Edit itself) opens a menu: not a command.
    assert_eq!(menu, ["Edit → Copy", "Window → Zoom"]);
    let s = settle(&gw, &id, "zoom");
    assert_eq!(s.reason.as_deref(), Some("DONE"), "{s:#?}");
    assert_eq!(desk.clicks.lock().clone(), ["Copy", "Zoom in"]);
    // No menu bar: no menu question, no menu option.
    let plain = Desk::new();
    let dir = tempfile::tempdir().unwrap();
    let (gw, id) = desk_session(dir.path(), &plain, &asked);
    settle(&gw, &id, "press Alpha");
    let request = asked.lock().unwrap().last().unwrap().clone();
    assert!(request["questions"].get("menu").is_none());
    assert!(request["questions"]["control"]["criteria"]
        .get("menu")
        .is_none());
}

// Seed 003 "Unfocused fields" (issue 25 item 3; R-RUN, R-TSK-RCPT): typing refused with
// FOCUS_REQUIRED (nothing typed) clicks that field once and types the same text, with no second
// Jev decision; a field the click does not focus stops the command with FOCUS_REQUIRED after
// one click — never a second.
#[test]
fn r_run_focus_required_clicks_the_field_once_and_types_again() {
    let dir = tempfile::tempdir().unwrap();
    let desk = Desk::new();
    *desk.unfocused.lock() = Some("e9".into());
    let asked: Asked = Arc::default();
    let (gw, id) = desk_session(dir.path(), &desk, &asked);
    let s = settle(&gw, &id, "type hello");
    assert_eq!(s.reason.as_deref(), Some("DONE"), "{s:#?}");
    assert_eq!(s.evaluations, 1);
    assert_eq!(desk.clicks.lock().clone(), ["Address"]);
    assert_eq!(*desk.typed.lock(), 1);
    let ops: Vec<(String, String)> = gw
        .tasks()
        .receipts(&owner(), &id)
        .unwrap()
        .iter()
        .flat_map(|r| r.operations.iter())
        .map(|o| (o.tool.clone(), o.status.clone()))
        .collect();
    assert_eq!(
        ops,
        [
            ("page_type".to_string(), "not_executed".to_string()),
            ("page_click".into(), "done".into()),
            ("page_type".into(), "done".into()),
        ]
    );
    // The click does not focus it: one click, nothing typed, FOCUS_REQUIRED.
    *desk.unfocused.lock() = Some("e9".into());
    desk.never_focuses
        .store(true, std::sync::atomic::Ordering::SeqCst);
    let s = settle(&gw, &id, "type again");
    assert_eq!(s.reason.as_deref(), Some("FOCUS_REQUIRED"), "{s:#?}");
    assert_eq!(s.evaluations, 2);
    assert_eq!(desk.clicks.lock().clone(), ["Address", "Address"]);
    assert_eq!(*desk.typed.lock(), 1);
}

#[cfg(not(feature = "computer"))]
#[test]
fn r_run_direct_commands_on_a_text_editor() {
    support::desktop::skip("this test binary was built without the cargo feature `computer`");
}

#[cfg(feature = "computer")]
#[test]
fn r_run_direct_commands_on_a_text_editor() {
    editor::direct_commands();
}

#[cfg(feature = "computer")]
mod editor {
    use super::{owner, scripted, Asked, WAIT};
    use crate::support::computer::{approve, helper_for, pair_computer};
    use crate::support::desktop::{missing, skip, Desk};
    use crate::support::gateway::builder;
    use jevgate::clock::ManualClock;
    use jevgate::device::computer::{ComputerAction, ComputerCommand, ComputerDevice};
    use jevgate::task::{SpawnRequest, TaskState, TaskStatus, TaskTarget};
    use jevgate::Config;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    const APP: &str = "mousepad";

    /// The editor's document: its one editable `text` control (ref, value, focused).
    fn document(pc: &ComputerDevice) -> (String, Option<String>, bool) {
        let o = pc.observe().expect("observe");
        let d: Vec<_> = o
            .controls
            .iter()
            .filter(|c| c.role == "text" && c.states.iter().any(|s| s == "editable"))
            .collect();
        assert_eq!(d.len(), 1, "one document");
        (
            d[0].reference.clone(),
            d[0].value.clone(),
            d[0].states.iter().any(|s| s == "focused"),
        )
    }

    /// Observes until the document reads `want` (GTK updates on its main loop), bounded.
    fn wait_document(pc: &ComputerDevice, want: &str) {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let (_, value, _) = document(pc);
            if value.as_deref() == Some(want) || Instant::now() > deadline {
                assert_eq!(value.as_deref(), Some(want));
                return;
            }
            std::thread::sleep(Duration::from_millis(30));
        }
    }

    /// The person's command `text` on task `id`, settled.
    fn command(tg: &crate::support::gateway::TestGateway, id: &str, text: &str) -> TaskStatus {
        tg.gw.tasks().command(&owner(), id, text).unwrap();
        let s = tg.gw.tasks().wait(&owner(), id, WAIT).unwrap();
        assert!(!s.state.is_busy(), "{s:#?}");
        s
    }

    /// The task's operations so far: (tool, status, code).
    fn operations(
        tg: &crate::support::gateway::TestGateway,
        id: &str,
    ) -> Vec<(String, String, Option<String>)> {
        tg.gw
            .tasks()
            .receipts(&owner(), id)
            .unwrap()
            .iter()
            .flat_map(|r| r.operations.iter())
            .map(|o| (o.tool.clone(), o.status.clone(), o.error_code.clone()))
            .collect()
    }

    fn clipboard(desk: &Desk) -> String {
        let out = desk
            .command("xclip")
            .args(["-selection", "clipboard", "-o"])
            .output()
            .expect("xclip runs");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub fn direct_commands() {
        if let Some(why) = missing(&[APP, "xclip"]) {
            skip(&why);
            return;
        }
        let started = Instant::now();
        let mut desk = Desk::start();
        desk.launch(APP);
        let tg = builder()
            .config(
                Config::from_json_str(
                    r#"{"gateway":{"jev":{"enabled":true,"provider":"callback"}}}"#,
                )
                .unwrap(),
            )
            .channel()
            .build();
        let asked: Asked = Arc::default();
        tg.gw.set_jev_callback(Some(scripted(asked.clone())));
        let paired = pair_computer(&tg, "alice", "desk-1");
        let state_dir = tempfile::tempdir().unwrap();
        let clock = ManualClock::new();
        let _worker = tg.device_worker(
            &paired,
            helper_for(APP, state_dir.path(), Some(&desk), &clock),
        );
        approve(state_dir.path(), APP, 30, &clock);
        let pc = tg
            .gw
            .computer_target("alice", "conv-1", &paired.device)
            .unwrap();
        // The editor's window shown, its document empty and without the keyboard focus.
        let deadline = Instant::now() + Duration::from_secs(30);
        while pc.observe().map_or(true, |o| o.controls.len() < 20) {
            assert!(Instant::now() < deadline, "mousepad's window never showed");
            std::thread::sleep(Duration::from_millis(100));
        }
        let (doc, value, focused) = document(&pc);
        assert_eq!((value.as_deref(), focused), (Some(""), false));
        // The helper's contract: menu-bar commands carry their menu; Backspace is a key.
        let o = pc.observe().unwrap();
        assert_eq!(o.capabilities.keys, ["backspace"]);
        let copy = o.named("Copy");
        assert_eq!(copy.len(), 1);
        assert_eq!(copy[0].menu.as_deref(), Some("Edit"));
        assert_eq!(o.control(&doc).unwrap().menu, None);
        tg.gw.leases().release_session("conv-1").unwrap();
        let ready = started.elapsed();

        let mut request = SpawnRequest::from_person("");
        request.keep_open = true;
        request.target = TaskTarget::Computer {
            device_id: paired.device.clone(),
        };
        let id = tg.gw.tasks().spawn(&owner(), request).unwrap();
        let s = tg.gw.tasks().wait(&owner(), &id, WAIT).unwrap();
        assert_eq!(s.state, TaskState::WaitingInput, "{s:#?}");

        // Typing into the unfocused document: the helper refuses (FOCUS_REQUIRED, nothing
        // typed), the same command focuses the document once and types the same text — one
        // Jev decision (which field), not two.
        let t = Instant::now();
        let s = command(&tg, &id, "พิมพ์ hello world");
        assert_eq!(s.evaluations, 1, "{s:#?}");
        assert_eq!(
            operations(&tg, &id),
            [
                (
                    "page_type".into(),
                    "not_executed".into(),
                    Some("FOCUS_REQUIRED".into())
                ),
                ("page_click".into(), "done".into(), None),
                ("page_type".into(), "done".into(), None),
            ],
            "{s:#?}"
        );
        wait_document(&pc, "hello world");
        assert!(document(&pc).2, "the document has the focus");
        let typed = t.elapsed();

        // A word that is text while the document has focus: offered as the command's own
        // text, and Jev says it is text.
        let s = command(&tg, &id, "starwork");
        assert_eq!(s.evaluations, 2, "{s:#?}");
        wait_document(&pc, "starwork");
        let offered =
            asked.lock().unwrap().last().unwrap()["questions"]["control"]["criteria"].clone();
        assert!(offered.get("type_text").is_some(), "{offered}");

        // Erasing three: three Backspace keys (the helper offers the key), no Jev.
        let t = Instant::now();
        let s = command(&tg, &id, "ลบ 3");
        assert_eq!(s.evaluations, 2, "erasing needs no Jev: {s:#?}");
        wait_document(&pc, "starw");
        let last = operations(&tg, &id).pop().unwrap();
        assert_eq!(
            (last.0.as_str(), last.1.as_str()),
            ("page_keypress", "done")
        );
        let erased = t.elapsed();
        // Erasing more than ten: the field is rewritten without them.
        command(&tg, &id, "พิมพ์ abcdefghijklmnop");
        wait_document(&pc, "abcdefghijklmnop");
        let s = command(&tg, &id, "delete 12");
        wait_document(&pc, "abcd");
        let last = operations(&tg, &id).pop().unwrap();
        assert_eq!(
            (last.0.as_str(), last.1.as_str()),
            ("page_type", "done"),
            "{s:#?}"
        );
        // ลบๆ: one plus one per ๆ, by keys.
        command(&tg, &id, "ลบๆ");
        wait_document(&pc, "ab");
        let last = operations(&tg, &id).pop().unwrap();
        assert_eq!(last.0, "page_keypress");

        // Copy by meaning: the text selected (the person, through the helper), คัดลอก chooses
        // Edit → Copy in Jev's menu question — the menu commands are not in-window controls.
        let o = pc.observe().unwrap();
        let select_all = o.named("Select All")[0].reference.clone();
        pc.act(&ComputerCommand {
            operation_id: "setup-select-all".into(),
            action: ComputerAction::Press {
                reference: select_all,
            },
        })
        .unwrap();
        tg.gw.leases().release_session("conv-1").ok();
        assert_ne!(clipboard(&desk), "ab");
        let t = Instant::now();
        let s = command(&tg, &id, "คัดลอก");
        assert_eq!(s.reason.as_deref(), Some("DONE"), "{s:#?}");
        let request = asked.lock().unwrap().last().unwrap().clone();
        let controls = request["questions"]["control"]["criteria"].to_string();
        assert!(controls.contains("\"menu\""), "{controls}");
        assert!(
            !controls.contains("Copy"),
            "menu commands stay out: {controls}"
        );
        let last = operations(&tg, &id).pop().unwrap();
        assert_eq!((last.0.as_str(), last.1.as_str()), ("page_click", "done"));
        let deadline = Instant::now() + Duration::from_secs(5);
        while clipboard(&desk) != "ab" {
            assert!(
                Instant::now() < deadline,
                "the clipboard holds the selection"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let copied = t.elapsed();
        tg.gw.tasks().cancel(&owner(), &id).unwrap();
        eprintln!(
            "text editor: desktop ready in {} ms, typed (focus + type) in {} ms, erased 3 in {} ms, \
             copied in {} ms, all {} ms",
            ready.as_millis(),
            typed.as_millis(),
            erased.as_millis(),
            copied.as_millis(),
            started.elapsed().as_millis()
        );
    }
}
