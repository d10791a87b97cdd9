//! The Jev client (R-JEV): every evaluation a host, a task or a tool makes goes through
//! [`crate::Gateway::evaluate`], which runs, in this order:
//!
//! access check (R-JEV-ACCESS) → request checks (size, questions, requestId; R-JEV-REQ) →
//! request ledger (R-JEV-LEDGER) → limiter and queue (R-JEV-LIMIT) → credential resolution
//! (R-CFG-KEYFILE) → access check again → provider (R-PRV) → validator (R-VAL) → access check
//! again (a revocation discards the answer) → usage record (R-JEV-USAGE).
//!
//! One deadline (`timeoutMs`, from the call's start on the gateway clock) covers the queue wait,
//! the credential resolution (a key file is opened non-blocking and must be a regular file), the
//! I/O and the `local` heuristic (which reads the clock as it works). When the caller stops
//! waiting (cancellation, its deadline) or the gateway closes, an HTTP provider call's socket is
//! shut down, so its I/O thread returns at once and frees its concurrency slot (issue 12 item
//! 5); a host callback cannot be interrupted and keeps its slot until it returns. The call
//! keeps the configuration generation it started with (R-CFG-RELOAD); access is re-read from the
//! live configuration before dispatch and before returning. There are no automatic retries and no fallback to another provider.
//!
//! The usage record is committed before `evaluate` returns. It carries the provider's reported
//! usage and billing whenever the provider answered — also when the evaluation then failed
//! (validation, a mismatched id or model, a revocation), and, when the caller timed out or
//! cancelled first, once a host callback's late answer arrives (an HTTP call is aborted then: a
//! provider that charged for it cannot report it).
//!
//! This module must never log or keep state, questions, answers' text, provider bodies or
//! credentials; errors carry codes and reasons written by jevgate.

use super::content::Content;
use super::context::JevContext;
use super::http::{Abort, Auth, Http, Post};
use super::ledger::{Ledger, LedgerRefusal};
use super::limiter::{Limiter, WaitEnd};
use super::limits::{Limits, RequestError};
use super::local::{local_evaluate_until, LOCAL_MODEL};
use super::pool::IoPool;
use super::provider_text::{bounded_text, provider_text, MAX_LEGEND_TEXT_BYTES};
use super::question::{Questions, QuestionsWire};
use super::request::check_request_id;
use super::response::{Answer, EvalBilling, Usage};
use super::usage::{Charged, LateUsage, UsageLog, UsagePage, UsageRecord};
use super::validate::validate_response;
use crate::clock::Instant;
use crate::config::{
    parse_endpoint, resolve_api_url, Config, ConfigSnapshot, CredentialRef, Provider, Secret,
    UPSTREAM_IDENTITY_ENV,
};
use crate::error::RetryInfo;
use crate::store::Store;
use crate::CancelToken;
use crate::{Error, Result};
use parking_lot::{Condvar, Mutex, RwLock};
use serde::ser::{SerializeMap, SerializeStruct};
use serde::{Deserialize, Serialize, Serializer};
use std::sync::Arc;
use std::time::Duration;

/// A host-supplied provider (`provider: "callback"`, R-PRV): receives the request JSON
/// (`{request_id, model?, state, questions}`, the compatible-upstream body) and returns the
/// response JSON (`{model, answers, usage, billing?}`), which goes through the same validator as
/// any provider's. It runs on a gateway I/O thread; a returned error should be a Jev error
/// (`JEV_PROVIDER_FAILURE`, `JEV_RATE_LIMITED`, …) and is passed through as is.
///
/// The C and Python surfaces wrap a function pointer + `user_data` or a callable in one of
/// these.
pub type JevCallback = Arc<dyn Fn(&[u8]) -> Result<Vec<u8>> + Send + Sync>;

/// The default TypeSafe base URL (`/v1/systemone` is appended, R-JEV-WIRE).
pub const TYPESAFE_BASE_URL: &str = "https://api.typesafe.ai";

/// One evaluation call: `{agentId, sessionId?, taskId?, requestId?, state, questions}`.
///
/// ```
/// use jevgate::jev::{EvaluateCall, Limits, Question, Questions};
/// let questions = Questions::new([Question::noul("greeting", "Is this a greeting?")],
///     &Limits::default()).unwrap();
/// let call = EvaluateCall::new("assistant", "Hello", questions).with_request_id("r-1");
/// assert_eq!(call.request_id.as_deref(), Some("r-1"));
/// let parsed = EvaluateCall::from_json(br#"{"agentId":"assistant","sessionId":"s1",
///   "state":"Hello","questions":{"greeting":{"type":"noul"}}}"#, &Limits::default()).unwrap();
/// assert_eq!(parsed.session_id.as_deref(), Some("s1"));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EvaluateCall {
    /// The agent the evaluation is for (access is checked for it).
    pub agent_id: String,
    /// The caller's session, recorded in usage.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The caller's task, recorded in usage.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// Caller-supplied id (1..=256 printable ASCII, no spaces); enters the ledger.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// What the questions are about.
    pub state: Content,
    /// The questions, in order.
    pub questions: Questions,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct CallWire {
    agent_id: String,
    #[serde(default)]
    session_id: Option<String>,
    #[serde(default)]
    task_id: Option<String>,
    #[serde(default)]
    request_id: Option<String>,
    state: Content,
    questions: QuestionsWire,
}

