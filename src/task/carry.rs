//! Task control calls carried to the process running the task (issue 23, R-TSK-CTL across
//! processes).
//!
//! On the shared PostgreSQL store a task runs in the process that owns it (`tasks.
//! owner_process`); a control call (cancel, command, control, update, answer, resolve) made in
//! another live process of the fleet would find no session there. This module carries it: the
//! caller writes the call as a row of `jevgate_task_calls` and NOTIFYs `jevgate_tasks`
//! (`run <owner> <id>`); the owner's listener takes the row once (`queued` → `taken`), applies
//! it as its own local call (same ordering — one listener thread, in row order — and the same
//! idempotency rules), writes the answer (`done`) and NOTIFYs the caller (`done <caller>
//! <id>`), whose thread waits on a condvar with a bounded deadline. The mechanism is the
//! fleet's mailbox (`store/mailbox.rs`); this module owns what a task call is and means. Out of time, the caller
//! reports `TASK_CONTROL_PENDING` (written, not yet confirmed) — never a guessed result. When
//! the owner dies before taking the row the caller withdraws it and the call goes through
//! the takeover path here. A lost notification is found by a re-scan about every second.
//!
//! It never decides a task's state (the service's local call does) and never logs the call
//! (it may hold the person's words).

use super::{ControlRequest, TaskOwner, UpdateRequest};
use serde::{Deserialize, Serialize};

/// One carried call, as written in its row.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "call", rename_all = "camelCase")]
pub(crate) enum Call {
    Cancel,
    Command {
        text: String,
        agent: bool,
    },
    Control {
        request: ControlRequest,
    },
    Update {
        request: UpdateRequest,
    },
    Answer {
        field: String,
        text: String,
        agent: bool,
    },
    Resolve {
        operation: String,
        happened: bool,
    },
}

/// A call's row: who asks, for which task, what.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Carried {
    pub owner: TaskOwner,
    pub task: String,
    pub call: Call,
}

/// How a carried call ended for its caller.
#[cfg_attr(not(feature = "postgres"), allow(dead_code))] // reason: only a fleet carries
pub(crate) enum Outcome {
    /// The owner applied it: its answer (JSON of the local call's value).
    Answered(serde_json::Value),
    /// The owner died before taking it: the caller applies it (after the takeover).
    Here,
}

/// Applies a carried call in the owner process (the service's local call).
#[cfg_attr(not(feature = "postgres"), allow(dead_code))] // reason: only a fleet carries
pub(crate) type Apply =
    Box<dyn Fn(&Carried) -> crate::Result<serde_json::Value> + Send + Sync + 'static>;

