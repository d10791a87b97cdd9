//! Issue 26 items 1, 2 and 5 (R-RUN, seed 003 "Session start", "High-impact controls"): a
//! spawn's goal is the agent's words. It runs as a goal run — one Jev decision per action over
//! the observed controls with `done` and `blocked` offered (`unclear` and `read_request` on the
//! session's first decision only), every action checked for impact first, whatever the policy —
//! and never as the person's step list; the person's own message (`userMessage`) runs verbatim
//! as theirs. Spawn words with no action end ready (`SESSION_READY`), never not done. An agent's
//! `update` revision is a goal run too.
//!
//! An in-memory page (`Desk`) through `spawn_with_backend` and a callback "model" that records
//! every evaluation it is asked.

mod support;

use jevgate::observation::Control;
use jevgate::task::{SpawnRequest, TaskOwner, TaskState, TaskStatus, UpdateRequest};
use jevgate::{Config, Gateway, GatewayOptions};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::desk::{Desk, Layout};

const WAIT: Duration = Duration::from_secs(30);

fn owner() -> TaskOwner {
    TaskOwner::new("assistant", "alice", "conv-1")
}

fn config() -> Config {
    Config::from_json_str(
        &json!({"gateway": {"jev": {"enabled": true, "provider": "callback",
            "features": {"browserTasks": {"enabled": true}, "browserSteps": {"enabled": true}}}}})
        .to_string(),
    )
    .unwrap()
}

/// What the model was asked: `(question key, state, the options offered)` per evaluation.
type Seen = Arc<Mutex<Vec<(String, String, Vec<String>)>>>;

