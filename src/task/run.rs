//! The run loop (R-RUN): one request (a direct command or a step list) carried out on one
//! target. observe → grammar fast path, or one Jev decision over the observed controls →
//! validate → checkpoint → dispatch → re-observe and compare.
//!
//! Owns the order of those steps and the safety rules between them: a mutation is dispatched
//! only after its checkpoint committed ([`Run::dispatch`], the one place that sends a
//! mutation); an operation whose outcome is unknown stops the request and is never sent again;
//! a refused operation (nothing sent) may be decided afresh on a fresh observation; typed text
//! comes only from the command; a Jev failure fails only its command unless it is a
//! configuration, access or quota failure; a request is done only when the results of its
//! operations committed (else it is unknown). The observation a receipt keeps names the
//! controls but holds no field value and none of the text the task typed. It never logs
//! commands, typed text, page text or results (only codes), and never sleeps past the request's
//! deadline.

use super::fence::Fence;
use super::host::{Hook, TaskHost};
use super::lines;
use super::outcome::{classify_for, computer_stop_code, device_errors, Class, ToolCall};
use super::records;
use super::writer::{Pending, Writer};
use super::{ActionLogEntry, Budget, StepRun, TaskOwner, TaskProgress};
use crate::browser::{
    BrowserBackend, ClickArgs, Command, HistoryArgs, KeypressArgs, NavigateArgs, ObserveArgs,
    Response, ScrollArgs, TypeArgs,
};
use crate::clock::{Clock, Instant};
use crate::grammar::{
    parse_command, resolve, Adapter, DecisionRequest, Intent, Primitive, Resolution,
};
use crate::jev::{EvalAnswer, EvaluateCall, Limits, Question, Questions};
use crate::observation::{Control, Observation};
use crate::reasons::StaleCause;
use crate::CancelToken;
use crate::Error;
use std::time::Duration;

/// Reads while a navigation is pending (`NAVIGATION_PENDING`) before giving up (R-RUN stale
/// rule: its own budget of six reads, with a backoff).
const NAVIGATION_READS: u32 = 6;
/// The first wait between those reads; doubles each time.
const STALE_BACKOFF: Duration = Duration::from_millis(50);
/// A screen that is still changing (a stale refusal, a stale read) is decided afresh at most
/// this many times (seed 003 "The next command always runs")…
const CHANGING_RETRIES: u32 = 2;
/// …each on a read about this long after the one before.
const CHANGING_WAIT: Duration = Duration::from_secs(1);
/// Most actions of one part, most decisions of one part (R-RUN step mode).
const PART_ACTIONS: u32 = 3;
const PART_DECISIONS: u32 = 6;
/// Re-observations of a step that found nothing right after an earlier step.
const NOTHING_RETRIES: u32 = 2;
/// The most options one decision offers (the choice question takes 255; one is `none`).
const MAX_OPTIONS: usize = 254;
/// Bounds of the observation a receipt keeps.
const KEPT_TEXT_CHARS: usize = 4000;
const KEPT_CONTROLS: usize = 200;
/// The typed texts a task remembers to cut out of the observations it keeps (the newest), and
/// the shortest one cut (shorter ones would cut ordinary words out of the page).
const KEPT_TYPED: usize = 32;
const MIN_SCRUBBED_CHARS: usize = 3;

/// How a request ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Ending {
    /// Every step done (or the session start): the reason is `ALL_STEPS_DONE`, `DONE` or
    /// `SESSION_READY`.
    Done,
    /// A command was not done; nothing unknown. The session may go on.
    NotDone,
    /// An operation's outcome is unknown: the task needs reconciliation.
    Unknown,
    /// The task must stop (configuration, access or quota failure; the target is gone).
    Stop,
    /// Cancelled before the next action.
    Cancelled,
    /// Paused or revised by its owner before the next action (R-TSK-CTL): the session stays
    /// open; the reason is `PAUSED` or `REVISED`.
    Interrupted,
}

/// The report of one request.
#[derive(Debug, Clone)]
pub(crate) struct Report {
    pub ending: Ending,
    pub reason: String,
    pub line: String,
    pub step_run: Option<StepRun>,
    /// An interrupted request's steps not yet done, verbatim (private: a resume runs them) —
    /// also a step list's steps from the one that asked for a field's text.
    pub remaining: Vec<String>,
    /// A step list stopped on `FIELD_TEXT_REQUIRED`: the field it asks about (a question the
    /// person may answer; a single direct command is not a question).
    pub field: Option<String>,
    /// A Jev-decided action stopped for the person's yes (`CONFIRMATION_REQUIRED`, issue 26
    /// item 2): the control and the question; `remaining` holds what a yes runs.
    pub confirmation: Option<Confirmation>,
    /// The command went to the agent (`READ_REQUEST`, `AGENT_HANDOFF`; issue 26 items 3, 4).
    pub needs_agent: Option<&'static str>,
}

/// A confirmation question: the chosen control (page text: its name and role) and the
/// question the person is asked (`Press "…"?` / `จะกด "…" ใช่ไหม`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Confirmation {
    pub name: String,
    pub role: String,
    pub question: String,
}

/// The one action a person's yes covers: the next Jev-decided action on a control of this
/// name and role, once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Approved {
    pub name: String,
    pub role: String,
}

/// How the person's reply to a confirmation question reads (issue 26 item 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reply {
    /// Go ahead: the steps the question stopped run, that action approved once.
    Yes,
    /// Do not: nothing runs (`CONFIRMATION_DECLINED`).
    No,
    /// Anything else: the reply is the person's new command.
    Other,
    /// The reply could not be read (a Jev failure): the question stays open.
    Unread,
}

/// The least probability of "routine" Jev must give for a Jev-decided action to run without
/// the person's yes (issue 26 item 2: "Unless P(routine) ≥ 0.9").
const ROUTINE_AT_LEAST: f64 = 0.9;

/// Counters that outlive a request.
#[derive(Debug, Default, Clone)]
pub(crate) struct Counters {
    pub actions: u32,
    pub evaluations: u32,
    pub log: Vec<ActionLogEntry>,
    pub ops: u64,
    /// Results queued for the receipt and not yet known to be committed, with their tools.
    results: Vec<(Pending, &'static str)>,
    /// Text this task typed (the newest [`KEPT_TYPED`]): never kept in an observation.
    typed: Vec<String>,
    /// The newest [`KEPT_CALLS`] dispatched tools and their error codes: the device errors a
    /// computer command's stop message names (codes only).
    calls: Vec<ToolCall>,
}

/// How many dispatched calls a task remembers for its stop messages.
const KEPT_CALLS: usize = 32;

/// One request's run.
pub(crate) struct Run<'a> {
    pub task_id: &'a str,
    pub owner: &'a TaskOwner,
    pub seq: u32,
    pub backend: &'a dyn BrowserBackend,
    pub host: &'a dyn TaskHost,
    pub writer: &'a Writer,
    pub clock: &'a dyn Clock,
    pub cancel: &'a CancelToken,
    /// Closed by `cancel()`: checked under the lock the checkpoint takes.
    pub fence: &'a Fence,
    pub budget: Budget,
    pub counters: &'a mut Counters,
    pub hook: Option<&'a Hook>,
    pub progress: &'a dyn Fn(TaskProgress),
    pub deadline: Instant,
    /// Answers the person gave to field questions (field name → text): typed text that comes
    /// from an answer, never invented (R-RUN).
    pub answers: &'a std::collections::HashMap<String, String>,
    /// The field a `FIELD_TEXT_REQUIRED` asked about (set by the decision that found it).
    pub asked: Option<String>,
    /// `features.browserSteps` at the request's start: off, a step list is one direct command.
    pub step_lists: bool,
    /// Whose direct-command rules resolve commands: a browser's, or a desktop's for a computer
    /// target (numbers and calculator keys press the one labelled button, issue 25 item 3).
    pub adapter: Adapter,
    /// Every Jev-decided action of this request asks Jev whether it is routine first, and the
    /// person confirms one that is not (issue 26 item 2; `confirmHighImpact: "always"`).
    pub confirm: bool,
    /// The one action the person's yes approved (consumed by the first Jev-decided action on
    /// that control).
    pub approved: Option<Approved>,
    /// Set by the decision that stopped for the person's yes.
    pub confirmation: Option<Confirmation>,
    /// The request carries the agent's words (origin `agent`): no deterministic fast path that
    /// could act without Jev — keys, digits, calculator keys, quitting (issue 26 item 2) —
    /// runs them; such a command is a Jev decision over the page's controls instead.
    pub agent_words: bool,
    /// The request is the agent's goal (a spawn's goal, an `update` revision): a goal run —
    /// one Jev decision per action over the observed controls, with `done` and `blocked`
    /// offered, each action checked for impact first (issue 26 items 1 and 2).
    pub goal_run: bool,
    /// The request is a session's first round (the spawn's words): a first decision that finds
    /// no action ends ready (`SESSION_READY`), never not done (seed 003 "Session start"); its
    /// first decision is offered `read_request` and `unclear`.
    pub session_start: bool,
    /// Whether the person's latest words have Thai script (the language of a confirmation
    /// question); `None`: judged from the request's own words.
    pub person_thai: Option<bool>,
    /// A single direct command of the person's under their control: its decision is offered
    /// `read_request` and `unclear`, and if nothing of it runs it goes to the agent (issue 26
    /// items 3 and 4).
    pub offer_read: bool,
    /// The agent's one command for a handed-off command (issue 26 item 4): no read request,
    /// `unclear`, navigation, history, key or new-tab operation; never handed off again.
    pub handoff: bool,
    /// A text helper is configured (issue 26 item 7): it resolves a Jev-decided field's text
    /// and, for the person's single direct command, a named site (`navigate`).
    pub text_helper: bool,
    /// The round is an autopilot run of this plan (issue 26 item 8).
    pub autopilot: Option<super::autopilot::Plan>,
}

/// The least confidence of Jev's `navigate` choice (seed 003: "an uncertain NAVIGATE is
/// LOW_OPERATION_CONFIDENCE").
const NAVIGATE_CONFIDENCE: f64 = 0.6;

/// What the text helper is told for a field's text and for a named site (issue 26 item 7).
const FIELD_TEXT_INSTRUCTIONS: &str = "A person gave a command to a web page; a field was \
    chosen for it. Write the text the command means to enter into that field, taken from the \
    command itself. Only the text.";
const SITE_INSTRUCTIONS: &str = "A person's command names a website to open. Give its address: \
    a domain such as example.com or an https URL. Only the address.";

/// Outcomes that are their own answer: a command ending with one of them is never handed to
/// the agent (seed 003 "Agent hand-off when nothing ran").
const OWN_ANSWERS: [&str; 9] = [
    "READ_REQUEST",
    "SESSION_READY",
    "CONFIRMATION_REQUIRED",
    "CONFIRMATION_DECLINED",
    "SCROLL_LIMIT",
    "NEW_TAB_OUT_OF_SCOPE",
    "HISTORY_UNAVAILABLE",
    "NOTHING_TO_ERASE",
    "KEY_UNSUPPORTED",
];

/// What one part (one direct command) came to.
#[derive(Debug)]
enum Part {
    Done {
        line: String,
        visible: bool,
        kind: Kind,
    },
    /// Nothing was dispatched (or a known failure); the code says why.
    NotDone {
        code: String,
        line: String,
    },
    /// The part was a note (a new tab in step mode): nothing dispatched, the run goes on.
    Note {
        code: &'static str,
    },
    Unknown {
        line: String,
    },
    Stop {
        code: String,
        line: String,
    },
}

/// The task's receipts for an autopilot run's actions (issue 26 item 8): the checkpoint commits
/// under the fence before the action is sent; the result is queued with the request's others.
struct TaskLedger<'a> {
    task_id: &'a str,
    seq: u32,
    writer: &'a Writer,
    clock: &'a dyn Clock,
    fence: &'a Fence,
    results: &'a std::cell::RefCell<Vec<(Pending, &'static str)>>,
}

