//! The task service (R-TSK): the API ([`Tasks`]), owner checks, the bounded pool of task
//! threads and each task's life from `queued` to its last state.
//!
//! Owns which task runs on which thread, the per-task command queue and cancellation, and the
//! order of the writes that frame a request (its receipt opens before its first action and
//! settles after its last). The run itself is [`super::run`]. It must never let a caller see or
//! touch a task whose owner triple differs from theirs, never run more tasks at once than it
//! has slots, and never leave a thread behind after [`TaskService::close`].

use super::carry::{Call, Carried, Carrier, Outcome};
use super::control;
use super::engine::TaskDb;
use super::evidence::{self, Evidence, EvidenceIds, EvidenceRecord, EvidenceSource};
use super::fence::Fence;
use super::host::{Hook, OpenTarget, TaskHost};
use super::lines;
use super::records::{self, TaskUpdate};
use super::run::{Approved, Confirmation, Counters, Ending, Reply, Report, Run};
use super::verify::{self, Proof, Verification, Verifier, VerifierInput, VerifyRequest};
use super::writer::Writer;
use super::{
    ControlAction, ControlReceipt, ControlRequest, FirstRound, Origin, Receipt, SpawnRequest,
    TaskLimits, TaskOwner, TaskProgress, TaskState, TaskStatus, TaskTarget, UpdateRequest,
    MAX_COMMAND_CHARS, MAX_QUEUED_COMMANDS,
};
use crate::browser::BrowserBackend;
use crate::clock::Instant;
use crate::clock::SharedClock;
use crate::config::ConfirmHighImpact;
use crate::device::computer::{ComputerConnection, CONNECTION_CHECK};
use crate::CancelToken;
use crate::{Error, Result};
use parking_lot::{Condvar, Mutex, RwLock};
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// Whose words a request carries and how they run (issue 26 item 1).
#[derive(Debug, Clone, Copy, Default)]
struct Words {
    /// The agent's words: no deterministic fast path.
    agent: bool,
    /// The agent's goal: a goal run.
    goal_run: bool,
    /// The session's first round.
    session_start: bool,
    /// The person's language for a confirmation question.
    person_thai: Option<bool>,
    /// The agent's one command for a handed-off command (issue 26 item 4).
    handoff: bool,
    /// The person controls the task (a read request or hand-off needs it).
    user_control: bool,
    /// The round is the spawn's autopilot run (issue 26 item 8).
    autopilot: bool,
}

/// A command waiting in a session's queue.
struct Queued {
    id: String,
    text: String,
    /// The person's reply to a pending confirmation question (issue 26 item 2).
    reply: bool,
    /// The agent's words (origin `agent`): no deterministic fast path acts on them.
    agent: bool,
    /// The agent's goal (an `update` revision): it runs as a goal run (issue 26 item 1).
    goal: bool,
    /// The agent's one command for a handed-off command: it runs as the person's next direct
    /// command, checked for impact (issue 26 item 4).
    handoff: bool,
}

/// A Jev-decided action stopped for the person's yes (issue 26 item 2): the question, what a
/// yes runs (the stopped command or steps, verbatim: the person's words, private), and the
/// command whose control receipt waits `awaiting_confirmation`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct PendingConfirmation {
    ask: Confirmation,
    remaining: Vec<String>,
    command_id: Option<String>,
    /// The stopped words were the agent's: a yes approves one action, never lends them the
    /// person's fast paths.
    #[serde(default)]
    agent_words: bool,
    /// The stopped words were the agent's goal: a yes resumes the goal run.
    #[serde(default)]
    goal_run: bool,
}

/// How a session's last request ended (what its final state is made from).
struct Last {
    ending: Ending,
    reason: String,
    line: String,
}

