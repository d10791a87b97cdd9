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
//! <id>`), whose thread waits on a condvar with a bounded deadline. Out of time, the caller
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
    use crate::store::pg::{listen_here, PgStore, TxError};
    use crate::{Error, ErrorKind, Result};
    use parking_lot::{Condvar, Mutex};
    use serde_json::Value;
    use std::collections::HashMap;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::thread::JoinHandle;
    use std::time::Duration;

    /// The NOTIFY channel of carried task calls.
    const CHANNEL: &str = "jevgate_tasks";
    /// How long a caller waits for the owner's answer.
    const DEADLINE: Duration = Duration::from_secs(5);
    /// The caller's fallback re-read of its row.
    const REREAD: Duration = Duration::from_millis(250);
    /// A row older than this is never applied (its caller reported it pending long ago).
    const APPLY_WITHIN_MS: i64 = 60_000;
    /// How long an ended row is kept before its owner deletes it.
    const KEEP_MS: i64 = 600_000;

    #[derive(Default)]
    struct Waiter {
        woken: Mutex<bool>,
        ready: Condvar,
    }

    impl Waiter {
        fn wake(&self) {
            *self.woken.lock() = true;
            self.ready.notify_all();
        }
    }

    struct Inner {
        store: Arc<PgStore>,
        process: String,
        dead_after: Duration,
        /// The gateway's clock: a caller's wait for the owner's answer (R-CLK).
        clock: SharedClock,
        waiters: Mutex<HashMap<i64, Arc<Waiter>>>,
        apply: Apply,
        stop: AtomicBool,
    }

    /// This process's part in carrying task control calls.
    pub(crate) struct Carrier {
        inner: Arc<Inner>,
        thread: Mutex<Option<JoinHandle<()>>>,
    }

    fn corrupt() -> TxError {
        TxError::Jevgate(Error::StoreCorrupt {
            reason: "a carried task call row is unreadable".into(),
        })
    }

    /// What the caller read of its row.
    enum Seen {
        Pending,
        Done(String),
        /// The owner is dead; whether it had taken the call.
        OwnerGone {
            taken: bool,
        },
    }

    impl Carrier {
        /// Starts the listener applying the calls carried to `process` with `apply`.
        pub(crate) fn start(
            store: Arc<PgStore>,
            process: String,
            dead_after: Duration,
            clock: SharedClock,
            apply: Apply,
        ) -> Carrier {
            let inner = Arc::new(Inner {
                store,
                process,
                dead_after,
                clock,
                waiters: Mutex::new(HashMap::new()),
                apply,
                stop: AtomicBool::new(false),
            });
            let listen = Arc::clone(&inner);
            let config = inner.store.config().clone();
            let thread = std::thread::Builder::new()
                .name("jevgate-task-carry".into())
                .spawn(move || {
                    let mut rounds = 0u32;
                    listen_here(
                        &config,
                        CHANNEL,
                        &listen.stop,
                        Duration::from_millis(500),
                        &mut |client, payload| match payload {
                            Some(p) => listen.notified(client, p),
                            None => {
                                for w in listen.waiters.lock().values() {
                                    w.wake();
                                }
                                listen.run_queued(client);
                            }
                        },
                        &mut |client| {
                            // A lost notification: about every second.
                            rounds = rounds.wrapping_add(1);
                            if rounds.is_multiple_of(10) {
                                listen.run_queued(client);
                            }
                            if rounds.is_multiple_of(600) {
                                listen.prune(client);
                            }
                        },
                    );
                });
            let thread = match thread {
                Ok(t) => Some(t),
                Err(_) => {
                    log::error!("the task call listener could not be started");
                    None
                }
            };
            Carrier {
                inner,
                thread: Mutex::new(thread),
            }
        }

        /// The live process other than this one that runs open task `task`, if any.
        pub(crate) fn elsewhere(&self, task: &str) -> Result<Option<String>> {
            let me = self.inner.process.clone();
            let dead_after = self.inner.dead_after;
            self.inner.store.tx("find a task's process", |tx, clock| {
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
            let (me, to, task) = (self.inner.process.clone(), to.to_string(), &call.task);
            let id = self.inner.store.tx("carry a task call", |tx, clock| {
                let now = clock.now_ms(tx)?;
                let id: i64 = tx
                    .query_one(
                        "INSERT INTO jevgate_task_calls
                           (task_id, from_process, to_process, call, created_at)
                         VALUES ($1, $2, $3, $4, $5) RETURNING id",
                        &[task, &me, &to, &text, &now],
                    )?
                    .get(0);
                tx.execute(
                    "SELECT pg_notify($1, $2)",
                    &[&CHANNEL, &format!("run {to} {id}")],
                )?;
                Ok(id)
            })?;
            let waiter = Arc::new(Waiter::default());
            self.inner.waiters.lock().insert(id, Arc::clone(&waiter));
            // R-CLK: bounded on the gateway's clock (a manual clock nobody moves still ends).
            let mut grace = Grace::new(&*self.inner.clock, DEADLINE);
            let outcome = loop {
                match self.read(id) {
                    Ok(Seen::Done(text)) => break answer(&text).map(Outcome::Answered),
                    Ok(Seen::OwnerGone { taken: false }) => {
                        if self.withdraw(id)? {
                            break Ok(Outcome::Here);
                        }
                    }
                    Ok(Seen::OwnerGone { taken: true }) => {
                        break Err(Error::TaskControlPending {
                            reason: "the process running the task stopped while applying the call; whether it took effect shows in the task's status",
                        })
                    }
                    Ok(Seen::Pending) | Err(_) => {}
                }
                let Some(slice) = grace.next(REREAD) else {
                    break Err(Error::TaskControlPending {
                        reason: "the call was written for the process running the task, which did not confirm it in time; it applies it when it reads it (within a minute) — read the task's status, do not resend",
                    });
                };
                let mut woken = waiter.woken.lock();
                if !*woken {
                    waiter.ready.wait_for(&mut woken, slice);
                }
                *woken = false;
            };
            self.inner.waiters.lock().remove(&id);
            outcome
        }

        fn read(&self, id: i64) -> Result<Seen> {
            let dead_after = self.inner.dead_after;
            self.inner.store.tx("read a task call", |tx, clock| {
                let row = tx
                    .query_opt(
                        "SELECT c.state, c.result, p.heartbeat_at FROM jevgate_task_calls c
                           LEFT JOIN jevgate_processes p ON p.process_id = c.to_process
                          WHERE c.id = $1",
                        &[&id],
                    )?
                    .ok_or_else(corrupt)?;
                let state: String = row.get(0);
                if state == "done" {
                    return Ok(Seen::Done(
                        row.get::<_, Option<String>>(1).ok_or_else(corrupt)?,
                    ));
                }
                let now = clock.now_ms(tx)?;
                let alive = row
                    .get::<_, Option<i64>>(2)
                    .is_some_and(|beat| is_alive(beat, now, dead_after));
                Ok(match alive {
                    true => Seen::Pending,
                    false => Seen::OwnerGone {
                        taken: state == "taken",
                    },
                })
            })
        }

        /// Withdraws a row its owner never took: `true` when it is withdrawn now.
        fn withdraw(&self, id: i64) -> Result<bool> {
            self.inner.store.tx("withdraw a task call", |tx, _| {
                Ok(tx.execute(
                    "UPDATE jevgate_task_calls SET state = 'withdrawn'
                      WHERE id = $1 AND state = 'queued'",
                    &[&id],
                )? == 1)
            })
        }

        /// Stops the listener. Idempotent.
        pub(crate) fn close(&self) {
            if self.inner.stop.swap(true, Ordering::AcqRel) {
                return;
            }
            if let Some(t) = self.thread.lock().take() {
                if t.thread().id() != std::thread::current().id() {
                    let _ = t.join();
                }
            }
        }
    }

    impl Drop for Carrier {
        fn drop(&mut self) {
            self.close();
        }
    }

    impl Inner {
        /// One payload: `run <owner> <id>` or `done <caller> <id>`.
        fn notified(&self, client: &mut postgres::Client, payload: &str) {
            let mut parts = payload.splitn(3, ' ');
            let (Some(kind), Some(process), Some(id)) = (parts.next(), parts.next(), parts.next())
            else {
                return;
            };
            if process != self.process {
                return;
            }
            let Ok(id) = id.parse::<i64>() else { return };
            match kind {
                // In row order: a later row never overtakes an earlier one.
                "run" => self.run_queued(client),
                "done" => {
                    if let Some(w) = self.waiters.lock().get(&id) {
                        w.wake();
                    }
                }
                _ => {}
            }
        }

        /// Applies the rows queued for this process, oldest first.
        fn run_queued(&self, client: &mut postgres::Client) {
            let Ok(rows) = client.query(
                "SELECT id FROM jevgate_task_calls
                  WHERE to_process = $1 AND state = 'queued' ORDER BY id LIMIT 64",
                &[&self.process],
            ) else {
                return;
            };
            for r in rows {
                self.run(client, r.get(0));
            }
        }

        /// Takes row `id` once, applies it as a local call, writes the answer, tells the caller.
        fn run(&self, client: &mut postgres::Client, id: i64) {
            let clock = self.store.db_clock();
            let taken = (|| -> std::result::Result<Option<String>, postgres::Error> {
                let now = clock.now_ms(client)?;
                let row = client.query_opt(
                    "UPDATE jevgate_task_calls SET state = 'taken'
                      WHERE id = $1 AND to_process = $2 AND state = 'queued'
                        AND created_at > $3
                      RETURNING call",
                    &[&id, &self.process, &now.saturating_sub(APPLY_WITHIN_MS)],
                )?;
                Ok(row.map(|r| r.get(0)))
            })();
            let text = match taken {
                Ok(Some(t)) => t,
                Ok(None) => return,
                Err(_) => {
                    log::warn!("a carried task call could not be taken");
                    return;
                }
            };
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
            let written = (|| -> std::result::Result<(), postgres::Error> {
                let caller = client.query_opt(
                    "UPDATE jevgate_task_calls SET state = 'done', result = $2
                      WHERE id = $1 RETURNING from_process",
                    &[&id, &result],
                )?;
                if let Some(r) = caller {
                    let caller: String = r.get(0);
                    client.execute(
                        "SELECT pg_notify($1, $2)",
                        &[&CHANNEL, &format!("done {caller} {id}")],
                    )?;
                }
                Ok(())
            })();
            if written.is_err() {
                log::warn!("a carried task call's answer was not written");
            }
        }

        /// Deletes this process's rows created more than [`KEEP_MS`] ago (never one taken).
        fn prune(&self, client: &mut postgres::Client) {
            let Ok(now) = self.store.db_clock().now_ms(client) else {
                return;
            };
            let _ = client.execute(
                "DELETE FROM jevgate_task_calls
                  WHERE to_process = $1 AND state <> 'taken' AND created_at < $2",
                &[&self.process, &now.saturating_sub(KEEP_MS)],
            );
        }
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
