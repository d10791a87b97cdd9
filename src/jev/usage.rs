//! Usage records (R-JEV-USAGE): one per evaluation, success or failure, in the SQLite store —
//! or, when `gateway.store.kind` is `"postgres"`, in the store the fleet shares (issue 23 item
//! 3: every process reads every process's records; the statements are the same on both engines,
//! through `store::db`); the newest 10,000 are kept.
//!
//! A record holds metadata only — agent, session, task, a keyed hash of the request id,
//! latency, outcome code, models, reported usage and billing. It must never hold state,
//! questions, answers' text, page text, provider bodies or credentials (R-LOG).
//!
//! Each record is committed before its `evaluate` returns (`synchronous=FULL`): once a call has
//! returned, its record survives a crash (issue 12 item 10; the old 50 ms batch lost the last
//! records). Concurrent evaluations share a commit (group commit: the caller that takes the
//! write lock writes every record queued so far in one transaction, the others find theirs
//! written), so the cost is one fsync per group, not per call. A record whose write fails (disk
//! full, store closed) is logged by code only and is lost.
//!
//! A record carries the provider's reported usage and billing whenever the provider answered —
//! also when the evaluation failed after the answer (validation, a mismatched id, a revocation).
//! When the caller stopped waiting (timeout, cancellation) before the answer arrived, the answer's
//! usage is added to that record when it arrives ([`LateUsage`]).

use super::response::{EvalBilling, Usage};
use crate::store::db::{dbp, Db};
use crate::store::Store;
use crate::{Error, Result};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Where the records live: the gateway's SQLite file or the fleet's store.
#[derive(Clone)]
pub(crate) enum UsageDb {
    Sqlite(Arc<Store>),
    #[cfg(feature = "postgres")]
    Shared(Arc<crate::store::pg::PgStore>),
}

impl UsageDb {
    /// The fleet's store when the gateway has one, else the SQLite file.
    pub(crate) fn open(store: Arc<Store>, shared: Option<&crate::store::SharedStore>) -> UsageDb {
        match shared {
            #[cfg(feature = "postgres")]
            Some(s) => UsageDb::Shared(Arc::clone(&s.0)),
            #[cfg(not(feature = "postgres"))]
            Some(s) => match *s {},
            None => UsageDb::Sqlite(store),
        }
    }

    /// One transaction, committed (durable) before returning.
    fn write<T>(&self, f: impl FnOnce(&dyn Db) -> rusqlite::Result<T>) -> Result<T> {
        match self {
            UsageDb::Sqlite(s) => s.write(|tx| f(tx)),
            #[cfg(feature = "postgres")]
            UsageDb::Shared(p) => p.db_tx("write usage", None, false, |db, _| f(db)),
        }
    }

    fn read<T>(&self, f: impl FnOnce(&dyn Db) -> rusqlite::Result<T>) -> Result<T> {
        match self {
            UsageDb::Sqlite(s) => s.read(|c| f(c)),
            #[cfg(feature = "postgres")]
            UsageDb::Shared(p) => p.db_tx("read usage", None, false, |db, _| f(db)),
        }
    }
}

/// Most records kept in the store.
pub const USAGE_RETENTION: usize = 10_000;

/// One usage record. Never holds state, questions, answers or credentials.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageRecord {
    /// Wall-clock time the evaluation ended, in milliseconds since the Unix epoch.
    pub at_ms: i64,
    /// The agent the evaluation was for.
    pub agent_id: String,
    /// The caller's session id, when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The caller's task id, when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// A keyed hash (HMAC-SHA-256 with the store's gateway secret — on the shared PostgreSQL
    /// store the fleet's, so one id hashes alike in every process — 32 hex digits) of the
    /// request id in the caller's scope; the id itself is never stored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_id_hash: Option<String>,
    /// The configuration generation the evaluation ran with.
    pub generation: u64,
    /// `typesafe`, `upstream`, `callback` or `local`.
    pub provider: String,
    /// Time from the call to its end, in milliseconds.
    pub latency_ms: u64,
    /// `"OK"` or the error code (`JEV_TIMEOUT`, …).
    pub outcome: String,
    /// The `validationReason` of a `JEV_MALFORMED_RESPONSE`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub validation_reason: Option<String>,
    /// The model id sent (the configured one, unchanged).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requested_model: Option<String>,
    /// The model the provider reported, whenever it answered (also on a failure after the
    /// answer).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Reported token usage, whenever the provider answered with it (also on a failure after the
    /// answer, and added later to a timed-out record when the answer arrives late).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Reported billing, when the provider sent it (also on a failure after the answer).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub billing: Option<EvalBilling>,
}

/// A page of usage records, newest first, and the agent's total.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UsagePage {
    /// The records of the page.
    pub records: Vec<UsageRecord>,
    /// How many records the store holds for the agent.
    pub total: u64,
}