/// A task the service holds: queued, running on a slot, or an open session waiting for its
/// next command (holding its target but no slot).
struct Live {
    owner: TaskOwner,
    request: SpawnRequest,
    /// A backend the host brought ([`Tasks::spawn_with_backend`]); else the target is opened.
    brought: Option<Arc<dyn BrowserBackend>>,
    /// The opened target while the session is open.
    target: Option<OpenTarget>,
    /// Accepted commands waiting, in order (FIFO).
    queue: VecDeque<Queued>,
    /// Accepts in flight (their rows being written): counted against the queue bound.
    reserved: usize,
    /// The command a slot is carrying out now.
    running_command: Option<String>,
    cancel: CancelToken,
    fence: Arc<Fence>,
    /// The state callers see (ahead of the row by at most one write).
    state: TaskState,
    /// In `Pool::ready` or on a slot.
    scheduled: bool,
    /// The target was opened (or the open was tried).
    started: bool,
    /// Set when the session is being closed: no more commands are accepted.
    closing: bool,
    /// An expiry asked for while the session waited: the state and reason it ends with.
    expire: Option<(TaskState, &'static str)>,
    counters: Counters,
    /// The number of the last request.
    seq: u32,
    idle_since: Instant,
    last: Option<Last>,
    /// A paused step run's remaining steps, verbatim (what `resume` runs).
    paused_steps: Option<Vec<String>>,
    /// Whose words the paused steps are.
    paused_words: Words,
    /// A pause no round has answered yet.
    pausing: bool,
    /// Control actions keep the session open after its goal.
    hold_open: bool,
    /// The agent has control (R-TSK-CTL `agent`/`user`).
    agent: bool,
    /// The last request dispatched no action (a later agent update is a replan).
    changed_nothing: bool,
    /// The current replan chain's digests (at most 3; a person's command or revise resets).
    replans: Vec<String>,
    /// A reopened task: its start URL is not opened again.
    reopened: bool,
    /// The person's answers to field questions (field → text), for this task's later runs.
    answers: HashMap<String, String>,
    /// A step list stopped on a field question: the field and the steps an answer continues.
    question: Option<(String, Vec<String>)>,
    /// Whose words the steps an answer continues are.
    question_words: Words,
    /// Re-admitted after a restart (issue 21 item 3): an open session whose target opens with
    /// its next command, which is that target's first request (no goal, no start URL).
    readmitted: bool,
    /// A Jev-decided action waiting for the person's yes (issue 26 item 2).
    confirmation: Option<PendingConfirmation>,
    /// The running command is the person's reply to [`Live::confirmation`].
    replying: bool,
    /// The running command is the agent's words (issue 26 item 2: no deterministic fast path).
    agent_words: bool,
    /// The running request is the agent's goal: a goal run (issue 26 item 1).
    goal_run: bool,
    /// The running request is the agent's one command for a hand-off (issue 26 item 4).
    handoff_run: bool,
    /// The running request is the spawn's autopilot run (issue 26 item 8).
    autopilot_run: bool,
    /// The person's command the agent has a turn for (issue 26 items 3, 4): its code and
    /// whether the hand-off's one command was sent. Until the person's next command settles.
    agent_turn: Option<(&'static str, bool)>,
    /// The running request is the session's first round (seed 003 "Session start").
    session_start: bool,
    /// Whether the person's latest words have Thai script (a confirmation question's
    /// language); unknown until the person said something.
    person_thai: Option<bool>,
    /// A computer task's connection while its target is open (issue 25 item 4), when it was
    /// last checked, and whether a check is under way.
    connection: Option<ComputerConnection>,
    checked_at: Instant,
    checking: bool,
}

impl Live {
    /// A new entry for `owner`'s task running `request`: queued, nothing started, nothing
    /// carried over.
    fn new(
        owner: TaskOwner,
        request: SpawnRequest,
        brought: Option<Arc<dyn BrowserBackend>>,
        now: Instant,
    ) -> Live {
        Live {
            owner,
            request,
            brought,
            target: None,
            queue: VecDeque::new(),
            reserved: 0,
            running_command: None,
            cancel: CancelToken::new(),
            fence: Arc::new(Fence::default()),
            state: TaskState::Queued,
            scheduled: true,
            started: false,
            closing: false,
            expire: None,
            counters: Counters::default(),
            seq: 0,
            idle_since: now,
            last: None,
            paused_steps: None,
            paused_words: Words::default(),
            pausing: false,
            hold_open: false,
            agent: false,
            changed_nothing: false,
            replans: Vec::new(),
            reopened: false,
            answers: HashMap::new(),
            question: None,
            question_words: Words::default(),
            readmitted: false,
            confirmation: None,
            replying: false,
            agent_words: false,
            goal_run: false,
            handoff_run: false,
            autopilot_run: false,
            agent_turn: None,
            session_start: false,
            person_thai: None,
            connection: None,
            checked_at: now,
            checking: false,
        }
    }

    fn session_open(&self) -> bool {
        // A pending field question or confirmation waits for its answer, and a completion
        // candidate for its verification, whatever keepOpen said.
        self.request.keep_open
            || !self.request.has_words()
            || self
                .last
                .as_ref()
                .is_some_and(|r| r.reason == "SESSION_READY")
            || self.agent_turn.is_some()
            || self.hold_open
            || self.question.is_some()
            || self.confirmation.is_some()
            || self.awaits_verification()
    }

    /// Its last request is a completion candidate no one verified yet (R-TSK-VER): the session
    /// waits for a verification, whatever `keepOpen` says.
    fn awaits_verification(&self) -> bool {
        self.last
            .as_ref()
            .is_some_and(|r| verify::awaits(&r.reason))
    }

    /// Not closed: counted against the session bounds.
    fn open(&self) -> bool {
        !self.closing
    }
}

#[derive(Default)]
struct Pool {
    live: HashMap<String, Live>,
    /// Tasks that want a slot: queued spawns, sessions with a command, sessions to close.
    ready: VecDeque<String>,
    running: usize,
    threads: Vec<JoinHandle<()>>,
    closed: bool,
}

struct Shared {
    store: TaskDb,
    writer: Writer,
    clock: SharedClock,
    host: Arc<dyn TaskHost>,
    pool: Mutex<Pool>,
    changed: Condvar,
    hook: RwLock<Option<Hook>>,
    limits: TaskLimits,
    reaper: Mutex<Option<JoinHandle<()>>>,
    /// Serializes control verbs (see [`TaskService::control`]).
    control: Mutex<()>,
    /// The backends of tasks left `needs_reconciliation`, for `reconcile` (bounded).
    in_doubt: Mutex<KeptBackends>,
    /// The evidence ids issued (issue 21 item 7; bounded, five minutes each).
    evidence: Mutex<EvidenceIds>,
    /// The host's verifier of completion candidates (issue 26 item 6).
    verifier: RwLock<Option<Verifier>>,
    /// On the shared store: carries control calls to the process running a task, and applies
    /// the calls carried here (issue 23).
    carrier: std::sync::OnceLock<Carrier>,
}

std::thread_local! {
    /// Set while this thread applies a carried call: it is never carried on again.
    static APPLYING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The most characters of an answer to a field question.
pub const MAX_ANSWER_CHARS: usize = 2000;

/// The most backends kept for reconciliation.
const MAX_KEPT_BACKENDS: usize = 256;

/// The backends of tasks left `needs_reconciliation`, for `reconcile`: at most
/// [`MAX_KEPT_BACKENDS`]; past it the oldest kept goes (its operation stays unknown until a
/// person resolves it).
struct Kept<T> {
    by_task: HashMap<String, T>,
    /// Task ids, oldest first (an id whose entry was removed is skipped when evicting).
    order: VecDeque<String>,
}

type KeptBackends = Kept<Arc<dyn BrowserBackend>>;

impl<T> Default for Kept<T> {
    fn default() -> Self {
        Kept {
            by_task: HashMap::new(),
            order: VecDeque::new(),
        }
    }
}

impl<T: Clone> Kept<T> {
    fn insert(&mut self, id: String, backend: T) {
        if self.by_task.insert(id.clone(), backend).is_none() {
            self.order.push_back(id);
        }
        while self.by_task.len() > MAX_KEPT_BACKENDS {
            match self.order.pop_front() {
                Some(oldest) => {
                    self.by_task.remove(&oldest);
                }
                None => break,
            }
        }
        // Ids of entries already removed: dropped once they outnumber the live ones.
        if self.order.len() > 2 * MAX_KEPT_BACKENDS {
            let by_task = &self.by_task;
            self.order.retain(|k| by_task.contains_key(k));
        }
    }

    fn get(&self, id: &str) -> Option<T> {
        self.by_task.get(id).cloned()
    }

    fn remove(&mut self, id: &str) {
        self.by_task.remove(id);
    }
}

/// The gateway's task service.
#[derive(Clone)]
pub(crate) struct TaskService {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for TaskService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskService")
            .field("limits", &self.shared.limits)
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
    /// [`MAX_COMMAND_CHARS`] characters, a bad start URL or budget;
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
    /// [`MAX_QUEUED_COMMANDS`] waiting: `COMMAND_QUEUE_FULL`) and returns its control receipt
    /// (`accepted`). It then runs, or — when the round before it ends in a field question, a
    /// not-done, an unknown outcome or a stop, or the task is cancelled — it is listed
    /// `dropped` with the reason in [`TaskStatus::commands`]; never lost, never run twice.
    /// `AUTOMATION_SESSION_CLOSED` when the task's session is over; `ORCHESTRATION_DISABLED` /
    /// `EXECUTION_DENIED` as [`Tasks::spawn`], on the configuration live at the call.
    pub fn command(&self, owner: &TaskOwner, id: &str, text: &str) -> Result<ControlReceipt> {
        self.service.command(owner, id, text, Origin::User)
    }

    /// [`Tasks::command`] recording who sent it (the agent tools send `agent`).
    pub(crate) fn command_from(
        &self,
        owner: &TaskOwner,
        id: &str,
        text: &str,
        origin: Origin,
    ) -> Result<ControlReceipt> {
        self.service.command(owner, id, text, origin)
    }

    /// Steers the task (R-TSK-CTL, seed 003 "Direct task control over HTTP"): `pause`,
    /// `revise` (with text), `resume`, `agent`, `user` — see [`ControlAction`] and the
    /// README's action × state table. Returns the task's status after the command was
    /// accepted. `INVALID_INPUT` (a task or command id that is not a UUID, text on an action
    /// other than `revise`, revise text outside 1..=4000 characters), `ACCESS_DENIED`,
    /// `REVISION_CONFLICT`, `STATE_CONFLICT`, `IDEMPOTENCY_CONFLICT` (the same id with other
    /// contents; the same contents answer the same result), `NOTHING_TO_RESUME`,
    /// `AUTOMATION_SESSION_CLOSED`.
    pub fn control(
        &self,
        owner: &TaskOwner,
        id: &str,
        command: &ControlRequest,
    ) -> Result<TaskStatus> {
        self.service.control(owner, id, command)
    }

    /// Continues the task with a revised goal (seed 003 "Continuing a browser task",
    /// R-TSK-CTL): the complete revised goal runs after the active request settles
    /// (`when_ready`), on a fresh observation of the current page; a task not started yet
    /// takes it as its goal (its start URL still opens first). A `completed` or `failed` task
    /// is reopened by its owner; a `cancelled` one stays closed (`AUTOMATION_SESSION_CLOSED`)
    /// and one with an unresolved mutation stays fenced (`STATE_CONFLICT`,
    /// `UNRESOLVED_MUTATION`). An update after a request that dispatched nothing is a replan:
    /// three distinct ones per chain (`STATE_CONFLICT` `REPLAN_LIMIT`, or `REPLAN_DUPLICATE` for
    /// the same guidance twice); a person's command or `revise` starts a new chain. The
    /// revision moves; status shows it pending until it starts.
    pub fn update(
        &self,
        owner: &TaskOwner,
        id: &str,
        update: &UpdateRequest,
    ) -> Result<TaskStatus> {
        self.service.update(owner, id, update)
    }

    /// Answers the field question a step list stopped on (`FIELD_TEXT_REQUIRED`, shown as
    /// [`TaskStatus::field_request`]): `text` (1 to 2000 characters) goes into `field`, and the
    /// step list continues from the step that asked, on the current page. Answered fields stay
    /// available to the task's later commands. `STATE_CONFLICT` (`FIELD_NOT_ASKED`) when no
    /// question about `field` is pending; `INVALID_INPUT` for text out of bounds (never
    /// echoed).
    pub fn answer(
        &self,
        owner: &TaskOwner,
        id: &str,
        field: &str,
        text: &str,
    ) -> Result<TaskStatus> {
        self.service.answer(owner, id, field, text, Origin::User)
    }

    /// [`Tasks::answer`] recording who sent it (the agent tools send `agent`).
    pub(crate) fn answer_from(
        &self,
        owner: &TaskOwner,
        id: &str,
        field: &str,
        text: &str,
        origin: Origin,
    ) -> Result<TaskStatus> {
        self.service.answer(owner, id, field, text, origin)
    }

    /// Reconciles a task left `needs_reconciliation` (R-TSK-RCPT): asks the browser's own
    /// record (`operation_status`) about the receipt's last in-doubt operation only — never a
    /// replay. Executed or not executed resolves it (recorded as resolved by
    /// `operation_status`); unknown leaves it for a person ([`Tasks::resolve`]) — always so
    /// after the process that owned a local Chromium died, since the record died with it.
    /// When nothing is in doubt any more the task leaves `needs_reconciliation` (`failed`,
    /// reason `RECONCILED`; an update may continue it). `STATE_CONFLICT` (`NOTHING_IN_DOUBT`)
    /// for a task with nothing in doubt.
    pub fn reconcile(&self, owner: &TaskOwner, id: &str) -> Result<TaskStatus> {
        self.service.reconcile(owner, id)
    }

    /// A person resolves an in-doubt operation of the task: it `happened` or not (R-TSK-RCPT;
    /// recorded as resolved by `person`). `STATE_CONFLICT` (`NOT_IN_DOUBT`) for an operation
    /// of the task whose outcome is known, or one it does not have.
    pub fn resolve(
        &self,
        owner: &TaskOwner,
        id: &str,
        operation_id: &str,
        happened: bool,
    ) -> Result<TaskStatus> {
        self.service.resolve(owner, id, operation_id, happened)
    }

    /// Browser evidence of the task (issue 21 item 7, R-TSK-VER; seed 003 "Parent
    /// verification and recovery"): a bounded, untrusted observation of its page with an
    /// `evidenceId` valid for [`super::EVIDENCE_TTL`] (five minutes on the gateway's clock, tied
    /// to the task and its latest request), the receipt's `lastDispatchedMutation`, and whether
    /// an operation is in doubt.
    ///
    /// `fresh: false` shows the last observation the receipts kept (names, roles, states and
    /// value lengths: no field values). `fresh: true` takes a new observation of the page — the
    /// open session's browser while it waits (a device with no open session: through a short
    /// tab lease) — and reads `operation_status` of the receipt's last operation only: never a
    /// replay. A non-sensitive field's value shows bounded; a sensitive one (a password, a card
    /// number, a one-time code) never. The observation comes whole inside the untrusted
    /// envelope ([`Evidence::untrusted_content`]): page content, never instructions; never log
    /// it. Interrupted and in-doubt tasks can be inspected; evidence changes nothing about the
    /// task (its unknown state never becomes permission to act).
    ///
    /// `BROWSER_EVIDENCE_UNAVAILABLE` (403) for any access or ownership failure, an unknown id
    /// alike, word for word; `BROWSER_INSPECTION_UNAVAILABLE` (503) when a fresh inspection
    /// cannot be made now (the task's local browser is gone, a request is running on it, the
    /// device is offline or its tab leased); `ORCHESTRATION_DISABLED` as [`Tasks::spawn`].
    pub fn evidence(&self, owner: &TaskOwner, id: &str, fresh: bool) -> Result<Evidence> {
        self.service.evidence(owner, id, fresh)
    }

    /// Verifies the task's completion candidate (issue 26 item 6, R-TSK-VER; seed 003 "Parent
    /// verification and recovery"): the parent compared fresh evidence with the whole goal and
    /// says what establishes it (`instruction`). Accepted, the task completes (`completed`,
    /// reason `VERIFIED`), its session closes (its browser is let go) and
    /// [`TaskStatus::verification`] records `{by: "parent", request, evidenceId, at}` apart
    /// from the run's own verdict; it never triggers a browser action.
    ///
    /// Refused, changing nothing: `INVALID_INPUT` (instruction outside 1..=4000 characters, a
    /// malformed evidence id), `ACCESS_DENIED` (as every verb), `ORCHESTRATION_DISABLED` /
    /// `EXECUTION_DENIED` (the caller's current access), `REVISION_CONFLICT`, and
    /// `STATE_CONFLICT` with the reason: `UNRESOLVED_MUTATION` (an operation in doubt),
    /// `NOT_A_CANDIDATE` (not the latest request, or it did not end `COMPLETION_CANDIDATE` or
    /// `VERIFICATION_FAILED`), `INTERRUPTED_RUN` (stopped by a crash, a pause or a revision),
    /// `TASK_BUSY` (a request runs), `EVIDENCE_REQUIRED` (no such evidence id, recorded rather
    /// than fresh, or of another task, owner or request), `EVIDENCE_EXPIRED` (older than
    /// [`super::EVIDENCE_TTL`] on the gateway's clock). Idempotent: the same request and
    /// evidence id again answer the same status; any other verification after it
    /// `AUTOMATION_SESSION_CLOSED`.
    pub fn verify(
        &self,
        owner: &TaskOwner,
        id: &str,
        request: &VerifyRequest,
    ) -> Result<TaskStatus> {
        self.service.verify(owner, id, request, Origin::User)
    }

    /// [`Tasks::verify`] recording who sent it (the agent tools send `agent`).
    pub(crate) fn verify_from(
        &self,
        owner: &TaskOwner,
        id: &str,
        request: &VerifyRequest,
        origin: Origin,
    ) -> Result<TaskStatus> {
        self.service.verify(owner, id, request, origin)
    }

    /// Installs (or with `None` removes) the host's deterministic verifier of completion
    /// candidates (R-TSK-VER): after each request that ends `COMPLETION_CANDIDATE` it is asked,
    /// on the task's thread, with `{taskId, request, goal, evidence}` (fresh evidence: the
    /// observation inside the untrusted envelope). JSON `true` completes the task (verification
    /// by `host`); `false` leaves it waiting with the request's reason `VERIFICATION_FAILED`;
    /// anything else — or a panic — `INVALID_CONTRACT`, never read as `false`. A parent may
    /// still verify after either. Keep it short; never call back into the task API from it.
    pub fn set_verifier(&self, verifier: Option<Verifier>) {
        *self.service.shared.verifier.write() = verifier;
    }

    /// What evidence id `evidence_id` stands for while it is valid (issue 26's `verify`);
    /// `None` for an unknown, evicted or expired id.
    /// Whether a task of `principal` driving its paired device `device_id` (any of its devices
    /// when `None`) waits on the agent's read-only turn for a read request (issue 26 item 3):
    /// then every mutating device tool on that device is `READ_REQUEST_ONLY`.
    pub(crate) fn read_request_on_device(&self, principal: &str, device_id: Option<&str>) -> bool {
        self.service.shared.pool.lock().live.values().any(|l| {
            l.owner.principal_id == principal
                && matches!(l.agent_turn, Some(("READ_REQUEST", _)))
                && match &l.request.target {
                    TaskTarget::Device { device_id: d } => device_id.is_none_or(|x| x == d),
                    TaskTarget::Local { .. } | TaskTarget::Computer { .. } => false,
                }
        })
    }

    /// The refusal of an agent's cancel while it has a turn for the person's command (issue 26
    /// items 3, 4): `READ_REQUEST_ONLY` or `AGENT_HANDOFF_ONE_COMMAND`.
    pub(crate) fn agent_turn_refusal(&self, owner: &TaskOwner, id: &str) -> Result<()> {
        self.service.owned(owner, id)?;
        match self.service.agent_turn_refusal(id) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    pub(crate) fn evidence_record(&self, evidence_id: &str) -> Option<EvidenceRecord> {
        self.service.evidence_record(evidence_id)
    }

    /// The control receipt of command `command_id` of the task (R-TSK-CTL): what became of
    /// it. `ACCESS_DENIED` for a task the caller does not own; `None` for an id it never
    /// accepted.
    pub fn command_receipt(
        &self,
        owner: &TaskOwner,
        id: &str,
        command_id: &str,
    ) -> Result<Option<ControlReceipt>> {
        self.service.command_receipt(owner, id, command_id)
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

    /// On the shared store, the cleanup of the task control calls dead processes left, now
    /// (issue 23; `jevgate::unstable::prune_dead_task_calls`); `None` on SQLite.
    pub(crate) fn prune_dead_calls(&self) -> Option<Result<u64>> {
        self.service.shared.carrier.get().map(Carrier::prune_dead)
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
    // More than 12 steps is not an error: such text takes the one-command path (seed 003).
    Ok(())
}

fn check_request(r: &SpawnRequest) -> Result<()> {
    check_text("goal", &r.goal, true)?;
    if let Some(m) = &r.user_message {
        check_text("userMessage", m, true)?;
    }
    if let Some(a) = &r.autopilot {
        super::autopilot::Plan::from_args(&a.to_args())?;
    }
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
    if let Some(device_id) = r.target.device_id() {
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

/// Startup recovery and takeover (R-TSK-RCPT, issue 23 item 3). On SQLite (one process owns
/// the file) every task left open is recovered; on the shared store only those whose owner
/// process is dead — `only` limits it to one task (a call touching it) — so a live process's
/// tasks stay its own. `(requests interrupted, sessions kept)`.
fn recover(store: &TaskDb, now: i64, only: Option<&str>) -> Result<(usize, Vec<records::Readmit>)> {
    let dead_after = store.member().map(|m| m.dead_after_ms);
    store.write(|tx, db_now| {
        let scope = match (db_now, dead_after) {
            (Some(db_now), Some(dead_after)) => {
                records::orphans(tx, db_now.saturating_sub(dead_after), only)?
            }
            _ => None,
        };
        match scope.as_deref() {
            Some("[]") => Ok((0, Vec::new())),
            scope => records::recover_in(tx, now, scope),
        }
    })
}

impl TaskService {
    /// Where the task rows and receipts live (the autopilot's receipts live there too).
    pub(crate) fn db(&self) -> &TaskDb {
        &self.shared.store
    }

    /// Recovers the receipts a dead process left running (R-TSK-RCPT) and starts the writer
    /// and the session reaper.
    pub(crate) fn open(
        store: TaskDb,
        data_dir: std::path::PathBuf,
        clock: SharedClock,
        host: Arc<dyn TaskHost>,
        limits: TaskLimits,
    ) -> Result<TaskService> {
        let now = clock.wall_millis();
        let (interrupted, kept) = recover(&store, now, None)?;
        if interrupted > 0 {
            log::warn!("{interrupted} task request(s) were interrupted by a stop; none is re-sent");
        }
        let writer = Writer::start(store.clone(), data_dir)?;
        let service = TaskService {
            shared: Arc::new(Shared {
                store,
                writer,
                clock,
                host,
                pool: Mutex::new(Pool::default()),
                changed: Condvar::new(),
                hook: RwLock::new(None),
                limits: TaskLimits {
                    slots: limits.slots.max(1),
                    ..limits
                },
                reaper: Mutex::new(None),
                control: Mutex::new(()),
                in_doubt: Mutex::new(KeptBackends::default()),
                evidence: Mutex::new(EvidenceIds::default()),
                verifier: RwLock::new(None),
                carrier: std::sync::OnceLock::new(),
            }),
        };
        service.start_carrier();
        // Expires idle sessions in real time; every API call also sweeps (deterministic on a
        // manual clock). Holds a weak reference: a dropped service stops it.
        let weak = Arc::downgrade(&service.shared);
        let reaper = std::thread::Builder::new()
            .name("jevgate-task-reaper".into())
            .spawn(move || reap(weak))
            .map_err(|e| Error::Internal {
                reason: format!("cannot start the task reaper: {}", e.kind()),
            })?;
        *service.shared.reaper.lock() = Some(reaper);
        service.readmit(kept);
        Ok(service)
    }

    /// Re-admits the sessions [`records::recover`] kept open (issue 21 item 3). Each waits for
    /// its next command without a target — the last process's browser went with it; a paired
    /// device's tab is leased again by that command — with its controller, paused steps,
    /// pending field question and replan chain, and its accepted commands and revisions queued
    /// in the order they were accepted (they run now, on a fresh observation: the start URL is
    /// never replayed). Its idle time counts from this start.
    fn readmit(&self, kept: Vec<records::Readmit>) {
        let now = self.shared.clock.now();
        let mut pool = self.shared.pool.lock();
        for r in kept {
            let task = match self.shared.store.read(|c| records::get_task(c, &r.id)) {
                Ok(Some(t)) => t,
                _ => {
                    log::warn!("an open task session could not be re-admitted; it stays waiting without a session");
                    continue;
                }
            };
            let json = |s: &Option<String>| -> serde_json::Value {
                s.as_deref()
                    .and_then(|s| serde_json::from_str(s).ok())
                    .unwrap_or_default()
            };
            let (spawn, control) = (json(&r.spawn), json(&r.control));
            let mut request = SpawnRequest::new(task.goal.clone());
            request.target = task.target.clone();
            request.budget = serde_json::from_value(spawn["budget"].clone()).unwrap_or_default();
            request.keep_open = spawn["keepOpen"].as_bool().unwrap_or(false);
            let mut counters = Counters::default();
            counters.actions = task.actions;
            counters.evaluations = task.evaluations;
            counters.log = task.action_log.clone();
            let question = control["question"]["field"].as_str().map(|f| {
                let steps = serde_json::from_value(control["question"]["steps"].clone());
                (f.to_string(), steps.unwrap_or_default())
            });
            let words_of = |v: &serde_json::Value| Words {
                agent: v["agentWords"].as_bool().unwrap_or(false),
                goal_run: v["goalRun"].as_bool().unwrap_or(false),
                ..Words::default()
            };
            let question_words = words_of(&control["question"]);
            let paused_words = words_of(&control["pausedWords"]);
            // The agent's turn for the person's last command outlives the process too: its
            // gates (READ_REQUEST_ONLY, the hand-off's one update) hold after a restart.
            let turn = &control["needsAgent"];
            let agent_turn = match turn["code"].as_str() {
                Some("READ_REQUEST") => Some(("READ_REQUEST", turn["used"] == true)),
                Some("AGENT_HANDOFF") => Some(("AGENT_HANDOFF", turn["used"] == true)),
                _ => None,
            };
            let queue: VecDeque<Queued> = r
                .queue
                .into_iter()
                .map(|(id, text, agent, goal)| Queued {
                    id,
                    text,
                    reply: false,
                    agent,
                    goal,
                    handoff: false,
                })
                .collect();
            let waiting = queue.is_empty();
            let live = Live {
                queue,
                state: if waiting {
                    TaskState::WaitingInput
                } else {
                    TaskState::Queued
                },
                scheduled: !waiting,
                counters,
                seq: r.last_seq,
                paused_steps: serde_json::from_value(control["pausedSteps"].clone()).ok(),
                paused_words,
                question_words,
                agent_turn,
                hold_open: true,
                agent: task.controller == "agent",
                changed_nothing: control["changedNothing"].as_bool().unwrap_or(false),
                replans: serde_json::from_value(control["replans"].clone()).unwrap_or_default(),
                reopened: true,
                question,
                readmitted: true,
                // A completion candidate waits for its verification after a restart too (and
                // idles out failed, never completed).
                last: task
                    .reason
                    .as_deref()
                    .filter(|r| verify::awaits(r))
                    .map(|r| Last {
                        ending: Ending::Done,
                        reason: r.to_string(),
                        line: task.outcome.clone().unwrap_or_default(),
                    }),
                confirmation: serde_json::from_value(control["confirmation"].clone()).ok(),
                ..Live::new(task.owner.clone(), request, None, now)
            };
            pool.live.insert(r.id.clone(), live);
            if !waiting {
                pool.ready.push_back(r.id);
            }
        }
        // No slot starts here: the host is attached after the service opens, and
        // [`TaskService::start_readmitted`] starts the commands waiting then.
    }

    /// Starts slots for re-admitted sessions with commands waiting (the gateway calls it once
    /// its task host is attached).
    pub(crate) fn start_readmitted(&self) {
        let mut pool = self.shared.pool.lock();
        self.kick(&mut pool);
    }

    /// Sets the retention window of closed tasks (issue 21 defect 11), swept by the writer on
    /// the gateway's clock; the gateway calls it on open and on every reload.
    pub(crate) fn set_retention(&self, window: Duration) {
        let clock = Arc::clone(&self.shared.clock);
        self.shared.writer.retain(clock, window);
    }

    /// Installs the crash-test seam (tests only, through `jevgate::unstable`).
    pub(crate) fn set_hook(&self, hook: Option<Hook>) {
        *self.shared.hook.write() = hook;
    }

    /// On the shared store, starts the listener applying the control calls other processes
    /// carry to this one's tasks (issue 23).
    fn start_carrier(&self) {
        #[cfg(feature = "postgres")]
        if let (Some(reads), Some(member)) =
            (self.shared.store.shared_store(), self.shared.store.member())
        {
            let weak = Arc::downgrade(&self.shared);
            let apply: super::carry::Apply = Box::new(move |c| {
                let shared = weak.upgrade().ok_or(Error::GatewayClosed)?;
                APPLYING.with(|a| a.set(true));
                let answer = TaskService { shared }.apply_carried(c);
                APPLYING.with(|a| a.set(false));
                answer
            });
            let dead_after =
                Duration::from_millis(u64::try_from(member.dead_after_ms).unwrap_or(0));
            let weak = Arc::downgrade(&self.shared);
            let seam: super::carry::Seam = Box::new(move |at| {
                let hook = weak.upgrade().and_then(|s| s.hook.read().clone());
                if let Some(hook) = hook {
                    hook(at);
                }
            });
            let carrier = Carrier::start(
                Arc::clone(reads),
                member.process.clone(),
                dead_after,
                Arc::clone(&self.shared.clock),
                apply,
                seam,
            );
            let _ = self.shared.carrier.set(carrier);
        }
    }

    /// Applies a call another process carried here, as the local call (issue 23).
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))] // reason: only a fleet carries
    fn apply_carried(&self, c: &Carried) -> Result<serde_json::Value> {
        let (o, id) = (&c.owner, c.task.as_str());
        let origin = |agent: bool| if agent { Origin::Agent } else { Origin::User };
        let null = |_| serde_json::Value::Null;
        match &c.call {
            Call::Cancel => self.cancel(o, id).map(null),
            Call::Command { text, agent } => self
                .command(o, id, text, origin(*agent))
                .map(|r| serde_json::to_value(r).unwrap_or_default()),
            Call::Control { request } => self.control(o, id, request).map(null),
            Call::Update { request } => self.update(o, id, request).map(null),
            Call::Answer { field, text, agent } => {
                self.answer(o, id, field, text, origin(*agent)).map(null)
            }
            Call::Resolve {
                operation,
                happened,
            } => self.resolve(o, id, operation, *happened).map(null),
        }
    }

    /// On the shared store, when open task `id` (owned by `owner`: checked before) runs in
    /// another live process, carries `call` there and returns its answer (issue 23,
    /// R-TSK-CTL); `None` when the call is this process's to apply — the task is here, closed,
    /// or its owner died before taking the call (taken over here first).
    fn carried(
        &self,
        owner: &TaskOwner,
        id: &str,
        call: impl FnOnce() -> Call,
    ) -> Result<Option<serde_json::Value>> {
        let Some(carrier) = self.shared.carrier.get() else {
            return Ok(None);
        };
        if APPLYING.with(std::cell::Cell::get) || self.shared.pool.lock().live.contains_key(id) {
            return Ok(None);
        }
        let Some(to) = carrier.elsewhere(id)? else {
            return Ok(None);
        };
        let carried = Carried {
            owner: owner.clone(),
            task: id.to_string(),
            call: call(),
        };
        match carrier.carry(&to, &carried)? {
            Outcome::Answered(v) => Ok(Some(v)),
            Outcome::Here => {
                // The owner died before taking it: the takeover path, then the local call.
                self.owned(owner, id)?;
                Ok(None)
            }
        }
    }

    /// `TASK_RUNNING_ELSEWHERE` when open task `id` runs in another live process of the fleet:
    /// for the calls that cannot be carried (a fresh inspection, a verification against this
    /// process's evidence) — never a misleading answer about a session that is not here.
    fn refuse_elsewhere(&self, id: &str) -> Result<()> {
        let Some(carrier) = self.shared.carrier.get() else {
            return Ok(());
        };
        if APPLYING.with(std::cell::Cell::get) || self.shared.pool.lock().live.contains_key(id) {
            return Ok(());
        }
        match carrier.elsewhere(id)? {
            Some(_) => Err(Error::TaskRunningElsewhere),
            None => Ok(()),
        }
    }

    /// The task, if `owner` owns it. An unknown id and another owner's id answer alike
    /// (`ACCESS_DENIED`, one message): the answer says nothing about whether the id exists.
    /// The refusal of an agent's mutation other than `update` while it has a turn for the
    /// person's command (issue 26 items 3, 4): `READ_REQUEST_ONLY` for a read request,
    /// `AGENT_HANDOFF_ONE_COMMAND` for a hand-off (its one command is a `task_update`).
    pub(crate) fn agent_turn_refusal(&self, id: &str) -> Option<Error> {
        let turn = self
            .shared
            .pool
            .lock()
            .live
            .get(id)
            .and_then(|l| l.agent_turn);
        match turn? {
            ("READ_REQUEST", _) => Some(Error::ReadRequestOnly),
            _ => Some(Error::AgentHandoffOneCommand),
        }
    }

    /// The feature and access gate for task `id` of `owner` on the live configuration: the
    /// computer gate for a computer target (`COMPUTER_NOT_ALLOWED`), the browser gate
    /// otherwise — also for an id that is not `owner`'s, whose refusal comes from
    /// `owned` as before.
    fn gate_of(&self, owner: &TaskOwner, id: &str) -> Result<crate::config::BrowserTaskGrant> {
        let live = self
            .shared
            .pool
            .lock()
            .live
            .get(id)
            .filter(|l| l.owner == *owner)
            .map(|l| l.request.target.clone());
        let target = match live {
            Some(t) => t,
            None => self
                .shared
                .store
                .read(|c| records::get_task(c, id))
                .ok()
                .flatten()
                .filter(|t| t.owner == *owner)
                .map(|t| t.target)
                .unwrap_or_default(),
        };
        self.shared.host.task_gate(owner, &target)
    }

    fn owned(&self, owner: &TaskOwner, id: &str) -> Result<TaskStatus> {
        owner.check()?;
        let denied = || Error::AccessDenied {
            reason: "no task of this id belongs to this agent, principal and conversation".into(),
        };
        if id.is_empty() || id.len() > 64 {
            return Err(denied());
        }
        self.sweep();
        let task = match self.shared.store.read(|c| records::get_task(c, id))? {
            Some(task) if task.owner == *owner => task,
            _ => return Err(denied()),
        };
        if task.state.is_closed() || self.shared.store.member().is_none() {
            return Ok(task);
        }
        // Takeover (issue 23 item 3): an open task of a process that died is this one's now —
        // its running request interrupted, nothing replayed, a waiting session re-admitted.
        match self.take_over(id)? {
            true => match self.shared.store.read(|c| records::get_task(c, id))? {
                Some(task) => Ok(task),
                None => Err(denied()),
            },
            false => Ok(task),
        }
    }

    /// On the shared store: when task `id` is open and its owner process is dead (no liveness
    /// row fresher than the dead threshold on the database clock), recovers it as a restart
    /// would and re-admits it here; `true` when its row may have changed (read it again).
    fn take_over(&self, id: &str) -> Result<bool> {
        if self.shared.pool.lock().live.contains_key(id) {
            return Ok(false);
        }
        let (interrupted, kept) = recover(
            &self.shared.store,
            self.shared.clock.wall_millis(),
            Some(id),
        )?;
        if interrupted == 0 && kept.is_empty() {
            // Nothing was running: the task may still have been taken over (closed).
            self.adopt_calls(id);
            return Ok(true);
        }
        log::warn!("a task of a stopped process was taken over: {interrupted} request(s) interrupted; none is re-sent");
        self.readmit(kept);
        self.adopt_calls(id);
        Ok(true)
    }

    /// After a takeover of task `id`: the control calls still queued for its dead owner are
    /// applied here (issue 23: a call reported `TASK_CONTROL_PENDING` is not lost with its
    /// owner).
    fn adopt_calls(&self, id: &str) {
        if let Some(carrier) = self.shared.carrier.get() {
            if let Err(e) = carrier.adopt(id) {
                log::warn!(
                    "a taken-over task's queued calls were not adopted: {}",
                    e.code()
                );
            }
        }
    }

    fn with_live(&self, mut t: TaskStatus) -> TaskStatus {
        if let Some(live) = self.shared.pool.lock().live.get(&t.id) {
            t.queued_commands = live.queue.len();
            // The live state is ahead of the row by at most one write.
            t.state = live.state;
            t.computer_connection = live.connection.filter(|_| live.target.is_some());
        }
        t
    }

    /// Starts slot threads while tasks want one and slots are free.
    fn kick(&self, pool: &mut Pool) {
        while pool.running < self.shared.limits.slots && pool.running < pool.ready.len() {
            let me = self.clone();
            let thread = std::thread::Builder::new()
                .name("jevgate-task".into())
                .spawn(move || me.slot());
            match thread {
                Ok(t) => {
                    pool.running += 1;
                    pool.threads.retain(|t| !t.is_finished());
                    pool.threads.push(t);
                }
                Err(e) => {
                    // The ready tasks wait for a running slot (or the next kick).
                    log::error!("cannot start a task thread: {}", e.kind());
                    break;
                }
            }
        }
    }

    /// Expires the sessions that waited too long (R-TSK-CTL "Sessions and bounds"): each is
    /// handed to a slot, which closes its target and ends it with `SESSION_EXPIRED`.
    fn sweep(&self) {
        let now = self.shared.clock.now();
        let limits = self.shared.limits;
        let mut pool = self.shared.pool.lock();
        if pool.closed {
            return;
        }
        let mut due = Vec::new();
        for (id, l) in pool.live.iter_mut() {
            if l.scheduled
                || l.closing
                || !(l.started || l.readmitted)
                || l.state != TaskState::WaitingInput
            {
                continue;
            }
            let failed = l.last.as_ref().is_some_and(|r| r.ending != Ending::Done);
            let limit = control::idle_limit(&limits, failed);
            if control::expired(now.since_origin(), l.idle_since.since_origin(), limit) {
                // An unverified completion candidate never ends `completed` (R-TSK-VER).
                let state = if failed || l.awaits_verification() {
                    TaskState::Failed
                } else {
                    TaskState::Completed
                };
                l.expire = Some((state, "SESSION_EXPIRED"));
                l.closing = true;
                l.scheduled = true;
                l.state = TaskState::Running;
                due.push(id.clone());
            }
        }
        if due.is_empty() {
            return;
        }
        for id in due {
            pool.ready.push_front(id);
        }
        self.kick(&mut pool);
        drop(pool);
        self.shared.changed.notify_all();
    }

    /// Checks the paired computer of every computer task whose target is open, idle included,
    /// once [`CONNECTION_CHECK`] passed on the gateway's clock since its last check (seed 003
    /// "Computer connection status"; issue 25 item 4). The reaper runs it, so no API call ever
    /// waits for a helper; the helper is asked outside the pool lock, one check per task at a
    /// time. A check never closes a session, never re-sends an action; a disconnect revokes the
    /// device's access (`device/computer.rs`).
    fn check_computers(&self) {
        let now = self.shared.clock.now();
        let due: Vec<(String, TaskOwner, String)> = {
            let mut pool = self.shared.pool.lock();
            if pool.closed {
                return;
            }
            pool.live
                .iter_mut()
                .filter_map(|(id, l)| {
                    let TaskTarget::Computer { device_id } = &l.request.target else {
                        return None;
                    };
                    if l.target.is_none()
                        || l.closing
                        || l.checking
                        || now.saturating_duration_since(l.checked_at) < CONNECTION_CHECK
                    {
                        return None;
                    }
                    l.checking = true;
                    l.checked_at = now;
                    Some((id.clone(), l.owner.clone(), device_id.clone()))
                })
                .collect()
        };
        for (id, owner, device_id) in due {
            let seen = self.shared.host.computer_connection(&owner, &device_id);
            if let Some(l) = self.shared.pool.lock().live.get_mut(&id) {
                l.checking = false;
                l.connection = Some(seen);
            }
        }
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
        self.shared.host.task_gate(owner, &request.target)?;
        self.sweep();
        let id = crate::ids::random_uuid()?;
        self.replace_same_target(owner, &request.target, &id)?;
        self.admit(owner)?;
        let now = self.shared.clock.wall_millis();
        {
            // The task's goal: the agent's, else the person's own message.
            let goal = if request.goal.trim().is_empty() {
                request.user_message.clone().unwrap_or_default()
            } else {
                request.goal.clone()
            };
            let (id, owner, target) = (id.clone(), owner.clone(), request.target.clone());
            let spawn = serde_json::json!({
                "budget": request.budget,
                "startUrl": request.start_url,
                "keepOpen": request.keep_open,
                "brought": backend.is_some(),
            })
            .to_string();
            self.shared.writer.write(Box::new(move |tx| {
                records::insert_task(tx, &id, &owner, &target, &goal, now)?;
                records::set_spawn(tx, &id, &spawn)
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
            Live::new(owner.clone(), request, backend, self.shared.clock.now()),
        );
        pool.ready.push_back(id.clone());
        self.kick(&mut pool);
        Ok(id)
    }

    /// The bounds on open sessions and queued spawns (R-TSK-CTL): checked before a spawn
    /// writes anything.
    fn admit(&self, owner: &TaskOwner) -> Result<()> {
        let pool = self.shared.pool.lock();
        if pool.closed {
            return Err(Error::GatewayClosed);
        }
        let mut counts = control::Counts::default();
        let mut oldest: Option<(&Live, Instant)> = None;
        for l in pool.live.values().filter(|l| l.open()) {
            if l.owner.principal_id == owner.principal_id {
                counts.principal_open += 1;
                let since = l.idle_since;
                if oldest.is_none_or(|(_, s)| since < s) {
                    oldest = Some((l, since));
                }
            }
            if l.started {
                counts.gateway_open += 1;
            } else {
                counts.gateway_queued += 1;
            }
        }
        match control::admit(&self.shared.limits, counts) {
            control::Admission::Admit => Ok(()),
            control::Admission::QueueFull => Err(Error::TaskQueueFull),
            control::Admission::SessionExists => Err(Error::AutomationSessionExists {
                // The principal's own oldest session's state and reason code (never its text,
                // never another principal's).
                state: oldest.map(|(l, _)| l.state.as_str().to_string()),
                reason: oldest.and_then(|(l, _)| l.last.as_ref().map(|r| r.reason.clone())),
                controller: oldest.map(|(l, _)| controller_of(l).to_string()),
            }),
        }
    }

    /// Replaced sessions (R-TSK-CTL, seed 003 "Replaced sessions"): a spawn for a target an
    /// open session of the principal already drives (the same profile, the same device's tab)
    /// replaces that session when it failed before any tab action — it ends `failed`, reason
    /// `REPLACED`, with `replacedByTaskId` — and is refused with `AUTOMATION_SESSION_EXISTS`
    /// otherwise. A throw-away local profile is never the same target.
    fn replace_same_target(
        &self,
        owner: &TaskOwner,
        target: &TaskTarget,
        new_id: &str,
    ) -> Result<()> {
        if matches!(target, TaskTarget::Local { profile: None }) {
            return Ok(());
        }
        let mut pool = self.shared.pool.lock();
        let found = pool.live.iter_mut().find(|(_, l)| {
            l.open() && l.owner.principal_id == owner.principal_id && l.request.target == *target
        });
        let Some((old_id, l)) = found else {
            return Ok(());
        };
        let failed_before_acting = l.started
            && !l.scheduled
            && l.counters.actions == 0
            && l.last.as_ref().is_some_and(|r| r.ending != Ending::Done);
        if !failed_before_acting {
            return Err(Error::AutomationSessionExists {
                state: Some(l.state.as_str().to_string()),
                reason: l.last.as_ref().map(|r| r.reason.clone()),
                controller: Some(controller_of(l).to_string()),
            });
        }
        let old_id = old_id.clone();
        l.expire = Some((TaskState::Failed, "REPLACED"));
        l.closing = true;
        l.scheduled = true;
        l.state = TaskState::Running;
        // Its target is closed here, before the new task exists: the new one must not open
        // the same device beside it (a computer's desktop lease is the conversation's, and a
        // late close would let go of the one the new task runs under). Idle and unscheduled,
        // nothing of it uses the target; nothing of it is in doubt (it never acted).
        let target = l.target.take();
        pool.ready.push_front(old_id.clone());
        self.kick(&mut pool);
        drop(pool);
        if let Some(t) = target {
            // A close that panics loses nothing of the task's record.
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(t.close));
        }
        let (old, new) = (old_id, serde_json::to_string(new_id).unwrap_or_default());
        self.shared.writer.write(Box::new(move |tx| {
            records::set_control(tx, &old, "replacedBy", Some(&new))
        }))?;
        self.shared.changed.notify_all();
        Ok(())
    }

    /// One slot's thread: runs turns of whatever task wants a slot, then ends.
    fn slot(self) {
        loop {
            let next = {
                let mut pool = self.shared.pool.lock();
                let next = if pool.closed {
                    None
                } else {
                    pool.ready.pop_front()
                };
                if next.is_none() {
                    pool.running -= 1;
                }
                next
            };
            let Some(id) = next else {
                break;
            };
            let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.turn(&id)));
            if ran.is_err() {
                log::error!("a task thread panicked; the task ends (an operation in doubt keeps it needing reconciliation)");
                self.finish(&id, TaskState::Failed, "INTERNAL", None);
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

    /// Ends the session of task `id` — on every path (its last request, a cancellation, an
    /// expiry, a panic, the gateway closing): no more commands are accepted, the target is
    /// closed, the waiting commands are listed dropped, a request left running is settled, and
    /// the task takes its last state — `needs_reconciliation` whenever an operation of it is in
    /// doubt, whatever `state` says.
    fn finish(&self, id: &str, state: TaskState, reason: &str, outcome: Option<String>) {
        let (target, dropped, running, seq) = {
            let mut pool = self.shared.pool.lock();
            let Some(l) = pool.live.get_mut(id) else {
                return;
            };
            l.closing = true;
            l.cancel.cancel();
            l.state = TaskState::Running;
            let mut dropped: Vec<String> = l.queue.drain(..).map(|q| q.id).collect();
            // A confirmation nobody answered: its command goes with the session.
            if let Some(c) = l.confirmation.take().and_then(|c| c.command_id) {
                dropped.push(c);
            }
            (l.target.take(), dropped, l.running_command.take(), l.seq)
        };
        // The backend is kept while an operation of the task is in doubt: its own record of
        // what it executed answers `reconcile` (a closed local Chromium still answers).
        let backend = target.as_ref().map(|t| Arc::clone(&t.backend));
        if let Some(t) = target {
            // A close that panics loses nothing of the task's record.
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(t.close));
        }
        let (id2, reason2) = (id.to_string(), reason.to_string());
        let now = self.shared.clock.wall_millis();
        let stored = self.shared.writer.apply(move |tx| {
            let sql = |e| crate::store::sqlite_error("settle task", e);
            let line = outcome.clone().unwrap_or_default();
            if seq > 0 {
                records::abandon_request(tx, &id2, seq, "failed", &reason2, &line, now)
                    .map_err(sql)?;
            }
            let in_doubt = records::in_doubt(tx, &id2).map_err(sql)?;
            if let Some(c) = running {
                let st = if in_doubt { "unknown" } else { "not_done" };
                records::set_commands(tx, &id2, &[c], st, Some(&reason2), None, now)
                    .map_err(sql)?;
            }
            records::set_commands(tx, &id2, &dropped, "dropped", Some(&reason2), None, now)
                .map_err(sql)?;
            records::set_control(tx, &id2, "confirmationRequest", None).map_err(sql)?;
            records::set_control(tx, &id2, "confirmation", None).map_err(sql)?;
            let state = if in_doubt {
                TaskState::NeedsReconciliation
            } else {
                state
            };
            records::update_task(
                tx,
                &id2,
                &TaskUpdate {
                    state: Some(state),
                    reason: Some(Some(reason2.clone())),
                    outcome,
                    ..TaskUpdate::default()
                },
                now,
            )
            .map_err(sql)?;
            Ok(state)
        });
        match (stored, backend) {
            (Ok(TaskState::NeedsReconciliation), Some(b)) => {
                self.shared.in_doubt.lock().insert(id.to_string(), b);
            }
            // Otherwise the backend is let go here, before the task is seen settled.
            (Ok(_), _) => {}
            (Err(e), _) => log::warn!("task state not stored: {}", e.code()),
        }
        self.shared.pool.lock().live.remove(id);
        self.shared.changed.notify_all();
    }

    /// Runs task `id` on this slot until it has nothing left to do now: its first request,
    /// then its queued commands; an open session then waits without a slot.
    fn turn(&self, id: &str) {
        enum Step {
            Start,
            Command(Queued),
            Close(TaskState, String, Option<String>),
            Idle,
        }
        loop {
            let step = {
                let mut pool = self.shared.pool.lock();
                let closed = pool.closed;
                let Some(l) = pool.live.get_mut(id) else {
                    return;
                };
                if closed || l.cancel.is_cancelled() {
                    let reason = if closed {
                        "GATEWAY_CLOSED"
                    } else {
                        "CANCELLED"
                    };
                    Step::Close(TaskState::Cancelled, reason.into(), None)
                } else if let Some((state, reason)) = l.expire.take() {
                    let line = if reason == "REPLACED" {
                        lines::replaced_line()
                    } else {
                        lines::expired_line()
                    };
                    Step::Close(state, reason.into(), Some(line))
                } else if !l.started {
                    if l.readmitted && l.running_command.is_none() {
                        // A re-admitted session: its next command is its target's first
                        // request (scheduled only with one waiting).
                        if let Some(q) = l.queue.pop_front() {
                            l.request.goal = q.text;
                            l.request.user_message = None;
                            l.running_command = Some(q.id);
                            l.agent_words = q.agent;
                            l.goal_run = q.goal;
                            l.handoff_run = q.handoff;
                        }
                    }
                    l.started = true;
                    l.state = TaskState::Running;
                    Step::Start
                } else if let Some(q) = l.queue.pop_front() {
                    l.running_command = Some(q.id.clone());
                    l.state = TaskState::Running;
                    l.replying = q.reply && l.confirmation.is_some();
                    l.agent_words = q.agent;
                    l.goal_run = q.goal;
                    l.handoff_run = q.handoff;
                    if !q.agent {
                        l.person_thai = Some(lines::has_thai(&q.text));
                    }
                    if !l.replying {
                        if let Some(c) = l.confirmation.take() {
                            // Another command came first: the question closes, its command
                            // is not done.
                            self.close_confirmation(id, c, "not_done", "SUPERSEDED");
                        }
                    }
                    // A new round: a pause or revision accepted before this point stopped the
                    // round it was meant for; this one may act.
                    l.fence.reopen();
                    Step::Command(q)
                } else if l.session_open() {
                    l.scheduled = false;
                    l.state = TaskState::WaitingInput;
                    l.idle_since = self.shared.clock.now();
                    Step::Idle
                } else {
                    let (state, reason, line) = match &l.last {
                        Some(r) if r.ending == Ending::Done => (
                            TaskState::Completed,
                            "COMPLETION_CANDIDATE".to_string(),
                            Some(r.line.clone()),
                        ),
                        Some(r) => (TaskState::Failed, r.reason.clone(), Some(r.line.clone())),
                        None => (TaskState::Failed, "INTERNAL".to_string(), None),
                    };
                    Step::Close(state, reason, line)
                }
            };
            self.shared.changed.notify_all();
            match step {
                // The row says `waiting_input` since the request settled; a command that comes
                // now schedules the task again.
                Step::Idle => return,
                Step::Close(state, reason, line) => {
                    self.finish(id, state, &reason, line);
                    return;
                }
                Step::Start => {
                    if !self.start(id) {
                        return;
                    }
                }
                Step::Command(q) => {
                    let now = self.shared.clock.wall_millis();
                    let (id2, cid) = (id.to_string(), q.id.clone());
                    let _ = self.shared.writer.write(Box::new(move |tx| {
                        records::set_commands(tx, &id2, &[cid], "running", None, None, now)
                    }));
                    self.run_request(id, &q.text, None, Some(q.id));
                }
            }
        }
    }

    /// Opens the task's target and runs its goal (its first request). `false` when the task
    /// ended.
    fn start(&self, id: &str) -> bool {
        let Some(owner) = self
            .shared
            .pool
            .lock()
            .live
            .get(id)
            .map(|l| l.owner.clone())
        else {
            return false;
        };
        // The gate again on the live configuration: a task queued while tasks were on and
        // turned off since never opens its browser.
        let gate = self.gate_of(&owner, id);
        let step_lists = gate.as_ref().is_ok_and(|g| g.step_lists);
        let (target, brought, goal, opening, command) = {
            let mut pool = self.shared.pool.lock();
            let Some(l) = pool.live.get_mut(id) else {
                return false;
            };
            // What the first round runs, and whose words they are (issue 26 item 1): a
            // re-admitted session's queued command and a reopened task's update as they came;
            // a spawn's person's message, else the agent's goal (a goal run).
            let words = if l.readmitted {
                l.request.goal.clone()
            } else if l.reopened {
                l.goal_run = true;
                l.agent_words = true;
                l.request.goal.clone()
            } else {
                if let Some(m) = &l.request.user_message {
                    l.person_thai = Some(lines::has_thai(m));
                }
                match l.request.first_round(step_lists) {
                    FirstRound::Person(m) => m,
                    FirstRound::Goal(g) => {
                        l.goal_run = true;
                        l.agent_words = true;
                        l.session_start = true;
                        g
                    }
                    FirstRound::Ready => String::new(),
                    FirstRound::Autopilot => {
                        l.autopilot_run = true;
                        l.agent_words = true;
                        String::new()
                    }
                }
            };
            (
                l.request.target.clone(),
                l.brought.clone(),
                words,
                // A continuation starts from a fresh observation: the start URL is not replayed.
                l.request.start_url.clone().filter(|_| !l.reopened),
                l.running_command.clone(),
            )
        };
        let cancel = self
            .shared
            .pool
            .lock()
            .live
            .get(id)
            .map(|l| l.cancel.clone());
        let opened = gate.and_then(|_| match brought {
            Some(backend) => Ok(OpenTarget {
                backend,
                close: Box::new(|| {}),
            }),
            None => self
                .shared
                .host
                .open_target(&owner, &target, cancel.as_ref()),
        });
        let target = match opened {
            Ok(t) => t,
            Err(e) => {
                let mut line = lines::not_done(lines::open_failure_words(e.code()), e.code());
                if let TaskTarget::Computer { .. } = target {
                    line = lines::on_computer(e.code(), line);
                }
                self.progress(id, &line, e.code());
                self.finish(id, TaskState::Failed, e.code(), Some(line));
                return false;
            }
        };
        {
            let mut pool = self.shared.pool.lock();
            match pool.live.get_mut(id) {
                Some(l) => {
                    l.target = Some(target);
                    // Opened with the person's access: connected, checked from now on.
                    if let TaskTarget::Computer { .. } = l.request.target {
                        l.connection = Some(ComputerConnection::Connected);
                        l.checked_at = self.shared.clock.now();
                    }
                }
                None => {
                    drop(pool);
                    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(target.close));
                    return false;
                }
            }
        }
        if let Some(c) = &command {
            // A reopened task's first request carries the update that reopened it.
            let (id2, cid, now) = (id.to_string(), c.clone(), self.shared.clock.wall_millis());
            let _ = self.shared.writer.write(Box::new(move |tx| {
                records::set_commands(tx, &id2, &[cid], "running", None, None, now)
            }));
        }
        self.run_request(id, &goal, opening, command);
        true
    }

    fn progress(&self, id: &str, line: &str, reason: &str) {
        let f = {
            let pool = self.shared.pool.lock();
            pool.live.get(id).and_then(|l| l.request.progress.clone())
        };
        if let Some(f) = f {
            let p = TaskProgress {
                task_id: id.to_string(),
                line: line.to_string(),
                reason: reason.to_string(),
            };
            // A host callback that panics loses its line, never the task.
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&p)));
        }
    }

    /// Runs one request of task `id` on its open target and applies what it came to: the
    /// command's control receipt, the queue (runs on or is dropped), the session's last round.
    fn run_request(&self, id: &str, text: &str, opening: Option<String>, command: Option<String>) {
        let taken = {
            let mut pool = self.shared.pool.lock();
            pool.live.get_mut(id).and_then(|l| {
                let backend = l.target.as_ref().map(|t| Arc::clone(&t.backend))?;
                l.seq += 1;
                let replying = std::mem::take(&mut l.replying);
                let agent_words = std::mem::take(&mut l.agent_words);
                let words = Words {
                    agent: agent_words,
                    goal_run: std::mem::take(&mut l.goal_run),
                    session_start: std::mem::take(&mut l.session_start),
                    person_thai: l.person_thai,
                    handoff: std::mem::take(&mut l.handoff_run),
                    user_control: !l.agent,
                    autopilot: std::mem::take(&mut l.autopilot_run),
                };
                Some((
                    l.owner.clone(),
                    l.request.clone(),
                    l.cancel.clone(),
                    Arc::clone(&l.fence),
                    backend,
                    std::mem::take(&mut l.counters),
                    l.seq,
                    l.answers.clone(),
                    l.confirmation.clone().filter(|_| replying),
                    words,
                ))
            })
        };
        let Some((
            owner,
            request,
            cancel,
            fence,
            backend,
            mut counters,
            seq,
            answers,
            pending,
            words,
        )) = taken
        else {
            return;
        };
        let actions_before = counters.actions;
        let progress_fn = request.progress.clone();
        let progress = move |p: TaskProgress| {
            if let Some(f) = &progress_fn {
                // A host callback that panics loses its line, never the task.
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(&p)));
            }
        };
        let (report, reply) = self.request(
            id,
            &owner,
            seq,
            text,
            opening,
            &request,
            &cancel,
            &fence,
            &*backend,
            &progress,
            &mut counters,
            &answers,
            pending.as_ref(),
            words,
        );
        // Whose words the round ran: after a yes, the stopped words' (a question they stop on
        // again keeps them the agent's).
        let words = match (&pending, reply) {
            (Some(p), Reply::Yes) => Words {
                agent: p.agent_words,
                goal_run: p.goal_run,
                ..words
            },
            _ => words,
        };
        let runs_on = control::queue_runs_on(&report.ending, &report.reason);
        let counters_changed_nothing = counters.actions == actions_before;
        let (dropped, closing, turn_changed) = {
            let mut pool = self.shared.pool.lock();
            let gateway_closed = pool.closed;
            let Some(l) = pool.live.get_mut(id) else {
                return;
            };
            l.changed_nothing = counters_changed_nothing;
            l.counters = counters;
            l.running_command = None;
            let dropped: Vec<String> = if runs_on {
                Vec::new()
            } else {
                l.queue.drain(..).map(|q| q.id).collect()
            };
            let closing = match report.ending {
                Ending::Unknown => Some((TaskState::NeedsReconciliation, report.reason.clone())),
                Ending::Stop => Some((TaskState::Failed, report.reason.clone())),
                Ending::Cancelled => {
                    let reason = if gateway_closed {
                        "GATEWAY_CLOSED"
                    } else {
                        "CANCELLED"
                    };
                    Some((TaskState::Cancelled, reason.to_string()))
                }
                Ending::Done | Ending::NotDone | Ending::Interrupted => None,
            };
            // Whatever ended the round answered any pause meant for it.
            l.pausing = false;
            l.question = match &report.field {
                Some(f) if report.ending == Ending::NotDone => {
                    Some((f.clone(), report.remaining.clone()))
                }
                _ => None,
            };
            l.question_words = words;
            // The agent's turn for the person's command: set by a command that went to the
            // agent, kept through the agent's own rounds, ended by the person's next command.
            if let Some(code) = report.needs_agent {
                l.agent_turn = Some((code, false));
            } else if !words.agent {
                l.agent_turn = None;
            }
            let turn_changed = report.needs_agent.is_some() || !words.agent;
            // A confirmation question: asked now, or kept when the reply could not be read;
            // any other round (a yes that ran, a no, a new command) closed it.
            l.confirmation = match (&report.confirmation, reply) {
                (Some(ask), _) => Some(PendingConfirmation {
                    ask: ask.clone(),
                    remaining: report.remaining.clone(),
                    command_id: command.clone(),
                    agent_words: words.agent,
                    goal_run: words.goal_run,
                }),
                (None, Reply::Unread) => pending.clone(),
                (None, _) => None,
            };
            if report.ending == Ending::Interrupted
                && report.reason == "PAUSED"
                && !report.remaining.is_empty()
            {
                l.paused_steps = Some(report.remaining.clone());
                l.paused_words = words;
            }
            l.last = Some(Last {
                ending: report.ending.clone(),
                reason: report.reason.clone(),
                line: report.line.clone(),
            });
            (dropped, closing, turn_changed)
        };
        let now = self.shared.clock.wall_millis();
        let (id2, reason) = (id.to_string(), report.reason.clone());
        let state = control::receipt_state(&report.ending);
        let paused =
            (report.ending == Ending::Interrupted && report.reason == "PAUSED").then(|| {
                (
                    serde_json::json!(report.remaining).to_string(),
                    serde_json::json!({"agentWords": words.agent, "goalRun": words.goal_run})
                        .to_string(),
                )
            });
        // The question status shows (the field's name is page text: bounded, and inside the
        // untrusted envelope wherever it reaches an agent); every round clears the last one.
        let question = report
            .field
            .as_ref()
            .filter(|_| report.ending == Ending::NotDone)
            .map(|f| {
                serde_json::json!({
                    "field": lines::short(f),
                    "question": format!("What should go into \"{}\"?", lines::short(f)),
                })
                .to_string()
            });
        // What a re-admitted session (after a restart) or a reopened task needs of this round:
        // the question with the steps an answer continues (the user's words, private like
        // `pausedSteps`), and whether the round changed nothing (a later agent update is then a
        // replan).
        let private_question = report
            .field
            .as_ref()
            .filter(|_| report.ending == Ending::NotDone)
            .map(|f| {
                serde_json::json!({"field": f, "steps": report.remaining,
                    "agentWords": words.agent, "goalRun": words.goal_run})
                .to_string()
            });
        let changed_nothing = if counters_changed_nothing {
            "true"
        } else {
            "false"
        };
        // The confirmation the status shows (the control's name is page text: inside the
        // envelope for agents) and its private part (what a yes runs, after a restart too).
        let asked = report.confirmation.as_ref().map(|c| {
            (
                serde_json::json!({"control": lines::short(&c.name), "question": c.question})
                    .to_string(),
                serde_json::json!({
                    "ask": c,
                    "remaining": report.remaining,
                    "commandId": command,
                    "agentWords": words.agent,
                    "goalRun": words.goal_run,
                })
                .to_string(),
            )
        });
        let keep_asked = reply == Reply::Unread && pending.is_some();
        // The command the question stopped: it waits for the person's yes; once the reply
        // settled, it ends as the reply decided (a yes that ran: as the reply's own round).
        let state = if report.confirmation.is_some() {
            "awaiting_confirmation"
        } else if report.needs_agent.is_some() {
            "needs_agent"
        } else {
            state
        };
        // What status shows of the agent's turn (words of jevgate only).
        let needs_agent = report.needs_agent;
        let turn_command = command.clone();
        let settled_original = match (&pending, reply) {
            (Some(p), Reply::Yes) => p.command_id.clone().map(|c| (c, state, reason.clone())),
            (Some(p), Reply::No) => p
                .command_id
                .clone()
                .map(|c| (c, "not_done", "CONFIRMATION_DECLINED".to_string())),
            (Some(p), Reply::Other) => p
                .command_id
                .clone()
                .map(|c| (c, "not_done", "SUPERSEDED".to_string())),
            _ => None,
        };
        let stored = self.shared.writer.write(Box::new(move |tx| {
            if let Some(c) = command {
                // A command that went to the agent: its receipt says so, with that code.
                let why = needs_agent.unwrap_or(reason.as_str());
                records::set_commands(tx, &id2, &[c], state, Some(why), Some(seq), now)?;
            }
            if let Some((c, st, why)) = &settled_original {
                records::set_commands(tx, &id2, std::slice::from_ref(c), st, Some(why), None, now)?;
            }
            if !keep_asked {
                let (shown, private) = match &asked {
                    Some((a, b)) => (Some(a.as_str()), Some(b.as_str())),
                    None => (None, None),
                };
                records::set_control(tx, &id2, "confirmationRequest", shown)?;
                records::set_control(tx, &id2, "confirmation", private)?;
            }
            if let Some((p, w)) = &paused {
                records::set_control(tx, &id2, "pausedSteps", Some(p.as_str()))?;
                records::set_control(tx, &id2, "pausedWords", Some(w.as_str()))?;
            }
            records::set_control(tx, &id2, "fieldRequest", question.as_deref())?;
            records::set_control(tx, &id2, "question", private_question.as_deref())?;
            records::set_control(tx, &id2, "changedNothing", Some(changed_nothing))?;
            if turn_changed {
                let shown = match needs_agent {
                    Some(code) => Some(
                        serde_json::json!({"code": code, "commandId": turn_command,
                            "revision": records::revision(tx, &id2)?, "used": false})
                        .to_string(),
                    ),
                    None => None,
                };
                records::set_control(tx, &id2, "needsAgent", shown.as_deref())?;
            }
            records::set_commands(tx, &id2, &dropped, "dropped", Some(&reason), None, now)
        }));
        if let Err(e) = stored {
            log::warn!("control receipts not stored: {}", e.code());
        }
        if report.reason == verify::COMPLETION_CANDIDATE {
            self.host_verify(id, seq, text);
        }
        if let Some((state, reason)) = closing {
            self.finish(id, state, &reason, Some(report.line));
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
        fence: &Fence,
        backend: &dyn BrowserBackend,
        progress: &dyn Fn(TaskProgress),
        counters: &mut Counters,
        answers: &HashMap<String, String>,
        pending: Option<&PendingConfirmation>,
        words: Words,
    ) -> (Report, Reply) {
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
            let report = Report {
                ending: Ending::Stop,
                reason: e.code().into(),
                line,
                step_run: None,
                remaining: Vec::new(),
                field: None,
                confirmation: None,
                needs_agent: None,
            };
            // The reply was not read: a question stays open.
            return (report, Reply::Unread);
        }
        // The gate right before the request's first browser action, on the live configuration.
        let gate = self.shared.host.task_gate(owner, &request.target);
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
            fence,
            budget: request.budget,
            counters,
            hook: hook.as_ref(),
            progress,
            deadline,
            answers,
            asked: None,
            step_lists: gate.as_ref().is_ok_and(|g| g.step_lists),
            adapter: match request.target {
                TaskTarget::Computer { .. } => crate::grammar::Adapter::Computer,
                _ => crate::grammar::Adapter::Browser,
            },
            // Every Jev-decided action of a goal run is checked for impact (issue 26 item 2);
            // under `always`, every Jev-decided action.
            confirm: words.goal_run
                || gate
                    .as_ref()
                    .is_ok_and(|g| g.confirm_high_impact == ConfirmHighImpact::Always),
            approved: None,
            confirmation: None,
            agent_words: words.agent,
            goal_run: words.goal_run,
            session_start: words.session_start,
            person_thai: words.person_thai,
            offer_read: words.user_control
                && !words.agent
                && !words.goal_run
                && !words.handoff
                && pending.is_none(),
            handoff: words.handoff,
            text_helper: self.shared.host.has_text_helper(),
            autopilot: request
                .autopilot
                .as_ref()
                .filter(|_| words.autopilot)
                .and_then(|a| super::autopilot::Plan::from_args(&a.to_args()).ok()),
        };
        let mut reply = Reply::Other;
        let mut report = match gate {
            Err(e) => run.refused(&e),
            Ok(_) => match opening.and_then(|url| run.open(&url)) {
                Some(stopped) => stopped,
                None => match pending {
                    None => run.request(text),
                    // The person's reply to a confirmation question (issue 26 item 2).
                    Some(p) => {
                        reply = run.read_reply(text);
                        match reply {
                            Reply::Yes => {
                                run.approved = Some(Approved {
                                    name: p.ask.name.clone(),
                                    role: p.ask.role.clone(),
                                });
                                // What runs are the stopped words, still whoever's they were:
                                // a goal resumed by the yes goes on as a goal run (not
                                // offered read requests or "unclear" from its first decision).
                                run.agent_words = p.agent_words;
                                run.goal_run = p.goal_run;
                                run.confirm |= p.goal_run;
                                run.session_start = false;
                                run.offer_read = false;
                                run.request(&lines::join_steps(&p.remaining))
                            }
                            Reply::No => run.declined(),
                            Reply::Other => {
                                // The reply is the person's new command.
                                run.offer_read = words.user_control;
                                run.request(text)
                            }
                            Reply::Unread => run.unread_reply(&p.ask.question),
                        }
                    }
                },
            },
        };
        // Every step done is a completion candidate: it waits for a verification (R-TSK-VER).
        if let Some(r) = verify::request_reason(report.ending == Ending::Done, &report.reason) {
            report.reason = r.into();
        }
        let (state, reason, line) = (
            match report.ending {
                Ending::Done => "done",
                Ending::NotDone => "not_done",
                Ending::Unknown => "unknown",
                Ending::Stop => "failed",
                Ending::Cancelled => "cancelled",
                Ending::Interrupted => "not_done",
            },
            report.reason.clone(),
            report.line.clone(),
        );
        let session_waits = matches!(
            report.ending,
            Ending::Done | Ending::NotDone | Ending::Interrupted
        );
        let update = TaskUpdate {
            reason: Some(Some(report.reason.clone())),
            outcome: Some(report.line.clone()),
            actions: Some(counters.actions),
            evaluations: Some(counters.evaluations),
            action_log: Some(counters.log.clone()),
            step_run: report.step_run.clone().map(Some),
            state: (session_waits
                && (request.keep_open
                    || !request.has_words()
                    || report.reason == "SESSION_READY"
                    || report.needs_agent.is_some()
                    || report.ending == Ending::Interrupted
                    || verify::awaits(&report.reason)
                    || (report.ending == Ending::NotDone
                        && (report.field.is_some()
                            || report.confirmation.is_some()
                            || reply == Reply::Unread))))
                .then_some(TaskState::WaitingInput),
        };
        let id2 = id.to_string();
        let now = self.shared.clock.wall_millis();
        if let Err(e) = self.shared.writer.write(Box::new(move |tx| {
            records::end_request(tx, &id2, seq, state, &reason, &line, now)?;
            records::update_task(tx, &id2, &update, now)
        })) {
            log::warn!("request receipt not settled: {}", e.code());
        }
        (report, reply)
    }