impl super::autopilot::Ledger for TaskLedger<'_> {
    fn checkpoint(&self, operation_id: &str, tool: &'static str) -> crate::Result<()> {
        let (task, seq, now) = (self.task_id.to_string(), self.seq, self.clock.wall_millis());
        let op = operation_id.to_string();
        let writer = self.writer;
        match self.fence.pass(|| {
            writer.write(Box::new(move |tx| {
                records::checkpoint(tx, &task, seq, &op, tool, now)
            }))
        }) {
            Err(reason) => Err(Error::StateConflict { reason }),
            Ok(r) => r,
        }
    }

    fn settle(&self, operation_id: &str, status: &'static str, error_code: Option<&str>) {
        let (op, code) = (operation_id.to_string(), error_code.map(str::to_string));
        let stored = self.writer.submit(Box::new(move |tx| {
            records::settle_operation(tx, &op, status, code.as_deref(), None)
        }));
        if let Ok(pending) = stored {
            self.results.borrow_mut().push((pending, "autopilot"));
        }
    }
}

impl Part {
    /// How a request that is this one part ends: its ending, reason and outcome line.
    fn ending(self) -> (Ending, String, String) {
        match self {
            Part::Done { line, .. } => (Ending::Done, "DONE".to_string(), line),
            Part::Note { code } => (
                Ending::NotDone,
                code.to_string(),
                lines::not_done(lines::not_done_words(code), code),
            ),
            Part::NotDone { code, line } => (Ending::NotDone, code, line),
            Part::Unknown { line } => (Ending::Unknown, "OUTCOME_UNKNOWN".into(), line),
            Part::Stop { code, line } => (stop_ending(&code), code, line),
        }
    }
}

/// What dispatching one decided action came to.
enum Acted {
    Part(Part),
    /// Refused before anything was sent: the screen changed under the decision.
    Changed,
}

/// What kind of action a done part was (scrolls and keys without a visible change are
/// unverified, other actions without one are `STEP_NO_EFFECT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    ScrollOrKey,
    Other,
}

/// The outcome of dispatching one operation.
enum Sent {
    Done(Observation, bool),
    /// Confirmed, but the page had not settled within the stale-read budget.
    Loading,
    /// Refused before anything happened; may be decided again on a fresh read.
    NotExecuted(Error),
    /// Ran and failed in a known way (a navigation that failed).
    Failed(Error),
    Unknown(String),
    /// The fence was closed before the checkpoint (`CANCELLED`, `PAUSED`, `REVISED`): nothing
    /// was committed or sent.
    Stopped(&'static str),
}

impl Run<'_> {
    /// One Jev evaluation for this task (the owner's agent, conversation and task), counted
    /// against the request's evaluation budget.
    fn evaluate(
        &mut self,
        state: impl Into<crate::jev::Content>,
        questions: Questions,
    ) -> crate::Result<crate::jev::Evaluation> {
        let call = EvaluateCall {
            agent_id: self.owner.agent_id.clone(),
            session_id: Some(self.owner.conversation_id.clone()),
            task_id: Some(self.task_id.to_string()),
            request_id: None,
            state: state.into(),
            questions,
        };
        self.counters.evaluations = self.counters.evaluations.saturating_add(1);
        self.host.evaluate(&call, self.cancel)
    }

    fn hook(&self, at: &'static str) {
        if let Some(h) = self.hook {
            h(at);
        }
    }

    fn emit(&self, line: &str, reason: &str) {
        (self.progress)(TaskProgress {
            task_id: self.task_id.to_string(),
            line: line.to_string(),
            reason: reason.to_string(),
        });
    }

    fn expired(&self) -> bool {
        self.clock.now() >= self.deadline
    }

    /// Sleeps until `at` on the request's clock (see [`Run::pause`]).
    fn pause_until(&self, at: Instant) {
        self.pause(at - self.clock.now());
    }

    /// Sleeps `d` on the request's clock, never past its deadline or a cancellation.
    fn pause(&self, d: Duration) {
        // A `Grace`: on a clock nobody advances (a manual clock) the pause still ends after
        // about `d` of waiting instead of never; never past the request's deadline.
        let d = d.min(self.deadline - self.clock.now());
        let mut grace = crate::clock::Grace::new(self.clock, d);
        while let Some(slice) = grace.next(Duration::from_millis(20)) {
            if self.cancel.is_cancelled() {
                return;
            }
            std::thread::sleep(slice);
        }
    }

    /// An observation, re-read with a short backoff while a navigation is pending (at most
    /// [`NAVIGATION_READS`] reads, each `STALE_BACKOFF` · 2ⁿ after the one before). Any other
    /// refusal is the caller's to judge.
    fn observe(&self) -> crate::Result<Observation> {
        let mut wait = STALE_BACKOFF;
        for read in 1..=NAVIGATION_READS {
            let read_at = self.clock.now();
            match self.backend.observe_with(ObserveArgs::default()) {
                Err(Error::StaleObservation {
                    cause: StaleCause::NavigationPending,
                }) if read < NAVIGATION_READS && !self.expired() && !self.cancel.is_cancelled() => {
                    self.pause_until(read_at + wait);
                    wait = wait.saturating_mul(2);
                }
                answer => return answer,
            }
        }
        Err(Error::StaleObservation {
            cause: StaleCause::NavigationPending,
        })
    }

