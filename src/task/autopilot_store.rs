//! The durable receipts of `browser_autopilot` runs on a paired device (R-AUTO, issue 26 item
//! 8): [`StoreLedger`] is the autopilot loop's [`Ledger`] over the task module's store (tables
//! `autopilot_runs` and `autopilot_operations`, migration 9): the gateway's SQLite file, or the
//! fleet's PostgreSQL store (issue 23 item 3), with the same statements on both.
//!
//! Owns those two tables: a run's row is written before its first observation (`running`),
//! each action's row before the action is dispatched (`dispatched`, committed with
//! `synchronous=FULL` when [`Ledger::checkpoint`] returns), then settled, and the run's row
//! closed with its state, reason and step count. A row keeps ids, tool names, states, codes and
//! times only. Runs left `running` by a dead process read as `interrupted` on the next start
//! ([`recover`]), their unsettled actions `interrupted` (never re-sent); on the shared store a
//! run records the process running it (`owner_process`) and only a dead process's runs are
//! recovered — a live process's stay its own. At most
//! [`KEPT_RUNS`] runs per principal are kept (the oldest closed ones go when a run starts).
//!
//! Must never store a goal, a value, an argument or page text, or log anything but codes.

use super::autopilot::{Ending, Ledger};
use super::engine::TaskDb;
use crate::clock::Clock;
use crate::store::db::dbp;
use crate::Result;

/// Runs kept per principal.
pub(crate) const KEPT_RUNS: u32 = 1000;

/// The ledger of one run.
pub(crate) struct StoreLedger<'a> {
    store: TaskDb,
    clock: &'a dyn Clock,
    run_id: String,
}

