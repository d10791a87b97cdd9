//! An in-memory page (`Desk`) for task tests through `spawn_with_backend`, and the callback
//! "model" (`picks`) that drives it: exact, and nothing sleeps. The desk shows the controls of
//! its [`Layout`], counts clicks by name and typing, keeps its own record of the operations it
//! ran (answered by `operation_status` only when the layout says it keeps one), can hold a
//! click until the test lets it go (so "a command queued while another runs" is
//! deterministic), lose one click's answer (an unknown outcome), refuse typing into a field
//! until it is clicked (FOCUS_REQUIRED) or be gone.
//!
//! A test double only: it never opens a browser, a socket or a file.

use jevgate::browser::{
    ActionResult, BrowserBackend, Command, OperationOutcome, OperationRecord, OperationState,
    Response,
};
use jevgate::observation::{Control, Observation};
use jevgate::Error;
use parking_lot::{Condvar, Mutex};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What the desk shows. Its text is `text`, then the click and typing counts (each action
/// shows on the page: a step's action must change something).
pub struct Layout {
    pub url: String,
    pub title: String,
    pub text: String,
    /// Clicking a control's ref counts a click under its name (an unknown ref counts as `?`).
    pub controls: Vec<Control>,
    /// Whether the desk answers `operation_status` from its record (else that command fails,
    /// as on a browser that keeps none).
    pub keeps_record: bool,
    /// The dialogs and forms its controls name (`Control::container`).
    pub containers: Vec<jevgate::observation::Container>,
}

impl Default for Layout {
    /// Buttons Alpha, Bravo and Submit and an empty text field Address; no record.
    fn default() -> Layout {
        let mut controls: Vec<Control> = ["Alpha", "Bravo", "Submit"]
            .iter()
            .enumerate()
            .map(|(i, name)| Control::new(&format!("e{i}"), "button", name))
            .collect();
        controls.push(Control::field("e9", "textbox", "Address", None));
        Layout {
            url: "https://desk.example/".into(),
            title: "Desk".into(),
            text: String::new(),
            controls,
            keeps_record: false,
            containers: Vec::new(),
        }
    }
}

#[derive(Default)]
pub struct Desk {
    layout: Layout,
    pub generation: AtomicU64,
    pub clicks: Mutex<Vec<String>>,
    pub typed: Mutex<usize>,
    /// Operation ids it ran (clicks and typing), for `operation_status`.
    pub ran: Mutex<Vec<String>>,
    pub observations: AtomicU64,
    pub status_reads: AtomicU64,
    /// A click on the control of this name runs, then its answer is lost (OUTCOME_UNKNOWN).
    pub lose_click: Mutex<Option<String>>,
    /// The browser is gone: every command fails.
    pub gone: AtomicBool,
    /// While set, a click waits (the test queues commands behind it meanwhile).
    held: Mutex<bool>,
    released: Condvar,
    /// Signalled when a click reached the page while held (a click is "in flight").
    arrived: Condvar,
    /// Held clicks that arrived and were not yet awaited.
    came: Mutex<usize>,
    /// Typing into the field of this ref is refused with FOCUS_REQUIRED (nothing typed) until
    /// a click on it gives it the focus.
    pub unfocused: Mutex<Option<String>>,
    /// A click on the unfocused field does not give it the focus.
    pub never_focuses: AtomicBool,
}

impl Desk {
    /// A desk with the default [`Layout`].
    pub fn new() -> Arc<Desk> {
        Desk::with(Layout::default())
    }

    pub fn with(layout: Layout) -> Arc<Desk> {
        Arc::new(Desk {
            layout,
            generation: AtomicU64::new(1),
            ..Desk::default()
        })
    }

    pub fn hold(&self) {
        *self.held.lock() = true;
    }

    pub fn release(&self) {
        *self.held.lock() = false;
        self.released.notify_all();
    }

    /// Waits (bounded) until a held click reached the page (one that came before the wait
    /// counts too).
    pub fn await_click(&self) {
        let mut held = self.held.lock();
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            {
                let mut came = self.came.lock();
                if *came > 0 {
                    *came -= 1;
                    return;
                }
            }
            assert!(
                !self.arrived.wait_until(&mut held, deadline).timed_out(),
                "no click reached the page"
            );
        }
    }

    pub fn clicked(&self, name: &str) -> usize {
        self.clicks.lock().iter().filter(|c| *c == name).count()
    }

    fn observation(&self) -> Observation {
        Observation {
            generation: self.generation.load(Ordering::SeqCst),
            url: self.layout.url.clone(),
            title: self.layout.title.clone(),
            text: format!(
                "{}{} clicks {} typed",
                self.layout.text,
                self.clicks.lock().len(),
                self.typed.lock()
            ),
            controls: self.layout.controls.clone(),
            containers: self.layout.containers.clone(),
            ..Observation::default()
        }
    }

    fn action(&self, op: &str, tool: &str) -> Response {
        Response::Action(ActionResult {
            operation_id: op.into(),
            tool: tool.into(),
            generation_before: self.generation.fetch_add(1, Ordering::SeqCst),
            navigation_started: false,
            settled: false,
            dialog: None,
            notes: Vec::new(),
        })
    }

    /// Blocks a click while the desk is held (bounded), telling `await_click` it arrived.
    fn wait_while_held(&self) {
        let mut held = self.held.lock();
        if *held {
            *self.came.lock() += 1;
            self.arrived.notify_all();
            let deadline = Instant::now() + Duration::from_secs(30);
            while *held && Instant::now() < deadline {
                self.released.wait_until(&mut held, deadline);
            }
        }
    }

    fn record(&self, operation_id: &str) -> OperationRecord {
        let ran = self.ran.lock().iter().any(|r| r == operation_id);
        OperationRecord {
            operation_id: operation_id.into(),
            status: if ran {
                OperationState::Executed
            } else {
                OperationState::Unknown
            },
            outcome: if ran {
                OperationOutcome::Completed
            } else {
                OperationOutcome::NotRecorded
            },
            tool: ran.then(|| "page_click".to_string()),
            error_code: None,
            at_ms: None,
        }
    }
}