    /// The tool of a result that could not be committed (`wait`: after waiting for every
    /// queued one; else only among those already decided). Committed ones are forgotten.
    fn unstored_result(&mut self, wait: bool) -> Option<&'static str> {
        let mut failed = None;
        self.counters.results.retain(|(pending, tool)| {
            let verdict = if wait {
                Some(pending.wait())
            } else {
                pending.committed()
            };
            match verdict {
                Some(true) => false,
                Some(false) => {
                    failed.get_or_insert(*tool);
                    true
                }
                None => true,
            }
        });
        failed
    }

    /// The request's report once every result it queued is decided (R-TSK-RCPT, issue 21
    /// defect 8): a request is done only when its operations' results committed; when one did
    /// not, the operation stays `dispatched` in the receipt and the request is unknown.
    fn finish(&mut self, mut report: Report) -> Report {
        let unstored = self.unstored_result(true);
        self.counters.results.clear();
        if let Some(tool) = unstored {
            if report.ending != Ending::Unknown {
                log::warn!("an operation's result was not stored: its request is unknown");
                report.ending = Ending::Unknown;
                report.reason = "OUTCOME_UNKNOWN".into();
                report.line = lines::unknown(tool, "OUTCOME_UNKNOWN");
                if let Some(run) = &mut report.step_run {
                    run.stop_reason = "OUTCOME_UNKNOWN".into();
                }
                self.emit(&report.line, &report.reason);
            }
        }
        report
    }

    fn next_operation_id(&mut self) -> String {
        self.counters.ops = self.counters.ops.saturating_add(1);
        format!("{}:{}:{}", self.task_id, self.seq, self.counters.ops)
    }

    /// Checkpoint → dispatch → settle (R-TSK-RCPT): the one place a mutation is sent.
    fn dispatch(&mut self, command: Command) -> Sent {
        let operation_id = command.operation_id().unwrap_or_default().to_string();
        let tool = command.tool();
        // An earlier result of this request that did not commit leaves its operation in doubt
        // in the receipt: nothing more is sent on top of it.
        if let Some(unstored) = self.unstored_result(false) {
            return Sent::Unknown(unstored.to_string());
        }
        self.hook("before_checkpoint");
        let (task, seq, now) = (self.task_id.to_string(), self.seq, self.clock.wall_millis());
        let op = operation_id.clone();
        let writer = self.writer;
        // Under the fence (R-TSK-CTL): a `cancel()` that returned before this point stops it
        // here; one that comes later finds the checkpoint committed and the operation sent.
        let checkpointed = self.fence.pass(|| {
            writer.write(Box::new(move |tx| {
                records::checkpoint(tx, &task, seq, &op, tool, now)
            }))
        });
        match checkpointed {
            Err(reason) => return Sent::Stopped(reason),
            Ok(Err(e)) => {
                // A failed checkpoint prevents dispatch.
                log::warn!("checkpoint not committed: {}", e.code());
                return Sent::NotExecuted(e);
            }
            Ok(Ok(())) => {}
        }
        self.hook("after_checkpoint");
        self.counters.actions = self.counters.actions.saturating_add(1);
        let answer = self.backend.execute(&command);
        self.hook("after_dispatch");
        let (status, code, result) = match &answer {
            Ok(Response::Action(a)) if a.operation_id == operation_id && a.tool == tool => {
                ("done", None, kept_result(a, &self.counters.typed))
            }
            // A result that omits or contradicts the operation is kept as unknown.
            Ok(_) => ("unknown", Some("OUTCOME_UNKNOWN"), None),
            Err(e) => match classify_for(self.adapter, e) {
                Class::NotExecuted => ("not_executed", Some(e.code()), None),
                Class::Failed => ("failed", Some(e.code()), None),
                Class::Unknown => ("unknown", Some(e.code()), None),
            },
        };
        if self.counters.calls.len() >= KEPT_CALLS {
            self.counters.calls.remove(0);
        }
        self.counters.calls.push(ToolCall {
            tool: tool.to_string(),
            error: answer.as_ref().err().map(|e| (e.code().to_string(), None)),
        });
        // The result need not be durable before going on (only the checkpoint must precede a
        // dispatch): it commits with the next group, in order, and the request is done only
        // once it did ([`Run::finish`]). Lost in a crash, the operation counts as interrupted —
        // in doubt, never as done.
        let op = operation_id.clone();
        let stored = self.writer.submit(Box::new(move |tx| {
            records::settle_operation(tx, &op, status, code, result.as_deref())
        }));
        self.hook("after_settle");
        match stored {
            Ok(pending) => self.counters.results.push((pending, tool)),
            Err(e) => {
                log::warn!("operation result not stored: {}", e.code());
                return Sent::Unknown(tool.to_string());
            }
        }
        match (status, answer) {
            ("done", Ok(Response::Action(a))) => {
                let after = if a.navigation_started && !a.settled {
                    self.observe()
                } else {
                    self.backend.observe_with(ObserveArgs::default())
                };
                match after {
                    Ok(o) => {
                        let kept = kept_observation(&o, &self.counters.typed);
                        let op = operation_id;
                        // The kept observation is for the owner's investigation; losing it
                        // changes nothing about the outcome.
                        let _ = self.writer.submit(Box::new(move |tx| {
                            records::observe_operation(tx, &op, &kept)
                        }));
                        Sent::Done(o, a.navigation_started)
                    }
                    // The action was confirmed; the page did not settle within the reads.
                    Err(_) => Sent::Loading,
                }
            }
            ("not_executed", Err(e)) => Sent::NotExecuted(e),
            ("failed", Err(e)) => Sent::Failed(e),
            _ => Sent::Unknown(tool.to_string()),
        }
    }

    /// Opens the task's start URL (its first navigation, with its own receipt). `None` when it
    /// opened; otherwise the request's report.
    pub(crate) fn open(&mut self, url: &str) -> Option<Report> {
        let report = self.open_start(url)?;
        Some(self.finish(report))
    }

    fn open_start(&mut self, url: &str) -> Option<Report> {
        if let Some(Part::Stop { code, line }) = self.gate() {
            self.emit(&line, &code);
            return Some(Report {
                ending: stop_ending(&code),
                reason: code,
                line,
                step_run: None,
                remaining: Vec::new(),
                field: None,
                confirmation: None,
                needs_agent: None,
            });
        }
        let operation_id = self.next_operation_id();
        let sent = self.dispatch(Command::TabNavigate(NavigateArgs {
            operation_id,
            url: url.to_string(),
        }));
        let (ending, reason, line) = match sent {
            Sent::Done(..) | Sent::Loading => {
                let line = lines::done(&format!("opened {}", lines::host_of(url)));
                self.emit(&line, "DONE");
                lines::push_log(&mut self.counters.log, "start".into(), line);
                return None;
            }
            Sent::Unknown(tool) => (
                Ending::Unknown,
                "OUTCOME_UNKNOWN".to_string(),
                lines::unknown(&tool, "OUTCOME_UNKNOWN"),
            ),
            Sent::Stopped(code) => (
                stop_ending(code),
                code.to_string(),
                lines::not_done(lines::not_done_words(code), code),
            ),
            Sent::NotExecuted(e) | Sent::Failed(e) => (
                if is_target_gone(&e) {
                    Ending::Stop
                } else {
                    Ending::NotDone
                },
                e.code().to_string(),
                lines::not_done("the start page could not be opened", e.code()),
            ),
        };
        self.emit(&line, &reason);
        Some(Report {
            ending,
            reason,
            line,
            step_run: None,
            remaining: Vec::new(),
            field: None,
            confirmation: None,
            needs_agent: None,
        })
    }

    /// Runs the request `text`.
    pub(crate) fn request(&mut self, text: &str) -> Report {
        let report = self.run_request(text);
        self.finish(report)
    }

    fn run_request(&mut self, text: &str) -> Report {
        if let Some(plan) = self.autopilot.take() {
            return self.autopilot_round(&plan);
        }
        let trimmed = text.trim();
        if trimmed.is_empty() {
            self.emit(lines::READY, "SESSION_READY");
            return Report {
                ending: Ending::Done,
                reason: "SESSION_READY".into(),
                line: lines::READY.into(),
                step_run: None,
                remaining: Vec::new(),
                field: None,
                confirmation: None,
                needs_agent: None,
            };
        }
        if self.goal_run {
            return self.goal(trimmed);
        }
        if self.handoff {
            // The agent's command for a handed-off one never runs as a step list.
            return self.direct(trimmed);
        }
        match crate::grammar::split_steps(trimmed).filter(|_| self.step_lists) {
            Some(steps) => {
                // No step of a list is a read request or a hand-off (seed 003 "Read requests").
                self.offer_read = false;
                self.steps(&steps)
            }
            None => self.direct(trimmed),
        }
    }

    /// The person said no to a confirmation question (issue 26 item 2): nothing runs and
    /// nothing is said (`CONFIRMATION_DECLINED`; no progress line).
    pub(crate) fn declined(&mut self) -> Report {
        let code = "CONFIRMATION_DECLINED";
        Report {
            ending: Ending::NotDone,
            reason: code.into(),
            line: lines::not_done(lines::not_done_words(code), code),
            step_run: None,
            remaining: Vec::new(),
            field: None,
            confirmation: None,
            needs_agent: None,
        }
    }

    /// The person's reply to a confirmation question could not be read (a Jev failure or
    /// the decision budget): nothing runs and the same question stays open.
    pub(crate) fn unread_reply(&mut self, question: &str) -> Report {
        self.emit(question, "CONFIRMATION_REQUIRED");
        Report {
            ending: Ending::NotDone,
            reason: "CONFIRMATION_REQUIRED".into(),
            line: question.to_string(),
            step_run: None,
            remaining: Vec::new(),
            field: None,
            confirmation: None,
            needs_agent: None,
        }
    }

    /// The request refused by the feature and access gate before any browser action: the
    /// task stops with the gate's code (`ORCHESTRATION_DISABLED`, `EXECUTION_DENIED`).
    pub(crate) fn refused(&self, e: &Error) -> Report {
        let mut line = lines::not_done(lines::open_failure_words(e.code()), e.code());
        if self.adapter == Adapter::Computer {
            line = lines::on_computer(e.code(), line);
        }
        self.emit(&line, e.code());
        Report {
            ending: Ending::Stop,
            reason: e.code().into(),
            line,
            step_run: None,
            remaining: Vec::new(),
            field: None,
            confirmation: None,
            needs_agent: None,
        }
    }

    /// One direct command: at most one action.
    fn direct(&mut self, command: &str) -> Report {
        let actions_before = self.counters.actions;
        let part = self.part(command, false, true);
        let typed = typed_text(command);
        // Nothing of the person's command ran: it goes to the agent — a read request, or a
        // hand-off unless the outcome is its own answer (issue 26 items 3 and 4).
        let needs_agent = match &part {
            Part::NotDone { code, .. } if code == "READ_REQUEST" => Some("READ_REQUEST"),
            Part::NotDone { code, .. }
                if self.offer_read
                    && self.counters.actions == actions_before
                    && self.confirmation.is_none()
                    && !OWN_ANSWERS.contains(&code.as_str()) =>
            {
                Some("AGENT_HANDOFF")
            }
            _ => None,
        };
        let (ending, reason, line) = part.ending();
        lines::push_log(
            &mut self.counters.log,
            lines::log_command(command, typed.as_deref()),
            line.clone(),
        );
        // A hand-off says nothing but its code (the agent's reply is the response); the
        // request keeps its own reason and line for the record.
        match needs_agent {
            Some("AGENT_HANDOFF") => self.emit(&lines::handed("AGENT_HANDOFF"), "AGENT_HANDOFF"),
            _ => self.emit(&line, &reason),
        }
        // Interrupted before its action: the command itself is what a resume runs; stopped
        // for the person's yes: what a yes runs.
        let confirmation = self.confirmation.take();
        let remaining = if ending == Ending::Interrupted || confirmation.is_some() {
            vec![command.to_string()]
        } else {
            Vec::new()
        };
        Report {
            ending,
            reason,
            line,
            step_run: None,
            remaining,
            field: None,
            confirmation,
            needs_agent,
        }
    }

    /// A step list (R-RUN step mode).
    fn steps(&mut self, steps: &[String]) -> Report {
        let mut run = StepRun {
            steps: steps.len(),
            ..StepRun::default()
        };
        let mut ending = Ending::Done;
        let mut remaining: Vec<String> = Vec::new();
        let mut field: Option<String> = None;
        let mut stop: Option<String> = None;
        let mut last_line = String::new();
        'steps: for (i, step) in steps.iter().enumerate() {
            let parts = crate::grammar::split_parts(step);
            for (j, part) in parts.iter().enumerate() {
                let after_earlier = i > 0 || j > 0;
                let outcome = self.part(part, after_earlier, false);
                let typed = typed_text(part);
                let (line, code) = match &outcome {
                    Part::Done { line, .. } => (line.clone(), "DONE".to_string()),
                    Part::Note { code } => {
                        run.notes
                            .push(format!("{code}: step {} kept the approved tab", i + 1));
                        let l = lines::not_done(lines::not_done_words(code), code);
                        (l, code.to_string())
                    }
                    Part::NotDone { code, line } => (line.clone(), code.clone()),
                    Part::Unknown { line } => (line.clone(), "OUTCOME_UNKNOWN".into()),
                    Part::Stop { code, line } => (line.clone(), code.clone()),
                };
                lines::push_log(
                    &mut self.counters.log,
                    lines::log_command(part, typed.as_deref()),
                    line.clone(),
                );
                self.emit(&line, &code);
                last_line = line;
                match outcome {
                    Part::Done { visible, kind, .. } => {
                        run.done_parts.push(format!("{}.{}", i + 1, j + 1));
                        if !visible {
                            if kind == Kind::ScrollOrKey {
                                if !run.unverified_steps.contains(&(i + 1)) {
                                    run.unverified_steps.push(i + 1);
                                }
                            } else {
                                stop = Some("STEP_NO_EFFECT".into());
                                ending = Ending::NotDone;
                                run.remaining = rest(steps, i + 1);
                                break 'steps;
                            }
                        }
                    }
                    Part::Note { .. } => {}
                    Part::NotDone { code, .. } => {
                        if code == "FIELD_TEXT_REQUIRED" || code == "CONFIRMATION_REQUIRED" {
                            // A question: an answer (or the person's yes) continues from
                            // this part, verbatim.
                            if code == "FIELD_TEXT_REQUIRED" {
                                field = self.asked.clone();
                            }
                            remaining = parts[j..].to_vec();
                            remaining.extend(steps[i + 1..].iter().cloned());
                        }
                        stop = Some(match code.as_str() {
                            "ACTION_BUDGET" | "EVALUATION_BUDGET" | "TIMEOUT" => code,
                            _ => "STEP_NOT_EXECUTED".into(),
                        });
                        ending = Ending::NotDone;
                        run.remaining = rest(steps, i);
                        break 'steps;
                    }
                    Part::Unknown { .. } => {
                        stop = Some("OUTCOME_UNKNOWN".into());
                        ending = Ending::Unknown;
                        run.remaining = rest(steps, i + 1);
                        break 'steps;
                    }
                    Part::Stop { code, .. } => {
                        ending = stop_ending(&code);
                        if ending == Ending::Interrupted {
                            // What a resume runs, verbatim: this step's parts not yet done (each
                            // its own step, so nothing done is repeated), then the later steps.
                            remaining = parts[j..].to_vec();
                            remaining.extend(steps[i + 1..].iter().cloned());
                        }
                        stop = Some(code);
                        run.remaining = rest(steps, i);
                        break 'steps;
                    }
                }
            }
        }
        run.stop_reason = stop.unwrap_or_else(|| "ALL_STEPS_DONE".into());
        let confirmation = self.confirmation.take();
        // Stopped for the person's yes: the request's reason is the question's code.
        let reason = if confirmation.is_some() {
            "CONFIRMATION_REQUIRED".to_string()
        } else {
            run.stop_reason.clone()
        };
        Report {
            ending,
            reason,
            line: last_line,
            step_run: Some(run),
            remaining,
            field,
            confirmation,
            needs_agent: None,
        }
    }

    /// The agent's goal (issue 26 item 1, seed 003 "Session start"): runs on toward the goal,
    /// one Jev decision per action over the observed controls with `done` and `blocked`
    /// offered (and, on a session's first decision only, `unclear` and `read_request`), each
    /// action checked for impact before it is dispatched (item 2), within the budget. A first
    /// decision that finds no action ends ready at a session's start; `done` is a completion
    /// candidate the parent verifies (R-TSK-VER).
    fn goal(&mut self, goal: &str) -> Report {
        let mut done: Vec<String> = Vec::new();
        let mut changing = 0u32;
        let report = |ending: Ending, reason: &str, line: String| Report {
            ending,
            reason: reason.to_string(),
            line,
            step_run: None,
            remaining: Vec::new(),
            field: None,
            confirmation: None,
            needs_agent: None,
        };
        'run: loop {
            let first = done.is_empty();
            let part = 'part: {
                if let Some(p) = self.gate() {
                    break 'part p;
                }
                let read_at = self.clock.now();
                let obs = match self.observe() {
                    Ok(o) => o,
                    Err(Error::StaleObservation {
                        cause: StaleCause::GenerationChanged,
                    }) if changing < CHANGING_RETRIES => {
                        changing += 1;
                        self.pause_until(read_at + CHANGING_WAIT);
                        continue 'run;
                    }
                    Err(e) => break 'part target_failure(&e),
                };
                if self.counters.evaluations >= self.budget.max_evaluations {
                    break 'part not_done("EVALUATION_BUDGET");
                }
                let offer_start = first && self.session_start && self.approved.is_none();
                let (p, label) = match self.decide_goal(goal, &obs, &done, offer_start) {
                    GoalStep::Act(p, label) => (p, label),
                    GoalStep::Done => {
                        let line = match done.last() {
                            Some(last) => lines::done(&format!("{last}; the goal is reached")),
                            None => lines::done("the goal needs no action"),
                        };
                        self.emit(&line, super::verify::COMPLETION_CANDIDATE);
                        return report(Ending::Done, super::verify::COMPLETION_CANDIDATE, line);
                    }
                    GoalStep::NoAction(code) if first && self.session_start => {
                        // The spawn's words hold no action: the session is ready (never "not
                        // done"; nothing is handed off).
                        let _ = code;
                        self.emit(lines::READY, "SESSION_READY");
                        return report(Ending::Done, "SESSION_READY", lines::READY.into());
                    }
                    GoalStep::NoAction(code) => break 'part not_done(code),
                    GoalStep::Fail(part) => break 'part part,
                };
                if let Some(stop) = self.confirmed(goal, &p, &obs) {
                    break 'part stop;
                }
                let Some((command, kind)) = self.command_for(&p, obs.generation) else {
                    break 'part not_done("UNSUPPORTED_ON_BROWSER");
                };
                match self.act(command, &obs, &label, kind) {
                    Acted::Part(p) => p,
                    Acted::Changed if changing < CHANGING_RETRIES => {
                        changing += 1;
                        self.pause_until(read_at + CHANGING_WAIT);
                        continue 'run;
                    }
                    Acted::Changed => not_done("STALE_OBSERVATION"),
                }
            };
            let part = self.worded(part);
            let typed = typed_text(goal);
            let (ending, code, line) = match part {
                Part::Done { line, .. } => {
                    lines::push_log(
                        &mut self.counters.log,
                        lines::log_command(goal, typed.as_deref()),
                        line.clone(),
                    );
                    self.emit(&line, "DONE");
                    done.push(line.trim_start_matches("Done: ").to_string());
                    changing = 0;
                    continue 'run;
                }
                other => other.ending(),
            };
            lines::push_log(
                &mut self.counters.log,
                lines::log_command(goal, typed.as_deref()),
                line.clone(),
            );
            self.emit(&line, &code);
            let confirmation = self.confirmation.take();
            let field = (code == "FIELD_TEXT_REQUIRED")
                .then(|| self.asked.clone())
                .flatten();
            // Interrupted, stopped for the person's yes or for a field's text: the goal itself
            // is what runs on (its actions so far are done and are not repeated: it decides
            // afresh on a fresh observation).
            let remaining =
                if ending == Ending::Interrupted || confirmation.is_some() || field.is_some() {
                    vec![goal.to_string()]
                } else {
                    Vec::new()
                };
            return Report {
                ending,
                reason: code,
                line,
                step_run: None,
                remaining,
                field,
                confirmation,
                needs_agent: None,
            };
        }
    }

    /// One decision of a goal run: a typed `choice` over the page's controls and the goal's
    /// own outcomes. The state is the goal and the actions this run did (their labels name
    /// page controls: inside the untrusted envelope).
    fn decide_goal(
        &mut self,
        goal: &str,
        obs: &Observation,
        done: &[String],
        offer_start: bool,
    ) -> GoalStep {
        let offered: Vec<&Control> = obs
            .controls
            .iter()
            .filter(|c| !c.disabled && (c.is_pressable() || c.editable))
            .take(MAX_OPTIONS - 4)
            .collect();
        let mut options: Vec<(String, String)> = offered
            .iter()
            .enumerate()
            .map(|(i, c)| (format!("o{i}"), option_text(c)))
            .collect();
        // Worded apart from the question's instructions (a lexical evaluator reads both).
        options.push(("done".into(), "reached, nothing more to do".into()));
        options.push(("blocked".into(), "impossible here".into()));
        if offer_start {
            options.push(("unclear".into(), "not understood".into()));
            options.push(("read_request".into(), "only asks what is shown".into()));
        }
        let question = match Question::choice(
            "control",
            "Which control on the page is the next step toward the agent's goal?",
            options,
        )
        .map_err(|_| ())
        .and_then(|q| Questions::new([q], &Limits::default()).map_err(|_| ()))
        {
            Ok(q) => q,
            Err(()) => return GoalStep::Fail(not_done("JEV_INVALID_REQUEST")),
        };
        let state = serde_json::json!({
            "goal": goal,
            crate::untrusted::UNTRUSTED_KEY: crate::untrusted::wrap_value(serde_json::json!({
                "actionsDone": done,
            })),
        });
        let evaluation = match self.evaluate(state.to_string(), question) {
            Ok(e) => e,
            Err(e) => return GoalStep::Fail(jev_failure(&e)),
        };
        let choice = match evaluation.answer("control") {
            Some(EvalAnswer::Choice { choice, .. }) => choice.clone(),
            _ => return GoalStep::Fail(not_done("JEV_MALFORMED_RESPONSE")),
        };
        match choice.as_str() {
            "done" => return GoalStep::Done,
            "blocked" => return GoalStep::NoAction("BLOCKED"),
            "unclear" if offer_start => return GoalStep::NoAction("UNCLEAR"),
            "read_request" if offer_start => return GoalStep::NoAction("READ_REQUEST"),
            _ => {}
        }
        let Some(control) = choice
            .strip_prefix('o')
            .and_then(|n| n.parse::<usize>().ok())
            .and_then(|i| offered.get(i))
        else {
            return GoalStep::Fail(not_done("JEV_MALFORMED_RESPONSE"));
        };
        if control.editable {
            // Typed text only from the goal's own quoted text or the person's answer for this
            // field (R-RUN): never invented.
            let text = typed_text(goal)
                .filter(|t| !t.is_empty())
                .or_else(|| self.answers.get(&control.name).cloned());
            let Some(text) = text else {
                self.asked = Some(control.name.clone());
                return GoalStep::Fail(not_done("FIELD_TEXT_REQUIRED"));
            };
            let label = format!("typed [text] into \"{}\"", lines::short(&control.name));
            return GoalStep::Act(
                Primitive::Type {
                    target: control.reference.clone(),
                    text,
                    submit: false,
                },
                label,
            );
        }
        GoalStep::Act(
            Primitive::Press {
                target: control.reference.clone(),
            },
            format!("pressed \"{}\"", lines::short(&control.name)),
        )
    }

    /// Checks that stop a part before it observes or acts.
    fn gate(&self) -> Option<Part> {
        let stop = |code: &str| {
            Some(Part::NotDone {
                code: code.into(),
                line: lines::not_done(lines::not_done_words(code), code),
            })
        };
        if self.cancel.is_cancelled() {
            return Some(Part::Stop {
                code: "CANCELLED".into(),
                line: lines::not_done(lines::not_done_words("CANCELLED"), "CANCELLED"),
            });
        }
        if let Some(code) = self.fence.stopped() {
            return Some(Part::Stop {
                code: code.into(),
                line: lines::not_done(lines::not_done_words(code), code),
            });
        }
        if self.expired() {
            return stop("TIMEOUT");
        }
        if self.counters.actions >= self.budget.max_steps {
            return stop("ACTION_BUDGET");
        }
        None
    }

    /// One part: one command, at most [`PART_ACTIONS`] actions (one when `direct`) and
    /// [`PART_DECISIONS`] decisions.
    fn part(&mut self, command: &str, after_earlier: bool, direct: bool) -> Part {
        let part = self.part_on_target(command, after_earlier, direct);
        self.worded(part)
    }

    /// A part's line as this target's person reads it: a computer's not-done lines name the
    /// computer, its screen and its application, not the browser ([`lines::on_computer`]).
    fn worded(&self, part: Part) -> Part {
        if self.adapter != Adapter::Computer {
            return part;
        }
        match part {
            Part::NotDone { code, line } => Part::NotDone {
                line: lines::on_computer(&code, line),
                code,
            },
            Part::Stop { code, line } => Part::Stop {
                line: lines::on_computer(&code, line),
                code,
            },
            other => other,
        }
    }

    /// [`Run::part`] before its words are the target's.
    fn part_on_target(&mut self, command: &str, after_earlier: bool, direct: bool) -> Part {
        let parsed = parse_command(command);
        // A desktop helper's standard command (issue 25; seed 003 "Computer helper contract"):
        // pressed without Jev for the person's command; for the agent's words, offered to Jev
        // among the controls, under the impact check.
        let mut standard = match (&parsed, self.adapter) {
            (Intent::QuitApp, crate::grammar::Adapter::Computer) => Some("app:quit"),
            (Intent::NewTab, crate::grammar::Adapter::Computer) if !self.handoff => Some("tab:new"),
            (Intent::CloseTab, crate::grammar::Adapter::Computer) if !self.handoff => {
                Some("tab:close")
            }
            // Opening a site without one address field (seed 003 "Opening a site"): the
            // helper's address:focus, then the address typed where the focus went — pressed
            // without Jev for the agent's words too, as a browser opens their address; never
            // for the agent's hand-off words, which are not offered navigation.
            (Intent::Navigate { .. }, crate::grammar::Adapter::Computer) if !self.handoff => {
                Some("address:focus")
            }
            _ => None,
        };
        let intent = match parsed {
            Intent::Key { .. }
            | Intent::Digits { .. }
            | Intent::CalcKey { .. }
            | Intent::Keypad { .. }
            | Intent::QuitApp
                if self.agent_words =>
            {
                Intent::Decide { text_offer: None }
            }
            // The agent's command for a handed-off one is not offered navigation, history or
            // new tabs (seed 003 "Agent hand-off when nothing ran").
            Intent::Navigate { .. }
            | Intent::History { .. }
            | Intent::NewTab
            | Intent::NewWindow
            | Intent::CloseTab
            | Intent::Erase { .. }
                if self.handoff =>
            {
                Intent::Decide { text_offer: None }
            }
            intent => intent,
        };
        // A keypad sequence under way (a number's digits, calculator keys): its keys and how
        // many were pressed. Each next key is matched on a fresh observation, without resolving
        // or deciding the command again.
        let mut sequence: Option<(Vec<crate::grammar::KeypadKey>, usize)> = None;
        let mut actions = 0u32;
        let mut decisions = 0u32;
        let mut nothing_retries = 0u32;
        let mut changing = 0u32;
        loop {
            if let Some(p) = self.gate() {
                return match &sequence {
                    Some((keys, pressed)) => part_way(p, *pressed, keys.len()),
                    None => p,
                };
            }
            let read_at = self.clock.now();
            let obs = match self.observe() {
                Ok(o) => o,
                // The page changed while it was read: a changing screen.
                Err(Error::StaleObservation {
                    cause: StaleCause::GenerationChanged,
                }) if changing < CHANGING_RETRIES => {
                    changing += 1;
                    self.pause_until(read_at + CHANGING_WAIT);
                    continue;
                }
                Err(e) => {
                    return match &sequence {
                        Some((keys, pressed)) => part_way(target_failure(&e), *pressed, keys.len()),
                        None => target_failure(&e),
                    }
                }
            };
            // A keypad sequence (seed 003 "Numbers and calculator keys"): pressed key by key,
            // each matched again on this fresh observation after the previous press settled; a
            // key without its one button stops the rest, saying how far it got.
            if let Some((keys, pressed)) = &sequence {
                let button = keys
                    .get(*pressed)
                    .and_then(|k| crate::grammar::keypad_key(&obs, *k));
                let Some(button) = button else {
                    return part_way(not_done("STEP_NOT_EXECUTED"), *pressed, keys.len());
                };
                let p = Primitive::Press {
                    target: button.to_string(),
                };
                let label = describe(&p, &obs);
                let Some((command, kind)) = self.command_for(&p, obs.generation) else {
                    return not_done("UNSUPPORTED_ON_BROWSER");
                };
                let (pressed, total) = (*pressed, keys.len());
                match self.act(command, &obs, &label, kind) {
                    Acted::Part(Part::Done {
                        line,
                        visible,
                        kind,
                    }) => {
                        if pressed + 1 == total {
                            return Part::Done {
                                line: sequence_line(&line, total),
                                visible,
                                kind,
                            };
                        }
                        if let Some((_, n)) = &mut sequence {
                            *n += 1;
                        }
                    }
                    // Refused or uncertain part-way: the rest is not pressed; an uncertain press
                    // stops for reconciliation and is never repeated.
                    Acted::Part(p) => return part_way(p, pressed, total),
                    Acted::Changed if changing < CHANGING_RETRIES => {
                        // Nothing was sent: the same key on a read a second later.
                        changing += 1;
                        self.pause_until(read_at + CHANGING_WAIT);
                    }
                    Acted::Changed => {
                        return part_way(not_done("STALE_OBSERVATION"), pressed, total)
                    }
                }
                continue;
            }
            // address:focus only when no one address field is observed; the address it types.
            let address = match standard {
                Some("address:focus") => {
                    let address = crate::grammar::address_to_focus(&intent, &obs);
                    if address.is_none() {
                        standard = None;
                    }
                    address
                }
                _ => None,
            };
            let (mut obs, standard_control) = match standard {
                None => (obs, None),
                Some(name) => match self.backend.observe_standard(name) {
                    Ok(Some(o)) => {
                        let control = crate::device::computer::standard_ref(name)
                            .filter(|r| o.controls.iter().any(|c| &c.reference == r));
                        // Not sent back (an older helper or relay dropped it): not asked
                        // again for this command; the observation goes on as it is.
                        if control.is_none() {
                            standard = None;
                        }
                        (o, control)
                    }
                    Ok(None) => {
                        standard = None;
                        (obs, None)
                    }
                    Err(e) => return target_failure(&e),
                },
            };
            let resolution = match (standard_control, address) {
                (Some(target), Some(address)) => {
                    return self.focus_address_then_type(target, address, &obs);
                }
                (Some(target), None) if !self.agent_words => {
                    Resolution::Act(Primitive::Press { target })
                }
                _ => resolve(&intent, &obs, self.adapter),
            };
            let (primitive, label) = match resolution {
                Resolution::Act(Primitive::PressKeys { keys }) => {
                    let Some(button) = keys
                        .first()
                        .and_then(|k| crate::grammar::keypad_key(&obs, *k))
                    else {
                        return not_done("STEP_NOT_EXECUTED");
                    };
                    let p = Primitive::Press {
                        target: button.to_string(),
                    };
                    let label = describe(&p, &obs);
                    if keys.len() > 1 {
                        sequence = Some((keys, 0));
                    }
                    (p, label)
                }
                Resolution::Act(p) => {
                    let label = describe(&p, &obs);
                    (p, label)
                }
                Resolution::Outcome(o) => {
                    let code = o.code();
                    if code == "NEW_TAB_OUT_OF_SCOPE" && !direct {
                        return Part::Note { code };
                    }
                    return Part::NotDone {
                        code: code.into(),
                        line: lines::not_done(lines::not_done_words(code), code),
                    };
                }
                Resolution::Decide(req) => {
                    if decisions >= PART_DECISIONS {
                        return not_done("STEP_NOT_EXECUTED");
                    }
                    if self.counters.evaluations >= self.budget.max_evaluations {
                        return not_done("EVALUATION_BUDGET");
                    }
                    decisions += 1;
                    match self.decide(command, &intent, &req, &obs) {
                        Decision::Act(p, label) => {
                            if let Some(stop) = self.confirmed(command, &p, &obs) {
                                return stop;
                            }
                            (p, label)
                        }
                        Decision::Read => {
                            return Part::NotDone {
                                code: "READ_REQUEST".into(),
                                line: lines::handed("READ_REQUEST"),
                            }
                        }
                        Decision::Unclear => return not_done("UNCLEAR"),
                        Decision::Quit => {
                            // The helper's guarded quit shortcut when it offers app:quit, else
                            // the application's own Quit command; the impact check as for any
                            // Jev-decided press (the agent's words ask the person first).
                            match self.backend.observe_standard("app:quit") {
                                Ok(Some(o)) => obs = o,
                                Ok(None) => {}
                                Err(e) => return target_failure(&e),
                            }
                            let Some(control) = quit_control(&obs) else {
                                return not_done("STEP_NOT_EXECUTED");
                            };
                            let p = Primitive::Press {
                                target: control.reference.clone(),
                            };
                            if let Some(stop) = self.confirmed(command, &p, &obs) {
                                return stop;
                            }
                            let label = describe(&p, &obs);
                            (p, label)
                        }
                        Decision::Nothing => {
                            if after_earlier && nothing_retries < NOTHING_RETRIES {
                                // Nothing was dispatched: looking again repeats nothing.
                                nothing_retries += 1;
                                self.pause(STALE_BACKOFF);
                                continue;
                            }
                            return not_done("STEP_NOT_EXECUTED");
                        }
                        Decision::Fail(part) => return part,
                    }
                }
            };
            let primitive = match primitive {
                Primitive::Erase {
                    target,
                    count,
                    value,
                } => erase_dispatch(target, count, value, &obs),
                p => p,
            };
            let Some((command, kind)) = self.command_for(&primitive, obs.generation) else {
                return not_done("UNSUPPORTED_ON_BROWSER");
            };
            // A keypad sequence's keys are one press each, whatever the part's action bound.
            if actions >= if direct { 1 } else { PART_ACTIONS } {
                return not_done("ACTION_BUDGET");
            }
            actions += 1;
            match self.act(command, &obs, &label, kind) {
                // The next key, on a fresh observation (not a replay: another press).
                Acted::Part(Part::Done { .. }) if sequence.is_some() => {
                    if let Some((_, n)) = &mut sequence {
                        *n = 1;
                    }
                }
                // Seed 003 "Unfocused fields": the device refused the typing for focus.
                Acted::Part(Part::NotDone { code, .. })
                    if code == "FOCUS_REQUIRED" && matches!(primitive, Primitive::Type { .. }) =>
                {
                    return self.focus_then_type(&primitive, &obs, &label);
                }
                Acted::Part(p) => return p,
                Acted::Changed if changing < CHANGING_RETRIES => {
                    // Nothing was sent: the screen changed under the decision. Read it again
                    // about a second after the last read and decide afresh (not a replay).
                    changing += 1;
                    actions -= 1;
                    sequence = None;
                    self.pause_until(read_at + CHANGING_WAIT);
                }
                Acted::Changed => return not_done("STALE_OBSERVATION"),
            }
        }
    }

    /// Dispatches `command` (decided on `obs`, described by `label`) and says what came of it;
    /// [`Acted::Changed`]: refused because the screen changed under the decision — nothing was
    /// sent, so it may be decided afresh.
    fn act(&mut self, command: Command, obs: &Observation, label: &str, kind: Kind) -> Acted {
        let sent = self.dispatch(command);
        self.acted(sent, fingerprint(obs), label, kind)
    }

    /// What came of a dispatch whose observation before had fingerprint `before`.
    fn acted(&mut self, sent: Sent, before: u64, label: &str, kind: Kind) -> Acted {
        Acted::Part(match sent {
            Sent::Done(after, navigated) => {
                let visible = navigated || fingerprint(&after) != before;
                Part::Done {
                    line: lines::done(label),
                    visible,
                    kind,
                }
            }
            // Still Done (the browser confirmed it), and says the page was loading.
            Sent::Loading => Part::Done {
                line: lines::done(&format!("{label} (the page was still loading)")),
                visible: true,
                kind,
            },
            Sent::NotExecuted(Error::StaleObservation {
                cause: StaleCause::TargetObscured,
            }) => not_done("TARGET_OBSCURED"),
            Sent::NotExecuted(Error::StaleObservation { .. }) => return Acted::Changed,
            Sent::Stopped(code) => Part::Stop {
                code: code.into(),
                line: lines::not_done(lines::not_done_words(code), code),
            },
            Sent::NotExecuted(e) if e.code() == "GATEWAY_CLOSED" => Part::Stop {
                code: "CANCELLED".into(),
                line: lines::not_done(lines::not_done_words("CANCELLED"), "CANCELLED"),
            },
            Sent::NotExecuted(e) | Sent::Failed(e) => {
                if is_target_gone(&e) {
                    target_failure(&e)
                } else if self.adapter == Adapter::Computer {
                    self.computer_not_done(e.code())
                } else {
                    not_done(e.code())
                }
            }
            Sent::Unknown(tool) => Part::Unknown {
                line: lines::unknown(&tool, "OUTCOME_UNKNOWN"),
            },
        })
    }

    /// A computer action the device refused or that failed (seed 003): a code jevgate knows is
    /// kept, any other is `COMPUTER_TOOL_FAILED`; the line names the device errors behind it.
    fn computer_not_done(&self, code: &str) -> Part {
        let code = computer_stop_code(code);
        let mut line = lines::not_done(lines::not_done_words(code), code);
        if let Some(errors) = device_errors(&self.counters.calls) {
            line.push_str(". ");
            line.push_str(&errors);
        }
        Part::NotDone {
            code: code.to_string(),
            line,
        }
    }

    /// Seed 003 "Unfocused fields": the device refused typing `typed` (decided on `obs`) with
    /// `FOCUS_REQUIRED`, so nothing was typed. The same command clicks that field once and types
    /// the same text (with Enter when it submits) on the observation after the click — no
    /// second decision, and never a second click.
    fn focus_then_type(&mut self, typed: &Primitive, obs: &Observation, label: &str) -> Part {
        let Primitive::Type { target, .. } = typed else {
            return not_done("FOCUS_REQUIRED");
        };
        if let Some(p) = self.gate() {
            return p;
        }
        let click = Primitive::Press {
            target: target.clone(),
        };
        let Some((command, _)) = self.command_for(&click, obs.generation) else {
            return not_done("FOCUS_REQUIRED");
        };
        let clicked = format!("clicked \"{}\"", describe_target(target, obs));
        let after = match self.dispatch(command) {
            Sent::Done(after, _) => after,
            other => {
                return match self.acted(other, fingerprint(obs), &clicked, Kind::Other) {
                    // Confirmed, but the screen after it could not be read: not typed.
                    Acted::Part(Part::Done { .. }) => not_done("FOCUS_REQUIRED"),
                    Acted::Part(p) => p,
                    Acted::Changed => not_done("STALE_OBSERVATION"),
                };
            }
        };
        if !after.controls.iter().any(|c| &c.reference == target) {
            return not_done("FOCUS_REQUIRED");
        }
        if let Some(p) = self.gate() {
            return p;
        }
        let Some((command, kind)) = self.command_for(typed, after.generation) else {
            return not_done("FOCUS_REQUIRED");
        };
        match self.act(command, &after, label, kind) {
            Acted::Part(p) => p,
            Acted::Changed => not_done("STALE_OBSERVATION"),
        }
    }

    /// Seed 003 "Opening a site", "Computer helper contract": with no one address field, the
    /// helper's `address:focus` control `target` (on `obs`) is pressed — one action, its own
    /// checkpoint — and `address` is typed into the field that has the focus on the observation
    /// after it, then submitted (Enter) — a second action. An uncertain press stops there
    /// (unknown, never replayed); no typeable field with the focus after it is
    /// `FOCUS_REQUIRED`, nothing typed.
    fn focus_address_then_type(
        &mut self,
        target: String,
        address: String,
        obs: &Observation,
    ) -> Part {
        let press = Primitive::Press { target };
        let label = describe(&press, obs);
        let Some((command, _)) = self.command_for(&press, obs.generation) else {
            return not_done("STEP_NOT_EXECUTED");
        };
        let after = match self.dispatch(command) {
            Sent::Done(after, _) => after,
            other => {
                return match self.acted(other, fingerprint(obs), &label, Kind::Other) {
                    // Confirmed, but the screen after it could not be read: not typed.
                    Acted::Part(Part::Done { .. }) => not_done("FOCUS_REQUIRED"),
                    Acted::Part(p) => p,
                    Acted::Changed => not_done("STALE_OBSERVATION"),
                };
            }
        };
        if let Some(p) = self.gate() {
            return p;
        }
        let Some(field) = crate::grammar::focused_field(&after) else {
            return not_done("FOCUS_REQUIRED");
        };
        let typed = Primitive::Type {
            target: field.reference.clone(),
            text: address,
            submit: true,
        };
        let label = describe(&typed, &after);
        let Some((command, kind)) = self.command_for(&typed, after.generation) else {
            return not_done("FOCUS_REQUIRED");
        };
        match self.act(command, &after, &label, kind) {
            Acted::Part(p) => p,
            Acted::Changed => not_done("STALE_OBSERVATION"),
        }
    }

    /// The backend command for `p` on generation `g`.
    fn command_for(&mut self, p: &Primitive, g: u64) -> Option<(Command, Kind)> {
        if let Primitive::Type { text, .. } = p {
            remember_typed(&mut self.counters.typed, text);
        }
        let operation_id = self.next_operation_id();
        Some(match p {
            Primitive::Scroll { direction } => (
                Command::PageScroll(ScrollArgs {
                    operation_id,
                    generation: g,
                    direction: *direction,
                }),
                Kind::ScrollOrKey,
            ),
            Primitive::Keypress { key, count } => (
                Command::PageKeypress(KeypressArgs {
                    operation_id,
                    generation: g,
                    key: *key,
                    count: *count,
                }),
                Kind::ScrollOrKey,
            ),
            Primitive::History { direction } => (
                Command::TabHistory(HistoryArgs {
                    operation_id,
                    generation: g,
                    direction: *direction,
                }),
                Kind::Other,
            ),
            Primitive::Type {
                target,
                text,
                submit,
            } => (
                Command::PageType(TypeArgs {
                    operation_id,
                    generation: g,
                    reference: target.clone(),
                    text: text.clone(),
                    submit: *submit,
                }),
                Kind::Other,
            ),
            Primitive::Navigate { url } => (
                Command::TabNavigate(NavigateArgs {
                    operation_id,
                    url: url.clone(),
                }),
                Kind::Other,
            ),
            Primitive::Press { target } => (
                Command::PageClick(ClickArgs {
                    operation_id,
                    generation: g,
                    reference: target.clone(),
                }),
                Kind::Other,
            ),
            Primitive::PressKeys { .. } | Primitive::Erase { .. } => return None,
        })
    }

    /// The high-impact check of a Jev-decided action (issue 26 item 2), when this request asks
    /// for it: `None` when the action may run — the person approved this very control, or Jev
    /// judges it routine with P ≥ [`ROUTINE_AT_LEAST`] — else the part that stops the request
    /// (`CONFIRMATION_REQUIRED`, with the question in [`Run::confirmation`], or a Jev failure).
    /// Jev's evidence is the chosen control's name and role and its enclosing dialog or form,
    /// inside the untrusted envelope — nothing else from the page.
    fn confirmed(&mut self, command: &str, p: &Primitive, obs: &Observation) -> Option<Part> {
        let target = match p {
            Primitive::Press { target } | Primitive::Type { target, .. } => target,
            _ => return None,
        };
        let control = obs.controls.iter().find(|c| &c.reference == target)?;
        if let Some(a) = &self.approved {
            if a.name == control.name && a.role == control.role {
                // The person's yes covers this action on this control, once.
                self.approved = None;
                return None;
            }
        }
        if !self.confirm && !self.handoff {
            return None;
        }
        if self.counters.evaluations >= self.budget.max_evaluations {
            return Some(not_done("EVALUATION_BUDGET"));
        }
        let action = if matches!(p, Primitive::Type { .. }) {
            "type into"
        } else {
            "press"
        };
        // The enclosing dialog or form (bounded by the observation: 200 + 300 characters).
        let within = obs.container_of(control).map(|k| {
            serde_json::json!({"kind": k.kind, "name": k.name, "text": scrub(&k.text, &self.counters.typed)})
        });
        let evidence = serde_json::json!({
            crate::untrusted::UNTRUSTED_KEY: crate::untrusted::wrap_value(serde_json::json!({
                "action": action,
                "control": {"name": control.name, "role": control.role},
                "within": within,
            })),
        });
        let routine_q = Question::noul(
            "routine",
            "The state is one action about to be done on a web page: the control it uses and \
             what encloses it, as untrusted page data. Is doing it routine? Answer no if it \
             deletes, sends, submits, pays, publishes, quits, signs out, or confirms such an \
             operation.",
        );
        let question = match Questions::new([routine_q], &Limits::default()) {
            Ok(q) => q,
            Err(_) => return Some(not_done("JEV_INVALID_REQUEST")),
        };
        let routine = match self.evaluate(evidence.to_string(), question) {
            Ok(e) => match e.answer("routine") {
                Some(EvalAnswer::Noul { noul }) => *noul,
                _ => return Some(not_done("JEV_MALFORMED_RESPONSE")),
            },
            Err(e) => return Some(jev_failure(&e)),
        };
        if routine >= ROUTINE_AT_LEAST {
            return None;
        }
        let thai = self.person_thai.unwrap_or_else(|| lines::has_thai(command));
        let question = lines::confirm_question(thai, action, &control.name);
        self.confirmation = Some(Confirmation {
            name: control.name.clone(),
            role: control.role.clone(),
            question: question.clone(),
        });
        Some(Part::NotDone {
            code: "CONFIRMATION_REQUIRED".into(),
            line: question,
        })
    }

    /// Reads the person's reply to a confirmation question (any language) as yes, no or
    /// something else: one Jev evaluation over the reply only (no page text).
    pub(crate) fn read_reply(&mut self, reply: &str) -> Reply {
        if self.counters.evaluations >= self.budget.max_evaluations {
            return Reply::Unread;
        }
        let question = match Question::choice(
            "reply",
            "The person was asked whether to go ahead with one action. Does this reply say yes \
             (go ahead), no (do not), or something else (a new request)?",
            [
                ("yes", "yes, go ahead"),
                ("no", "no, do not"),
                ("other", "something else"),
            ],
        )
        .map_err(|_| ())
        .and_then(|q| Questions::new([q], &Limits::default()).map_err(|_| ()))
        {
            Ok(q) => q,
            Err(()) => return Reply::Unread,
        };
        match self.evaluate(reply.to_string(), question) {
            Ok(e) => match e.answer("reply") {
                Some(EvalAnswer::Choice { choice, .. }) => match choice.as_str() {
                    "yes" => Reply::Yes,
                    "no" => Reply::No,
                    _ => Reply::Other,
                },
                _ => Reply::Unread,
            },
            Err(_) => Reply::Unread,
        }
    }

    /// An autopilot run as the round (issue 26 item 8, R-AUTO): the loop of
    /// [`super::autopilot`], each action checkpointed in this task's receipts before it is
    /// dispatched (under the fence, like every action of a task), its evaluations counted
    /// against the task's budget. The model judging the sub-goal reached is a completion
    /// candidate; a hand-back, `stuck` or a budget is not done; an unknown outcome is unknown.
    fn autopilot_round(&mut self, plan: &super::autopilot::Plan) -> Report {
        use super::autopilot::{self as ap, Ending as ApEnding};
        let run_id = format!("{}:{}:ap", self.task_id, self.seq);
        let evaluations = std::cell::Cell::new(0u32);
        let results = std::cell::RefCell::new(Vec::new());
        // One evaluation per step: the task's evaluation budget bounds the run's steps.
        let budget_left = self
            .budget
            .max_evaluations
            .saturating_sub(self.counters.evaluations);
        if budget_left == 0 {
            let (ending, reason, line) = not_done("EVALUATION_BUDGET").ending();
            self.emit(&line, &reason);
            return Report {
                ending,
                reason,
                line,
                step_run: None,
                remaining: Vec::new(),
                field: None,
                confirmation: None,
                needs_agent: None,
            };
        }
        let plan = &super::autopilot::Plan {
            goal: plan.goal.clone(),
            values: plan.values.clone(),
            steps: plan.steps.min(budget_left),
        };
        let ledger = TaskLedger {
            task_id: self.task_id,
            seq: self.seq,
            writer: self.writer,
            clock: self.clock,
            fence: self.fence,
            results: &results,
        };
        let (host, cancel) = (self.host, self.cancel);
        let evaluate = |call: &EvaluateCall| {
            evaluations.set(evaluations.get().saturating_add(1));
            host.evaluate(call, cancel)
        };
        let progress = |line: &str| self.emit(line, "AUTOPILOT");
        let now = self.clock.now();
        let drive = ap::Drive {
            evaluate: &evaluate,
            ledger: &ledger,
            progress: &progress,
            clock: self.clock,
            cancel: self.cancel,
            budget: self.deadline.saturating_duration_since(now),
            run_id: &run_id,
            agent_id: &self.owner.agent_id,
            session_id: Some(&self.owner.conversation_id),
            task_id: Some(self.task_id),
        };
        let out = ap::autopilot(self.backend, plan, &drive);
        self.counters.evaluations = self.counters.evaluations.saturating_add(evaluations.get());
        self.counters.actions = self
            .counters
            .actions
            .saturating_add(u32::try_from(out.actions.len()).unwrap_or(u32::MAX));
        self.counters.results.extend(results.into_inner());
        for line in &out.progress {
            lines::push_log(&mut self.counters.log, "autopilot".into(), line.clone());
        }
        let (ending, reason) = match out.ending {
            ApEnding::Done => (
                Ending::Done,
                super::verify::COMPLETION_CANDIDATE.to_string(),
            ),
            ApEnding::Unknown => (Ending::Unknown, "OUTCOME_UNKNOWN".to_string()),
            ApEnding::Cancelled => (Ending::Cancelled, "CANCELLED".to_string()),
            ApEnding::HandedBack
            | ApEnding::Stuck
            | ApEnding::BudgetExhausted
            | ApEnding::Failed => (Ending::NotDone, out.reason.clone()),
        };
        let line = match ending {
            Ending::Done => lines::done("the autopilot reached its goal"),
            Ending::Unknown => lines::unknown("autopilot", "OUTCOME_UNKNOWN"),
            _ => lines::not_done(
                &format!("the autopilot stopped ({})", out.ending.as_str()),
                &reason,
            ),
        };
        self.emit(&line, &reason);
        Report {
            ending,
            reason,
            line,
            step_run: None,
            remaining: Vec::new(),
            field: None,
            confirmation: None,
            needs_agent: None,
        }
    }

    /// One Jev decision over the observed controls (a typed `choice` question).
    fn decide(
        &mut self,
        command: &str,
        intent: &Intent,
        req: &DecisionRequest,
        obs: &Observation,
    ) -> Decision {
        let offered: Vec<&Control> = if req.options.is_empty() {
            obs.controls
                .iter()
                .filter(|c| !c.disabled && (c.is_pressable() || c.editable))
                .collect()
        } else {
            req.options
                .iter()
                .filter_map(|r| obs.controls.iter().find(|c| &c.reference == r))
                .collect()
        };
        // Quitting is Jev's own choice on a computer, in any language (seed 003 "Quitting an
        // app"): no word list.
        let offer_quit = self.adapter == crate::grammar::Adapter::Computer && !req.choose_field;
        let offer_read = self.offer_read && !req.choose_field;
        // A named site (issue 26 item 7): offered to the person's single direct command that
        // has not acted, when a text helper can turn it into an address.
        let offer_navigate = offer_read && self.text_helper;
        // Menu-bar commands are a separate choice (seed 003 "Menu-bar items are Jev's separate
        // menu choice"): in-window controls stay in the control question.
        let (menus, offered): (Vec<&Control>, Vec<&Control>) = offered
            .into_iter()
            .filter(|c| !req.choose_field || c.editable)
            .partition(|c| c.menu.is_some());
        let menus: Vec<&Control> = menus
            .into_iter()
            .filter(|c| c.is_pressable() && c.menu.as_deref().is_some_and(|m| !m.is_empty()))
            .take(MAX_OPTIONS)
            .collect();
        // Seed 003 "Text": while a text field has focus, the whole command is also offered as
        // the text to type there; Jev decides whether it is text or an action.
        let command_field = if req.offer_command_text {
            obs.focus
                .as_deref()
                .and_then(|f| obs.controls.iter().find(|c| c.reference == f))
                .filter(|c| c.editable && !c.sensitive && !c.disabled)
        } else {
            None
        };
        // The controls leave room for the other options (the question takes 255 in all).
        let others = usize::from(offer_quit)
            + 2 * usize::from(offer_read)
            + usize::from(offer_navigate)
            + usize::from(!menus.is_empty())
            + usize::from(command_field.is_some());
        let offered: Vec<&Control> = offered
            .into_iter()
            .take(MAX_OPTIONS.saturating_sub(others))
            .collect();
        let mut options: Vec<(String, String)> = offered
            .iter()
            .enumerate()
            .map(|(i, c)| (format!("o{i}"), option_text(c)))
            .collect();
        options.push(("none".into(), "none".into()));
        if !menus.is_empty() {
            options.push((
                "menu".into(),
                "a command of the application's menu bar".into(),
            ));
        }
        if command_field.is_some() {
            options.push((
                "type_text".into(),
                "the command itself is text to type into the focused field".into(),
            ));
        }
        if offer_quit {
            options.push(("quit".into(), "quit the application in front".into()));
        }
        if offer_read {
            // Worded apart from the question's instructions (a lexical evaluator reads both).
            options.push(("read_request".into(), "only asks what is shown".into()));
            options.push(("unclear".into(), "not understood".into()));
        }
        if offer_navigate {
            options.push((
                "navigate".into(),
                "open another website the command names".into(),
            ));
        }
        let instructions = if req.choose_field {
            "Which field should the person's text go into?"
        } else {
            "Which control on the page does the person's command mean?"
        };
        let menu_options: Vec<(String, String)> = menus
            .iter()
            .enumerate()
            .map(|(i, c)| (format!("m{i}"), menu_text(c)))
            .collect();
        let question = match Question::choice("control", instructions, options)
            .and_then(|q| {
                let mut qs = vec![q];
                if !menu_options.is_empty() {
                    qs.push(Question::choice(
                        "menu",
                        "Which menu-bar command does the person's command mean, if it means one?",
                        menu_options,
                    )?);
                }
                Ok(qs)
            })
            .and_then(|qs| Questions::new(qs, &Limits::default()))
        {
            Ok(q) => q,
            Err(_) => return Decision::Fail(not_done("JEV_INVALID_REQUEST")),
        };
        let evaluation = match self.evaluate(command, question) {
            Ok(e) => e,
            Err(e) => return Decision::Fail(jev_failure(&e)),
        };
        let (choice, confidence) = match evaluation.answer("control") {
            Some(EvalAnswer::Choice {
                choice, confidence, ..
            }) => (choice.clone(), *confidence),
            _ => return Decision::Fail(not_done("JEV_MALFORMED_RESPONSE")),
        };
        if choice == "navigate" && offer_navigate {
            if confidence < NAVIGATE_CONFIDENCE {
                return Decision::Fail(not_done("LOW_OPERATION_CONFIDENCE"));
            }
            let address = match self.ask_helper(SITE_INSTRUCTIONS, command, obs) {
                Ok(a) => a,
                Err(part) => return Decision::Fail(part),
            };
            return match address.map(|a| crate::grammar::check_model_address(&a)) {
                Some(Ok(url)) => {
                    let label = format!("opened {}", lines::host_of(&url));
                    Decision::Act(Primitive::Navigate { url }, label)
                }
                _ => Decision::Fail(not_done("NAVIGATION_UNRESOLVED")),
            };
        }
        match choice.as_str() {
            "none" => return Decision::Nothing,
            "read_request" if self.offer_read => return Decision::Read,
            "unclear" if self.offer_read => return Decision::Unclear,
            "menu" if !menus.is_empty() => {
                let item = match evaluation.answer("menu") {
                    Some(EvalAnswer::Choice { choice, .. }) => choice
                        .strip_prefix('m')
                        .and_then(|n| n.parse::<usize>().ok())
                        .and_then(|i| menus.get(i)),
                    _ => None,
                };
                let Some(item) = item else {
                    return Decision::Fail(not_done("JEV_MALFORMED_RESPONSE"));
                };
                return Decision::Act(
                    Primitive::Press {
                        target: item.reference.clone(),
                    },
                    format!("chose \"{}\"", lines::short(&menu_text(item))),
                );
            }
            "type_text" => {
                if let Some(field) = command_field {
                    // The text is the command itself, verbatim (R-RUN: never invented).
                    return Decision::Act(
                        Primitive::Type {
                            target: field.reference.clone(),
                            text: command.to_string(),
                            submit: false,
                        },
                        format!("typed [text] into \"{}\"", lines::short(&field.name)),
                    );
                }
            }
            "quit" if offer_quit => return Decision::Quit,
            _ => {}
        }
        let Some(control) = choice
            .strip_prefix('o')
            .and_then(|n| n.parse::<usize>().ok())
            .and_then(|i| offered.get(i))
        else {
            return Decision::Fail(not_done("JEV_MALFORMED_RESPONSE"));
        };
        if control.editable {
            // Typed text only ever comes from the command (R-RUN): never invented.
            let text = req.text_offer.clone().or_else(|| match intent {
                Intent::Type { text } | Intent::Search { text } => Some(text.clone()),
                Intent::Decide { text_offer } => text_offer.clone(),
                _ => None,
            });
            let mut text = text
                .filter(|t| !t.is_empty())
                .or_else(|| self.answers.get(&control.name).cloned());
            if text.is_none() && self.text_helper {
                // The text helper resolves the field's value from the command (issue 26 item
                // 7); missing information is never invented.
                text = match self.ask_helper(FIELD_TEXT_INSTRUCTIONS, command, obs) {
                    Ok(t) => t,
                    Err(part) => return Decision::Fail(part),
                };
            }
            let Some(text) = text else {
                self.asked = Some(control.name.clone());
                return Decision::Fail(not_done("FIELD_TEXT_REQUIRED"));
            };
            let label = if req.submit {
                format!("searched in \"{}\"", lines::short(&control.name))
            } else {
                format!("typed [text] into \"{}\"", lines::short(&control.name))
            };
            return Decision::Act(
                Primitive::Type {
                    target: control.reference.clone(),
                    text,
                    submit: req.submit,
                },
                label,
            );
        }
        Decision::Act(
            Primitive::Press {
                target: control.reference.clone(),
            },
            format!("pressed \"{}\"", lines::short(&control.name)),
        )
    }
}