/// A callback model. A goal run's decision (its state is JSON with `goal`): `done` once the run
/// did something, else the control naming the goal's last word, else `blocked`. A person's
/// command's decision: the control naming the command's last word, else `none`. The impact
/// question: routine 0.05 for a control named "Delete …", else 0.95. A reply: yes / no / other.
fn model(seen: Seen) -> jevgate::jev::JevCallback {
    Arc::new(move |req: &[u8]| {
        let v: Value = serde_json::from_slice(req).unwrap();
        let state = v["state"].as_str().unwrap_or("").to_string();
        let questions = v["questions"].as_object().unwrap();
        let key = questions.keys().next().unwrap().clone();
        let opts = questions[&key]["criteria"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        seen.lock()
            .unwrap()
            .push((key.clone(), state.clone(), opts.keys().cloned().collect()));
        let choice = |pick: &str| {
            let probs: serde_json::Map<String, Value> = opts
                .keys()
                .map(|k| (k.clone(), json!(if k == pick { 1.0 } else { 0.0 })))
                .collect();
            json!({"type": "choice", "choice": pick, "probabilities": probs, "confidence": 0.9})
        };
        let naming = |word: &str| {
            opts.iter()
                .find(|(k, d)| k.starts_with('o') && d.as_str().unwrap_or("").contains(word))
                .map(|(k, _)| k.clone())
        };
        let answer = match key.as_str() {
            "routine" => {
                let s: Value = serde_json::from_str(&state).unwrap();
                let name = s["untrustedContent"]["data"]["control"]["name"]
                    .as_str()
                    .unwrap()
                    .to_string();
                let p = if name.starts_with("Delete") {
                    0.05
                } else {
                    0.95
                };
                json!({"type": "noul", "noul": p})
            }
            "reply" => choice(match state.trim() {
                "yes" | "ใช่" => "yes",
                "no" | "ไม่" => "no",
                _ => "other",
            }),
            _ => match serde_json::from_str::<Value>(&state) {
                Ok(s) if s.get("goal").is_some() => {
                    let goal = s["goal"].as_str().unwrap().to_string();
                    let done = s["untrustedContent"]["data"]["actionsDone"]
                        .as_array()
                        .is_some_and(|a| !a.is_empty());
                    let word = goal.split_whitespace().last().unwrap_or("").to_string();
                    match (done, naming(&word)) {
                        (true, _) => choice("done"),
                        (false, Some(k)) => choice(&k),
                        (false, None) => choice("blocked"),
                    }
                }
                _ => {
                    let word = state.split_whitespace().last().unwrap_or("").to_string();
                    choice(&naming(&word).unwrap_or_else(|| "none".into()))
                }
            },
        };
        Ok(
            json!({"model": "host", "usage": {"input_tokens": 1, "output_tokens": 1},
            "answers": {key: answer}})
            .to_string()
            .into_bytes(),
        )
    })
}

fn desk() -> Arc<Desk> {
    let mut controls: Vec<Control> = ["Delete account", "Alpha", "Bravo"]
        .iter()
        .enumerate()
        .map(|(i, name)| Control::new(&format!("e{i}"), "button", name))
        .collect();
    controls.push(Control::field("e9", "textbox", "Address", None));
    Desk::with(Layout {
        controls,
        ..Layout::default()
    })
}

fn open(dir: &std::path::Path) -> (Gateway, Seen) {
    let gw = Gateway::open(GatewayOptions::new(dir, config())).unwrap();
    let seen: Seen = Arc::default();
    gw.set_jev_callback(Some(model(seen.clone())));
    (gw, seen)
}

fn spawn(gw: &Gateway, desk: &Arc<Desk>, request: SpawnRequest) -> String {
    gw.tasks()
        .spawn_with_backend(&owner(), request, desk.clone())
        .unwrap()
}

fn settled(gw: &Gateway, id: &str) -> TaskStatus {
    let s = gw.tasks().wait(&owner(), id, WAIT).unwrap();
    assert!(!s.state.is_busy(), "{s:#?}");
    s
}

fn asked(seen: &Seen, key: &str) -> usize {
    seen.lock()
        .unwrap()
        .iter()
        .filter(|(k, ..)| k == key)
        .count()
}

// Item 1: the agent's goal runs on toward the goal, each action checked for impact first (under
// the default policy too), and Jev's `done` is a completion candidate that waits for a
// verification (R-TSK-VER), not `completed`.
#[test]
fn r_run_an_agents_goal_is_a_goal_run_checked_for_impact_and_a_candidate() {
    let dir = tempfile::tempdir().unwrap();
    let (gw, seen) = open(dir.path());
    let desk = desk();
    let id = spawn(&gw, &desk, SpawnRequest::new("press Alpha"));
    let s = settled(&gw, &id);
    assert_eq!(desk.clicked("Alpha"), 1, "{s:#?}");
    assert_eq!(s.state, TaskState::WaitingInput, "{s:#?}");
    assert_eq!(s.reason.as_deref(), Some("COMPLETION_CANDIDATE"), "{s:#?}");
    assert!(
        s.step_run.is_none(),
        "a goal run is not a step list: {s:#?}"
    );
    assert_eq!(asked(&seen, "routine"), 1, "the action's impact was asked");
    // Two decisions: Alpha, then done; the first offered the session-start outcomes, the
    // second (after an action) did not.
    let decisions: Vec<Vec<String>> = seen
        .lock()
        .unwrap()
        .iter()
        .filter(|(k, ..)| k == "control")
        .map(|(_, _, o)| o.clone())
        .collect();
    assert_eq!(decisions.len(), 2, "{decisions:?}");
    for o in ["done", "blocked", "unclear", "read_request"] {
        assert!(decisions[0].contains(&o.to_string()), "{decisions:?}");
    }
    assert!(!decisions[1].contains(&"unclear".to_string()));
    assert!(!decisions[1].contains(&"read_request".to_string()));
    gw.close();
}

// Item 2: under the default policy an agent's goal that reaches a high-impact control asks the
// person first and dispatches nothing; the person's no runs nothing; a yes runs that action
// once and the goal run goes on with the agent's authority.
#[test]
fn r_run_an_agents_goal_asks_before_a_high_impact_action_under_the_default_policy() {
    let dir = tempfile::tempdir().unwrap();
    let (gw, _) = open(dir.path());
    let desk = desk();
    let mut request = SpawnRequest::new("press Delete account");
    request.keep_open = true;
    let id = spawn(&gw, &desk, request);
    let s = settled(&gw, &id);
    assert_eq!(s.reason.as_deref(), Some("CONFIRMATION_REQUIRED"), "{s:#?}");
    assert_eq!(s.state, TaskState::WaitingInput, "{s:#?}");
    let q = s.confirmation_request.clone().expect("a question");
    assert_eq!(q.question, "Press \"Delete account\"?");
    assert_eq!(desk.clicked("Delete account"), 0, "nothing dispatched");
    let t = gw.tasks();
    t.command(&owner(), &id, "no").unwrap();
    let s = settled(&gw, &id);
    assert_eq!(s.reason.as_deref(), Some("CONFIRMATION_DECLINED"), "{s:#?}");
    assert_eq!(desk.clicked("Delete account"), 0);

    // Asked again (an agent's update, a goal run too); the person's yes runs it once.
    let rev = t.status(&owner(), &id).unwrap().revision;
    t.update(
        &owner(),
        &id,
        &UpdateRequest::from_json(
            &json!({"expectedRevision": rev, "mode": "when_ready",
                "goal": "press Delete account"})
            .to_string(),
        )
        .unwrap(),
    )
    .unwrap();
    let s = settled(&gw, &id);
    assert_eq!(s.reason.as_deref(), Some("CONFIRMATION_REQUIRED"), "{s:#?}");
    assert_eq!(desk.clicked("Delete account"), 0);
    t.command(&owner(), &id, "yes").unwrap();
    let s = settled(&gw, &id);
    assert_eq!(desk.clicked("Delete account"), 1, "{s:#?}");
    assert_eq!(s.reason.as_deref(), Some("COMPLETION_CANDIDATE"), "{s:#?}");
    gw.close();
}

// Item 1: the person's own step list (`userMessage`) runs verbatim as theirs — no impact
// question under the default policy — and the agent's goal beside it does not run; an agent's
// step list in `goal` is never run as a list.
#[test]
fn r_run_the_persons_list_runs_verbatim_and_the_agents_list_never_does() {
    let dir = tempfile::tempdir().unwrap();
    let (gw, seen) = open(dir.path());
    let desk = desk();
    let request = SpawnRequest {
        goal: "press Delete account".into(),
        user_message: Some("1. press Alpha\n2. press Bravo".into()),
        ..SpawnRequest::default()
    };
    let id = spawn(&gw, &desk, request);
    let s = settled(&gw, &id);
    assert_eq!(
        (desk.clicked("Alpha"), desk.clicked("Bravo")),
        (1, 1),
        "{s:#?}"
    );
    assert_eq!(desk.clicked("Delete account"), 0);
    assert_eq!(
        asked(&seen, "routine"),
        0,
        "the person's list is their authorization"
    );
    let run = s.step_run.clone().expect("a step run");
    assert_eq!(run.stop_reason, "ALL_STEPS_DONE");
    gw.close();

    // The same list as the agent's goal: a goal run (its one action checked for impact), no
    // step run.
    let dir = tempfile::tempdir().unwrap();
    let (gw, seen) = open(dir.path());
    let page = self::desk();
    let id = spawn(
        &gw,
        &page,
        SpawnRequest::new("1. press Alpha\n2. press Bravo"),
    );
    let s = settled(&gw, &id);
    assert!(s.step_run.is_none(), "{s:#?}");
    assert_eq!(page.clicked("Alpha"), 0, "{s:#?}");
    assert_eq!(page.clicked("Bravo"), 1, "{s:#?}");
    assert_eq!(asked(&seen, "routine"), 1);
    gw.close();
}

// Item 5: spawn words in which Jev finds no action end ready — never "not done" — and the
// session stays open for the person's commands even without keepOpen; a concrete first command
// still runs.
#[test]
fn r_run_spawn_words_without_an_action_end_ready() {
    let dir = tempfile::tempdir().unwrap();
    let (gw, _) = open(dir.path());
    let desk = desk();
    let id = spawn(
        &gw,
        &desk,
        SpawnRequest::new("open a session and wait for the person"),
    );
    let s = settled(&gw, &id);
    assert_eq!(s.reason.as_deref(), Some("SESSION_READY"), "{s:#?}");
    assert_eq!(
        s.outcome.as_deref(),
        Some("Ready: the session is open and waits for the next command.")
    );
    assert_eq!(s.state, TaskState::WaitingInput, "{s:#?}");
    assert!(desk.clicks.lock().is_empty());
    // The person's next command runs.
    gw.tasks().command(&owner(), &id, "press Bravo").unwrap();
    let s = settled(&gw, &id);
    assert_eq!(desk.clicked("Bravo"), 1, "{s:#?}");
    gw.close();
}

// Item 2: the question is in Thai when the person's own message has Thai script, though the
// agent's goal is English.
#[test]
fn r_run_a_goal_runs_question_speaks_the_persons_language() {
    let dir = tempfile::tempdir().unwrap();
    let (gw, _) = open(dir.path());
    let desk = desk();
    let request = SpawnRequest {
        goal: "press Delete account".into(),
        user_message: Some("ลบบัญชีให้หน่อย".into()),
        ..SpawnRequest::default()
    };
    let id = spawn(&gw, &desk, request);
    let s = settled(&gw, &id);
    let q = s.confirmation_request.clone().expect("a question");
    assert_eq!(q.question, "จะกด \"Delete account\" ใช่ไหม", "{s:#?}");
    assert_eq!(desk.clicked("Delete account"), 0);
    gw.close();
}
