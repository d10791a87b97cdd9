//! The task service (R-TSK): the API ([`Tasks`]), owner checks, the bounded pool of task
//! threads and each task's life from `queued` to its last state.
//!
//! Owns which task runs on which thread, the per-task command queue and cancellation, and the
//! order of the writes that frame a request (its receipt opens before its first action and
//! settles after its last). The run itself is [`super::run`]. It must never let a caller see or
//! touch a task whose owner triple differs from theirs, never run more tasks at once than it
//! has slots, and never leave a thread behind after [`TaskService::close`].

use super::host::{Hook, OpenTarget, TaskHost};
use super::lines;
use super::records::{self, TaskUpdate};
use super::run::{Counters, Ending, Report, Run};
use super::writer::Writer;
use super::{
    Receipt, SpawnRequest, TaskOwner, TaskProgress, TaskState, TaskStatus, TaskTarget,
    MAX_COMMAND_CHARS, MAX_QUEUED_COMMANDS,
};
use crate::browser::BrowserBackend;
use crate::clock::SharedClock;
use crate::store::Store;
use crate::CancelToken;
use crate::{Error, Result};
use parking_lot::{Condvar, Mutex, RwLock};
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// A task the service is running (or about to).
struct Live {
    owner: TaskOwner,
    request: SpawnRequest,
    /// A backend the host brought ([`Tasks::spawn_with_backend`]); else the target is opened.
    backend: Option<Arc<dyn BrowserBackend>>,
    commands: VecDeque<String>,
    cancel: CancelToken,
    state: TaskState,
}

#[derive(Default)]
struct Pool {
    live: HashMap<String, Live>,
    waiting: VecDeque<String>,
    running: usize,
    threads: Vec<JoinHandle<()>>,
    closed: bool,
}

struct Shared {
    store: Arc<Store>,
    writer: Writer,
    clock: SharedClock,
    host: Arc<dyn TaskHost>,
    pool: Mutex<Pool>,
    changed: Condvar,
    hook: RwLock<Option<Hook>>,
    slots: usize,
}

/// The gateway's task service.
#[derive(Clone)]
pub(crate) struct TaskService {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for TaskService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskService")
            .field("slots", &self.shared.slots)
            .finish_non_exhaustive()
    }
}

/// The task API of a gateway (R-TSK): `gw.tasks()`.
///
/// ```no_run
/// use jevgate::task::{SpawnRequest, TaskOwner};
/// # let dir = tempfile::tempdir().unwrap();
/// # let gw = jevgate::Gateway::open(jevgate::GatewayOptions::new(dir.path(), Default::default())).unwrap();
/// let owner = TaskOwner::new("assistant", "alice", "conv-1");
/// let mut request = SpawnRequest::new("search cats, open the first result");
/// request.start_url = Some("http://127.0.0.1:8080/".into());
/// let id = gw.tasks().spawn(&owner, request)?;
/// let status = gw.tasks().wait(&owner, &id, std::time::Duration::from_secs(60))?;
/// println!("{:?}: {:?}", status.state, status.outcome);
/// for receipt in gw.tasks().receipts(&owner, &id)? {
///     println!("request {} {}", receipt.request, receipt.state);
/// }
/// # Ok::<(), jevgate::Error>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Tasks<'a> {
    service: &'a TaskService,
}