/// One decision of a goal run.
enum GoalStep {
    Act(Primitive, String),
    /// The goal is reached (a completion candidate).
    Done,
    /// No action found: `BLOCKED`, `UNCLEAR`, `READ_REQUEST`.
    NoAction(&'static str),
    Fail(Part),
}

impl Run<'_> {
    /// One text-helper call over the command and the page's origin only — never its title,
    /// path, query or text (issue 26 item 7). `Ok(None)`: missing information, or a text that
    /// is empty or longer than a field takes.
    fn ask_helper(
        &mut self,
        instructions: &str,
        command: &str,
        obs: &Observation,
    ) -> Result<Option<String>, Part> {
        let input = serde_json::json!({"command": command, "origin": origin_of(&obs.url)});
        match self
            .host
            .text_helper(self.owner, instructions, &input.to_string())
        {
            Ok(Some(t)) if !t.trim().is_empty() && t.chars().count() <= MAX_HELPER_CHARS => {
                Ok(Some(t))
            }
            Ok(_) => Ok(None),
            Err(e) => Err(jev_failure(&e)),
        }
    }
}

/// The longest text the helper may give a field (seed 003: a 2000-character field value).
const MAX_HELPER_CHARS: usize = 2000;

/// `scheme://host[:port]` of `url` (nothing of its path, query or fragment); empty when it has
/// none.
fn origin_of(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return String::new();
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..end];
    // Never credentials.
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    format!("{scheme}://{host}")
}

