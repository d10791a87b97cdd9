//! Usage records (R-JEV-USAGE): one per evaluation, success or failure, in the SQLite store;
//! the newest 10,000 are kept.
//!
//! A record holds metadata only — agent, session, task, a keyed hash of the request id,
//! latency, outcome code, models, reported usage and billing. It must never hold state,
//! questions, answers' text, page text, provider bodies or credentials (R-LOG).
//!
//! Records are appended to an in-memory batch and written by a gateway-owned thread in one
//! transaction per batch, so an evaluation does not wait for an fsync. Reading usage first
//! writes every pending record (read-your-writes); closing the gateway writes them and joins the
//! thread.

use super::client::EvalBilling;
use super::response::Usage;
use crate::store::Store;
use crate::{Error, Result};
use parking_lot::{Condvar, Mutex};
use rusqlite::params;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Most records kept in the store.
pub const USAGE_RETENTION: usize = 10_000;

/// How long the writer gathers records before one batched transaction.
const BATCH_WINDOW: std::time::Duration = std::time::Duration::from_millis(50);

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
    /// A keyed hash (HMAC-SHA-256 with the store's gateway secret, 32 hex digits) of the request
    /// id in the caller's scope; the id itself is never stored.
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
    /// The model the provider reported, on success.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Reported token usage, on success.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Reported billing, on success, when the provider sent it.
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

/// The pending batch and its writer thread.
pub(crate) struct UsageLog {
    store: Arc<Store>,
    shared: Arc<Shared>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

struct Shared {
    pending: Mutex<Pending>,
    wake: Condvar,
    /// Serialises batch writes so records keep their order.
    flush: Mutex<()>,
}

#[derive(Default)]
struct Pending {
    records: Vec<UsageRecord>,
    stop: bool,
}

impl std::fmt::Debug for UsageLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("UsageLog")
    }
}

impl UsageLog {
    pub(crate) fn start(store: Arc<Store>) -> Result<UsageLog> {
        let shared = Arc::new(Shared {
            pending: Mutex::new(Pending::default()),
            wake: Condvar::new(),
            flush: Mutex::new(()),
        });
        let (s2, st2) = (Arc::clone(&shared), Arc::clone(&store));
        let thread = std::thread::Builder::new()
            .name("jevgate-usage".into())
            .spawn(move || loop {
                let stop = {
                    let mut p = s2.pending.lock();
                    while p.records.is_empty() && !p.stop {
                        s2.wake.wait(&mut p);
                    }
                    // Gather a batch: one transaction (one fsync) for many records.
                    if !p.stop {
                        s2.wake.wait_for(&mut p, BATCH_WINDOW);
                    }
                    p.stop
                };
                flush(&s2, &st2);
                if stop {
                    break;
                }
            })
            .map_err(|e| Error::Internal {
                reason: format!("cannot start the usage thread: {}", e.kind()),
            })?;
        Ok(UsageLog {
            store,
            shared,
            thread: Mutex::new(Some(thread)),
        })
    }

    /// Queues a record. Beyond the retention, the oldest pending records are dropped: they
    /// would be trimmed anyway.
    pub(crate) fn append(&self, record: UsageRecord) {
        let mut p = self.shared.pending.lock();
        if p.records.len() >= USAGE_RETENTION {
            p.records.remove(0);
        }
        let first = p.records.is_empty();
        p.records.push(record);
        drop(p);
        // Only the first record of a batch wakes the writer; the rest join its window.
        if first {
            self.shared.wake.notify_one();
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
        flush(&self.shared, &self.store);
        self.store.read(|c| {
            let total: i64 = c.query_row(
                "SELECT count(*) FROM jev_usage WHERE agent_id = ?1",
                [agent_id],
                |r| r.get(0),
            )?;
            let mut stmt = c.prepare_cached(
                "SELECT at_ms, agent_id, session_id, task_id, request_id_hash, generation,
                        provider, latency_ms, outcome, validation_reason, requested_model, model,
                        input_tokens, output_tokens, charged_credits, rate_version
                 FROM jev_usage WHERE agent_id = ?1 ORDER BY seq DESC LIMIT ?2 OFFSET ?3",
            )?;
            let records = stmt
                .query_map(params![agent_id, limit, offset], |r| {
                    let input: Option<i64> = r.get(12)?;
                    let output: Option<i64> = r.get(13)?;
                    let credits: Option<f64> = r.get(14)?;
                    Ok(UsageRecord {
                        at_ms: r.get(0)?,
                        agent_id: r.get(1)?,
                        session_id: r.get(2)?,
                        task_id: r.get(3)?,
                        request_id_hash: r.get(4)?,
                        generation: r.get::<_, i64>(5)? as u64,
                        provider: r.get(6)?,
                        latency_ms: r.get::<_, i64>(7)? as u64,
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
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(UsagePage {
                records,
                total: total as u64,
            })
        })
    }

    /// Writes what is pending and joins the writer thread. Idempotent.
    pub(crate) fn close(&self) {
        self.shared.pending.lock().stop = true;
        self.shared.wake.notify_all();
        if let Some(t) = self.thread.lock().take() {
            if t.thread().id() != std::thread::current().id() {
                let _ = t.join();
            }
        }
        flush(&self.shared, &self.store);
    }
}

fn flush(shared: &Shared, store: &Store) {
    let _order = shared.flush.lock();
    let batch = std::mem::take(&mut shared.pending.lock().records);
    if batch.is_empty() {
        return;
    }
    let result = store.write(|tx| {
        let mut stmt = tx.prepare_cached(
            "INSERT INTO jev_usage (at_ms, agent_id, session_id, task_id, request_id_hash,
                generation, provider, latency_ms, outcome, validation_reason, requested_model,
                model, input_tokens, output_tokens, charged_credits, rate_version)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)",
        )?;
        for r in &batch {
            stmt.execute(params![
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
            ])?;
        }
        tx.execute(
            "DELETE FROM jev_usage WHERE seq <= (SELECT seq FROM jev_usage ORDER BY seq DESC
             LIMIT 1 OFFSET ?1)",
            [USAGE_RETENTION as i64],
        )?;
        Ok(())
    });
    if let Err(e) = result {
        log::warn!(
            "usage records not written ({} records): {}",
            batch.len(),
            e.code()
        );
    }
}