impl EvaluateCall {
    /// A call without session, task or request id.
    pub fn new(
        agent_id: impl Into<String>,
        state: impl Into<Content>,
        questions: Questions,
    ) -> EvaluateCall {
        EvaluateCall {
            agent_id: agent_id.into(),
            session_id: None,
            task_id: None,
            request_id: None,
            state: state.into(),
            questions,
        }
    }

    /// Sets the caller-supplied request id.
    pub fn with_request_id(mut self, id: impl Into<String>) -> EvaluateCall {
        self.request_id = Some(id.into());
        self
    }

    /// Sets the session id.
    pub fn with_session_id(mut self, id: impl Into<String>) -> EvaluateCall {
        self.session_id = Some(id.into());
        self
    }

    /// Sets the task id.
    pub fn with_task_id(mut self, id: impl Into<String>) -> EvaluateCall {
        self.task_id = Some(id.into());
        self
    }

    /// Parses a call from UTF-8 JSON; unknown members are rejected (`JEV_INVALID_REQUEST`).
    /// The size limit applies to `json` itself, before parsing.
    pub fn from_json(json: &[u8], limits: &Limits) -> Result<EvaluateCall> {
        if json.len() > limits.max_input_bytes {
            return Err(too_large(json.len(), limits).into());
        }
        let mut de = serde_json::Deserializer::from_slice(json);
        let wire: CallWire = serde_path_to_error::deserialize(&mut de)
            .map_err(|e| RequestError::from_path_error(&e))?;
        de.end()
            .map_err(|e| RequestError::from_serde(String::new(), &e))?;
        let questions =
            Questions::new(wire.questions.0, limits).map_err(|e| e.prefixed("questions"))?;
        let call = EvaluateCall {
            agent_id: wire.agent_id,
            session_id: wire.session_id,
            task_id: wire.task_id,
            request_id: wire.request_id,
            state: wire.state,
            questions,
        };
        call.check_ids()?;
        Ok(call)
    }

    fn check_ids(&self) -> Result<(), RequestError> {
        if let Some(id) = &self.request_id {
            check_request_id(id)?;
        }
        for (path, v) in [
            ("agentId", Some(&self.agent_id)),
            ("sessionId", self.session_id.as_ref()),
            ("taskId", self.task_id.as_ref()),
        ] {
            if let Some(v) = v {
                if v.is_empty() || v.len() > 256 || v.chars().any(char::is_control) {
                    return Err(RequestError::new(
                        path,
                        "must be 1 to 256 characters without control characters",
                    ));
                }
            }
        }
        Ok(())
    }

    /// The request checks of R-JEV-REQ under `limits`: ids, question count, and the UTF-8 JSON
    /// size of `{requestId?, agentId, state, questions}`.
    fn check(&self, limits: &Limits) -> Result<(), RequestError> {
        self.check_ids()?;
        self.questions.check_count(limits)?;
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct View<'a> {
            #[serde(skip_serializing_if = "Option::is_none")]
            request_id: Option<&'a str>,
            agent_id: &'a str,
            state: &'a Content,
            questions: &'a Questions,
        }
        let mut n = ByteCounter(0);
        serde_json::to_writer(
            &mut n,
            &View {
                request_id: self.request_id.as_deref(),
                agent_id: &self.agent_id,
                state: &self.state,
                questions: &self.questions,
            },
        )
        .map_err(|_| RequestError::new("", "cannot be encoded as JSON"))?;
        if n.0 > limits.max_input_bytes {
            return Err(too_large(n.0, limits));
        }
        Ok(())
    }
}

fn too_large(len: usize, limits: &Limits) -> RequestError {
    RequestError::new(
        "",
        format!(
            "request is {len} bytes of JSON, more than maxInputBytes ({})",
            limits.max_input_bytes
        ),
    )
}

struct ByteCounter(usize);