enum Decision {
    Act(Primitive, String),
    Nothing,
    /// The person's command only asks about what is shown (`READ_REQUEST`).
    Read,
    /// Jev does not understand the command (`UNCLEAR`).
    Unclear,
    /// Jev's quit choice on a computer: quit the front application (seed 003 "Quitting an
    /// app").
    Quit,
    Fail(Part),
}

/// The control that quits the front application (seed 003 "Quitting an app"): the helper's
/// `standard-app-quit` when the observation holds it (asked for with `app:quit`), else the
/// application's own one pressable command named "Quit …"; `None` when there is none or more
/// than one.
fn quit_control(obs: &Observation) -> Option<&Control> {
    if let Some(c) = obs
        .controls
        .iter()
        .find(|c| c.reference == "standard-app-quit" && c.is_pressable())
    {
        return Some(c);
    }
    let mut quits = obs.controls.iter().filter(|c| {
        c.is_pressable()
            && !c.sensitive
            && c.name
                .get(..5)
                .is_some_and(|p| p.eq_ignore_ascii_case("quit "))
    });
    match (quits.next(), quits.next()) {
        (Some(one), None) => Some(one),
        _ => None,
    }
}

fn not_done(code: &str) -> Part {
    Part::NotDone {
        code: code.to_string(),
        line: lines::not_done(lines::not_done_words(code), code),
    }
}