impl<'a> StoreLedger<'a> {
    /// Opens run `run_id`'s receipt (`running`) for `principal`'s `conversation` on `device`,
    /// pruning that principal's oldest closed runs past [`KEPT_RUNS`].
    pub(crate) fn begin(
        store: TaskDb,
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
        store.write_group(move |tx| {
            tx.execute(
                "DELETE FROM autopilot_runs WHERE principal_id = ?1 AND state != 'running'
                 AND id NOT IN (SELECT id FROM autopilot_runs WHERE principal_id = ?1
                                ORDER BY started_ms DESC, id DESC LIMIT ?2)",
                dbp![p, KEPT_RUNS - 1],
            )?;
            tx.execute(
                "INSERT INTO autopilot_runs (id, principal_id, conversation_id, device_id, state,
                    reason, steps, started_ms, ended_ms)
                 VALUES (?1, ?2, ?3, ?4, 'running', NULL, 0, ?5, NULL)",
                dbp![id, p, c, d, now],
            )?;
            // On the shared store: the process running it (recovery spares a live one's).
            if let Some(me) = tx.process() {
                tx.execute(
                    "UPDATE autopilot_runs SET owner_process = ?2 WHERE id = ?1",
                    dbp![id, me],
                )?;
            }
            Ok(())
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
        let stored = self.store.write_group(move |tx| {
            tx.execute(
                "UPDATE autopilot_runs SET state = ?2, reason = ?3, steps = ?4, ended_ms = ?5
                 WHERE id = ?1",
                dbp![id, state, reason, steps, now],
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
        self.store.write_group(move |tx| {
            tx.execute(
                "INSERT INTO autopilot_operations (operation_id, run_id, tool, dispatched_ms,
                    status, error_code)
                 VALUES (?1, ?2, ?3, ?4, 'dispatched', NULL)",
                dbp![op, run, tool, now],
            )
            .map(|_| ())
        })
    }

    fn settle(&self, operation_id: &str, status: &'static str, error_code: Option<&str>) {
        let (op, code) = (operation_id.to_string(), error_code.map(str::to_string));
        let stored = self.store.write_group(move |tx| {
            tx.execute(
                "UPDATE autopilot_operations SET status = ?2, error_code = ?3
                 WHERE operation_id = ?1",
                dbp![op, status, code],
            )
            .map(|_| ())
        });
        if let Err(e) = stored {
            // The checkpoint stays `dispatched`: in doubt, never done.
            log::warn!("an autopilot action's result was not stored: {}", e.code());
        }
    }
}

/// On the shared store: the runs still `running` whose process is dead — not this one, and no
/// liveness row at least as fresh as `?1` — with `?2` this process's id.
const DEAD_RUNS: &str = "state = 'running'
    AND (owner_process IS NULL
         OR (owner_process <> ?2
             AND owner_process NOT IN (SELECT process_id FROM jevgate_processes
                                       WHERE heartbeat_at >= ?1)))";

/// Startup: runs a dead process left `running` become `interrupted`, and their actions still
/// `dispatched` too (their outcome is unknown; nothing is re-sent). On SQLite (one process owns
/// the file) every run left running; on the shared store only those whose process is dead on
/// the database clock. Returns how many runs.
pub(crate) fn recover(store: &TaskDb, now: i64) -> Result<usize> {
    let dead_after = store.member().map(|m| m.dead_after_ms);
    store.write(move |tx, db_now| match (tx.process(), db_now, dead_after) {
        (Some(me), Some(db_now), Some(dead_after)) => {
            let alive_since = db_now.saturating_sub(dead_after);
            tx.execute(
                &format!(
                    "UPDATE autopilot_operations
                        SET status = 'interrupted', error_code = 'OUTCOME_UNKNOWN'
                      WHERE status = 'dispatched'
                        AND run_id IN (SELECT id FROM autopilot_runs WHERE {DEAD_RUNS})"
                ),
                dbp![alive_since, me],
            )?;
            tx.execute(
                &format!(
                    "UPDATE autopilot_runs
                        SET state = 'interrupted', reason = 'INTERRUPTED', ended_ms = ?3
                      WHERE {DEAD_RUNS}"
                ),
                dbp![alive_since, me, now],
            )
        }
        _ => {
            tx.execute(
                "UPDATE autopilot_operations SET status = 'interrupted', error_code = 'OUTCOME_UNKNOWN'
                 WHERE status = 'dispatched'",
                dbp![],
            )?;
            tx.execute(
                "UPDATE autopilot_runs SET state = 'interrupted', reason = 'INTERRUPTED', ended_ms = ?1
                 WHERE state = 'running'",
                dbp![now],
            )
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use crate::store::Store;
    use std::sync::Arc;

    /// Every (operation, its status, its run's state), by operation id.
    fn rows(db: &TaskDb) -> Vec<(String, String, String)> {
        db.read(|tx| {
            tx.query_map(
                "SELECT o.operation_id, o.status, r.state FROM autopilot_operations o
                 JOIN autopilot_runs r ON r.id = o.run_id ORDER BY o.operation_id",
                dbp![],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
        })
        .unwrap()
    }

    // R-AUTO, R-TSK-RCPT: a checkpoint is on disk before dispatch; a run a dead process left
    // running reads `interrupted` with its unsettled action in doubt; settled ones keep theirs.
    #[test]
    fn r_auto_receipts_are_durable_and_a_dead_run_reads_interrupted() {
        let dir = tempfile::tempdir().unwrap();
        let store = TaskDb::file(Arc::new(Store::open(dir.path()).unwrap()));
        let clock = ManualClock::new();
        let ledger = StoreLedger::begin(store.clone(), &clock, "ap_1", "alice", "c", "d").unwrap();
        ledger.checkpoint("ap_1:1", "page_type").unwrap();
        ledger.settle("ap_1:1", "done", None);
        ledger.checkpoint("ap_1:2", "page_click").unwrap();
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
        let l2 = StoreLedger::begin(store.clone(), &clock, "ap_2", "alice", "c", "d").unwrap();
        l2.end(Ending::Stuck, "STUCK", 2);
        assert_eq!(recover(&store, 6).unwrap(), 0);
    }

    // R-AUTO, issue 23 item 3: on the shared store a run records its process; another
    // process's start interrupts it only once that process is dead on the database clock, and
    // never its own running run.
    #[cfg(feature = "postgres")]
    #[test]
    fn r_auto_on_the_shared_store_only_a_dead_processs_runs_read_interrupted() {
        use crate::store::pg::PgStore;
        use crate::store::SharedStore;
        use crate::task::engine::Member;
        let Some(url) = crate::store::pg::test_url() else {
            return;
        };
        let pg = SharedStore(Arc::new(PgStore::open_fresh(&url).unwrap()));
        let member = |p: &str| Member {
            process: p.into(),
            dead_after_ms: 10_000,
        };
        let a = TaskDb::shared(&pg, member("proc_a")).unwrap();
        let b = TaskDb::shared(&pg, member("proc_b")).unwrap();
        b.write(|tx, now| {
            for p in ["proc_a", "proc_b"] {
                tx.execute(
                    "INSERT INTO jevgate_processes (process_id, started_at, heartbeat_at)
                     VALUES (?1, ?2, ?2)",
                    dbp![p, now.unwrap_or_default()],
                )?;
            }
            Ok(())
        })
        .unwrap();
        let clock = ManualClock::new();
        let la = StoreLedger::begin(a.clone(), &clock, "ap_a", "alice", "c", "d").unwrap();
        la.checkpoint("ap_a:1", "page_type").unwrap();
        la.settle("ap_a:1", "done", None);
        la.checkpoint("ap_a:2", "page_click").unwrap();
        let lb = StoreLedger::begin(b.clone(), &clock, "ap_b", "bob", "c", "d").unwrap();
        lb.checkpoint("ap_b:1", "page_click").unwrap();
        let owners: Vec<(String, Option<String>)> = b
            .read(|tx| {
                tx.query_map(
                    "SELECT id, owner_process FROM autopilot_runs ORDER BY id",
                    dbp![],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
            })
            .unwrap();
        assert_eq!(
            owners,
            vec![
                ("ap_a".into(), Some("proc_a".into())),
                ("ap_b".into(), Some("proc_b".into()))
            ]
        );
        // A is alive: B's start takes nothing of A's, and B's own run is B's.
        assert_eq!(recover(&b, 5).unwrap(), 0);
        assert_eq!(rows(&b)[1].1, "dispatched");
        // A's heartbeat is older than 10 s of database time: its run is interrupted, its
        // unsettled action in doubt, its settled one kept; B's own run untouched.
        b.write(|tx, _| {
            tx.execute(
                "UPDATE jevgate_processes SET heartbeat_at = heartbeat_at - 10001
                 WHERE process_id = 'proc_a'",
                dbp![],
            )
            .map(drop)
        })
        .unwrap();
        assert_eq!(recover(&b, 6).unwrap(), 1);
        let after = rows(&b);
        assert_eq!(
            after,
            vec![
                ("ap_a:1".into(), "done".into(), "interrupted".into()),
                ("ap_a:2".into(), "interrupted".into(), "interrupted".into()),
                ("ap_b:1".into(), "dispatched".into(), "running".into()),
            ]
        );
        a.close();
        b.close();
    }
}