    /// Closes a confirmation question nobody answered (another command ran first, the
    /// session ends): its command ends `state`/`reason`, the status question goes.
    fn close_confirmation(
        &self,
        id: &str,
        pending: PendingConfirmation,
        state: &'static str,
        reason: &'static str,
    ) {
        let (id2, now) = (id.to_string(), self.shared.clock.wall_millis());
        let _ = self.shared.writer.submit(Box::new(move |tx| {
            if let Some(c) = &pending.command_id {
                records::set_commands(
                    tx,
                    &id2,
                    std::slice::from_ref(c),
                    state,
                    Some(reason),
                    None,
                    now,
                )?;
            }
            records::set_control(tx, &id2, "confirmationRequest", None)?;
            records::set_control(tx, &id2, "confirmation", None)
        }));
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

    /// Accepts a person's command (R-TSK-CTL): its row (with its control receipt) is written
    /// before it joins the queue, so every accepted command either runs or is listed dropped.
    pub(crate) fn command(
        &self,
        owner: &TaskOwner,
        id: &str,
        text: &str,
        origin: Origin,
    ) -> Result<ControlReceipt> {
        check_text("text", text, false)?;
        self.gate_of(owner, id)?;
        let task = self.owned(owner, id)?;
        let agent = origin == Origin::Agent;
        if let Some(v) = self.carried(owner, id, || Call::Command {
            text: text.to_string(),
            agent,
        })? {
            return serde_json::from_value(v).map_err(|_| Error::StoreCorrupt {
                reason: "a carried command's receipt is unreadable".into(),
            });
        }
        // Reserve a place under the lock: the queue bound holds with accepts in flight.
        {
            let mut pool = self.shared.pool.lock();
            if pool.closed {
                return Err(Error::GatewayClosed);
            }
            let Some(live) = pool.live.get_mut(id) else {
                return Err(Error::AutomationSessionClosed);
            };
            if task.state.is_closed()
                || live.closing
                || live.cancel.is_cancelled()
                || !live.session_open()
            {
                return Err(Error::AutomationSessionClosed);
            }
            // The agent's turn for the person's command takes no command (issue 26 items 3, 4).
            if origin == Origin::Agent {
                match live.agent_turn {
                    Some(("READ_REQUEST", _)) => return Err(Error::ReadRequestOnly),
                    Some(_) => return Err(Error::AgentHandoffOneCommand),
                    None => {}
                }
            }
            // Whose words (issue 26 item 1, seed 003): under the person's control an agent's
            // command is not an authorization; after the person's `agent` action it is.
            if origin == Origin::Agent && !live.agent {
                return Err(Error::ExecutionDenied {
                    reason: "the person controls this task: an agent's command runs only after the person hands control to the agent",
                });
            }
            if live.queue.len() + live.reserved >= MAX_QUEUED_COMMANDS {
                return Err(Error::CommandQueueFull);
            }
            live.reserved += 1;
        }
        let command_id = crate::ids::random_uuid();
        let accepted = command_id.and_then(|cid| {
            let (id2, text2) = (id.to_string(), text.to_string());
            let summary = lines::summary(text);
            let now = self.shared.clock.wall_millis();
            self.shared.writer.apply(move |tx| {
                records::accept_command(
                    tx,
                    &records::NewCommand {
                        task_id: &id2,
                        id: &cid,
                        origin: origin.as_str(),
                        kind: "command",
                        text: Some(&text2),
                        expected_revision: None,
                    },
                    summary,
                    now,
                )
                .map_err(|e| crate::store::sqlite_error("accept command", e))
            })
        });
        let mut pool = self.shared.pool.lock();
        if let Some(l) = pool.live.get_mut(id) {
            l.reserved = l.reserved.saturating_sub(1);
        }
        let receipt = accepted?;
        let queued = match pool.live.get_mut(id) {
            Some(l) if !l.closing && !l.cancel.is_cancelled() => {
                // A person's command starts a new replan chain (an agent's does not), and any
                // command supersedes a pending field question (the question closes).
                if origin == Origin::User {
                    l.replans.clear();
                }
                if l.question.take().is_some() {
                    let id2 = id.to_string();
                    let _ = self.shared.writer.submit(Box::new(move |tx| {
                        records::set_control(tx, &id2, "fieldRequest", None)?;
                        records::set_control(tx, &id2, "question", None)
                    }));
                }
                // Only the person's own words answer a confirmation question; anything else
                // closes it when it runs (see `turn`).
                let reply = origin == Origin::User && l.confirmation.is_some();
                l.queue.push_back(Queued {
                    id: receipt.command_id.clone(),
                    text: text.to_string(),
                    reply,
                    agent: origin == Origin::Agent,
                    goal: false,
                    handoff: false,
                });
                if !l.scheduled {
                    l.scheduled = true;
                    l.state = TaskState::Running;
                    pool.ready.push_back(id.to_string());
                    self.kick(&mut pool);
                }
                true
            }
            _ => false,
        };
        drop(pool);
        self.shared.changed.notify_all();
        if !queued {
            // The session closed while the row was written: the command is listed dropped,
            // never lost and never run.
            let (id2, cid, now) = (
                id.to_string(),
                receipt.command_id.clone(),
                self.shared.clock.wall_millis(),
            );
            let _ = self.shared.writer.write(Box::new(move |tx| {
                records::set_commands(
                    tx,
                    &id2,
                    &[cid],
                    "dropped",
                    Some("AUTOMATION_SESSION_CLOSED"),
                    None,
                    now,
                )
            }));
            return Err(Error::AutomationSessionClosed);
        }
        Ok(receipt)
    }

    pub(crate) fn control(
        &self,
        owner: &TaskOwner,
        id: &str,
        command: &ControlRequest,
    ) -> Result<TaskStatus> {
        if !crate::ids::is_uuid(id) {
            return Err(Error::InvalidInput {
                name: "taskId",
                reason: "must be a UUID".into(),
            });
        }
        if !crate::ids::is_uuid(&command.id) {
            return Err(Error::InvalidInput {
                name: "id",
                reason: "must be a UUID".into(),
            });
        }
        match (command.action, &command.text) {
            (ControlAction::Revise, Some(t)) => {
                let n = t.chars().count();
                if t.trim().is_empty() || n > MAX_COMMAND_CHARS {
                    return Err(Error::InvalidInput {
                        name: "text",
                        reason: format!("must be 1 to {MAX_COMMAND_CHARS} characters ({n} given)"),
                    });
                }
            }
            (ControlAction::Revise, None) => {
                return Err(Error::InvalidInput {
                    name: "text",
                    reason: "`revise` takes text (1 to 4000 characters)".into(),
                })
            }
            (_, Some(_)) => {
                return Err(Error::InvalidInput {
                    name: "text",
                    reason: "only `revise` takes text".into(),
                })
            }
            (_, None) => {}
        }
        self.owned(owner, id)?;
        if self
            .carried(owner, id, || Call::Control {
                request: command.clone(),
            })?
            .is_some()
        {
            return self.status(owner, id);
        }
        self.gate_of(owner, id)?;
        // Control verbs are rare: one at a time, so the situation read here still holds when
        // the compare-and-set write below commits (commands may still move the revision: the
        // write checks it).
        let _one = self.shared.control.lock();
        let situation = {
            let pool = self.shared.pool.lock();
            match pool.live.get(id) {
                Some(l) => control::Situation {
                    closed: pool.closed || l.closing || l.cancel.is_cancelled(),
                    started: l.started,
                    paused_steps: l.paused_steps.is_some(),
                    pausing: l.pausing,
                    agent: l.agent,
                },
                None => control::Situation {
                    closed: true,
                    ..control::Situation::default()
                },
            }
        };
        let refusal = control::check(command.action, situation).err();
        // The write: an id seen before answers as before (or conflicts); then the revision;
        // then the table's verdict; then the row.
        let (id2, cmd, now) = (
            id.to_string(),
            command.clone(),
            self.shared.clock.wall_millis(),
        );
        let resume_text = match command.action {
            ControlAction::Resume => {
                let pool = self.shared.pool.lock();
                pool.live
                    .get(id)
                    .and_then(|l| l.paused_steps.as_ref())
                    .map(|steps| lines::join_steps(steps))
            }
            _ => None,
        };
        let stored_text = command.text.clone().or(resume_text.clone());
        let outcome = self.shared.writer.apply(move |tx| {
            let sql = |e| crate::store::sqlite_error("control", e);
            if let Some(seen) = records::command_contents(tx, &id2, &cmd.id).map_err(sql)? {
                let same = seen.kind == cmd.action.as_str()
                    && seen.expected_revision == Some(cmd.expected_revision)
                    && (cmd.action == ControlAction::Resume || seen.text == cmd.text);
                return if same {
                    Ok(None)
                } else {
                    Err(Error::IdempotencyConflict)
                };
            }
            let current = records::revision(tx, &id2).map_err(sql)?;
            if current != cmd.expected_revision {
                return Err(Error::RevisionConflict {
                    expected: cmd.expected_revision,
                    current,
                });
            }
            match refusal {
                Some(control::Refusal::Closed) => return Err(Error::AutomationSessionClosed),
                Some(control::Refusal::State(reason)) => {
                    return Err(Error::StateConflict { reason })
                }
                Some(control::Refusal::NothingToResume) => return Err(Error::NothingToResume),
                None => {}
            }
            let receipt = records::accept_control(
                tx,
                &records::NewCommand {
                    task_id: &id2,
                    id: &cmd.id,
                    origin: "user",
                    kind: cmd.action.as_str(),
                    text: stored_text.as_deref(),
                    expected_revision: Some(cmd.expected_revision),
                },
                cmd.action == ControlAction::Revise,
                now,
            )
            .map_err(sql)?;
            match cmd.action {
                ControlAction::Agent | ControlAction::User => {
                    records::set_controller(tx, &id2, cmd.action.as_str()).map_err(sql)?;
                }
                ControlAction::Resume | ControlAction::Revise => {
                    records::set_control(tx, &id2, "pausedSteps", None).map_err(sql)?;
                }
                ControlAction::Pause => {}
            }
            Ok(Some(receipt))
        })?;
        if let Some(receipt) = outcome {
            self.apply_control(
                id,
                command.action,
                &receipt,
                command.text.clone(),
                resume_text,
            );
        }
        self.status(owner, id)
    }

    /// Applies an accepted control command to the live session.
    fn apply_control(
        &self,
        id: &str,
        action: ControlAction,
        receipt: &ControlReceipt,
        text: Option<String>,
        resume_text: Option<String>,
    ) {
        let mut dropped = Vec::new();
        let mut done = true;
        let mut gone = false;
        {
            let mut pool = self.shared.pool.lock();
            match pool.live.get_mut(id) {
                None => gone = true,
                Some(l) => {
                    let resume_words = l.paused_words;
                    let drop_reason = match action {
                        ControlAction::Pause => Some("PAUSED"),
                        ControlAction::Revise => Some("REVISED"),
                        ControlAction::Agent => Some("AGENT_CONTROL"),
                        ControlAction::Resume | ControlAction::User => None,
                    };
                    if let Some(r) = drop_reason {
                        dropped = l.queue.drain(..).map(|q| (q.id, r)).collect();
                    }
                    match action {
                        ControlAction::Pause | ControlAction::Revise => {
                            l.hold_open = true;
                            let running = l.scheduled && l.running_command.is_some()
                                || l.state == TaskState::Running;
                            if action == ControlAction::Pause {
                                l.pausing = running;
                                l.fence.interrupt("PAUSED");
                            } else {
                                l.fence.interrupt("REVISED");
                                l.paused_steps = None;
                                l.pausing = false;
                                l.replans.clear();
                            }
                        }
                        ControlAction::Resume => {
                            l.paused_steps = None;
                        }
                        ControlAction::Agent => l.agent = true,
                        ControlAction::User => l.agent = false,
                    }
                    // A revision is the person's words; a resume runs on the paused words as
                    // whoever's they were.
                    let (next, words) = match action {
                        ControlAction::Revise => (text, Words::default()),
                        ControlAction::Resume => (resume_text, resume_words),
                        _ => (None, Words::default()),
                    };
                    if let Some(t) = next {
                        done = false;
                        // Runs next: before anything queued after it.
                        l.queue.push_front(Queued {
                            id: receipt.command_id.clone(),
                            text: t,
                            reply: false,
                            agent: words.agent,
                            goal: words.goal_run,
                            handoff: false,
                        });
                        if !l.scheduled {
                            l.scheduled = true;
                            l.state = TaskState::Running;
                            pool.ready.push_back(id.to_string());
                            self.kick(&mut pool);
                        }
                    }
                }
            }
        }
        self.shared.changed.notify_all();
        let (id2, cid, now) = (
            id.to_string(),
            receipt.command_id.clone(),
            self.shared.clock.wall_millis(),
        );
        let _ = self.shared.writer.write(Box::new(move |tx| {
            for (c, r) in &dropped {
                records::set_commands(
                    tx,
                    &id2,
                    std::slice::from_ref(c),
                    "dropped",
                    Some(r),
                    None,
                    now,
                )?;
            }
            if gone {
                records::set_commands(
                    tx,
                    &id2,
                    &[cid],
                    "dropped",
                    Some("AUTOMATION_SESSION_CLOSED"),
                    None,
                    now,
                )
            } else if done {
                records::set_commands(tx, &id2, &[cid], "done", None, None, now)
            } else {
                Ok(())
            }
        }));
    }

    pub(crate) fn update(
        &self,
        owner: &TaskOwner,
        id: &str,
        update: &UpdateRequest,
    ) -> Result<TaskStatus> {
        let n = update.goal.chars().count();
        if update.goal.trim().is_empty() || n > MAX_COMMAND_CHARS {
            return Err(Error::InvalidInput {
                name: "goal",
                reason: format!("must be 1 to {MAX_COMMAND_CHARS} characters ({n} given)"),
            });
        }
        let task = self.owned(owner, id)?;
        if self
            .carried(owner, id, || Call::Update {
                request: update.clone(),
            })?
            .is_some()
        {
            return self.status(owner, id);
        }
        self.gate_of(owner, id)?;
        let _one = self.shared.control.lock();
        // An update is the agent's: read-only for a read request; once for a hand-off.
        let turn = self
            .shared
            .pool
            .lock()
            .live
            .get(id)
            .and_then(|l| l.agent_turn);
        match turn {
            Some(("READ_REQUEST", _)) => return Err(Error::ReadRequestOnly),
            Some((_, true)) => return Err(Error::AgentHandoffUsed),
            _ => {}
        }
        let digest = lines::digest(&update.goal);
        // The live session, or (a closed task) whether it may be reopened.
        let live = {
            let pool = self.shared.pool.lock();
            if pool.closed {
                return Err(Error::GatewayClosed);
            }
            pool.live.get(id).map(|l| {
                (
                    l.closing || l.cancel.is_cancelled(),
                    // A re-admitted session ran before the restart: an update is its next
                    // command, never a replaced goal.
                    l.started || l.readmitted,
                    l.changed_nothing,
                    l.replans.clone(),
                )
            })
        };
        let (replans, is_replan) = match &live {
            Some((true, ..)) => return Err(Error::AutomationSessionClosed),
            Some((false, started, changed_nothing, replans)) => {
                (replans.clone(), *started && *changed_nothing)
            }
            None => match task.state {
                TaskState::Cancelled => return Err(Error::AutomationSessionClosed),
                TaskState::NeedsReconciliation => {
                    return Err(Error::StateConflict {
                        reason: "UNRESOLVED_MUTATION",
                    })
                }
                _ => {
                    let info = self.shared.store.read(|c| records::reopen_info(c, id))?;
                    let replans = info
                        .control
                        .as_deref()
                        .and_then(|c| serde_json::from_str::<serde_json::Value>(c).ok())
                        .and_then(|v| serde_json::from_value(v["replans"].clone()).ok())
                        .unwrap_or_default();
                    // Persisted by the task's last round (tasks from before it: a replan
                    // only when the last line says nothing was done).
                    let control: Option<serde_json::Value> = info
                        .control
                        .as_deref()
                        .and_then(|c| serde_json::from_str(c).ok());
                    let changed_nothing = match control.as_ref().map(|c| &c["changedNothing"]) {
                        Some(serde_json::Value::Bool(b)) => *b,
                        _ => task.action_log.last().is_some_and(|e| {
                            !e.outcome.starts_with("Done") && !e.outcome.starts_with("Unknown")
                        }),
                    };
                    (replans, changed_nothing)
                }
            },
        };
        // Checked after the revision, inside the write: a stale caller learns that first.
        let replan_refusal = match () {
            _ if !is_replan => None,
            _ if replans.contains(&digest) => Some("REPLAN_DUPLICATE"),
            _ if replans.len() >= 3 => Some("REPLAN_LIMIT"),
            _ => None,
        };
        let not_started = matches!(live, Some((false, false, ..)));
        let mut chain = replans;
        if is_replan {
            chain.push(digest);
        }
        let chain_json = serde_json::to_string(&chain).unwrap_or_else(|_| "[]".into());
        let (id2, goal, expected, now) = (
            id.to_string(),
            update.goal.clone(),
            update.expected_revision,
            self.shared.clock.wall_millis(),
        );
        let command_id = crate::ids::random_uuid()?;
        let receipt = self.shared.writer.apply(move |tx| {
            let sql = |e| crate::store::sqlite_error("update", e);
            let current = records::revision(tx, &id2).map_err(sql)?;
            if current != expected {
                return Err(Error::RevisionConflict { expected, current });
            }
            if let Some(reason) = replan_refusal {
                return Err(Error::StateConflict { reason });
            }
            let receipt = records::accept_command(
                tx,
                &records::NewCommand {
                    task_id: &id2,
                    id: &command_id,
                    origin: "agent",
                    kind: "update",
                    text: Some(&goal),
                    expected_revision: Some(expected),
                },
                "[text]".into(),
                now,
            )
            .map_err(sql)?;
            records::set_control(tx, &id2, "replans", Some(&chain_json)).map_err(sql)?;
            if not_started {
                // Accepted before the first dispatch: it is the goal (the start URL still
                // opens first).
                records::set_goal(tx, &id2, &goal).map_err(sql)?;
                records::set_commands(
                    tx,
                    &id2,
                    std::slice::from_ref(&command_id),
                    "done",
                    Some("GOAL_REPLACED"),
                    None,
                    now,
                )
                .map_err(sql)?;
            }
            Ok(receipt)
        })?;
        if let Err(e) = self.admit_update(id, owner, &task, update, &receipt, chain, not_started) {
            // The session went away or could not be reopened: the update is listed dropped.
            let (id2, cid, now) = (
                id.to_string(),
                receipt.command_id.clone(),
                self.shared.clock.wall_millis(),
            );
            let reason = e.code();
            let _ = self.shared.writer.write(Box::new(move |tx| {
                records::set_commands(tx, &id2, &[cid], "dropped", Some(reason), None, now)
            }));
            return Err(e);
        }
        self.status(owner, id)
    }

    /// Puts an accepted update where it runs: the goal of a task not started, the front of a
    /// live session's queue, or the first request of a reopened task.
    #[allow(clippy::too_many_arguments)]
    fn admit_update(
        &self,
        id: &str,
        owner: &TaskOwner,
        task: &TaskStatus,
        update: &UpdateRequest,
        receipt: &ControlReceipt,
        chain: Vec<String>,
        not_started: bool,
    ) -> Result<()> {
        let mut pool = self.shared.pool.lock();
        if let Some(l) = pool.live.get_mut(id) {
            if l.closing || l.cancel.is_cancelled() {
                return Err(Error::AutomationSessionClosed);
            }
            l.replans = chain;
            if not_started && !l.started && !l.readmitted {
                l.request.goal = update.goal.clone();
                return Ok(());
            }
            // The agent's one command for a handed-off command runs as the person's next direct
            // command (issue 26 item 4); any other update is a goal run.
            let handoff = match &mut l.agent_turn {
                Some(("AGENT_HANDOFF", used)) if !*used => {
                    *used = true;
                    true
                }
                _ => false,
            };
            l.queue.push_front(Queued {
                id: receipt.command_id.clone(),
                text: update.goal.clone(),
                reply: false,
                agent: true,
                goal: !handoff,
                handoff,
            });

            if !l.scheduled {
                l.scheduled = true;
                l.state = TaskState::Running;
                pool.ready.push_back(id.to_string());
                self.kick(&mut pool);
            }
            drop(pool);
            if handoff {
                // Status says the hand-off's one command was sent.
                let id2 = id.to_string();
                let _ = self
                    .shared
                    .writer
                    .write(Box::new(move |tx| records::mark_handoff_used(tx, &id2)));
            }
            self.shared.changed.notify_all();
            return Ok(());
        }
        drop(pool);
        // Reopen a completed or failed task: a new session on its target, its first request
        // the update (no start URL), its counters and request numbers carried on.
        let info = self.shared.store.read(|c| records::reopen_info(c, id))?;
        let spawn: serde_json::Value = info
            .spawn
            .as_deref()
            .and_then(|s| serde_json::from_str(s).ok())
            .unwrap_or_default();
        if spawn["brought"].as_bool() != Some(false) {
            // The host's own backend went with the session (or the task predates this
            // record): nothing to reopen on.
            return Err(Error::StateConflict {
                reason: "TARGET_GONE",
            });
        }
        self.admit(owner)?;
        let budget = serde_json::from_value(spawn["budget"].clone()).unwrap_or_default();
        let mut request = SpawnRequest::new(update.goal.clone());
        request.target = task.target.clone();
        request.budget = budget;
        request.keep_open = spawn["keepOpen"].as_bool().unwrap_or(false);
        let mut counters = Counters::default();
        counters.actions = task.actions;
        counters.evaluations = task.evaluations;
        counters.log = task.action_log.clone();
        let mut pool = self.shared.pool.lock();
        if pool.closed {
            return Err(Error::GatewayClosed);
        }
        if pool.live.contains_key(id) {
            return Err(Error::StateConflict {
                reason: "CONCURRENT_UPDATE",
            });
        }
        let mut live = Live {
            running_command: Some(receipt.command_id.clone()),
            counters,
            seq: info.last_seq,
            agent: task.controller == "agent",
            replans: chain,
            reopened: true,
            // The update that reopens it is the agent's.
            agent_words: true,
            ..Live::new(owner.clone(), request, None, self.shared.clock.now())
        };
        live.request.start_url = None;
        pool.live.insert(id.to_string(), live);
        pool.ready.push_back(id.to_string());
        self.kick(&mut pool);
        drop(pool);
        let (id2, now) = (id.to_string(), self.shared.clock.wall_millis());
        let _ = self.shared.writer.write(Box::new(move |tx| {
            records::update_task(
                tx,
                &id2,
                &TaskUpdate {
                    state: Some(TaskState::Queued),
                    reason: Some(None),
                    ..TaskUpdate::default()
                },
                now,
            )
        }));
        self.shared.changed.notify_all();
        Ok(())
    }

    pub(crate) fn answer(
        &self,
        owner: &TaskOwner,
        id: &str,
        field: &str,
        text: &str,
        origin: Origin,
    ) -> Result<TaskStatus> {
        let n = text.chars().count();
        if text.trim().is_empty() || n > MAX_ANSWER_CHARS {
            return Err(Error::InvalidInput {
                name: "text",
                reason: format!("must be 1 to {MAX_ANSWER_CHARS} characters ({n} given)"),
            });
        }
        self.owned(owner, id)?;
        let agent = origin == Origin::Agent;
        if self
            .carried(owner, id, || Call::Answer {
                field: field.to_string(),
                text: text.to_string(),
                agent,
            })?
            .is_some()
        {
            return self.status(owner, id);
        }
        self.gate_of(owner, id)?;
        let _one = self.shared.control.lock();
        if origin == Origin::Agent {
            if let Some(e) = self.agent_turn_refusal(id) {
                return Err(e);
            }
        }
        let remaining = {
            let pool = self.shared.pool.lock();
            let asked = pool.live.get(id).and_then(|l| {
                l.question
                    .as_ref()
                    .filter(|(f, _)| f == field || lines::short(f) == field)
                    .map(|(f, rest)| (f.clone(), rest.clone(), l.question_words))
            });
            match asked {
                Some(a) if !pool.closed => a,
                _ => {
                    return Err(Error::StateConflict {
                        reason: "FIELD_NOT_ASKED",
                    })
                }
            }
        };
        let (asked_field, rest, words) = remaining;
        let continuation = lines::join_steps(&rest);
        let command_id = crate::ids::random_uuid()?;
        let (id2, text2, now) = (
            id.to_string(),
            text.to_string(),
            self.shared.clock.wall_millis(),
        );
        let receipt = self.shared.writer.apply(move |tx| {
            let sql = |e| crate::store::sqlite_error("answer", e);
            let receipt = records::accept_control(
                tx,
                &records::NewCommand {
                    task_id: &id2,
                    id: &command_id,
                    origin: origin.as_str(),
                    kind: "answer",
                    text: Some(&text2),
                    expected_revision: None,
                },
                false,
                now,
            )
            .map_err(sql)?;
            records::set_control(tx, &id2, "fieldRequest", None).map_err(sql)?;
            records::set_control(tx, &id2, "question", None).map_err(sql)?;
            Ok(receipt)
        })?;
        {
            let mut pool = self.shared.pool.lock();
            if let Some(l) = pool.live.get_mut(id) {
                l.question = None;
                l.answers.insert(asked_field, text.to_string());
                if !rest.is_empty() {
                    // The continuation runs as the words the question stopped: the agent's goal
                    // stays the agent's (the answer gives only the field's text).
                    l.queue.push_front(Queued {
                        id: receipt.command_id.clone(),
                        text: continuation,
                        reply: false,
                        agent: words.agent,
                        goal: words.goal_run,
                        handoff: false,
                    });
                    if !l.scheduled {
                        l.scheduled = true;
                        l.state = TaskState::Running;
                        pool.ready.push_back(id.to_string());
                        self.kick(&mut pool);
                    }
                }
            }
        }
        self.shared.changed.notify_all();
        self.status(owner, id)
    }

    pub(crate) fn reconcile(&self, owner: &TaskOwner, id: &str) -> Result<TaskStatus> {
        let task = self.owned(owner, id)?;
        let operation = self.shared.store.read(|c| records::last_in_doubt(c, id))?;
        let Some(operation) = operation.filter(|_| task.state == TaskState::NeedsReconciliation)
        else {
            return Err(Error::StateConflict {
                reason: "NOTHING_IN_DOUBT",
            });
        };
        let kept = self.shared.in_doubt.lock().get(id);
        let backend = kept.or_else(|| self.shared.host.inspector(owner, &task.target));
        let answer = match backend {
            Some(b) => b.operation_status(&operation).ok(),
            None => None,
        };
        let happened = match answer.map(|r| r.status) {
            Some(crate::browser::OperationState::Executed) => Some(true),
            Some(crate::browser::OperationState::NotExecuted) => Some(false),
            _ => None,
        };
        if let Some(happened) = happened {
            self.settle_resolution(id, &operation, happened, "operation_status")?;
        }
        self.status(owner, id)
    }

    pub(crate) fn resolve(
        &self,
        owner: &TaskOwner,
        id: &str,
        operation_id: &str,
        happened: bool,
    ) -> Result<TaskStatus> {
        self.owned(owner, id)?;
        if operation_id.is_empty() || operation_id.len() > 200 {
            return Err(Error::InvalidInput {
                name: "operationId",
                reason: "must be 1 to 200 bytes".into(),
            });
        }
        if self
            .carried(owner, id, || Call::Resolve {
                operation: operation_id.to_string(),
                happened,
            })?
            .is_some()
        {
            return self.status(owner, id);
        }
        self.settle_resolution(id, operation_id, happened, "person")?;
        self.status(owner, id)
    }

    fn settle_resolution(
        &self,
        id: &str,
        operation: &str,
        happened: bool,
        by: &'static str,
    ) -> Result<()> {
        let (id2, op, now) = (
            id.to_string(),
            operation.to_string(),
            self.shared.clock.wall_millis(),
        );
        let settled = self.shared.writer.apply(move |tx| {
            let sql = |e| crate::store::sqlite_error("resolve", e);
            if !records::resolve_operation(tx, &id2, &op, happened, by, now).map_err(sql)? {
                return Err(Error::StateConflict {
                    reason: "NOT_IN_DOUBT",
                });
            }
            records::in_doubt(tx, &id2).map_err(sql)
        })?;
        if !settled {
            self.shared.in_doubt.lock().remove(id);
        }
        Ok(())
    }

    /// Evidence (issue 21 item 7): see [`Tasks::evidence`]. Reads only: it writes no row and
    /// changes no state.
    pub(crate) fn evidence(&self, owner: &TaskOwner, id: &str, fresh: bool) -> Result<Evidence> {
        self.evidence_on(owner, id, fresh, None)
    }

    /// [`TaskService::evidence`]; fresh, through `on_slot` when given (the task's own slot asks
    /// for its host verifier while its session is still scheduled).
    fn evidence_on(
        &self,
        owner: &TaskOwner,
        id: &str,
        fresh: bool,
        on_slot: Option<Arc<dyn BrowserBackend>>,
    ) -> Result<Evidence> {
        // Every access or ownership failure answers one way (seed 003's evidence routes).
        let denied = |e: Error| match e {
            Error::AccessDenied { .. } | Error::ExecutionDenied { .. } => {
                Error::BrowserEvidenceUnavailable
            }
            other => other,
        };
        let task = self.owned(owner, id).map_err(denied)?;
        self.gate_of(owner, id).map_err(denied)?;
        let recorded = self.shared.store.read(|c| evidence::read_recorded(c, id))?;
        let last = task.last_dispatched_mutation.clone();
        let (observation, observed_at, status) = if fresh {
            if on_slot.is_none() {
                self.refuse_elsewhere(id)?;
            }
            let operation = last.as_ref().map(|m| m.operation_id.as_str());
            let (obs, status) = match on_slot {
                Some(b) => {
                    let status = operation.map(|op| {
                        b.operation_status(op)
                            .unwrap_or_else(|_| crate::browser::OperationRecord::unknown(op))
                    });
                    let obs = b
                        .observe()
                        .map_err(|e| Error::BrowserInspectionUnavailable {
                            reason: evidence::inspection_reason(e.code()),
                        })?;
                    (obs, status)
                }
                None => self.inspect(id, owner, &task.target, operation)?,
            };
            let at = self.shared.clock.wall_millis();
            // Revoked during the read: nothing of it is returned.
            self.owned(owner, id).map_err(denied)?;
            self.gate_of(owner, id).map_err(denied)?;
            (evidence::fresh_view(&obs), Some(at), status)
        } else {
            match &recorded.observation {
                Some((stored, at)) => (evidence::recorded_view(stored), Some(*at), None),
                None => (serde_json::Value::Null, None, None),
            }
        };
        let evidence_id = crate::ids::random_id("ev_")?;
        let now = self.shared.clock.now();
        self.shared.evidence.lock().insert(
            evidence_id.clone(),
            EvidenceRecord {
                task_id: id.to_string(),
                owner: owner.clone(),
                request: recorded.request,
                fresh,
                operation: last.as_ref().map(|m| m.operation_id.clone()),
                expires: now + evidence::EVIDENCE_TTL,
            },
            now,
        );
        let ttl = i64::try_from(evidence::EVIDENCE_TTL.as_millis()).unwrap_or(i64::MAX);
        Ok(Evidence {
            evidence_id,
            task_id: id.to_string(),
            request: recorded.request,
            request_state: recorded.request_state,
            task_state: self.with_live(task).state,
            in_doubt: recorded.in_doubt,
            source: if fresh {
                EvidenceSource::Fresh
            } else {
                EvidenceSource::Recorded
            },
            observed_at,
            expires_at: self.shared.clock.wall_millis().saturating_add(ttl),
            last_dispatched_mutation: last,
            operation_status: status,
            untrusted_content: crate::untrusted::wrap_value(observation),
        })
    }

    /// A fresh observation of task `id`'s page and, for `operation`, the browser's own record
    /// of it (read, never replayed): through the open session's browser while it waits; for a
    /// device without an open session, through a short tab lease; else a backend kept for an
    /// in-doubt task. Never starts a browser (a new one would not show the task's page).
    fn inspect(
        &self,
        id: &str,
        owner: &TaskOwner,
        target: &TaskTarget,
        operation: Option<&str>,
    ) -> Result<(
        crate::observation::Observation,
        Option<crate::browser::OperationRecord>,
    )> {
        let unavailable = |reason| Error::BrowserInspectionUnavailable { reason };
        let live = {
            let pool = self.shared.pool.lock();
            if pool.closed {
                return Err(Error::GatewayClosed);
            }
            match pool.live.get(id) {
                Some(l) if l.scheduled && l.started => {
                    return Err(unavailable(
                        "a request is running on the task's browser: ask again when it waits",
                    ))
                }
                Some(l) if !l.started => {
                    return Err(unavailable("the task has not opened its browser yet"))
                }
                Some(l) => l.target.as_ref().map(|t| Arc::clone(&t.backend)),
                None => None,
            }
        };
        let read = |b: &dyn BrowserBackend| {
            let status = operation.map(|op| {
                b.operation_status(op)
                    .unwrap_or_else(|_| crate::browser::OperationRecord::unknown(op))
            });
            b.observe()
                .map(|o| (o, status))
                .map_err(|e| unavailable(evidence::inspection_reason(e.code())))
        };
        if let Some(b) = live {
            return read(&*b);
        }
        if target.device_id().is_some() {
            let opened = self
                .shared
                .host
                .open_target(owner, target, None)
                .map_err(|e| unavailable(evidence::inspection_reason(e.code())))?;
            let answer = read(&*opened.backend);
            // The short tab lease ends here, whatever the read came to.
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(opened.close));
            return answer;
        }
        let kept = self.shared.in_doubt.lock().get(id);
        match kept {
            Some(b) => read(&*b),
            None => Err(unavailable("the task's local browser is gone")),
        }
    }