/// A keypad sequence stopped after `pressed` of its `total` keys: the part's line says how far
/// it got (seed 003: "the outcome says how far it got"). Paused or revised part-way, it ends not
/// done rather than interrupted: a resume runs an interrupted command again from its start,
/// which would press the keys already pressed a second time.
fn part_way(part: Part, pressed: usize, total: usize) -> Part {
    let far = format!("{pressed} of {total} keys were pressed");
    match part {
        Part::NotDone { code, line } => Part::NotDone {
            line: format!("{line}; {far}"),
            code,
        },
        Part::Unknown { line } => Part::Unknown {
            line: format!("{line}; {far} before it"),
        },
        Part::Stop { code, line } if pressed > 0 && stop_ending(&code) == Ending::Interrupted => {
            Part::NotDone {
                line: format!("{line}; {far}"),
                code,
            }
        }
        Part::Stop { code, line } => Part::Stop {
            line: format!("{line}; {far}"),
            code,
        },
        other => other,
    }
}

/// The line of a keypad sequence that pressed all its `total` keys (the last press's line).
fn sequence_line(last: &str, total: usize) -> String {
    let what = last.strip_prefix("Done: ").unwrap_or(last);
    lines::done(&format!("{what}, the last of {total} keys"))
}

/// A Jev failure: configuration, access and quota failures stop the task; anything else
/// (timeouts, invalid answers, an unavailable or rate-limited provider) fails only this
/// command. An invalid answer records only which check failed.
fn jev_failure(e: &Error) -> Part {
    let code = e.code();
    let stops = matches!(
        code,
        "JEV_INVALID_CONFIGURATION"
            | "JEV_MISSING_CREDENTIALS"
            | "JEV_ACCESS_DENIED"
            | "JEV_AUTHENTICATION_FAILED"
            | "JEV_QUOTA_EXCEEDED"
            | "JEV_UNSUPPORTED_MODEL"
            | "GATEWAY_CLOSED"
    );
    if stops {
        return Part::Stop {
            code: code.into(),
            line: lines::not_done(lines::not_done_words(code), code),
        };
    }
    if code == "JEV_CANCELLED" {
        return Part::Stop {
            code: "CANCELLED".into(),
            line: lines::not_done(lines::not_done_words("CANCELLED"), "CANCELLED"),
        };
    }
    let line = match e.validation_reason() {
        Some(v) => lines::not_done(&format!("the decision was invalid ({v})"), code),
        None => lines::not_done(lines::not_done_words(code), code),
    };
    Part::NotDone {
        code: code.into(),
        line,
    }
}