impl<'a> Tasks<'a> {
    pub(crate) fn new(service: &'a TaskService) -> Tasks<'a> {
        Tasks { service }
    }

    /// Starts a task for `owner` and returns its id (a UUID). It waits `queued` for a free slot
    /// when all are busy. `INVALID_ARGUMENT` for a bad owner, a goal over
    /// [`MAX_COMMAND_CHARS`] characters or a list over 12 steps, a bad start URL or budget;
    /// `ORCHESTRATION_DISABLED` (409) unless the live configuration enables Jev and
    /// `features.browserTasks`, `EXECUTION_DENIED` (403) when the owner's agent has no Jev
    /// access ([`crate::Config::browser_task_gate`]). The gate is asked again right before each
    /// request starts: a reload that turns tasks off stops a queued or running task before its
    /// next browser action, with that code. With `features.browserSteps` off a step list runs
    /// as one direct command.
    pub fn spawn(&self, owner: &TaskOwner, request: SpawnRequest) -> Result<String> {
        self.service.spawn(owner, request, None)
    }

    /// [`Tasks::spawn`] on a browser the host drives itself (any [`BrowserBackend`]: a
    /// Chromium it launched, its own automation stack). `request.target` is recorded but not
    /// opened, and the backend is not closed when the task ends.
    pub fn spawn_with_backend(
        &self,
        owner: &TaskOwner,
        request: SpawnRequest,
        backend: Arc<dyn BrowserBackend>,
    ) -> Result<String> {
        self.service.spawn(owner, request, Some(backend))
    }

    /// The task as its owner sees it. `ACCESS_DENIED` when `id` is not a task of `owner`: an
    /// unknown or malformed id and another owner's task answer alike, for every verb.
    pub fn status(&self, owner: &TaskOwner, id: &str) -> Result<TaskStatus> {
        self.service.status(owner, id)
    }

    /// Blocks until the task is neither queued nor running, or `timeout` passed, and returns
    /// its status then (check [`TaskState::is_busy`] to tell the two apart).
    pub fn wait(&self, owner: &TaskOwner, id: &str, timeout: Duration) -> Result<TaskStatus> {
        self.service.wait(owner, id, timeout)
    }

    /// Queues a person's next direct command or step list on an open session (FIFO, at most
    /// [`MAX_QUEUED_COMMANDS`] waiting: `COMMAND_QUEUE_FULL`). `AUTOMATION_SESSION_CLOSED`
    /// when the task's session is over; `ORCHESTRATION_DISABLED` / `EXECUTION_DENIED` as
    /// [`Tasks::spawn`], on the configuration live at the call.
    pub fn command(&self, owner: &TaskOwner, id: &str, text: &str) -> Result<()> {
        self.service.command(owner, id, text)
    }

    /// Cancels the task: a queued task never starts; a running one stops before its next
    /// action (an operation already sent keeps its outcome, and an unknown one still needs
    /// reconciliation). Idempotent; returns the status after the call.
    pub fn cancel(&self, owner: &TaskOwner, id: &str) -> Result<TaskStatus> {
        self.service.cancel(owner, id)
    }

    /// `owner`'s tasks, newest first (at most 100).
    pub fn list(&self, owner: &TaskOwner) -> Result<Vec<TaskStatus>> {
        self.service.list(owner)
    }

    /// The task's receipts (R-TSK-RCPT), with the kept results and observations (private: the
    /// owner's to investigate; never log them).
    pub fn receipts(&self, owner: &TaskOwner, id: &str) -> Result<Vec<Receipt>> {
        self.service.receipts(owner, id)
    }

    /// Every task of the data directory with its receipts, newest first (at most `limit`),
    /// whoever owns them: for the person who owns the directory (`jevgate task list`, through
    /// `jevgate::unstable::all_tasks`), never for an agent — agents use [`Tasks::list`]. Not
    /// public: it bypasses the owner triple.
    pub(crate) fn all(&self, limit: u32) -> Result<Vec<(TaskStatus, Vec<Receipt>)>> {
        self.service.list_all(limit)
    }

    /// Crash-test seam: `hook` is called with the name of each checkpoint boundary a dispatch
    /// passes (`before_checkpoint`, `after_checkpoint`, `after_dispatch`, `after_settle`).
    /// Not part of the supported API: reached through `jevgate::unstable::set_checkpoint_hook`.
    pub(crate) fn set_checkpoint_hook(
        &self,
        hook: Option<Arc<dyn Fn(&'static str) + Send + Sync>>,
    ) {
        self.service.set_hook(hook)
    }
}

fn check_text(name: &'static str, text: &str, allow_empty: bool) -> Result<()> {
    let n = text.chars().count();
    if (!allow_empty && text.trim().is_empty()) || n > MAX_COMMAND_CHARS {
        return Err(Error::InvalidArgument {
            name,
            reason: format!("must be 1 to {MAX_COMMAND_CHARS} characters ({n} given)"),
        });
    }
    if lines::too_many_steps(text) {
        return Err(Error::InvalidArgument {
            name,
            reason: format!(
                "a step list has at most {} steps",
                crate::grammar::MAX_STEPS
            ),
        });
    }
    Ok(())
}

fn check_request(r: &SpawnRequest) -> Result<()> {
    check_text("goal", &r.goal, true)?;
    if let Some(url) = &r.start_url {
        let ok = url.len() <= 2048
            && (url.starts_with("http://") || url.starts_with("https://"))
            && !url.chars().any(|c| c.is_control() || c == ' ');
        if !ok {
            return Err(Error::InvalidArgument {
                name: "startUrl",
                reason: "must be an http or https URL of at most 2048 bytes".into(),
            });
        }
    }
    if let TaskTarget::Device { device_id } = &r.target {
        if device_id.is_empty() || device_id.len() > 128 {
            return Err(Error::InvalidArgument {
                name: "target",
                reason: "`deviceId` must be 1 to 128 bytes".into(),
            });
        }
    }
    if let TaskTarget::Local { profile: Some(p) } = &r.target {
        if p.is_empty() || p.len() > 256 || p.chars().any(char::is_control) {
            return Err(Error::InvalidArgument {
                name: "target",
                reason: "`profile` must be 1 to 256 bytes without control characters".into(),
            });
        }
    }
    let b = r.budget;
    if b.max_steps == 0 || b.max_steps > 1000 || b.max_evaluations > 1000 {
        return Err(Error::InvalidArgument {
            name: "budget",
            reason: "`maxSteps` must be 1 to 1000 and `maxEvaluations` at most 1000".into(),
        });
    }
    if b.timeout_ms == 0 || b.timeout_ms > 3_600_000 {
        return Err(Error::InvalidArgument {
            name: "budget",
            reason: "`timeoutMs` must be 1 to 3600000".into(),
        });
    }
    Ok(())
}

impl TaskService {
    /// Recovers the receipts a dead process left running (R-TSK-RCPT) and starts the writer.
    pub(crate) fn open(
        store: Arc<Store>,
        data_dir: std::path::PathBuf,
        clock: SharedClock,
        host: Arc<dyn TaskHost>,
        slots: usize,
    ) -> Result<TaskService> {
        let now = clock.wall_millis();
        let interrupted = store.write(|tx| records::recover(tx, now))?;
        if interrupted > 0 {
            log::warn!("{interrupted} task request(s) were interrupted by a stop; none is re-sent");
        }
        let writer = Writer::start(Arc::clone(&store), data_dir)?;
        Ok(TaskService {
            shared: Arc::new(Shared {
                store,
                writer,
                clock,
                host,
                pool: Mutex::new(Pool::default()),
                changed: Condvar::new(),
                hook: RwLock::new(None),
                slots: slots.max(1),
            }),
        })
    }

    /// Installs the crash-test seam (tests only, through `jevgate::unstable`).
    pub(crate) fn set_hook(&self, hook: Option<Hook>) {
        *self.shared.hook.write() = hook;
    }

    /// The task `id` if `owner` owns it. An unknown id, a malformed one and another owner's
    /// answer with one error, word for word: nothing tells a caller which ids exist.
    fn owned(&self, owner: &TaskOwner, id: &str) -> Result<TaskStatus> {
        owner.check()?;
        let task = if id.is_empty() || id.len() > 64 {
            None
        } else {
            self.shared.store.read(|c| records::get_task(c, id))?
        };
        match task {
            Some(task) if task.owner == *owner => Ok(task),
            _ => Err(Error::AccessDenied {
                reason: "no task of this id belongs to this agent, principal and conversation"
                    .into(),
            }),
        }
    }

    fn with_live(&self, mut t: TaskStatus) -> TaskStatus {
        if let Some(live) = self.shared.pool.lock().live.get(&t.id) {
            t.queued_commands = live.commands.len();
            // The live state is ahead of the row by at most one write.
            t.state = live.state;
        }
        t
    }

    pub(crate) fn spawn(
        &self,
        owner: &TaskOwner,
        request: SpawnRequest,
        backend: Option<Arc<dyn BrowserBackend>>,
    ) -> Result<String> {
        owner.check()?;
        check_request(&request)?;
        // Feature and access gate on the live configuration, before anything is stored.
        self.shared.host.task_gate(owner)?;
        if self.shared.pool.lock().closed {
            return Err(Error::GatewayClosed);
        }
        let id = crate::ids::random_uuid()?;
        let now = self.shared.clock.wall_millis();
        {
            let (id, owner, target, goal) = (
                id.clone(),
                owner.clone(),
                request.target.clone(),
                request.goal.clone(),
            );
            self.shared.writer.write(Box::new(move |tx| {
                records::insert_task(tx, &id, &owner, &target, &goal, now)
            }))?;
        }
        let mut pool = self.shared.pool.lock();
        if pool.closed {
            drop(pool);
            self.finish_unstarted(&id, TaskState::Cancelled, "GATEWAY_CLOSED");
            return Err(Error::GatewayClosed);
        }
        pool.live.insert(
            id.clone(),
            Live {
                owner: owner.clone(),
                request,
                backend,
                commands: VecDeque::new(),
                cancel: CancelToken::new(),
                state: TaskState::Queued,
            },
        );
        if pool.running < self.shared.slots {
            pool.running += 1;
            let me = self.clone();
            let first = id.clone();
            let thread = std::thread::Builder::new()
                .name("jevgate-task".into())
                .spawn(move || me.slot(first))
                .map_err(|e| Error::Internal {
                    reason: format!("cannot start a task thread: {}", e.kind()),
                });
            match thread {
                Ok(t) => {
                    pool.threads.retain(|t| !t.is_finished());
                    pool.threads.push(t);
                }
                Err(e) => {
                    pool.running -= 1;
                    pool.live.remove(&id);
                    drop(pool);
                    self.finish_unstarted(&id, TaskState::Failed, "INTERNAL");
                    return Err(e);
                }
            }
        } else {
            pool.waiting.push_back(id.clone());
        }
        Ok(id)
    }

    /// One slot's thread: runs its first task, then whatever waits for a slot.
    fn slot(self, first: String) {
        let mut next = Some(first);
        while let Some(id) = next {
            let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.drive(&id)));
            if ran.is_err() {
                log::error!("a task thread panicked; the task is failed");
                self.settle(&id, TaskState::Failed, "INTERNAL", None);
            }
            let mut pool = self.shared.pool.lock();
            next = if pool.closed {
                None
            } else {
                pool.waiting.pop_front()
            };
            if next.is_none() {
                pool.running -= 1;
            }
        }
        self.shared.changed.notify_all();
    }