    /// What a valid evidence id stands for (issue 26's `verify`).
    pub(crate) fn evidence_record(&self, evidence_id: &str) -> Option<EvidenceRecord> {
        let now = self.shared.clock.now();
        self.shared.evidence.lock().lookup(evidence_id, now)
    }

    pub(crate) fn command_receipt(
        &self,
        owner: &TaskOwner,
        id: &str,
        command_id: &str,
    ) -> Result<Option<ControlReceipt>> {
        self.owned(owner, id)?;
        if command_id.len() > 64 {
            return Ok(None);
        }
        self.shared
            .store
            .read(|c| records::command(c, id, command_id))
    }

    pub(crate) fn cancel(&self, owner: &TaskOwner, id: &str) -> Result<TaskStatus> {
        self.owned(owner, id)?;
        // Carried (issue 23): the owner's cancel closes the fence before it answers, so once
        // this returns no checkpoint of the task commits again — as a local cancel.
        if self.carried(owner, id, || Call::Cancel)?.is_some() {
            return self.status(owner, id);
        }
        let (unstarted, fence) = {
            let mut pool = self.shared.pool.lock();
            let found = match pool.live.get_mut(id) {
                Some(l) => {
                    l.cancel.cancel();
                    let queued = l.state == TaskState::Queued && !l.started;
                    if !l.scheduled {
                        // An idle session: a slot closes its target.
                        l.scheduled = true;
                        l.state = TaskState::Running;
                        Some((queued, Arc::clone(&l.fence), true))
                    } else {
                        if l.state == TaskState::WaitingInput {
                            l.state = TaskState::Running;
                        }
                        Some((queued, Arc::clone(&l.fence), false))
                    }
                }
                None => None,
            };
            match found {
                Some((queued, fence, idle)) => {
                    if queued {
                        pool.ready.retain(|w| w != id);
                        if let Some(l) = pool.live.get_mut(id) {
                            l.closing = true;
                        }
                    } else if idle {
                        pool.ready.push_front(id.to_string());
                        self.kick(&mut pool);
                    }
                    (queued, Some(fence))
                }
                None => (false, None),
            }
        };
        // The fence (R-TSK-CTL): once this returns, no checkpoint of the task commits again.
        if let Some(f) = fence {
            f.close();
        }
        if unstarted {
            self.finish_unstarted(id, TaskState::Cancelled, "CANCELLED");
        }
        self.shared.changed.notify_all();
        self.status(owner, id)
    }