/// The target itself is gone (the browser died, the device went offline, the lease was
/// taken back): the task stops.
fn is_target_gone(e: &Error) -> bool {
    matches!(
        e.code(),
        "BROWSER_UNAVAILABLE"
            | "TAB_UNAVAILABLE"
            | "DEVICE_OFFLINE"
            | "DEVICE_NOT_PAIRED"
            | "DEVICE_CAPABILITY_MISMATCH"
            | "DEVICE_CONTROL_ELSEWHERE"
            | "DEVICE_CONTROL_REVOKED"
            | "DEVICE_CONTROL_NOT_HELD"
            | "GATEWAY_CLOSED"
            | "DEVICE_CHANNEL_IO"
    )
}

fn target_failure(e: &Error) -> Part {
    if is_target_gone(e) {
        Part::Stop {
            code: e.code().into(),
            line: lines::not_done(lines::UNREACHABLE, e.code()),
        }
    } else {
        not_done(e.code())
    }
}

/// What a fast-path primitive does, in words.
fn describe(p: &Primitive, obs: &Observation) -> String {
    let name = |r: &str| describe_target(r, obs);
    match p {
        Primitive::Scroll { direction } => format!("scrolled {}", enum_word(direction)),
        Primitive::Keypress { key, count } if *count > 1 => {
            format!("pressed {} x{count}", key.name())
        }
        Primitive::Keypress { key, .. } => format!("pressed {}", key.name()),
        Primitive::History { direction } => format!("went {}", enum_word(direction)),
        Primitive::Type { target, submit, .. } if *submit => {
            format!("searched in \"{}\"", name(target))
        }
        Primitive::Type { target, .. } => format!("typed [text] into \"{}\"", name(target)),
        Primitive::Navigate { url } => format!("opened {}", lines::host_of(url)),
        Primitive::Press { target } => format!("pressed \"{}\"", name(target)),
        Primitive::Erase { target, count, .. } => {
            format!("erased {count} from \"{}\"", name(target))
        }
        Primitive::PressKeys { .. } => "nothing".into(),
    }
}