impl std::io::Write for ByteCounter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// One validated answer, owned. Serializes to the wire shape of SPEC §3.2.
#[derive(Debug, Clone, PartialEq)]
pub enum EvalAnswer {
    /// `{type: "noul", noul}`: the yes probability.
    Noul {
        /// Probability of yes.
        noul: f64,
    },
    /// `{type: "choice", choice, probabilities, confidence}`.
    Choice {
        /// The chosen option key.
        choice: String,
        /// A probability per option, in criteria order.
        probabilities: Vec<(String, f64)>,
        /// The provider's confidence.
        confidence: f64,
    },
    /// `{type: "score", score, levels, legend, confidence}`.
    Score {
        /// Σ i·pᵢ.
        score: f64,
        /// A probability per level.
        levels: Vec<f64>,
        /// One label per level, as the provider wrote it (cleaned, at most
        /// [`MAX_LEGEND_TEXT_BYTES`] each).
        legend: Vec<String>,
        /// The provider's confidence.
        confidence: f64,
    },
}

impl EvalAnswer {
    fn from_answer(a: Answer<'_>) -> EvalAnswer {
        match a {
            Answer::Noul { noul } => EvalAnswer::Noul { noul },
            Answer::Choice(c) => EvalAnswer::Choice {
                choice: c.choice().to_owned(),
                probabilities: c.probabilities().map(|(k, p)| (k.to_owned(), p)).collect(),
                confidence: c.confidence(),
            },
            Answer::Score(s) => EvalAnswer::Score {
                score: s.score(),
                levels: s.levels().to_vec(),
                // provider text, returned to the caller: cleaned and bounded (item 9)
                legend: s
                    .legend()
                    .map(|l| bounded_text(&l, MAX_LEGEND_TEXT_BYTES))
                    .collect(),
                confidence: s.confidence(),
            },
        }
    }
}

impl Serialize for EvalAnswer {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            EvalAnswer::Noul { noul } => {
                let mut st = s.serialize_struct("Noul", 2)?;
                st.serialize_field("type", "noul")?;
                st.serialize_field("noul", noul)?;
                st.end()
            }
            EvalAnswer::Choice {
                choice,
                probabilities,
                confidence,
            } => {
                struct Probs<'a>(&'a [(String, f64)]);
                impl Serialize for Probs<'_> {
                    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                        let mut m = s.serialize_map(Some(self.0.len()))?;
                        for (k, p) in self.0 {
                            m.serialize_entry(k, p)?;
                        }
                        m.end()
                    }
                }
                let mut st = s.serialize_struct("Choice", 4)?;
                st.serialize_field("type", "choice")?;
                st.serialize_field("choice", choice)?;
                st.serialize_field("probabilities", &Probs(probabilities))?;
                st.serialize_field("confidence", confidence)?;
                st.end()
            }
            EvalAnswer::Score {
                score,
                levels,
                legend,
                confidence,
            } => {
                let mut st = s.serialize_struct("Score", 5)?;
                st.serialize_field("type", "score")?;
                st.serialize_field("score", score)?;
                st.serialize_field("levels", levels)?;
                st.serialize_field("legend", legend)?;
                st.serialize_field("confidence", confidence)?;
                st.end()
            }
        }
    }
}

/// A validated evaluation: `{requestId, requestedModel, model, answers, usage, billing?}` (the
/// seed's gateway response shape).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Evaluation {
    /// The caller's request id, or the one jevgate generated.
    pub request_id: String,
    /// The model id sent, exactly as configured (a catalog prefix is never stripped).
    pub requested_model: String,
    /// The model the provider reports having used (bounded and cleaned by `provider_text`:
    /// at most [`MAX_PROVIDER_TEXT_BYTES`](super::MAX_PROVIDER_TEXT_BYTES), no control characters).
    pub model: String,
    /// One answer per question, in question order.
    #[serde(serialize_with = "answers_map")]
    pub answers: Vec<(String, EvalAnswer)>,
    /// Reported token usage.
    pub usage: Usage,
    /// Reported billing, when sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub billing: Option<EvalBilling>,
}

fn answers_map<S: Serializer>(a: &[(String, EvalAnswer)], s: S) -> Result<S::Ok, S::Error> {
    let mut m = s.serialize_map(Some(a.len()))?;
    for (k, v) in a {
        m.serialize_entry(k, v)?;
    }
    m.end()
}

impl Evaluation {
    /// The answer to question `key`.
    pub fn answer(&self, key: &str) -> Option<&EvalAnswer> {
        self.answers.iter().find(|(k, _)| k == key).map(|(_, a)| a)
    }