    pub(crate) fn list(&self, owner: &TaskOwner) -> Result<Vec<TaskStatus>> {
        owner.check()?;
        self.sweep();
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

    /// Cancels every task, joins every task thread, closes every open session's target, then
    /// stops the writer. Idempotent.
    pub(crate) fn close(&self) {
        // No carried call is applied here any more.
        if let Some(c) = self.shared.carrier.get() {
            c.close();
        }
        let (threads, fences) = {
            let mut pool = self.shared.pool.lock();
            pool.closed = true;
            let mut fences = Vec::new();
            for l in pool.live.values() {
                l.cancel.cancel();
                fences.push(Arc::clone(&l.fence));
            }
            pool.ready.clear();
            (std::mem::take(&mut pool.threads), fences)
        };
        self.shared.changed.notify_all();
        for f in fences {
            f.close();
        }
        let me = std::thread::current().id();
        for t in threads {
            // A task thread that drops the last gateway reference closes it from inside:
            // it must not wait for itself.
            if t.thread().id() != me {
                let _ = t.join();
            }
        }
        // What no slot holds now: queued spawns and sessions waiting for a command. A session
        // waiting for its next command on a target the gateway opened stays open in the record
        // (its browser closes now): the next open of this data directory re-admits it, as after
        // a crash (issue 21 item 3). A host's own backend goes with this process.
        let (rest, shelved): (Vec<(String, bool)>, Vec<OpenTarget>) = {
            let mut pool = self.shared.pool.lock();
            let waiting: Vec<String> = pool
                .live
                .iter()
                .filter(|(_, l)| {
                    (l.started || l.readmitted)
                        && l.state == TaskState::WaitingInput
                        && !l.scheduled
                        && l.brought.is_none()
                        && l.expire.is_none()
                        && l.running_command.is_none()
                })
                .map(|(id, _)| id.clone())
                .collect();
            let shelved = waiting
                .iter()
                .filter_map(|id| pool.live.remove(id).and_then(|mut l| l.target.take()))
                .collect();
            let rest = pool
                .live
                .iter()
                // A re-admitted session with commands queued ends like a started one (its
                // queue listed dropped).
                .map(|(id, l)| (id.clone(), l.started || l.readmitted))
                .collect();
            (rest, shelved)
        };
        for t in shelved {
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(t.close));
        }
        for (id, started) in rest {
            if started {
                self.finish(&id, TaskState::Cancelled, "GATEWAY_CLOSED", None);
            } else {
                self.finish_unstarted(&id, TaskState::Cancelled, "GATEWAY_CLOSED");
            }
        }
        if let Some(r) = self.shared.reaper.lock().take() {
            if r.thread().id() != me {
                let _ = r.join();
            }
        }
        self.shared.writer.close();
        self.shared.store.close();
    }
}