/// The name of control `target` of `obs`, short (empty when it is not there).
fn describe_target(target: &str, obs: &Observation) -> String {
    obs.controls
        .iter()
        .find(|c| c.reference == target)
        .map(|c| lines::short(&c.name))
        .unwrap_or_default()
}

/// Most characters an erase sends as discrete Backspace keys (seed 003 "Computer helper
/// contract": "erasing up to 10 characters sends that many backspace actions").
const ERASE_KEYS_AT_MOST: u32 = 10;

/// How an erase of `count` characters at the end of `target` (its value then `value`) is
/// dispatched (pure): that many Backspace keys when the backend offers the key discretely
/// (`backspace` in [`Observation::keys`]) and the count is at most [`ERASE_KEYS_AT_MOST`], else
/// the field rewritten to `value`.
fn erase_dispatch(target: String, count: u32, value: String, obs: &Observation) -> Primitive {
    let keys = obs.keys.iter().any(|k| k.eq_ignore_ascii_case("backspace"));
    if keys && count <= ERASE_KEYS_AT_MOST {
        Primitive::Keypress {
            key: crate::grammar::Key::Backspace,
            count,
        }
    } else {
        Primitive::Type {
            target,
            text: value,
            submit: false,
        }
    }
}

fn enum_word<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_lowercase))
        .unwrap_or_default()
}

/// A control as a decision option: role and accessible name (never its value).
fn option_text(c: &Control) -> String {
    let role = if c.role.is_empty() {
        "control"
    } else {
        &c.role
    };
    format!("{role} \"{}\"", lines::short(&c.name))
}

/// A menu-bar command as a menu option: its place and name (`Edit → Copy`).
fn menu_text(c: &Control) -> String {
    match c.menu.as_deref() {
        Some(m) if !m.is_empty() => format!("{m} → {}", c.name),
        _ => c.name.clone(),
    }
}

/// What a comparison of two observations looks at: everything a person would see change.
fn fingerprint(o: &Observation) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    o.url.hash(&mut h);
    o.title.hash(&mut h);
    o.text.hash(&mut h);
    o.focus.hash(&mut h);
    o.scroll.at_top.hash(&mut h);
    o.scroll.at_bottom.hash(&mut h);
    o.dialog.is_some().hash(&mut h);
    for c in &o.controls {
        c.name.hash(&mut h);
        c.value.hash(&mut h);
        c.checked.hash(&mut h);
    }
    h.finish()
}

/// Remembers `text` as typed by the task (the newest [`KEPT_TYPED`], each at most
/// `MAX_COMMAND_CHARS` characters since it came from a command).
fn remember_typed(typed: &mut Vec<String>, text: &str) {
    if text.trim().chars().count() < MIN_SCRUBBED_CHARS || typed.iter().any(|t| t == text) {
        return;
    }
    if typed.len() >= KEPT_TYPED {
        typed.remove(0);
    }
    typed.push(text.to_string());
}

/// `s` with every text the task typed cut out (`[text]`).
fn scrub(s: &str, typed: &[String]) -> String {
    let mut out = s.to_string();
    for t in typed {
        for piece in [t.as_str(), t.trim()] {
            if piece.chars().count() >= MIN_SCRUBBED_CHARS && out.contains(piece) {
                out = out.replace(piece, "[text]");
            }
        }
    }
    out
}

/// A URL as a receipt keeps it: without its query and fragment (a submitted form's values
/// travel there) and without typed text.
fn kept_url(url: &str, typed: &[String]) -> String {
    let end = url.find(['?', '#']).unwrap_or(url.len());
    scrub(&url[..end], typed)
}

/// The observation a receipt keeps (R-TSK-RCPT, issue 21 defect 7), as JSON: the controls'
/// refs, roles, names and states, and for a field the length of its value (`valueChars`) —
/// never the value itself, typed or prefilled; bounded page text and controls; the URL without
/// its query; and nothing of the text the task typed (a page that echoes it shows `[text]`).
fn kept_observation(o: &Observation, typed: &[String]) -> String {
    let mut kept = o.clone();
    kept.url = kept_url(&kept.url, typed);
    kept.title = scrub(&kept.title, typed);
    // Cut typed text out before bounding, so a bound never leaves a piece of it behind.
    kept.text = scrub(&kept.text, typed);
    if kept.text.chars().count() > KEPT_TEXT_CHARS {
        kept.text = kept.text.chars().take(KEPT_TEXT_CHARS).collect();
        kept.truncated.text = true;
    }
    if kept.controls.len() > KEPT_CONTROLS {
        kept.controls.truncate(KEPT_CONTROLS);
        kept.truncated.controls = true;
    }
    if let Some(d) = &mut kept.dialog {
        d.message = scrub(&d.message, typed);
    }
    // Containers: only those of kept controls, bounded, without typed text (a page may echo it).
    kept.bound_containers();
    for k in &mut kept.containers {
        k.name = scrub(&k.name, typed);
        k.text = scrub(&k.text, typed);
    }
    let lengths: Vec<Option<usize>> = kept
        .controls
        .iter_mut()
        .map(|c| {
            c.name = scrub(&c.name, typed);
            c.value.take().map(|v| v.chars().count())
        })
        .collect();
    let mut json = serde_json::to_value(&kept).unwrap_or_default();
    if let Some(controls) = json.get_mut("controls").and_then(|c| c.as_array_mut()) {
        for (c, n) in controls.iter_mut().zip(lengths) {
            if let (Some(n), Some(c)) = (n, c.as_object_mut()) {
                c.insert("valueChars".into(), n.into());
            }
        }
    }
    json.to_string()
}

/// The result a receipt keeps: the primitive's result, a dialog's message without typed text.
fn kept_result(a: &crate::browser::ActionResult, typed: &[String]) -> Option<String> {
    let mut a = a.clone();
    if let Some(d) = &mut a.dialog {
        d.message = scrub(&d.message, typed);
    }
    serde_json::to_string(&a).ok()
}

/// Text a command itself would type (for the action log's `[text]`).
fn typed_text(command: &str) -> Option<String> {
    match parse_command(command) {
        Intent::Type { text } | Intent::Search { text } => Some(text),
        Intent::Decide { text_offer } => text_offer,
        _ => None,
    }
}

/// How a request that stopped with `code` ends: a cancellation, an owner's interruption
/// (`PAUSED`, `REVISED`: the session stays open) or a stop.
fn stop_ending(code: &str) -> Ending {
    match code {
        "CANCELLED" => Ending::Cancelled,
        "PAUSED" | "REVISED" => Ending::Interrupted,
        _ => Ending::Stop,
    }
}

/// The steps from `from` on, shortened.
fn rest(steps: &[String], from: usize) -> Vec<String> {
    steps
        .iter()
        .skip(from)
        .map(|s| lines::log_command(s, typed_text(s).as_deref()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grammar::Key;

    // Seed 003 "Computer helper contract" (issue 25): with `backspace` among the helper's keys,
    // an erase of up to 10 characters is that many Backspace keys; more, or no such key, rewrites
    // the field without them.
    #[test]
    fn r_run_erase_is_backspace_keys_up_to_ten_else_a_rewrite() {
        let mut obs = Observation::default();
        let rewrite = |n: u32, obs: &Observation| erase_dispatch("e1".into(), n, "abc".into(), obs);
        let typed = Primitive::Type {
            target: "e1".into(),
            text: "abc".into(),
            submit: false,
        };
        assert_eq!(rewrite(3, &obs), typed, "no keys offered");
        obs.keys = vec!["backspace".into()];
        for n in [1, 3, 10] {
            assert_eq!(
                rewrite(n, &obs),
                Primitive::Keypress {
                    key: Key::Backspace,
                    count: n
                }
            );
        }
        assert_eq!(rewrite(11, &obs), typed);
        assert_eq!(rewrite(50, &obs), typed);
    }

    // Seed 003 "Menu-bar items are Jev's separate menu choice": a menu command is offered by
    // its place and name.
    #[test]
    fn r_run_a_menu_command_is_offered_by_its_place() {
        let mut copy = Control::new("e30", "menu item", "Copy");
        copy.menu = Some("Edit".into());
        assert_eq!(menu_text(&copy), "Edit → Copy");
        copy.menu = Some("Edit → Paste Special".into());
        assert_eq!(menu_text(&copy), "Edit → Paste Special → Copy");
        copy.menu = Some(String::new());
        assert_eq!(menu_text(&copy), "Copy");
    }

    fn page(controls: Vec<Control>) -> Observation {
        Observation {
            controls,
            ..Observation::default()
        }
    }

    // Seed 003 "Quitting an app" (issue 25): the helper's standard-app-quit first, else the
    // application's one Quit command; none or two: nothing to press.
    #[test]
    fn r_run_the_quit_control() {
        let standard = Control::new("standard-app-quit", "push button", "Quit Chromium");
        let own = Control::new("m1", "menu item", "Quit Text Editor");
        let other = Control::new("m2", "menu item", "Quit Other");
        let quiet = Control::new("m3", "menu item", "Quitting tips");
        let found = |cs: Vec<Control>| quit_control(&page(cs)).map(|c| c.reference.clone());
        assert_eq!(
            found(vec![own.clone(), standard.clone()]).as_deref(),
            Some("standard-app-quit")
        );
        assert_eq!(
            found(vec![own.clone(), quiet.clone()]).as_deref(),
            Some("m1")
        );
        assert_eq!(found(vec![own, other]), None, "two: ambiguous");
        assert_eq!(found(vec![quiet]), None);
        let mut disabled = standard;
        disabled.actions.clear();
        assert_eq!(found(vec![disabled]), None, "not pressable");
    }
}