    /// The evaluation as JSON (the gateway response shape).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// Where and how one evaluation is sent, resolved before dispatch.
enum Dispatch {
    Local,
    Callback(JevCallback),
    Http { url: String, key: Secret },
}

/// Where the I/O thread leaves a provider result for the waiting caller.
#[derive(Default)]
struct SlotState {
    result: Option<Result<Vec<u8>>>,
    /// The caller stopped waiting (deadline, cancellation): a late answer's usage goes to
    /// [`LateUsage`] instead.
    abandoned: bool,
}

type Slot = Arc<(Mutex<SlotState>, Condvar)>;

/// A provider call's body (or error), and the late-usage handle when the caller stopped waiting
/// before the call ended.
type Dispatched = (Result<Vec<u8>>, Option<Arc<LateUsage>>);

/// Per-gateway Jev client state. Owned by the gateway; its threads are joined on close.
pub(crate) struct JevClient {
    limiter: Arc<Limiter>,
    ledger: Mutex<Ledger>,
    /// The fleet's ledger when the store is shared (issue 23): used instead of `ledger`.
    shared_ledger: Option<super::shared_ledger::SharedLedger>,
    callback: RwLock<Option<JevCallback>>,
    pub(crate) http: Http,
    pool: IoPool,
    usage: UsageLog,
    hash_key: ring::hmac::Key,
}

impl std::fmt::Debug for JevClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("JevClient")
    }
}

fn provider_name(p: Option<Provider>) -> &'static str {
    match p {
        Some(Provider::Typesafe) => "typesafe",
        Some(Provider::Upstream) => "upstream",
        Some(Provider::Callback) => "callback",
        Some(Provider::Local) => "local",
        None => "none",
    }
}

/// Why `agent_id` may not evaluate under `config` (R-JEV-ACCESS), or `None`.
fn access_refusal(config: &Config, agent_id: &str) -> Option<&'static str> {
    config.jev_refusal(agent_id)
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

struct Draft {
    request_id_hash: Option<String>,
    requested_model: Option<String>,
    /// What the provider reported when it answered but the evaluation failed afterwards.
    charged: Option<Charged>,
    /// Set when the caller stopped waiting while the provider call was still running.
    late: Option<Arc<LateUsage>>,
}