impl BrowserBackend for Desk {
    fn execute(&self, command: &Command) -> jevgate::Result<Response> {
        if self.gone.load(Ordering::SeqCst) {
            return Err(Error::BrowserUnavailable {
                reason: "the desk is gone".into(),
            });
        }
        match command {
            Command::Observe(_) => {
                self.observations.fetch_add(1, Ordering::SeqCst);
                Ok(Response::Observation(self.observation()))
            }
            Command::OperationStatus(a) if self.layout.keeps_record => {
                self.status_reads.fetch_add(1, Ordering::SeqCst);
                Ok(Response::Operation(self.record(&a.operation_id)))
            }
            Command::PageClick(a) => {
                self.wait_while_held();
                let name = self
                    .layout
                    .controls
                    .iter()
                    .find(|c| c.reference == a.reference)
                    .map_or("?", |c| c.name.as_str());
                self.clicks.lock().push(name.into());
                self.ran.lock().push(a.operation_id.clone());
                if !self.never_focuses.load(Ordering::SeqCst) {
                    let mut unfocused = self.unfocused.lock();
                    if unfocused.as_deref() == Some(a.reference.as_str()) {
                        *unfocused = None;
                    }
                }
                if self.lose_click.lock().as_deref() == Some(name) {
                    return Err(Error::OutcomeUnknown {
                        reason: "the desk's answer was lost".into(),
                    });
                }
                Ok(self.action(&a.operation_id, "page_click"))
            }
            Command::PageType(a) => {
                if self.unfocused.lock().as_deref() == Some(a.reference.as_str()) {
                    return Err(Error::FocusRequired);
                }
                *self.typed.lock() += 1;
                self.ran.lock().push(a.operation_id.clone());
                Ok(self.action(&a.operation_id, "page_type"))
            }
            other => Err(Error::ExecutionFailed {
                reason: format!("the desk has no {}", other.tool()),
            }),
        }
    }
}