/// Verification (issue 26 item 6, R-TSK-VER): the parent's verb and the host's verifier. The
/// rules are [`verify`]'s; these apply them and complete a verified task through
/// [`TaskService::finish`].
impl TaskService {
    pub(crate) fn verify(
        &self,
        owner: &TaskOwner,
        id: &str,
        request: &VerifyRequest,
        origin: Origin,
    ) -> Result<TaskStatus> {
        request.check()?;
        self.owned(owner, id)?;
        // Verification rests on evidence this process took of its own session: a task running
        // elsewhere is verified there (issue 23).
        self.refuse_elsewhere(id)?;
        self.gate_of(owner, id)?;
        let _one = self.shared.control.lock();
        if origin == Origin::Agent {
            if let Some(e) = self.agent_turn_refusal(id) {
                return Err(e);
            }
        }
        let facts = self.shared.store.read(|c| verify::read_facts(c, id))?;
        if let Some(answer) = verify::replay(&facts, request) {
            answer?;
            return self.status(owner, id);
        }
        // Read again under the control lock: the revision checked is the one written against.
        let task = self.owned(owner, id)?;
        let now = self.shared.clock.now();
        let proof = match self
            .shared
            .evidence
            .lock()
            .lookup_kept(&request.evidence_id)
        {
            None => Proof::Missing,
            Some(r) if now >= r.expires => Proof::Expired,
            Some(r) => Proof::Valid(r),
        };
        // Claim the waiting session (no command may schedule it now) before anything is
        // written; every refusal leaves it as it was.
        {
            let mut pool = self.shared.pool.lock();
            let closed = pool.closed;
            let session = match pool.live.get(id) {
                Some(l) if closed || l.closing || l.cancel.is_cancelled() => {
                    verify::Session::Closed
                }
                Some(l) if l.scheduled || l.state != TaskState::WaitingInput => {
                    verify::Session::Busy
                }
                Some(_) => verify::Session::Waits,
                None => verify::Session::Closed,
            };
            verify::check(&task, owner, &facts, session, request, &proof)?;
            if let Some(l) = pool.live.get_mut(id) {
                l.closing = true;
                l.scheduled = true;
                l.state = TaskState::Running;
            }
        }
        let verification = Verification {
            by: "parent".into(),
            request: request.expected_request_id,
            evidence_id: request.evidence_id.clone(),
            at: self.shared.clock.wall_millis(),
        };
        let command_id = crate::ids::random_uuid();
        let (id2, req, at) = (id.to_string(), request.clone(), verification.at);
        let stored = command_id.and_then(|cid| {
            self.shared.writer.apply(move |tx| {
                let sql = |e| crate::store::sqlite_error("verify", e);
                records::accept_control(
                    tx,
                    &records::NewCommand {
                        task_id: &id2,
                        id: &cid,
                        origin: origin.as_str(),
                        kind: "verify",
                        text: Some(&req.instruction),
                        expected_revision: Some(req.expected_revision),
                    },
                    false,
                    at,
                )
                .map_err(sql)?;
                records::set_commands(
                    tx,
                    &id2,
                    &[cid],
                    "done",
                    Some(verify::VERIFIED),
                    Some(req.expected_request_id),
                    at,
                )
                .map_err(sql)?;
                records::set_control(
                    tx,
                    &id2,
                    "verification",
                    Some(&verify::stored(&verification)),
                )
                .map_err(sql)
            })
        });
        if let Err(e) = stored {
            // Nothing recorded: the session waits as before.
            let mut pool = self.shared.pool.lock();
            if let Some(l) = pool.live.get_mut(id) {
                l.closing = false;
                l.scheduled = false;
                l.state = TaskState::WaitingInput;
            }
            return Err(e);
        }
        self.finish(id, TaskState::Completed, verify::VERIFIED, None);
        self.status(owner, id)
    }

