//! Issue 25 (seed 003 "Direct commands", "Computer helper contract"; R-TSK, R-RUN, R-GRM): Debian's
//! Chromium as a desktop application under `jevgate-computer`, on a throw-away desktop
//! (scripts/desktop) with accessibility on:
//! - the helper observes it as the front application with its address bar (role `entry`) as
//!   the one editable control, bounded, and offers Chromium's standard commands;
//! - opening a site: "go to http://127.0.0.1:PORT/p/third" types the address into the address
//!   bar found by role and presses Enter, without Jev (the fixture server counts the load);
//! - standard commands: the person's "new tab" and "close tab" press the helper's
//!   `standard-tab-new` (Ctrl+T) and `standard-tab-close` (Ctrl+W), without Jev;
//! - a big page (1000 controls) keeps the observation bounded (at most 400 controls, the rest
//!   counted in `omitted`), the browser's toolbar kept; opening a site among its 250 fields
//!   presses the helper's `standard-address-focus` (Ctrl+L) and types into the bar, without Jev;
//! - quitting: the agent's command for a handed-off utterance, "quit chromium", is offered the
//!   helper's `standard-app-quit` control only through Jev and its impact check: the person is
//!   asked first ("Press Quit Chromium?"); "no" quits nothing, "yes" quits Chromium.
//!
//! Needs Xvfb, at-spi2-core and chromium: skipped with the reason printed, a failure under
//! `JEVGATE_REQUIRE_DESKTOP=1` (scripts/test).

mod support;

#[cfg(not(feature = "computer"))]
#[test]
fn r_tsk_chromium_on_a_paired_computer() {
    support::desktop::skip("this test binary was built without the cargo feature `computer`");
}

#[cfg(feature = "computer")]
#[test]
fn r_tsk_chromium_on_a_paired_computer() {
    desktop::chromium();
}

