//! The durable receipts of `browser_autopilot` runs on a paired device (R-AUTO, issue 26 item
//! 8): [`StoreLedger`] is the autopilot loop's [`Ledger`] over the gateway's store (tables
//! `autopilot_runs` and `autopilot_operations`, migration v9).
//!
//! Owns those two tables: a run's row is written before its first observation (`running`),
//! each action's row before the action is dispatched (`dispatched`, committed with
//! `synchronous=FULL` when [`Ledger::checkpoint`] returns), then settled, and the run's row
//! closed with its state, reason and step count. A row keeps ids, tool names, states, codes and
//! times only. Runs left `running` by a dead process read as `interrupted` on the next start
//! ([`recover`]), their unsettled actions `interrupted` (never re-sent). At most
//! [`KEPT_RUNS`] runs per principal are kept (the oldest closed ones go when a run starts).
//!
//! Must never store a goal, a value, an argument or page text, or log anything but codes.

use super::autopilot::{Ending, Ledger};
use crate::clock::Clock;
use crate::store::Store;
use crate::Result;
use rusqlite::params;
use std::sync::Arc;

/// Runs kept per principal.
pub(crate) const KEPT_RUNS: u32 = 1000;

/// The ledger of one run.
pub(crate) struct StoreLedger<'a> {
    store: Arc<Store>,
    clock: &'a dyn Clock,
    run_id: String,
}

impl<'a> StoreLedger<'a> {
    /// Opens run `run_id`'s receipt (`running`) for `principal`'s `conversation` on `device`,
    /// pruning that principal's oldest closed runs past [`KEPT_RUNS`].
    pub(crate) fn begin(
        store: Arc<Store>,
        clock: &'a dyn Clock,
        run_id: &str,
        principal: &str,
        conversation: &str,
        device: &str,
    ) -> Result<StoreLedger<'a>> {
        let now = clock.wall_millis();
        let (id, p, c, d) = (
            run_id.to_string(),
            principal.to_string(),
            conversation.to_string(),
            device.to_string(),
        );
        store.write(move |tx| {
            tx.execute(
                "DELETE FROM autopilot_runs WHERE principal_id = ?1 AND state != 'running'
                 AND id NOT IN (SELECT id FROM autopilot_runs WHERE principal_id = ?1
                                ORDER BY started_ms DESC, id DESC LIMIT ?2)",
                params![p, KEPT_RUNS - 1],
            )?;
            tx.execute(
                "INSERT INTO autopilot_runs (id, principal_id, conversation_id, device_id, state,
                    reason, steps, started_ms, ended_ms)
                 VALUES (?1, ?2, ?3, ?4, 'running', NULL, 0, ?5, NULL)",
                params![id, p, c, d, now],
            )
            .map(|_| ())
        })?;
        Ok(StoreLedger {
            store,
            clock,
            run_id: run_id.to_string(),
        })
    }

    /// Closes the run's receipt.
    pub(crate) fn end(&self, ending: Ending, reason: &str, steps: u32) {
        let (id, state, reason, now) = (
            self.run_id.clone(),
            ending.as_str(),
            reason.to_string(),
            self.clock.wall_millis(),
        );
        let stored = self.store.write(move |tx| {
            tx.execute(
                "UPDATE autopilot_runs SET state = ?2, reason = ?3, steps = ?4, ended_ms = ?5
                 WHERE id = ?1",
                params![id, state, reason, steps, now],
            )
            .map(|_| ())
        });
        if let Err(e) = stored {
            log::warn!("an autopilot run's end was not stored: {}", e.code());
        }
    }
}

impl Ledger for StoreLedger<'_> {
    fn checkpoint(&self, operation_id: &str, tool: &'static str) -> Result<()> {
        let (op, run, now) = (
            operation_id.to_string(),
            self.run_id.clone(),
            self.clock.wall_millis(),
        );
        self.store.write(move |tx| {
            tx.execute(
                "INSERT INTO autopilot_operations (operation_id, run_id, tool, dispatched_ms,
                    status, error_code)
                 VALUES (?1, ?2, ?3, ?4, 'dispatched', NULL)",
                params![op, run, tool, now],
            )
            .map(|_| ())
        })
    }

    fn settle(&self, operation_id: &str, status: &'static str, error_code: Option<&str>) {
        let (op, code) = (operation_id.to_string(), error_code.map(str::to_string));
        let stored = self.store.write(move |tx| {
            tx.execute(
                "UPDATE autopilot_operations SET status = ?2, error_code = ?3
                 WHERE operation_id = ?1",
                params![op, status, code],
            )
            .map(|_| ())
        });
        if let Err(e) = stored {
            // The checkpoint stays `dispatched`: in doubt, never done.
            log::warn!("an autopilot action's result was not stored: {}", e.code());
        }
    }
}

/// Startup: runs a dead process left `running` become `interrupted`, and their actions still
/// `dispatched` too (their outcome is unknown; nothing is re-sent). Returns how many runs.
pub(crate) fn recover(store: &Store, now: i64) -> Result<usize> {
    store.write(move |tx| {
        tx.execute(
            "UPDATE autopilot_operations SET status = 'interrupted', error_code = 'OUTCOME_UNKNOWN'
             WHERE status = 'dispatched'",
            [],
        )?;
        tx.execute(
            "UPDATE autopilot_runs SET state = 'interrupted', reason = 'INTERRUPTED', ended_ms = ?1
             WHERE state = 'running'",
            params![now],
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;

    // R-AUTO, R-TSK-RCPT: a checkpoint is on disk before dispatch; a run a dead process left
    // running reads `interrupted` with its unsettled action in doubt; settled ones keep theirs.
    #[test]
    fn r_auto_receipts_are_durable_and_a_dead_run_reads_interrupted() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(Store::open(dir.path()).unwrap());
        let clock = ManualClock::new();
        let ledger =
            StoreLedger::begin(Arc::clone(&store), &clock, "ap_1", "alice", "c", "d").unwrap();
        ledger.checkpoint("ap_1:1", "page_type").unwrap();
        ledger.settle("ap_1:1", "done", None);
        ledger.checkpoint("ap_1:2", "page_click").unwrap();
        let rows = |store: &Store| {
            store
                .read(|c| {
                    let mut s = c.prepare(
                        "SELECT o.operation_id, o.status, r.state FROM autopilot_operations o
                         JOIN autopilot_runs r ON r.id = o.run_id ORDER BY o.operation_id",
                    )?;
                    let v = s
                        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                        .collect::<rusqlite::Result<Vec<(String, String, String)>>>();
                    v
                })
                .unwrap()
        };
        assert_eq!(rows(&store)[1].1, "dispatched");
        assert_eq!(recover(&store, 5).unwrap(), 1);
        let after = rows(&store);
        assert_eq!(
            after[0],
            ("ap_1:1".into(), "done".into(), "interrupted".into())
        );
        assert_eq!(
            after[1],
            ("ap_1:2".into(), "interrupted".into(), "interrupted".into())
        );
        // A run that ended keeps its state through a later recovery.
        let l2 = StoreLedger::begin(Arc::clone(&store), &clock, "ap_2", "alice", "c", "d").unwrap();
        l2.end(Ending::Stuck, "STUCK", 2);
        assert_eq!(recover(&store, 6).unwrap(), 0);
    }
}