    /// Asks the host's verifier, if one is installed, about request `seq` of task `id` that
    /// just ended a completion candidate (on the task's slot, its browser free): `true`
    /// completes the task (verification by `host`), `false` / anything else leave it waiting
    /// with `VERIFICATION_FAILED` / `INVALID_CONTRACT`. Without fresh evidence it is not asked
    /// (the candidate waits for a parent).
    fn host_verify(&self, id: &str, seq: u32, text: &str) {
        let Some(verifier) = self.shared.verifier.read().clone() else {
            return;
        };
        let found = {
            let pool = self.shared.pool.lock();
            pool.live.get(id).and_then(|l| {
                let backend = l.target.as_ref().map(|t| Arc::clone(&t.backend))?;
                Some((l.owner.clone(), backend))
            })
        };
        let Some((owner, backend)) = found else {
            return;
        };
        let evidence = match self.evidence_on(&owner, id, true, Some(backend)) {
            Ok(e) => e,
            Err(e) => {
                log::warn!(
                    "the host verifier was not asked: no fresh evidence ({})",
                    e.code()
                );
                return;
            }
        };
        let input = VerifierInput {
            task_id: id.to_string(),
            request: seq,
            goal: text.to_string(),
            evidence,
        };
        let verdict = verify::ask(&verifier, &input);
        let (id2, now) = (id.to_string(), self.shared.clock.wall_millis());
        match verdict.reason() {
            None => {
                let v = Verification {
                    by: "host".into(),
                    request: seq,
                    evidence_id: input.evidence.evidence_id.clone(),
                    at: now,
                };
                let stored = self.shared.writer.write(Box::new(move |tx| {
                    records::set_control(tx, &id2, "verification", Some(&verify::stored(&v)))
                }));
                match stored {
                    Ok(()) => self.finish(id, TaskState::Completed, verify::VERIFIED, None),
                    Err(e) => log::warn!("a host verification not stored: {}", e.code()),
                }
            }
            Some(reason) => {
                if let Some(last) = self
                    .shared
                    .pool
                    .lock()
                    .live
                    .get_mut(id)
                    .and_then(|l| l.last.as_mut())
                {
                    last.reason = reason.to_string();
                }
                let stored = self.shared.writer.write(Box::new(move |tx| {
                    verify::set_request_reason(tx, &id2, seq, reason, now)
                }));
                if let Err(e) = stored {
                    log::warn!("a host verifier's verdict not stored: {}", e.code());
                }
            }
        }
    }
}