/// A callback "model": picks the option whose description names the word the command ends
/// with ("press Alpha" → Alpha; "fill in the Address" → the Address field), else `none`. For an
/// agent's goal run (its state is JSON with `goal`): `done` once the run did something, else
/// the control naming the goal's last word, else `blocked`. The impact question (`routine`):
/// 0.05 for a control named "Delete …", "Send …" or "Pay …", else 0.95.
pub fn picks() -> jevgate::jev::JevCallback {
    Arc::new(move |req: &[u8]| {
        let v: Value = serde_json::from_slice(req).unwrap();
        let state = v["state"].as_str().unwrap_or("").to_string();
        let questions = v["questions"].as_object().cloned().unwrap_or_default();
        let answer_of = |key: &str, answer: Value| {
            Ok(
                json!({"model": "host", "usage": {"input_tokens": 1, "output_tokens": 1},
                "answers": {key: answer}})
                .to_string()
                .into_bytes(),
            )
        };
        if questions.contains_key("routine") {
            let s: Value = serde_json::from_str(&state).unwrap_or_default();
            let name = s["untrustedContent"]["data"]["control"]["name"]
                .as_str()
                .unwrap_or("")
                .to_string();
            let risky = ["Delete", "Send", "Pay"]
                .iter()
                .any(|w| name.starts_with(w));
            let p = if risky { 0.05 } else { 0.95 };
            return answer_of("routine", json!({"type": "noul", "noul": p}));
        }
        let opts = v["questions"]["control"]["criteria"].as_object().unwrap();
        let naming = |word: &str| {
            opts.iter()
                .find(|(k, d)| k.starts_with('o') && d.as_str().unwrap_or("").contains(word))
                .map(|(k, _)| k.clone())
        };
        let key = match serde_json::from_str::<Value>(&state) {
            Ok(s) if s.get("goal").is_some() => {
                let goal = s["goal"].as_str().unwrap_or("");
                let done = s["untrustedContent"]["data"]["actionsDone"]
                    .as_array()
                    .is_some_and(|a| !a.is_empty());
                let word = goal.split_whitespace().last().unwrap_or("");
                match (done, naming(word)) {
                    (true, _) => "done".to_string(),
                    (false, Some(k)) => k,
                    (false, None) => "blocked".to_string(),
                }
            }
            _ => {
                let word = state.split_whitespace().last().unwrap_or("");
                naming(word).unwrap_or_else(|| "none".into())
            }
        };
        let probs: serde_json::Map<String, Value> = opts
            .keys()
            .map(|k| (k.clone(), json!(if *k == key { 1.0 } else { 0.0 })))
            .collect();
        answer_of(
            "control",
            json!({"type": "choice", "choice": key, "probabilities": probs, "confidence": 0.9}),
        )
    })
}

/// [`picks`], except that a command ending in "?" (a question about the page) is a read
/// request whenever one is offered (issue 26 item 3).
pub fn picks_reading() -> jevgate::jev::JevCallback {
    let picks = picks();
    Arc::new(move |req: &[u8]| {
        let v: Value = serde_json::from_slice(req).unwrap();
        let opts = &v["questions"]["control"]["criteria"];
        if !(v["state"].as_str().unwrap_or("").trim_end().ends_with('?')
            && opts.get("read_request").is_some())
        {
            return picks(req);
        }
        let probs: serde_json::Map<String, Value> = opts
            .as_object()
            .unwrap()
            .keys()
            .map(|k| {
                (
                    k.clone(),
                    json!(if k == "read_request" { 1.0 } else { 0.0 }),
                )
            })
            .collect();
        Ok(
            json!({"model": "host", "usage": {"input_tokens": 1, "output_tokens": 1},
            "answers": {"control": {"type": "choice", "choice": "read_request",
                "probabilities": probs, "confidence": 0.9}}})
            .to_string()
            .into_bytes(),
        )
    })
}