/// The owner's test seam around taking a row (the task service's checkpoint hook).
#[cfg_attr(not(feature = "postgres"), allow(dead_code))] // reason: only a fleet carries
pub(crate) type Seam = Box<dyn Fn(&'static str) + Send + Sync + 'static>;

#[cfg(feature = "postgres")]
pub(crate) use real::Carrier;
#[cfg(not(feature = "postgres"))]
pub(crate) use stand_in::Carrier;

#[cfg(not(feature = "postgres"))]
mod stand_in {
    use super::*;

    /// No carrier without the `postgres` feature: a value of this type cannot exist.
    pub(crate) enum Carrier {}

    impl Carrier {
        pub(crate) fn elsewhere(&self, _task: &str) -> crate::Result<Option<String>> {
            match *self {}
        }
        pub(crate) fn carry(&self, _to: &str, _call: &Carried) -> crate::Result<Outcome> {
            match *self {}
        }
        pub(crate) fn prune_dead(&self) -> crate::Result<u64> {
            match *self {}
        }
        pub(crate) fn adopt(&self, _task: &str) -> crate::Result<u64> {
            match *self {}
        }
        pub(crate) fn close(&self) {
            match *self {}
        }
    }
}

#[cfg(feature = "postgres")]
mod real {
    use super::*;
    use crate::clock::{Grace, SharedClock};
    use crate::lease::pg_liveness::is_alive;
    use crate::store::mailbox::{Holder, Kind, Mailbox, Seen};
    use crate::store::pg::PgStore;
    use crate::{Error, ErrorKind, Result};
    use serde_json::Value;
    use std::sync::Arc;
    use std::time::Duration;

    /// The table and NOTIFY channel of carried task calls.
    static KIND: Kind = Kind {
        table: "jevgate_task_calls",
        channel: "jevgate_tasks",
        taken: "taken",
        dropped: "withdrawn",
        noun: "a carried task call",
        thread: "task-carry",
    };
    /// How long a caller waits for the owner's answer.
    const DEADLINE: Duration = Duration::from_secs(5);
    /// The caller's fallback re-read of its row.
    const REREAD: Duration = crate::store::mailbox::REREAD;
    /// A row older than this is never applied (its caller reported it pending long ago).
    const APPLY_WITHIN_MS: i64 = 60_000;
    /// How long an ended row is kept before its owner deletes it.
    const KEEP_MS: i64 = 600_000;
    /// The most rows of dead processes one cleanup deletes.
    const PRUNE_BATCH: i64 = 500;

    /// The owner's side: applies the rows carried here, one at a time on the listener's
    /// thread (in row order).
    struct Owner {
        mailbox: Arc<Mailbox>,
        apply: Apply,
        seam: Seam,
    }

    /// This process's part in carrying task control calls.
    pub(crate) struct Carrier {
        mailbox: Arc<Mailbox>,
        dead_after: Duration,
        /// The gateway's clock: a caller's wait for the owner's answer (R-CLK).
        clock: SharedClock,
    }

    impl Carrier {
        /// Starts the listener applying the calls carried to `process` with `apply`; `seam`
        /// is called at `carried_take` (before a row is taken) and `carried_taken` (after).
        pub(crate) fn start(
            store: Arc<PgStore>,
            process: String,
            dead_after: Duration,
            clock: SharedClock,
            apply: Apply,
            seam: Seam,
        ) -> Carrier {
            let mailbox = Mailbox::new(&KIND, store, process, dead_after);
            mailbox.listen(Arc::new(Owner {
                mailbox: Arc::clone(&mailbox),
                apply,
                seam,
            }));
            Carrier {
                mailbox,
                dead_after,
                clock,
            }
        }

        /// The cleanup of what dead processes left (also part of the periodic one), now: see
        /// [`delete_dead`]. The number of rows deleted.
        pub(crate) fn prune_dead(&self) -> Result<u64> {
            let dead_after = self.dead_after;
            self.mailbox
                .store()
                .tx("prune a dead process's task calls", |tx, clock| {
                    let now = clock.now_ms(tx)?;
                    Ok(delete_dead(tx, now, dead_after)?)
                })
        }

        /// The live process other than this one that runs open task `task`, if any.
        pub(crate) fn elsewhere(&self, task: &str) -> Result<Option<String>> {
            let me = self.mailbox.process().to_string();
            let dead_after = self.dead_after;
            self.mailbox
                .store()
                .tx("find a task's process", |tx, clock| {
                    let row = tx.query_opt(
                        "SELECT t.owner_process, p.heartbeat_at FROM tasks t
                       LEFT JOIN jevgate_processes p ON p.process_id = t.owner_process
                      WHERE t.id = $1 AND t.state IN ('queued', 'running', 'waiting_input')",
                        &[&task],
                    )?;
                    let Some(row) = row else { return Ok(None) };
                    let Some(owner) = row.get::<_, Option<String>>(0) else {
                        return Ok(None);
                    };
                    if owner == me {
                        return Ok(None);
                    }
                    let now = clock.now_ms(tx)?;
                    let alive = row
                        .get::<_, Option<i64>>(1)
                        .is_some_and(|beat| is_alive(beat, now, dead_after));
                    Ok(alive.then_some(owner))
                })
        }

        /// Carries `call` to process `to` and waits for its answer (at most [`DEADLINE`]).
        pub(crate) fn carry(&self, to: &str, call: &Carried) -> Result<Outcome> {
            let text = serde_json::to_string(call).map_err(|_| Error::Internal {
                reason: "a task call could not be written".into(),
            })?;
            let wait = self.mailbox.post(
                "carry a task call",
                to,
                "task_id, call",
                &[&call.task, &text],
            )?;
            // R-CLK: bounded on the gateway's clock (a manual clock nobody moves still ends).
            let mut grace = Grace::new(&*self.clock, DEADLINE);
            loop {
                match self.mailbox.read(wait.id()) {
                    Ok(Seen::Done(text)) => return answer(&text).map(Outcome::Answered),
                    Ok(Seen::HolderGone { taken: false }) => {
                        if self.mailbox.withdraw(wait.id())? {
                            return Ok(Outcome::Here);
                        }
                    }
                    Ok(Seen::HolderGone { taken: true }) => {
                        return Err(Error::TaskControlPending {
                            reason: "the process running the task stopped while applying the call; whether it took effect shows in the task's status",
                        })
                    }
                    // Only this caller withdraws its row (and returns then).
                    Ok(Seen::Pending | Seen::Ended) | Err(_) => {}
                }
                let Some(slice) = grace.next(REREAD) else {
                    return Err(Error::TaskControlPending {
                        reason: "the call was written for the process running the task, which did not confirm it in time; it applies it when it reads it (within a minute) — read the task's status, do not resend",
                    });
                };
                wait.pause(slice);
            }
        }

        /// After this process took task `task` over from its dead owner: the calls still
        /// queued for that owner (never taken, so never applied) are this process's to apply
        /// now, in row order — as their callers were told (`TASK_CONTROL_PENDING`: applied when
        /// read), and a caller still waiting gets its answer from here. A taken row stays as it
        /// is (its outcome unknown, never re-run). Returns how many were re-addressed.
        pub(crate) fn adopt(&self, task: &str) -> Result<u64> {
            let me = self.mailbox.process().to_string();
            let dead_after = i64::try_from(self.dead_after.as_millis()).unwrap_or(i64::MAX);
            self.mailbox
                .store()
                .tx("adopt a task's calls", |tx, clock| {
                    // Only from an owner that is dead (`is_alive`'s rule on the database clock): a
                    // live owner's rows stay its own.
                    let alive_since = clock.now_ms(tx)?.saturating_sub(dead_after);
                    let n = tx.execute(
                        "UPDATE jevgate_task_calls c SET to_process = $2
                      WHERE c.task_id = $1 AND c.state = 'queued' AND c.to_process <> $2
                        AND NOT EXISTS (SELECT 1 FROM jevgate_processes p
                                         WHERE p.process_id = c.to_process
                                           AND p.heartbeat_at > $3)",
                        &[&task, &me, &alive_since],
                    )?;
                    if n > 0 {
                        tx.execute(
                            "SELECT pg_notify($1, $2)",
                            &[&KIND.channel, &format!("run {me} 0")],
                        )?;
                    }
                    Ok(n)
                })
        }

        /// Stops the listener. Idempotent.
        pub(crate) fn close(&self) {
            self.mailbox.close();
        }
    }

    impl Drop for Carrier {
        fn drop(&mut self) {
            self.close();
        }
    }

    impl Holder for Owner {
        /// Takes row `id` once, applies it as a local call, writes the answer, tells the
        /// caller.
        fn run(&self, id: i64) {
            (self.seam)("carried_take");
            let fresh = format!("created_at + {APPLY_WITHIN_MS} > $3");
            let text = match self.mailbox.take(id, &fresh, "call") {
                Ok(Some(row)) => row.get::<_, String>(0),
                Ok(None) => return,
                Err(_) => {
                    log::warn!("a carried task call could not be taken");
                    return;
                }
            };
            (self.seam)("carried_taken");
            let answered = match serde_json::from_str::<Carried>(&text) {
                Ok(call) => (self.apply)(&call),
                Err(_) => Err(Error::StoreCorrupt {
                    reason: "a carried task call is unreadable".into(),
                }),
            };
            let result = match answered {
                Ok(v) => serde_json::json!({ "ok": v }),
                Err(e) => {
                    serde_json::json!({ "err": { "code": e.code(), "message": e.to_string() } })
                }
            }
            .to_string();
            if self.mailbox.answer(id, &result).is_err() {
                log::warn!("a carried task call's answer was not written");
            }
        }

        /// Deletes this process's rows created more than [`KEEP_MS`] ago (never one taken),
        /// and what dead processes left ([`delete_dead`]).
        fn prune(&self, client: &mut postgres::Client) {
            let Ok(now) = self.mailbox.store().db_clock().now_ms(client) else {
                return;
            };
            let _ = client.execute(
                "DELETE FROM jevgate_task_calls
                  WHERE to_process = $1 AND state <> 'taken' AND created_at < $2",
                &[&self.mailbox.process(), &now.saturating_sub(KEEP_MS)],
            );
            let _ = delete_dead(client, now, self.mailbox.dead_after());
        }
    }

    /// Deletes at most [`PRUNE_BATCH`] rows addressed to processes that are dead on the
    /// database clock (`now`) and created more than [`KEEP_MS`] ago — answered, withdrawn, or
    /// taken by an owner that died (its caller was told the call is pending; a resend goes
    /// through the takeover, which never reads this row). A row still `queued` is kept: the
    /// process that takes the task over adopts and applies it ([`Carrier::adopt`]).
    fn delete_dead(
        client: &mut impl postgres::GenericClient,
        now: i64,
        dead_after: Duration,
    ) -> std::result::Result<u64, postgres::Error> {
        let alive_since =
            now.saturating_sub(i64::try_from(dead_after.as_millis()).unwrap_or(i64::MAX));
        client.execute(
            "DELETE FROM jevgate_task_calls WHERE id IN (
               SELECT c.id FROM jevgate_task_calls c
                WHERE c.state <> 'queued' AND c.created_at < $1
                  AND NOT EXISTS (SELECT 1 FROM jevgate_processes p
                                   WHERE p.process_id = c.to_process AND p.heartbeat_at > $2)
                ORDER BY c.id LIMIT $3)",
            &[&now.saturating_sub(KEEP_MS), &alive_since, &PRUNE_BATCH],
        )
    }

    /// A row's answer as the caller's result.
    fn answer(text: &str) -> Result<Value> {
        let bad = || Error::StoreCorrupt {
            reason: "a carried task call's answer is unreadable".into(),
        };
        let v: Value = serde_json::from_str(text).map_err(|_| bad())?;
        if let Some(ok) = v.get("ok") {
            return Ok(ok.clone());
        }
        let err = v.get("err").ok_or_else(bad)?;
        let kind = err
            .get("code")
            .and_then(Value::as_str)
            .and_then(ErrorKind::from_code)
            .ok_or_else(bad)?;
        let message = err
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        Err(Error::Carried { kind, message })
    }
}