    /// A task that never started ends here (cancelled while queued, or the gateway closing).
    fn finish_unstarted(&self, id: &str, state: TaskState, reason: &str) {
        let (id2, reason2) = (id.to_string(), reason.to_string());
        let now = self.shared.clock.wall_millis();
        let _ = self.shared.writer.write(Box::new(move |tx| {
            records::update_task(
                tx,
                &id2,
                &TaskUpdate {
                    state: Some(state),
                    reason: Some(Some(reason2)),
                    ..TaskUpdate::default()
                },
                now,
            )
        }));
        self.shared.pool.lock().live.remove(id);
        self.shared.changed.notify_all();
    }

    /// Sets the live state and wakes waiters.
    fn set_state(&self, id: &str, state: TaskState) {
        if let Some(l) = self.shared.pool.lock().live.get_mut(id) {
            l.state = state;
        }
        self.shared.changed.notify_all();
    }

    /// The task's last state: stored, then the live entry goes.
    fn settle(&self, id: &str, state: TaskState, reason: &str, outcome: Option<String>) {
        let (id2, reason2) = (id.to_string(), reason.to_string());
        let now = self.shared.clock.wall_millis();
        let stored = self.shared.writer.write(Box::new(move |tx| {
            records::update_task(
                tx,
                &id2,
                &TaskUpdate {
                    state: Some(state),
                    reason: Some(Some(reason2)),
                    outcome,
                    ..TaskUpdate::default()
                },
                now,
            )
        }));
        if let Err(e) = stored {
            log::warn!("task state not stored: {}", e.code());
        }
        self.shared.pool.lock().live.remove(id);
        self.shared.changed.notify_all();
    }