/// Usage and billing a provider reported, read from its answer.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Charged {
    pub model: Option<String>,
    pub usage: Option<Usage>,
    pub billing: Option<EvalBilling>,
}

impl Charged {
    /// What a provider body reports, read leniently: used when the body failed validation (or
    /// arrived late), since a provider that answered may have charged. Unknown members, answers
    /// included, are skipped; a member of the wrong shape is left out. Strings are bounded.
    pub(crate) fn from_body(body: &[u8]) -> Charged {
        use serde_json::Value;
        #[derive(serde::Deserialize)]
        struct Lenient {
            #[serde(default)]
            model: Option<Value>,
            #[serde(default)]
            usage: Option<Value>,
            #[serde(default)]
            billing: Option<Value>,
        }
        let Ok(l) = serde_json::from_slice::<Lenient>(body) else {
            return Charged::default();
        };
        let usage = l.usage.and_then(|u| {
            Some(Usage {
                input_tokens: u.get("input_tokens")?.as_u64()?,
                output_tokens: u.get("output_tokens")?.as_u64()?,
            })
        });
        let billing = l.billing.and_then(|b| {
            let credits = b.get("charged_credits")?.as_f64()?;
            (credits.is_finite() && credits >= 0.0).then(|| EvalBilling {
                charged_credits: credits,
                rate_version: b
                    .get("rate_version")
                    .and_then(Value::as_str)
                    .map(super::provider_text::provider_text),
            })
        });
        Charged {
            model: l
                .model
                .as_ref()
                .and_then(Value::as_str)
                .map(super::provider_text::provider_text),
            usage,
            billing,
        }
    }

    fn is_empty(&self) -> bool {
        self.usage.is_none() && self.billing.is_none() && self.model.is_none()
    }
}

/// The usage of an answer that arrives after its caller stopped waiting. Whichever comes second
/// — the caller's record written, or the answer — completes the record.
#[derive(Debug, Default)]
pub(crate) struct LateUsage {
    state: Mutex<LateState>,
}

#[derive(Debug, Default)]
struct LateState {
    /// The caller's record, once written.
    row: Option<i64>,
    /// The late answer's usage, once arrived.
    charged: Option<Charged>,
}

impl LateUsage {
    /// Called by the I/O thread with the answer the caller no longer waited for.
    pub(crate) fn answered(&self, store: &UsageDb, charged: Charged) {
        if charged.is_empty() {
            return;
        }
        let row = {
            let mut st = self.state.lock();
            match st.row {
                Some(row) => row,
                None => {
                    // the record is not written yet: its commit takes this usage along
                    st.charged = Some(charged);
                    return;
                }
            }
        };
        // Written without holding the state lock: a commit holds the store, then this lock.
        if let Err(e) = store.write(|tx| update(tx, row, &charged)) {
            log::warn!("a late answer's usage was not written: {}", e.code());
        }
    }
}

/// Writes records (committed before their evaluation returns) and reads them.
pub(crate) struct UsageLog {
    store: UsageDb,
    /// Records queued for the next commit, with their late-usage handles.
    pending: Mutex<Vec<(UsageRecord, Option<Arc<LateUsage>>)>>,
    /// Held while a group is written: records keep their order, and a caller that waited for it
    /// finds its own record already committed.
    commit: Mutex<()>,
}

impl std::fmt::Debug for UsageLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("UsageLog")
    }
}

impl UsageLog {
    pub(crate) fn start(store: UsageDb) -> Result<UsageLog> {
        Ok(UsageLog {
            store,
            pending: Mutex::new(Vec::new()),
            commit: Mutex::new(()),
        })
    }

    /// The store, for late answers completing a record from an I/O thread.
    pub(crate) fn store(&self) -> &UsageDb {
        &self.store
    }