/// `user` or `agent`: who supplies a session's instructions.
fn controller_of(l: &Live) -> &'static str {
    if l.agent {
        "agent"
    } else {
        "user"
    }
}

/// The reaper: checks open computer sessions' connections when due and sweeps expired
/// sessions, about once a second of real time, until the service is closed or dropped.
fn reap(shared: std::sync::Weak<Shared>) {
    loop {
        let Some(s) = shared.upgrade() else {
            return;
        };
        {
            let mut pool = s.pool.lock();
            if pool.closed {
                return;
            }
            s.changed.wait_for(&mut pool, Duration::from_secs(1));
            if pool.closed {
                return;
            }
        }
        let service = TaskService { shared: s };
        service.check_computers();
        service.sweep();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Issue 21 item 6: the backends kept for `reconcile` are bounded, and past the bound the
    // oldest goes (not an arbitrary one).
    #[test]
    fn r_tsk_rcpt_kept_backends_evict_the_oldest() {
        let mut kept = Kept::<u32>::default();
        for i in 0..MAX_KEPT_BACKENDS as u32 {
            kept.insert(format!("t{i}"), i);
        }
        kept.remove("t5");
        kept.insert("t1".into(), 1); // kept again: keeps its place
        kept.insert("new-a".into(), 1000); // fills the place t5 left
        assert_eq!(kept.by_task.len(), MAX_KEPT_BACKENDS);
        assert_eq!(kept.get("t0"), Some(0));
        kept.insert("new-b".into(), 1001);
        assert_eq!(kept.get("t0"), None, "the oldest went first");
        assert_eq!(kept.get("t1"), Some(1));
        kept.insert("new-c".into(), 1002);
        assert_eq!((kept.get("t1"), kept.get("t2")), (None, Some(2)));
        for i in 0..10 * MAX_KEPT_BACKENDS as u32 {
            kept.insert(format!("n{i}"), i);
            if i % 2 == 0 {
                kept.remove(&format!("n{i}"));
            }
        }
        assert!(kept.by_task.len() <= MAX_KEPT_BACKENDS);
        assert!(kept.order.len() <= 2 * MAX_KEPT_BACKENDS + 1);
        assert!(kept.get("new-b").is_none());
    }
}