    /// Runs task `id` on this thread until its session closes.
    fn drive(&self, id: &str) {
        // Queued → running in one step under the pool lock, where `cancel` also decides
        // whether a task is still queued: a task is either cancelled before it starts (and
        // never opens a target) or it is running and stops before its next action.
        let (owner, request, cancel, brought) = {
            let mut pool = self.shared.pool.lock();
            let closed = pool.closed;
            let Some(l) = pool.live.get_mut(id) else {
                return;
            };
            if l.state != TaskState::Queued {
                return;
            }
            if l.cancel.is_cancelled() || closed {
                drop(pool);
                let reason = if closed {
                    "GATEWAY_CLOSED"
                } else {
                    "CANCELLED"
                };
                self.settle(id, TaskState::Cancelled, reason, None);
                return;
            }
            l.state = TaskState::Running;
            (
                l.owner.clone(),
                l.request.clone(),
                l.cancel.clone(),
                l.backend.clone(),
            )
        };
        self.shared.changed.notify_all();
        let progress_fn = request.progress.clone();
        let progress = move |p: TaskProgress| {
            if let Some(f) = &progress_fn {
                // A host callback that panics loses its line, never the task.
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&p)));
            }
        };
        // The gate again on the live configuration: a task queued while tasks were on and
        // turned off since never opens its browser.
        let opened = self
            .shared
            .host
            .task_gate(&owner)
            .and_then(|_| match brought {
                Some(backend) => Ok(OpenTarget {
                    backend,
                    close: Box::new(|| {}),
                }),
                None => self.shared.host.open_target(&owner, &request.target),
            });
        let target = match opened {
            Ok(t) => t,
            Err(e) => {
                let line = lines::not_done(lines::open_failure_words(e.code()), e.code());
                progress(TaskProgress {
                    task_id: id.to_string(),
                    line: line.clone(),
                    reason: e.code().to_string(),
                });
                self.settle(id, TaskState::Failed, e.code(), Some(line));
                return;
            }
        };
        let (state, reason, line) =
            self.session(id, &owner, &request, &cancel, &*target.backend, &progress);
        (target.close)();
        self.settle(id, state, &reason, line);
    }

    /// The session loop: the goal, then queued commands while the session stays open.
    fn session(
        &self,
        id: &str,
        owner: &TaskOwner,
        request: &SpawnRequest,
        cancel: &CancelToken,
        backend: &dyn BrowserBackend,
        progress: &dyn Fn(TaskProgress),
    ) -> (TaskState, String, Option<String>) {
        let mut counters = Counters::default();
        let mut seq = 0u32;
        let mut next: Option<String> = Some(request.goal.clone());
        let mut opening = request.start_url.clone();
        let mut last: Option<Report> = None;
        while let Some(text) = next.take() {
            seq += 1;
            self.set_state(id, TaskState::Running);
            let report = self.request(
                id,
                owner,
                seq,
                &text,
                opening.take(),
                request,
                cancel,
                backend,
                progress,
                &mut counters,
            );
            match report.ending {
                Ending::Unknown => {
                    return (
                        TaskState::NeedsReconciliation,
                        report.reason,
                        Some(report.line),
                    )
                }
                Ending::Stop => return (TaskState::Failed, report.reason, Some(report.line)),
                Ending::Cancelled => {
                    let reason = if self.shared.pool.lock().closed {
                        "GATEWAY_CLOSED"
                    } else {
                        "CANCELLED"
                    };
                    return (TaskState::Cancelled, reason.into(), Some(report.line));
                }
                Ending::Done | Ending::NotDone => {}
            }
            let session_open = request.keep_open || request.goal.trim().is_empty();
            last = Some(report);
            if session_open {
                let (id2, now) = (id.to_string(), self.shared.clock.wall_millis());
                let _ = self.shared.writer.write(Box::new(move |tx| {
                    records::update_task(
                        tx,
                        &id2,
                        &TaskUpdate {
                            state: Some(TaskState::WaitingInput),
                            ..TaskUpdate::default()
                        },
                        now,
                    )
                }));
            }
            // The next command: one already queued, or (an open session) wait for one.
            let mut pool = self.shared.pool.lock();
            loop {
                if pool.closed || cancel.is_cancelled() {
                    let reason = if pool.closed {
                        "GATEWAY_CLOSED"
                    } else {
                        "CANCELLED"
                    };
                    return (TaskState::Cancelled, reason.into(), None);
                }
                let Some(live) = pool.live.get_mut(id) else {
                    return (TaskState::Cancelled, "CANCELLED".into(), None);
                };
                if let Some(c) = live.commands.pop_front() {
                    next = Some(c);
                    break;
                }
                if !session_open {
                    break;
                }
                live.state = TaskState::WaitingInput;
                self.shared.changed.notify_all();
                self.shared.changed.wait(&mut pool);
            }
        }
        match last {
            Some(r) if r.ending == Ending::Done => (
                TaskState::Completed,
                "COMPLETION_CANDIDATE".into(),
                Some(r.line),
            ),
            Some(r) => (TaskState::Failed, r.reason, Some(r.line)),
            None => (TaskState::Failed, "INTERNAL".into(), None),
        }
    }

    /// One request: its receipt opens, the run, its receipt and the task row settle.
    #[allow(clippy::too_many_arguments)]
    fn request(
        &self,
        id: &str,
        owner: &TaskOwner,
        seq: u32,
        text: &str,
        opening: Option<String>,
        request: &SpawnRequest,
        cancel: &CancelToken,
        backend: &dyn BrowserBackend,
        progress: &dyn Fn(TaskProgress),
        counters: &mut Counters,
    ) -> Report {
        let now = self.shared.clock.wall_millis();
        let id2 = id.to_string();
        let opened = self.shared.writer.write(Box::new(move |tx| {
            records::begin_request(tx, &id2, seq, now)?;
            records::update_task(
                tx,
                &id2,
                &TaskUpdate {
                    state: Some(TaskState::Running),
                    ..TaskUpdate::default()
                },
                now,
            )
        }));
        if let Err(e) = opened {
            let line = lines::not_done("the receipt could not be written", e.code());
            return Report {
                ending: Ending::Stop,
                reason: e.code().into(),
                line,
                step_run: None,
            };
        }
        // The gate right before the request's first browser action, on the live configuration.
        let gate = self.shared.host.task_gate(owner);
        let hook = self.shared.hook.read().clone();
        let deadline = self.shared.clock.now() + request.budget.timeout();
        let mut run = Run {
            task_id: id,
            owner,
            seq,
            backend,
            host: &*self.shared.host,
            writer: &self.shared.writer,
            clock: &*self.shared.clock,
            cancel,
            budget: request.budget,
            counters,
            hook: hook.as_ref(),
            progress,
            deadline,
            step_lists: gate.as_ref().is_ok_and(|g| g.step_lists),
        };
        let report = match gate {
            Err(e) => run.refused(&e),
            Ok(_) => match opening.and_then(|url| run.open(&url)) {
                Some(stopped) => stopped,
                None => run.request(text),
            },
        };
        let (state, reason, line) = (
            match report.ending {
                Ending::Done => "done",
                Ending::NotDone => "not_done",
                Ending::Unknown => "unknown",
                Ending::Stop => "failed",
                Ending::Cancelled => "cancelled",
            },
            report.reason.clone(),
            report.line.clone(),
        );
        let update = TaskUpdate {
            reason: Some(Some(report.reason.clone())),
            outcome: Some(report.line.clone()),
            actions: Some(counters.actions),
            evaluations: Some(counters.evaluations),
            action_log: Some(counters.log.clone()),
            step_run: report.step_run.clone().map(Some),
            ..TaskUpdate::default()
        };
        let id2 = id.to_string();
        let now = self.shared.clock.wall_millis();
        if let Err(e) = self.shared.writer.write(Box::new(move |tx| {
            records::end_request(tx, &id2, seq, state, &reason, &line, now)?;
            records::update_task(tx, &id2, &update, now)
        })) {
            log::warn!("request receipt not settled: {}", e.code());
        }
        report
    }

    pub(crate) fn status(&self, owner: &TaskOwner, id: &str) -> Result<TaskStatus> {
        let t = self.owned(owner, id)?;
        Ok(self.with_live(t))
    }

    pub(crate) fn wait(
        &self,
        owner: &TaskOwner,
        id: &str,
        timeout: Duration,
    ) -> Result<TaskStatus> {
        self.owned(owner, id)?;
        let clock = &*self.shared.clock;
        let deadline = clock.now() + timeout;
        let mut pool = self.shared.pool.lock();
        loop {
            let busy = pool.live.get(id).is_some_and(|l| l.state.is_busy());
            if !busy {
                break;
            }
            let Some(slice) = crate::clock::wait_slice(clock, deadline) else {
                break;
            };
            self.shared.changed.wait_for(&mut pool, slice);
        }
        drop(pool);
        self.status(owner, id)
    }

    pub(crate) fn command(&self, owner: &TaskOwner, id: &str, text: &str) -> Result<()> {
        check_text("text", text, false)?;
        self.shared.host.task_gate(owner)?;
        let task = self.owned(owner, id)?;
        let mut pool = self.shared.pool.lock();
        if pool.closed {
            return Err(Error::GatewayClosed);
        }
        let Some(live) = pool.live.get_mut(id) else {
            return Err(Error::AutomationSessionClosed);
        };
        if task.state.is_closed() || live.cancel.is_cancelled() {
            return Err(Error::AutomationSessionClosed);
        }
        if !(live.request.keep_open || live.request.goal.trim().is_empty()) {
            return Err(Error::AutomationSessionClosed);
        }
        if live.commands.len() >= MAX_QUEUED_COMMANDS {
            return Err(Error::CommandQueueFull);
        }
        live.commands.push_back(text.to_string());
        if live.state == TaskState::WaitingInput {
            live.state = TaskState::Running;
        }
        drop(pool);
        self.shared.changed.notify_all();
        Ok(())
    }

    pub(crate) fn cancel(&self, owner: &TaskOwner, id: &str) -> Result<TaskStatus> {
        self.owned(owner, id)?;
        let unstarted = {
            let mut pool = self.shared.pool.lock();
            let queued = match pool.live.get_mut(id) {
                Some(l) => {
                    l.cancel.cancel();
                    if l.state == TaskState::WaitingInput {
                        // Closing: `wait` waits until the thread settled it.
                        l.state = TaskState::Running;
                    }
                    l.state == TaskState::Queued
                }
                None => false,
            };
            if queued {
                pool.waiting.retain(|w| w != id);
            }
            queued
        };
        if unstarted {
            // Its thread (if one already picked it) sees the cancellation and stops too.
            self.finish_unstarted(id, TaskState::Cancelled, "CANCELLED");
        }
        self.shared.changed.notify_all();
        self.status(owner, id)
    }

    pub(crate) fn list(&self, owner: &TaskOwner) -> Result<Vec<TaskStatus>> {
        owner.check()?;
        let tasks = self
            .shared
            .store
            .read(|c| records::list_tasks(c, owner, 100))?;
        Ok(tasks.into_iter().map(|t| self.with_live(t)).collect())
    }

    /// Every task of the data directory (the CLI's `task list`, for the person who owns it).
    pub(crate) fn list_all(&self, limit: u32) -> Result<Vec<(TaskStatus, Vec<Receipt>)>> {
        self.shared.store.read(|c| {
            records::all_tasks(c, limit)?
                .into_iter()
                .map(|t| {
                    let r = records::receipts(c, &t.id)?;
                    Ok((t, r))
                })
                .collect()
        })
    }

    pub(crate) fn receipts(&self, owner: &TaskOwner, id: &str) -> Result<Vec<Receipt>> {
        self.owned(owner, id)?;
        self.shared.store.read(|c| records::receipts(c, id))
    }

    /// Cancels every task, joins every task thread, then stops the writer. Idempotent.
    pub(crate) fn close(&self) {
        let (threads, waiting) = {
            let mut pool = self.shared.pool.lock();
            pool.closed = true;
            for l in pool.live.values() {
                l.cancel.cancel();
            }
            let waiting: Vec<String> = pool.waiting.drain(..).collect();
            (std::mem::take(&mut pool.threads), waiting)
        };
        self.shared.changed.notify_all();
        for id in waiting {
            self.finish_unstarted(&id, TaskState::Cancelled, "GATEWAY_CLOSED");
        }
        let me = std::thread::current().id();
        for t in threads {
            // A task thread that drops the last gateway reference closes it from inside:
            // it must not wait for itself.
            if t.thread().id() != me {
                let _ = t.join();
            }
        }
        self.shared.writer.close();
    }
}