impl JevClient {
    pub(crate) fn open(
        store: Arc<Store>,
        extra_roots: &[Vec<u8>],
        shared: Option<&crate::store::SharedStore>,
    ) -> Result<JevClient> {
        // Usage records' request-id hashes: under the fleet's secret on the shared store, so
        // one request id hashes the same in every process (issue 23 item 3, R-JEV-USAGE);
        // else the gateway's own.
        let secret = match shared {
            #[cfg(feature = "postgres")]
            Some(s) => s.0.fleet_secret()?,
            _ => store.gateway_secret()?,
        };
        Ok(JevClient {
            limiter: Arc::new(Limiter::default()),
            ledger: Mutex::new(Ledger::new()),
            shared_ledger: super::shared_ledger::SharedLedger::open(shared)?,
            callback: RwLock::new(None),
            http: Http::new(extra_roots),
            pool: IoPool::default(),
            usage: UsageLog::start(super::usage::UsageDb::open(Arc::clone(&store), shared))?,
            hash_key: ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &secret),
        })
    }

    pub(crate) fn set_callback(&self, cb: Option<JevCallback>) {
        *self.callback.write() = cb;
    }

    pub(crate) fn usage(&self, agent_id: &str, limit: u32, offset: u64) -> Result<UsagePage> {
        self.usage.page(agent_id, limit, offset)
    }

    pub(crate) fn load(&self) -> (usize, usize) {
        self.limiter.counts()
    }

    pub(crate) fn close(&self) {
        // in-flight HTTP calls end now, so joining the I/O threads does not wait for timeoutMs
        self.http.close();
        self.pool.close();
        self.usage.close();
    }

    /// Keyed hash of `label \0 agent \0 id`, 32 hex digits.
    fn scoped_hash(&self, label: &str, agent: &str, id: &str) -> String {
        let mut ctx = ring::hmac::Context::with_key(&self.hash_key);
        for part in [label, agent, id] {
            ctx.update(part.as_bytes());
            ctx.update(&[0]);
        }
        hex(&ctx.sign().as_ref()[..16])
    }

    /// Runs one evaluation and appends its usage record.
    pub(crate) fn evaluate(
        &self,
        ctx: &JevContext<'_>,
        call: &EvaluateCall,
        cancel: &CancelToken,
    ) -> Result<Evaluation> {
        let clock = ctx.clock();
        let started = clock.now();
        let snap = ctx.config();
        let mut draft = Draft {
            request_id_hash: None,
            requested_model: None,
            charged: None,
            late: None,
        };
        let result = self.run(ctx, &snap, call, cancel, started, &mut draft);
        if ctx.is_closed() {
            // no store to record into
            return result;
        }
        let (outcome, validation_reason) = match &result {
            Ok(_) => ("OK", None),
            Err(e) => (e.code(), e.validation_reason()),
        };
        let ok = result.as_ref().ok();
        // R-JEV-USAGE: a provider that answered may have charged, even when the evaluation
        // failed afterwards; its reported usage and billing are recorded either way.
        let charged = draft.charged.unwrap_or_default();
        let record = UsageRecord {
            at_ms: clock.wall_millis(),
            agent_id: call.agent_id.clone(),
            session_id: call.session_id.clone(),
            task_id: call.task_id.clone(),
            request_id_hash: draft.request_id_hash,
            generation: snap.generation,
            provider: provider_name(snap.config.gateway.jev.provider).to_owned(),
            // saturating: a host's clock may be moved by any amount during the call
            latency_ms: u64::try_from(clock.now().saturating_duration_since(started).as_millis())
                .unwrap_or(u64::MAX),
            outcome: outcome.to_owned(),
            validation_reason: validation_reason.map(str::to_owned),
            requested_model: draft.requested_model,
            model: ok.map(|e| e.model.clone()).or(charged.model),
            usage: ok.map(|e| e.usage).or(charged.usage),
            billing: ok.and_then(|e| e.billing.clone()).or(charged.billing),
        };
        self.usage.append(record, draft.late);
        result
    }

    fn run(
        &self,
        ctx: &JevContext<'_>,
        snap: &ConfigSnapshot,
        call: &EvaluateCall,
        cancel: &CancelToken,
        started: Instant,
        draft: &mut Draft,
    ) -> Result<Evaluation> {
        ctx.check_open()?;
        let config = &snap.config;
        let jev = &config.gateway.jev;
        // R-JEV-ACCESS (before anything else)
        if let Some(reason) = access_refusal(config, &call.agent_id) {
            return Err(Error::JevAccessDenied {
                reason: reason.into(),
            });
        }
        // R-JEV-REQ
        let limits = Limits {
            max_questions: jev.max_questions as usize,
            max_input_bytes: jev.max_input_bytes as usize,
        };
        call.check(&limits)?;
        let provider = jev.provider.ok_or_else(|| {
            Error::config("gateway.jev.provider", "is required when enabled is true")
        })?;
        let requested_model = match (&jev.model, provider) {
            (Some(m), _) => m.clone(),
            (None, Provider::Local) => LOCAL_MODEL.to_owned(),
            (None, _) => "callback".to_owned(),
        };
        draft.requested_model = Some(requested_model.clone());
        // Request id: the caller's (scoped hash sent upstream) or a fresh random one.
        let (request_id, wire_id) = match &call.request_id {
            Some(id) => {
                draft.request_id_hash = Some(self.scoped_hash("usage", &call.agent_id, id));
                (
                    id.clone(),
                    format!("jev-{}", self.scoped_hash("upstream", &call.agent_id, id)),
                )
            }
            None => {
                let mut raw = [0u8; 16];
                ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut raw)
                    .map_err(|_| Error::Internal {
                        reason: "no randomness for a request id".into(),
                    })?;
                let id = format!("jev-{}", hex(&raw));
                draft.request_id_hash = Some(self.scoped_hash("usage", &call.agent_id, &id));
                (id.clone(), id)
            }
        };
        // R-JEV-LEDGER: only caller-supplied ids enter it.
        let clock = ctx.clock();
        let mut ledger_entry = None;
        if let Some(id) = &call.request_id {
            // Across a fleet the shared ledger decides (an unreachable store is an error
            // before anything is sent).
            let refusal = match &self.shared_ledger {
                Some(shared) => shared.insert(&call.agent_id, id)?,
                None => self.ledger.lock().insert(&call.agent_id, id, clock.now()),
            };
            match refusal {
                Ok(()) => ledger_entry = Some(id.as_str()),
                Err(LedgerRefusal::Conflict) => {
                    return Err(Error::RequestConflict {
                        reason:
                            "the requestId was already used by this caller in the last five minutes"
                                .into(),
                    })
                }
                Err(LedgerRefusal::CallerFull(wait)) | Err(LedgerRefusal::Full(wait)) => {
                    return Err(Error::RateLimited {
                        reason: "the local request ledger is full".into(),
                        retry: RetryInfo {
                            retry_after: Some(wait),
                            reset_at: None,
                        },
                    })
                }
            }
        }
        // Until dispatch, a local rejection forgets the id: nothing was sent.
        let undo = |e: Error| -> Error {
            if let Some(id) = ledger_entry {
                match &self.shared_ledger {
                    Some(shared) => shared.release(&call.agent_id, id),
                    None => self.ledger.lock().release(&call.agent_id, id),
                }
            }
            e
        };
        let timeout_ms = jev.timeout_ms;
        let deadline = started + Duration::from_millis(timeout_ms);
        if cancel.is_cancelled() {
            return Err(undo(Error::Cancelled));
        }
        // R-JEV-LIMIT
        let slot = self
            .limiter
            .acquire(
                jev.max_concurrent_requests as usize,
                jev.max_queue_size as usize,
                clock,
                deadline,
                cancel,
            )
            .map_err(|end| {
                undo(match end {
                    WaitEnd::Full => Error::QueueFull,
                    WaitEnd::Deadline => Error::Timeout { timeout_ms },
                    WaitEnd::Cancelled => Error::Cancelled,
                })
            })?;
        // Credentials and endpoint, resolved per request (R-CFG-KEYFILE).
        let dispatch = self.resolve(config, provider).map_err(undo)?;
        if clock.now() >= deadline {
            return Err(undo(Error::Timeout { timeout_ms }));
        }
        if cancel.is_cancelled() {
            return Err(undo(Error::Cancelled));
        }
        // R-JEV-ACCESS again, on the live configuration, right before dispatch.
        if let Some(reason) = access_refusal(&ctx.config().config, &call.agent_id) {
            return Err(undo(Error::JevAccessDenied {
                reason: reason.into(),
            }));
        }
        let body = match &dispatch {
            // The heuristic runs on this thread under the same deadline (and cancellation).
            Dispatch::Local => local_evaluate_until(&call.state, &call.questions, &|| {
                cancel.is_cancelled() || clock.now() >= deadline
            })
            .map_err(|_| {
                if cancel.is_cancelled() {
                    Error::Cancelled
                } else {
                    Error::Timeout { timeout_ms }
                }
            })?,
            other => {
                let wire_body = wire(
                    provider,
                    &wire_id,
                    jev.model.as_deref(),
                    &call.state,
                    &call.questions,
                )?;
                let (result, late) =
                    self.dispatch(other, wire_body, ctx, deadline, timeout_ms, cancel, slot)?;
                draft.late = late;
                result?
            }
        };
        // R-VAL: every answer through the validator.
        let response = match validate_response(&call.questions, &body) {
            Ok(r) => r,
            Err(e) => {
                draft.charged = Some(Charged::from_body(&body));
                return Err(e.into());
            }
        };
        let charged = || Charged {
            model: Some(provider_text(response.model())),
            usage: Some(response.usage()),
            billing: response.billing().map(|b| EvalBilling {
                charged_credits: b.charged_credits,
                rate_version: b.rate_version.as_deref().map(provider_text),
            }),
        };
        if provider == Provider::Upstream {
            if response.request_id().is_some_and(|id| id != wire_id) {
                draft.charged = Some(charged());
                return Err(Error::ProviderFailure {
                    reason: "the upstream answered another request (request_id differs)".into(),
                });
            }
            if response
                .requested_model()
                .is_some_and(|m| m != requested_model)
            {
                draft.charged = Some(charged());
                return Err(Error::ProviderFailure {
                    reason: "the upstream answered for another model (requested_model differs)"
                        .into(),
                });
            }
        }
        let evaluation = Evaluation {
            request_id,
            requested_model,
            // Provider text is bounded and cleaned before it is returned or stored (item 9).
            model: provider_text(response.model()),
            answers: response
                .answers()
                .iter()
                .map(|(k, a)| (k.to_owned(), EvalAnswer::from_answer(a)))
                .collect(),
            usage: response.usage(),
            billing: response.billing().map(|b| EvalBilling {
                charged_credits: b.charged_credits,
                rate_version: b.rate_version.as_deref().map(provider_text),
            }),
        };
        // R-JEV-ACCESS before returning: a revocation in flight discards the answer (its usage
        // is still recorded: the provider answered).
        if let Some(reason) = access_refusal(&ctx.config().config, &call.agent_id) {
            draft.charged = Some(Charged {
                model: Some(evaluation.model.clone()),
                usage: Some(evaluation.usage),
                billing: evaluation.billing.clone(),
            });
            return Err(Error::JevAccessDenied {
                reason: format!("{reason} (revoked while the evaluation was in flight; the answer was discarded)"),
            });
        }
        Ok(evaluation)
    }

    fn resolve(&self, config: &Config, provider: Provider) -> Result<Dispatch> {
        let jev = &config.gateway.jev;
        let env = |name: &str| std::env::var_os(name);
        match provider {
            Provider::Local => Ok(Dispatch::Local),
            Provider::Callback => self
                .callback
                .read()
                .clone()
                .map(Dispatch::Callback)
                .ok_or_else(|| {
                    Error::config(
                        "gateway.jev.provider",
                        "the callback provider is configured but no callback is registered",
                    )
                }),
            Provider::Typesafe => {
                let base = jev.base_url.as_deref().unwrap_or(TYPESAFE_BASE_URL);
                let base = parse_endpoint(base)
                    .map_err(|why| Error::config("gateway.jev.baseUrl", why))?;
                let key = config
                    .jev_credential()
                    .ok_or_else(|| Error::MissingCredentials {
                        reason: "no credential reference".into(),
                    })?
                    .resolve(&env)?;
                Ok(Dispatch::Http {
                    url: resolve_api_url(&base, "/v1", "/systemone"),
                    key,
                })
            }
            Provider::Upstream => {
                let (base, key) = match (&jev.base_url, config.jev_credential()) {
                    (Some(base), Some(cred)) => (
                        parse_endpoint(base)
                            .map_err(|why| Error::config("gateway.jev.baseUrl", why))?,
                        cred.resolve(&env)?,
                    ),
                    _ => upstream_identity(&env)?,
                };
                Ok(Dispatch::Http {
                    url: resolve_api_url(&base, "/v1", "/jev/evaluate"),
                    key,
                })
            }
        }
    }

    #[allow(clippy::too_many_arguments)] // reason: one private call site; a struct would only rename them
    fn dispatch(
        &self,
        dispatch: &Dispatch,
        body: Vec<u8>,
        ctx: &JevContext<'_>,
        deadline: Instant,
        timeout_ms: u64,
        cancel: &CancelToken,
        slot: super::limiter::Slot,
    ) -> Result<Dispatched> {
        let clock = ctx.clock();
        let result: Slot = Arc::new((Mutex::new(SlotState::default()), Condvar::new()));
        let late = Arc::new(LateUsage::default());
        // ends the HTTP exchange when the caller stops waiting (issue 12 item 5)
        let abort = Arc::new(Abort::default());
        let job: Box<dyn FnOnce() -> Result<Vec<u8>> + Send> = match dispatch {
            // answered inline by `run`; never handed to an I/O thread
            Dispatch::Local => Box::new(|| {
                Err(Error::Internal {
                    reason: "the local provider is not dispatched".into(),
                })
            }),
            Dispatch::Callback(cb) => {
                let cb = Arc::clone(cb);
                Box::new(move || cb(&body))
            }
            Dispatch::Http { url, key } => {
                let (http, url, key) = (self.http.clone(), url.clone(), key.clone());
                let abort = Arc::clone(&abort);
                let remaining = deadline.saturating_duration_since(clock.now());
                let wall = clock.wall();
                let clock = Arc::clone(clock);
                Box::new(move || {
                    http.post_json(&Post {
                        url: &url,
                        auth: Auth::Bearer,
                        key: &key,
                        extra_headers: &[],
                        body: &body,
                        timeout: remaining,
                        clock: &clock,
                        wall,
                        timeout_ms,
                        abort: Some(&abort),
                    })
                })
            }
        };
        let out = Arc::clone(&result);
        let (late_io, store) = (Arc::clone(&late), self.usage.store().clone());
        self.pool.submit(Box::new(move || {
            let r =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(job)).unwrap_or_else(|_| {
                    Err(Error::ProviderFailure {
                        reason: "the provider panicked".into(),
                    })
                });
            // The slot is held until the I/O really ends, even if the caller stopped waiting.
            drop(slot);
            let mut st = out.0.lock();
            if st.abandoned {
                drop(st);
                // R-JEV-USAGE: the caller timed out or cancelled, but the provider answered (and
                // may have charged): its usage completes the caller's record.
                if let Ok(body) = &r {
                    late_io.answered(&store, Charged::from_body(body));
                }
                return;
            }
            st.result = Some(r);
            drop(st);
            out.1.notify_all();
        }))?;
        let waker = {
            let (r, abort) = (Arc::clone(&result), Arc::clone(&abort));
            cancel.on_cancel(move || {
                abort.abort();
                drop(r.0.lock());
                r.1.notify_all();
            })
        };
        let mut guard = result.0.lock();
        let outcome = loop {
            if let Some(r) = guard.result.take() {
                break Ok(r);
            }
            if cancel.is_cancelled() {
                break Err(Error::Cancelled);
            }
            let now = clock.now();
            if now >= deadline {
                break Err(Error::Timeout { timeout_ms });
            }
            result.1.wait_for(&mut guard, deadline - now);
        };
        let late = match outcome {
            Ok(_) => None,
            Err(_) => {
                guard.abandoned = true;
                // cancelled or past the caller's deadline (the gateway clock, which the socket's
                // own deadline does not follow): the socket is shut down, the slot freed
                abort.abort();
                Some(late)
            }
        };
        drop(guard);
        drop(waker);
        Ok((outcome.and_then(|r| r), late))
    }
}