#[cfg(feature = "computer")]
mod desktop {
    use crate::support::computer::{approve, helper_for, pair_computer};
    use crate::support::desktop::{missing, skip, Desk};
    use crate::support::gateway::{builder, TestGateway};
    use crate::support::Server;
    use jevgate::clock::ManualClock;
    use jevgate::device::computer::{ComputerDevice, ComputerObservation};
    use jevgate::task::{SpawnRequest, TaskOwner, TaskStatus, TaskTarget};
    use jevgate::Config;
    use serde_json::{json, Value};
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};

    const WAIT: Duration = Duration::from_secs(30);

    fn owner() -> TaskOwner {
        TaskOwner::new("assistant", "alice", "conv-1")
    }

    /// Observes until `ok` holds (Chromium starts, loads, redraws on its own time), bounded.
    fn until(
        pc: &ComputerDevice,
        within: Duration,
        what: &str,
        ok: impl Fn(&ComputerObservation) -> bool,
    ) -> ComputerObservation {
        let deadline = Instant::now() + within;
        loop {
            let o = pc.observe();
            if let Ok(o) = &o {
                if ok(o) {
                    return o.clone();
                }
            }
            assert!(Instant::now() < deadline, "{what}: {o:#?}");
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    fn address_bars(o: &ComputerObservation) -> Vec<String> {
        o.controls
            .iter()
            .filter(|c| c.role == "entry" && c.states.iter().any(|s| s == "editable"))
            .map(|c| c.reference.clone())
            .collect()
    }

    fn settled(tg: &TestGateway, id: &str) -> TaskStatus {
        let s = tg.gw.tasks().wait(&owner(), id, WAIT).unwrap();
        assert!(!s.state.is_busy(), "{s:#?}");
        s
    }

    /// What Jev was asked: the question keys, in order.
    type Asked = Arc<Mutex<Vec<String>>>;

    /// A callback model: a control decision picks Jev's quit choice when the words ask to
    /// quit, the address bar for "go to …", else nothing; the impact question judges a "Quit …" control high-impact
    /// (quitting an app); a reply reads yes or no.
    fn model(asked: Asked) -> jevgate::jev::JevCallback {
        Arc::new(move |req: &[u8]| {
            let v: Value = serde_json::from_slice(req).unwrap();
            let state = v["state"].as_str().unwrap_or("").to_string();
            let questions = v["questions"].as_object().unwrap();
            let key = questions.keys().next().unwrap().clone();
            asked.lock().unwrap().push(key.clone());
            let choice = |opts: &serde_json::Map<String, Value>, pick: &str, conf: f64| {
                let probs: serde_json::Map<String, Value> = opts
                    .keys()
                    .map(|k| (k.clone(), json!(if k == pick { 1.0 } else { 0.0 })))
                    .collect();
                json!({"type": "choice", "choice": pick, "probabilities": probs,
                       "confidence": conf})
            };
            let answer = match key.as_str() {
                "routine" => {
                    let s: Value = serde_json::from_str(&state).unwrap();
                    let name = s["untrustedContent"]["data"]["control"]["name"]
                        .as_str()
                        .unwrap_or("")
                        .to_string();
                    json!({"type": "noul",
                           "noul": if name.starts_with("Quit") { 0.05 } else { 0.95 }})
                }
                "reply" => {
                    let opts: serde_json::Map<String, Value> = ["yes", "no", "other"]
                        .iter()
                        .map(|k| (k.to_string(), json!(k)))
                        .collect();
                    let pick = match state.trim() {
                        "yes" => "yes",
                        "no" => "no",
                        _ => "other",
                    };
                    choice(&opts, pick, 0.9)
                }
                _ => {
                    let opts = questions[&key]["criteria"].as_object().unwrap();
                    let address = opts
                        .iter()
                        .find(|(_, d)| d.as_str().unwrap_or("").contains("Address and search"))
                        .map(|(k, _)| k.clone());
                    let pick = match address {
                        _ if state.contains("quit") && opts.contains_key("quit") => "quit".into(),
                        Some(k) if state.starts_with("go to") => k,
                        _ => "none".to_string(),
                    };
                    choice(opts, &pick, 0.9)
                }
            };
            Ok(
                json!({"model": "host", "usage": {"input_tokens": 1, "output_tokens": 1},
                       "answers": {key: answer}})
                .to_string()
                .into_bytes(),
            )
        })
    }

    pub fn chromium() {
        if let Some(why) = missing(&["chromium"]) {
            skip(&why);
            return;
        }
        let started = Instant::now();
        let server = Server::start();
        let mut desk = Desk::start();
        let browser = desk.launch_chromium("about:blank");
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
        tg.gw.set_jev_callback(Some(model(asked.clone())));
        let paired = pair_computer(&tg, "alice", "desk-1");
        let state_dir = tempfile::tempdir().unwrap();
        let dir = state_dir.path();
        let clock = ManualClock::new();
        let _worker = tg.device_worker(&paired, helper_for("Chromium", dir, Some(&desk), &clock));
        approve(dir, "Chromium", 30, &clock);
        let pc = tg
            .gw
            .computer_target("alice", "conv-1", &paired.device)
            .unwrap();

        // The helper sees Chromium: its window, its address bar (role entry) as the one
        // editable control, the standard commands it offers; bounded.
        let t = Instant::now();
        let o = until(
            &pc,
            Duration::from_secs(60),
            "Chromium's address bar",
            |o| address_bars(o).len() == 1,
        );
        let first_observation = t.elapsed();
        assert_eq!(o.application, "Chromium");
        assert!(o.window_title.contains("Chromium"), "{}", o.window_title);
        assert_eq!(
            o.capabilities.standard_commands,
            ["tab:new", "tab:close", "app:quit", "address:focus"]
        );
        assert!(o.controls.len() <= jevgate::device::computer::MAX_CONTROLS);
        assert!(o.standard("app:quit").is_none(), "only when asked for");
        let t = Instant::now();
        pc.observe().unwrap();
        let one_observation = t.elapsed();
        tg.gw.leases().release_session("conv-1").unwrap();

        // Opening a site through the address bar, without Jev.
        let url = server.url("/p/third");
        let mut request = SpawnRequest::from_person(format!("go to {url}"));
        request.target = TaskTarget::Computer {
            device_id: paired.device.clone(),
        };
        request.keep_open = true;
        let id = tg.gw.tasks().spawn(&owner(), request).unwrap();
        let s = settled(&tg, &id);
        let receipts = || {
            std::fs::read_dir(dir)
                .unwrap()
                .flatten()
                .map(|e| {
                    let body = std::fs::read_to_string(e.path()).unwrap_or_default();
                    format!("{}: {body}", e.file_name().to_string_lossy())
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(
            server.wait_count("load:third", 1),
            1,
            "{s:#?} {:#?}",
            receipts()
        );
        assert_eq!(s.evaluations, 0, "no Jev call: {s:#?}");
        assert!(asked.lock().unwrap().is_empty());
        let ops = &tg.gw.tasks().receipts(&owner(), &id).unwrap()[0].operations;
        assert_eq!(
            ops.iter().map(|o| o.tool.as_str()).collect::<Vec<_>>(),
            ["page_type"],
            "{ops:#?}"
        );
        until(&pc, WAIT, "the page's title", |o| {
            o.window_title.starts_with("Third")
        });

        // The person's "new tab": the helper's standard command (Ctrl+T), without Jev.
        tg.gw.tasks().command(&owner(), &id, "new tab").unwrap();
        let s = settled(&tg, &id);
        assert_eq!(s.evaluations, 0, "no Jev call: {s:#?}");
        let ops = &tg.gw.tasks().receipts(&owner(), &id).unwrap();
        let last = ops.last().unwrap().operations.last().unwrap();
        assert_eq!(
            (last.tool.as_str(), last.status.as_str()),
            ("page_click", "done")
        );
        until(&pc, WAIT, "a new tab in front", |o| {
            o.window_title.starts_with("New Tab")
        });
        // "close tab": the helper's standard command (Ctrl+W), back on the page.
        tg.gw.tasks().command(&owner(), &id, "close tab").unwrap();
        let s = settled(&tg, &id);
        assert_eq!(s.evaluations, 0, "no Jev call: {s:#?}");
        until(&pc, WAIT, "the page in front again", |o| {
            o.window_title.starts_with("Third")
        });

        // A big page (1000 controls, 250 text fields): the observation stays bounded, the
        // browser's own controls (read first, in tree order) kept.
        tg.gw
            .tasks()
            .command(&owner(), &id, &format!("go to {}", server.url("/p/big")))
            .unwrap();
        let s = settled(&tg, &id);
        assert_eq!(server.wait_count("load:big", 1), 1, "{s:#?}");
        until(&pc, WAIT, "the big page", |o| o.controls.len() > 100);
        let t = Instant::now();
        let o = pc.observe().unwrap();
        let big_observation = t.elapsed();
        assert!(o.controls.len() <= jevgate::device::computer::MAX_CONTROLS);
        assert!(o.omitted > 0, "cut, and counted: {}", o.omitted);
        assert_eq!(
            o.named("Reload").len(),
            1,
            "the toolbar is kept: {big_observation:?} {} {:?}",
            o.omitted,
            o.controls
                .iter()
                .take(30)
                .map(|c| (&c.role, &c.name))
                .collect::<Vec<_>>()
        );
        assert!(
            big_observation < Duration::from_secs(10),
            "{big_observation:?}"
        );
        tg.gw.leases().release_session("conv-1").ok();
        // Back through the address bar: among the page's 250 fields, the helper's address:focus
        // (Ctrl+L) focuses the bar and the address is typed there, without Jev (seed 003
        // "Opening a site": with several, a helper that offers address:focus focuses the bar).
        asked.lock().unwrap().clear();
        tg.gw
            .tasks()
            .command(&owner(), &id, &format!("go to {url}"))
            .unwrap();
        let s = settled(&tg, &id);
        assert_eq!(server.wait_count("load:third", 2), 2, "{s:#?}");
        assert!(asked.lock().unwrap().is_empty(), "no Jev call");
        let last = tg.gw.tasks().receipts(&owner(), &id).unwrap();
        let ops = &last.last().unwrap().operations;
        assert_eq!(
            ops.iter()
                .map(|o| (o.tool.as_str(), o.status.as_str()))
                .collect::<Vec<_>>(),
            [("page_click", "done"), ("page_type", "done")],
            "{ops:#?}"
        );
        until(&pc, WAIT, "the page again", |o| {
            o.window_title.starts_with("Third")
        });

        // Something Jev finds nothing for: handed to the agent.
        tg.gw
            .tasks()
            .command(&owner(), &id, "do the shiny thing")
            .unwrap();
        let s = settled(&tg, &id);
        let turn = s.needs_agent.clone().expect("handed to the agent");
        assert_eq!(turn.code, "AGENT_HANDOFF");
        // The agent's one command quits the application: the person is asked first.
        asked.lock().unwrap().clear();
        tg.gw
            .call_agent_tool(
                &owner(),
                "task_update",
                &json!({"taskId": id, "expectedRevision": turn.revision,
                        "goal": "quit chromium"})
                .to_string(),
            )
            .unwrap();
        let s = settled(&tg, &id);
        assert_eq!(s.reason.as_deref(), Some("CONFIRMATION_REQUIRED"), "{s:#?}");
        assert!(
            s.outcome.as_deref().unwrap_or("").contains("Quit Chromium"),
            "{s:#?}"
        );
        assert_eq!(*asked.lock().unwrap(), ["control", "routine"]);
        std::thread::sleep(Duration::from_millis(500));
        assert!(
            !desk.exited(browser),
            "nothing quits before the person's yes"
        );
        // No: nothing runs.
        tg.gw.tasks().command(&owner(), &id, "no").unwrap();
        let s = settled(&tg, &id);
        assert_eq!(s.reason.as_deref(), Some("CONFIRMATION_DECLINED"), "{s:#?}");
        std::thread::sleep(Duration::from_millis(500));
        assert!(!desk.exited(browser), "no quits nothing");
        pc.observe().expect("Chromium still answers");
        tg.gw.leases().release_session("conv-1").ok();

        // Asked again, and yes: the agent's command runs as the person's, and Chromium quits.
        tg.gw
            .tasks()
            .command(&owner(), &id, "do the shiny thing")
            .unwrap();
        let turn = settled(&tg, &id).needs_agent.clone().expect("handed off");
        tg.gw
            .call_agent_tool(
                &owner(),
                "task_update",
                &json!({"taskId": id, "expectedRevision": turn.revision,
                        "goal": "quit chromium"})
                .to_string(),
            )
            .unwrap();
        let s = settled(&tg, &id);
        assert_eq!(s.reason.as_deref(), Some("CONFIRMATION_REQUIRED"), "{s:#?}");
        tg.gw.tasks().command(&owner(), &id, "yes").unwrap();
        let s = settled(&tg, &id);
        let deadline = Instant::now() + Duration::from_secs(8);
        while !desk.exited(browser) {
            if Instant::now() > deadline {
                let o = pc.observe();
                panic!("Chromium did not quit: {s:#?} {:#?} {o:#?}", receipts());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let last = tg.gw.tasks().receipts(&owner(), &id).unwrap();
        let last = last.last().unwrap().operations.last().unwrap();
        assert_eq!(last.tool, "page_click", "{s:#?}");
        tg.gw.tasks().cancel(&owner(), &id).ok();
        eprintln!(
            "chromium: first observation with the address bar after {} ms, one observation {} \
             ms, of the big page {} ms, all {} ms",
            first_observation.as_millis(),
            one_observation.as_millis(),
            big_observation.as_millis(),
            started.elapsed().as_millis()
        );
    }
}