    /// Commits `record` (with any records queued beside it) and returns once it is durable;
    /// trims the table to the retention. With `late`, an answer that already arrived fills the
    /// record's usage, and one still to come will update it.
    pub(crate) fn append(&self, record: UsageRecord, late: Option<Arc<LateUsage>>) {
        self.pending.lock().push((record, late));
        let _commit = self.commit.lock();
        let group = std::mem::take(&mut *self.pending.lock());
        if group.is_empty() {
            return; // written by the commit this caller waited for
        }
        let result = self.store.write(|tx| {
            for (record, late) in &group {
                let row = insert(tx, record)?;
                if let Some(late) = late {
                    let mut st = late.state.lock();
                    if let Some(c) = st.charged.take() {
                        update(tx, row, &c)?;
                    }
                    st.row = Some(row);
                }
            }
            tx.execute(
                "DELETE FROM jev_usage WHERE seq <= (SELECT seq FROM jev_usage ORDER BY seq
                 DESC LIMIT 1 OFFSET ?1)",
                dbp![USAGE_RETENTION],
            )?;
            Ok(())
        });
        if let Err(e) = result {
            log::warn!(
                "{} usage records were not written: {}",
                group.len(),
                e.code()
            );
        }
    }

    /// Writes every pending record, then reads a page for `agent_id` (newest first).
    pub(crate) fn page(&self, agent_id: &str, limit: u32, offset: u64) -> Result<UsagePage> {
        if !(1..=100).contains(&limit) {
            return Err(Error::InvalidArgument {
                name: "limit",
                reason: "must be 1 to 100".into(),
            });
        }
        let offset = i64::try_from(offset).map_err(|_| Error::InvalidArgument {
            name: "offset",
            reason: "is too large".into(),
        })?;
        self.store.read(|c| {
            let total: i64 = c.query_row(
                "SELECT count(*) FROM jev_usage WHERE agent_id = ?1",
                dbp![agent_id],
                |r| r.get(0),
            )?;
            let records = c.query_map(
                "SELECT at_ms, agent_id, session_id, task_id, request_id_hash, generation,
                        provider, latency_ms, outcome, validation_reason, requested_model, model,
                        input_tokens, output_tokens, charged_credits, rate_version
                 FROM jev_usage WHERE agent_id = ?1 ORDER BY seq DESC LIMIT ?2 OFFSET ?3",
                dbp![agent_id, limit, offset],
                |r| {
                    let input: Option<i64> = r.get(12)?;
                    let output: Option<i64> = r.get(13)?;
                    let credits: Option<f64> = r.get(14)?;
                    Ok(UsageRecord {
                        at_ms: r.get(0)?,
                        agent_id: r.get(1)?,
                        session_id: r.get(2)?,
                        task_id: r.get(3)?,
                        request_id_hash: r.get(4)?,
                        generation: r.get::<i64>(5)? as u64,
                        provider: r.get(6)?,
                        latency_ms: r.get::<i64>(7)? as u64,
                        outcome: r.get(8)?,
                        validation_reason: r.get(9)?,
                        requested_model: r.get(10)?,
                        model: r.get(11)?,
                        usage: input.zip(output).map(|(i, o)| Usage {
                            input_tokens: i as u64,
                            output_tokens: o as u64,
                        }),
                        billing: credits.map(|c| EvalBilling {
                            charged_credits: c,
                            rate_version: None,
                        }),
                    })
                    .and_then(|mut rec| {
                        if let Some(b) = rec.billing.as_mut() {
                            b.rate_version = r.get(15)?;
                        }
                        Ok(rec)
                    })
                },
            )?;
            Ok(UsagePage {
                records,
                total: total as u64,
            })
        })
    }

    /// Nothing is pending: every record was written by its evaluation. Kept for the client's
    /// close sequence.
    pub(crate) fn close(&self) {}
}

fn insert(tx: &dyn Db, r: &UsageRecord) -> rusqlite::Result<i64> {
    tx.query_row(
        "INSERT INTO jev_usage (at_ms, agent_id, session_id, task_id, request_id_hash,
            generation, provider, latency_ms, outcome, validation_reason, requested_model,
            model, input_tokens, output_tokens, charged_credits, rate_version)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)
         RETURNING seq",
        dbp![
            r.at_ms,
            r.agent_id,
            r.session_id,
            r.task_id,
            r.request_id_hash,
            r.generation as i64,
            r.provider,
            r.latency_ms.min(i64::MAX as u64) as i64,
            r.outcome,
            r.validation_reason,
            r.requested_model,
            r.model,
            r.usage.map(|u| u.input_tokens.min(i64::MAX as u64) as i64),
            r.usage.map(|u| u.output_tokens.min(i64::MAX as u64) as i64),
            r.billing.as_ref().map(|b| b.charged_credits),
            r.billing.as_ref().and_then(|b| b.rate_version.clone()),
        ],
        |row| row.get(0),
    )
}

/// Adds a late answer's usage to the record `row` (fields already set are kept).
fn update(tx: &dyn Db, row: i64, c: &Charged) -> rusqlite::Result<()> {
    tx.execute(
        "UPDATE jev_usage SET model = coalesce(model, ?2),
            input_tokens = coalesce(input_tokens, ?3),
            output_tokens = coalesce(output_tokens, ?4),
            charged_credits = coalesce(charged_credits, ?5),
            rate_version = coalesce(rate_version, ?6)
         WHERE seq = ?1",
        dbp![
            row,
            c.model,
            c.usage.map(|u| u.input_tokens.min(i64::MAX as u64) as i64),
            c.usage.map(|u| u.output_tokens.min(i64::MAX as u64) as i64),
            c.billing.as_ref().map(|b| b.charged_credits),
            c.billing.as_ref().and_then(|b| b.rate_version.clone()),
        ],
    )?;
    Ok(())
}