/// The provider body (R-JEV-WIRE): TypeSafe `{model, state, questions}`; upstream and callback
/// `{request_id, model, state, questions}`.
fn wire(
    provider: Provider,
    request_id: &str,
    model: Option<&str>,
    state: &Content,
    questions: &Questions,
) -> Result<Vec<u8>> {
    #[derive(Serialize)]
    struct Wire<'a> {
        #[serde(skip_serializing_if = "Option::is_none")]
        request_id: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        model: Option<&'a str>,
        state: &'a Content,
        questions: &'a Questions,
    }
    let request_id = (provider != Provider::Typesafe).then_some(request_id);
    serde_json::to_vec(&Wire {
        request_id,
        model,
        state,
        questions,
    })
    .map_err(|_| Error::Internal {
        reason: "cannot encode the provider request".into(),
    })
}

/// The upstream identity group from the gateway's environment: `ANTHROPIC_BASE_URL` with one of
/// `ANTHROPIC_AUTH_TOKEN`, `ANTHROPIC_API_KEY`, `CLAUDE_CODE_OAUTH_TOKEN` — both or nothing,
/// never combined with another identity.
fn upstream_identity(
    env: &dyn Fn(&str) -> Option<std::ffi::OsString>,
) -> Result<(crate::config::EndpointUrl, Secret)> {
    // One list (config::UPSTREAM_IDENTITY_ENV) for this resolver, doctor and secret_env_names.
    let [base_name, creds @ ..] = UPSTREAM_IDENTITY_ENV;
    let base = env(base_name).and_then(|v| v.into_string().ok());
    let cred = creds
        .into_iter()
        .find(|n| env(n).is_some_and(|v| !v.is_empty()));
    match (base, cred) {
        (Some(base), Some(name)) => {
            let base = parse_endpoint(&base).map_err(|why| Error::config("ANTHROPIC_BASE_URL", why))?;
            let key = CredentialRef::Env(name.to_owned()).resolve(env)?;
            Ok((base, key))
        }
        _ => Err(Error::MissingCredentials {
            reason: "the upstream identity group (ANTHROPIC_BASE_URL with ANTHROPIC_AUTH_TOKEN, ANTHROPIC_API_KEY or CLAUDE_CODE_OAUTH_TOKEN) is incomplete".into(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::ffi::OsString;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k: &str| map.get(k).map(OsString::from)
    }

    // Seed 003 "Configure a compatible upstream": the identity group is a URL and a usable
    // credential together, never combined with another identity's values.
    #[test]
    fn upstream_identity_group_needs_both_url_and_credential() {
        let (base, key) = upstream_identity(&env_of(&[
            ("ANTHROPIC_BASE_URL", "https://gw.example/deploy"),
            ("ANTHROPIC_AUTH_TOKEN", "tok"),
        ]))
        .unwrap();
        assert_eq!(
            resolve_api_url(&base, "/v1", "/jev/evaluate"),
            "https://gw.example/deploy/v1/jev/evaluate"
        );
        assert_eq!(key.expose(), "tok");
        for env in [
            env_of(&[("ANTHROPIC_BASE_URL", "https://gw.example")]),
            env_of(&[("ANTHROPIC_API_KEY", "k")]),
            env_of(&[]),
        ] {
            let err = upstream_identity(&env).unwrap_err();
            assert_eq!(err.code(), "JEV_MISSING_CREDENTIALS");
        }
        let err = upstream_identity(&env_of(&[
            ("ANTHROPIC_BASE_URL", "http://example.com"),
            ("ANTHROPIC_API_KEY", "k"),
        ]))
        .unwrap_err();
        assert_eq!(err.code(), "JEV_INVALID_CONFIGURATION");
    }

    #[test]
    fn access_refusals_name_the_failing_check() {
        let cfg = |j: &str| Config::from_json_str(j).unwrap();
        assert_eq!(access_refusal(&cfg("{}"), "a"), Some("Jev is not enabled"));
        let c = cfg(
            r#"{"gateway":{"jev":{"enabled":true,"provider":"local","allowedAgentIds":["a","b"]}},"agents":[{"id":"b","jev":{"enabled":false}}]}"#,
        );
        assert_eq!(access_refusal(&c, "a"), None);
        assert_eq!(
            access_refusal(&c, "b"),
            Some("Jev is disabled for this agent")
        );
        assert_eq!(
            access_refusal(&c, "z"),
            Some("the agent is not in allowedAgentIds")
        );
    }
}
