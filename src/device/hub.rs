//! Live worker connections: which device is online, the outgoing queue of each connection, and
//! the commands waiting for a result (R-DEV-CHAN, R-DEV-FAIL).
//!
//! A [`Conn`] is shared by the I/O thread that serves its socket (which alone touches it) and by
//! the dispatching threads (which only queue frames, nudge the I/O thread and wait on a slot),
//! so no lock is ever held across socket I/O. A command is marked *sent* before its bytes are written: if the worker
//! goes away afterwards its outcome is unknown and it is never re-sent; if it goes away before,
//! the command was not delivered and the device is reported offline. A command abandoned at its
//! deadline or on a cancel is taken out of the queue if it was never written (nothing reached
//! the worker); [`Conn::send`] reports which, so a task can tell "not sent" from "outcome
//! unknown". This module must never retry a command or log a frame's content.

use super::executor::{ToolExecutor, WorkerFailure, OUTCOME_UNKNOWN};
use super::frames;
use super::registry::DeviceRecord;
use crate::clock::{wait_slice, SharedClock};
use crate::CancelToken;
use parking_lot::{Condvar, Mutex};
use serde_json::Value;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// What became of a command.
#[derive(Debug)]
enum Outcome {
    Answered(Result<Value, (String, String)>),
    Cancelled,
    Disconnected,
}

#[derive(Debug, Default)]
struct SlotState {
    sent: bool,
    outcome: Option<Outcome>,
}

/// One command waiting for its result.
#[derive(Debug, Default)]
pub(crate) struct Slot {
    state: Mutex<SlotState>,
    ready: Condvar,
}

impl Slot {
    fn settle(&self, outcome: Outcome) {
        let mut s = self.state.lock();
        if s.outcome.is_none() {
            s.outcome = Some(outcome);
            self.ready.notify_all();
        }
    }
}

/// A frame waiting to be written, with the command slot it delivers (if it is a command).
pub(crate) struct Outgoing {
    pub text: String,
    pub slot: Option<Arc<Slot>>,
}

impl Outgoing {
    /// Marks the command sent; called just before its bytes are written.
    pub fn mark_sent(&self) {
        if let Some(slot) = &self.slot {
            slot.state.lock().sent = true;
        }
    }
}

#[derive(Default)]
struct ConnState {
    alive: bool,
    outgoing: VecDeque<Outgoing>,
    pending: HashMap<String, Arc<Slot>>,
    close: Option<(u16, &'static str)>,
}

/// One authenticated worker connection.
pub(crate) struct Conn {
    serial: u64,
    /// The gateway's clock: a command's deadline is on it (R-CLK).
    clock: SharedClock,
    device_id: String,
    ids: Arc<AtomicU64>,
    state: Mutex<ConnState>,
    /// Tells the I/O thread serving this connection to look at it (never blocks).
    nudge: Nudge,
    /// The worker asked for `status` frames: lease changes of its device nudge it.
    status: std::sync::atomic::AtomicBool,
}

/// Wakes the I/O thread that serves a connection, for that connection.
pub(crate) type Nudge = Box<dyn Fn() + Send + Sync>;

impl Conn {
    pub fn device_id(&self) -> &str {
        &self.device_id
    }

    /// Wakes the connection's I/O thread (a frame was queued, a close asked for).
    pub fn notify(&self) {
        (self.nudge)();
    }

    /// The worker asked for `status` frames (through [`Hub::want_status`]).
    fn want_status(&self) {
        self.status.store(true, Ordering::Release);
    }

    /// Whether the worker asked for `status` frames.
    pub fn wants_status(&self) -> bool {
        self.status.load(Ordering::Acquire)
    }

    /// Takes everything queued for writing.
    pub fn drain_outgoing(&self) -> Vec<Outgoing> {
        self.state.lock().outgoing.drain(..).collect()
    }

    /// Asks the connection's I/O thread to close it with `code` and `reason`.
    pub fn request_close(&self, code: u16, reason: &'static str) {
        let mut s = self.state.lock();
        if s.close.is_none() {
            s.close = Some((code, reason));
        }
        drop(s);
        self.notify();
    }

    /// A close asked for by another thread, if any.
    pub fn close_request(&self) -> Option<(u16, &'static str)> {
        self.state.lock().close
    }

    /// Delivers a worker's result to the command waiting for it; results for unknown (late,
    /// cancelled, timed-out) ids are dropped.
    pub fn complete(&self, id: &str, outcome: Result<Value, (String, String)>) {
        let slot = self.state.lock().pending.remove(id);
        match slot {
            Some(slot) => slot.settle(Outcome::Answered(outcome)),
            None => log::debug!("result for an unknown command id dropped"),
        }
    }

    /// The connection ended: every waiting command fails (unknown outcome if it was sent).
    pub fn shut(&self) {
        let pending: Vec<Arc<Slot>> = {
            let mut s = self.state.lock();
            s.alive = false;
            s.outgoing.clear();
            s.pending.drain().map(|(_, slot)| slot).collect()
        };
        for slot in pending {
            slot.settle(Outcome::Disconnected);
        }
    }

    /// Gives up on command `id`: unqueues it if it was never written, else tells the worker to
    /// cancel it. Returns whether it was unqueued (then nothing of it reached the worker; a
    /// command already taken for writing counts as written).
    fn abandon(&self, id: &str, slot: &Arc<Slot>) -> bool {
        let mut s = self.state.lock();
        s.pending.remove(id);
        let before = s.outgoing.len();
        s.outgoing
            .retain(|o| !o.slot.as_ref().is_some_and(|x| Arc::ptr_eq(x, slot)));
        let unqueued = s.outgoing.len() != before;
        if !unqueued && s.alive {
            s.outgoing.push_back(Outgoing {
                text: frames::cancel(id),
                slot: None,
            });
            drop(s);
            self.notify();
        }
        unqueued
    }
}

/// How a command sent by [`Conn::send`] failed, with what is known about its delivery.
#[derive(Debug)]
pub(crate) enum SendFailure {
    /// The worker answered with a failure.
    Answered(WorkerFailure),
    /// The connection was gone before the command's frame was written: nothing reached the
    /// worker.
    Offline,
    /// The cancel token fired. `written` is false only when the command was taken out of the
    /// queue unwritten (nothing reached the worker).
    Cancelled { written: bool },
    /// The deadline passed. `written` as for `Cancelled`.
    TimedOut { written: bool },
    /// The connection ended after the frame was written: the outcome is unknown.
    Lost,
}

impl Conn {
    /// Sends one command and waits for its result until `deadline` or `cancel`, telling a
    /// command that never reached the worker apart from one whose outcome is unknown. Never
    /// re-sends.
    pub(crate) fn send(
        &self,
        tool: &str,
        args: &Value,
        deadline: Duration,
        cancel: &CancelToken,
    ) -> Result<Value, SendFailure> {
        let id = format!("c{}", self.ids.fetch_add(1, Ordering::Relaxed));
        let slot = Arc::new(Slot::default());
        let deadline_ms = u64::try_from(deadline.as_millis()).unwrap_or(u64::MAX);
        {
            let mut s = self.state.lock();
            if !s.alive {
                return Err(SendFailure::Offline);
            }
            s.pending.insert(id.clone(), Arc::clone(&slot));
            s.outgoing.push_back(Outgoing {
                text: frames::command(&id, tool, args, deadline_ms),
                slot: Some(Arc::clone(&slot)),
            });
        }
        self.notify();
        let registration = {
            let slot = Arc::clone(&slot);
            cancel.on_cancel(move || slot.settle(Outcome::Cancelled))
        };
        // The deadline is on the gateway's clock; each wait is a bounded slice of it, so an
        // advanced manual clock ends the wait too (R-CLK).
        let end = self.clock.now() + deadline;
        let (outcome, sent) = {
            let mut s = slot.state.lock();
            while s.outcome.is_none() {
                let Some(slice) = wait_slice(&*self.clock, end) else {
                    break;
                };
                slot.ready.wait_for(&mut s, slice);
            }
            (s.outcome.take(), s.sent)
        };
        drop(registration);
        match outcome {
            Some(Outcome::Answered(Ok(value))) => Ok(value),
            Some(Outcome::Answered(Err((code, message)))) => Err(SendFailure::Answered(
                WorkerFailure::from_worker(&code, &message),
            )),
            Some(Outcome::Cancelled) => Err(SendFailure::Cancelled {
                written: !self.abandon(&id, &slot),
            }),
            Some(Outcome::Disconnected) if !sent => Err(SendFailure::Offline),
            Some(Outcome::Disconnected) => Err(SendFailure::Lost),
            None => Err(SendFailure::TimedOut {
                written: !self.abandon(&id, &slot),
            }),
        }
    }
}

impl ToolExecutor for Conn {
    fn execute(
        &self,
        tool: &str,
        args: &Value,
        deadline: Duration,
        cancel: &CancelToken,
    ) -> Result<Value, WorkerFailure> {
        let deadline_ms = u64::try_from(deadline.as_millis()).unwrap_or(u64::MAX);
        self.send(tool, args, deadline, cancel).map_err(|f| match f {
            SendFailure::Answered(f) => f,
            SendFailure::Offline => offline(),
            SendFailure::Cancelled { .. } => WorkerFailure::new(
                "cancelled",
                "a person took control of this browser back and the command was cancelled; do not retry unless asked to",
            ),
            SendFailure::Lost => WorkerFailure::new(
                OUTCOME_UNKNOWN,
                "the browser disconnected while running the command; it may or may not have taken effect, and it was not retried",
            ),
            SendFailure::TimedOut { .. } => WorkerFailure::new(
                "timed_out",
                format!(
                    "the command did not finish within {} ms and was cancelled; it may have partly run",
                    deadline_ms
                ),
            ),
        })
    }
}

fn offline() -> WorkerFailure {
    WorkerFailure {
        code: "DEVICE_OFFLINE".into(),
        message: "the browser went offline before the command was delivered".into(),
        not_sent: true,
    }
}

/// The longest autopilot line a `status` frame carries, in characters.
pub(crate) const PROGRESS_LINE_CHARS: usize = 300;

/// Every live connection, one per device.
pub(crate) struct Hub {
    conns: Mutex<HashMap<String, Arc<Conn>>>,
    /// Each device's current autopilot line (`Autopilot: <goal> — <step>`) while a run drives
    /// it, for its worker's `status` frames. Kept by device, so a reconnect mid-run shows it.
    progress: Mutex<HashMap<String, String>>,
    /// Some worker ever asked for `status` frames: until then a lease change costs no lock.
    any_status: std::sync::atomic::AtomicBool,
    serials: AtomicU64,
    ids: Arc<AtomicU64>,
    clock: SharedClock,
    /// Told each device connected here (with its record) and gone from here (`None`): on the
    /// shared store, `remote.rs` records which process holds each connection. Set once; it
    /// must not block (it queues).
    presence: std::sync::OnceLock<Presence>,
}

/// Told a device's connection arrived here (its record), left, or that the device was
/// unpaired. Must not block.
pub(crate) type Presence = Arc<dyn Fn(&str, Change<'_>) + Send + Sync>;

/// What [`Presence`] is told about a device.
#[cfg_attr(not(feature = "postgres"), allow(dead_code))] // reason: only a fleet reads it
pub(crate) enum Change<'a> {
    /// Its connection was registered here.
    Here(&'a DeviceRecord),
    /// Its connection here ended.
    Left,
    /// It was unpaired (by its owner or its worker): nobody may reach it any more.
    Unpaired,
}

impl Hub {
    /// No connection yet; command deadlines are on `clock`.
    pub fn new(clock: SharedClock) -> Hub {
        Hub {
            conns: Mutex::new(HashMap::new()),
            progress: Mutex::new(HashMap::new()),
            any_status: std::sync::atomic::AtomicBool::new(false),
            serials: AtomicU64::new(0),
            ids: Arc::new(AtomicU64::new(0)),
            clock,
            presence: std::sync::OnceLock::new(),
        }
    }

    /// Registers what is told connections arriving and leaving (once; a second is ignored).
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))] // reason: only a fleet watches
    pub fn set_presence(&self, presence: Presence) {
        if self.presence.set(presence).is_err() {
            log::debug!("a second presence watcher was ignored");
        }
    }

    /// `record`'s connection was just registered here: the presence watcher is told.
    pub fn announce(&self, record: &DeviceRecord) {
        if let Some(p) = self.presence.get() {
            p(&record.id, Change::Here(record));
        }
    }

    /// The gateway's clock.
    pub fn clock(&self) -> &SharedClock {
        &self.clock
    }

    /// Registers an authenticated connection for `device_id`, whose I/O thread `nudge` wakes; a
    /// previous connection of the same device is asked to close (a second connection replaces
    /// the first).
    pub fn register(&self, device_id: &str, nudge: Nudge) -> Arc<Conn> {
        let conn = Arc::new(Conn {
            serial: self.serials.fetch_add(1, Ordering::Relaxed),
            clock: Arc::clone(&self.clock),
            device_id: device_id.to_string(),
            ids: Arc::clone(&self.ids),
            state: Mutex::new(ConnState {
                alive: true,
                ..ConnState::default()
            }),
            nudge,
            status: std::sync::atomic::AtomicBool::new(false),
        });
        let previous = self
            .conns
            .lock()
            .insert(device_id.to_string(), Arc::clone(&conn));
        if let Some(previous) = previous {
            previous.request_close(4000, "REPLACED_BY_NEW_CONNECTION");
            previous.shut();
        }
        conn
    }

    /// Removes `conn` if it is still its device's current connection.
    pub fn unregister(&self, conn: &Arc<Conn>) {
        let mut conns = self.conns.lock();
        if conns
            .get(&conn.device_id)
            .is_some_and(|c| c.serial == conn.serial)
        {
            conns.remove(&conn.device_id);
            drop(conns);
            if let Some(p) = self.presence.get() {
                p(&conn.device_id, Change::Left);
            }
        }
    }

    /// `conn`'s worker asked for `status` frames: lease changes of its device nudge it.
    pub fn want_status(&self, conn: &Conn) {
        self.any_status.store(true, Ordering::Release);
        conn.want_status();
    }

    /// The device's live connection.
    pub fn get(&self, device_id: &str) -> Option<Arc<Conn>> {
        self.conns.lock().get(device_id).cloned()
    }

    /// The serial of the device's live connection here: a new connection has a new one.
    pub fn serial(&self, device_id: &str) -> Option<u64> {
        self.conns.lock().get(device_id).map(|c| c.serial)
    }

    /// Whether the device's worker is connected.
    pub fn online(&self, device_id: &str) -> bool {
        self.conns.lock().contains_key(device_id)
    }

    /// A lease change of `device`: its connection is nudged if its worker asked for `status`
    /// frames (it re-reads the lease and sends one if anything changed).
    pub fn control_changed(&self, device_id: &str) {
        if !self.any_status.load(Ordering::Acquire) {
            return;
        }
        let conn = self.conns.lock().get(device_id).cloned();
        if let Some(conn) = conn.filter(|c| c.wants_status()) {
            conn.notify();
        }
    }

    /// The line an autopilot run shows on `device_id` (`Some`, at most [`PROGRESS_LINE_CHARS`]
    /// characters kept) or its end (`None`): a worker that asked for `status` frames is told.
    pub fn set_progress(&self, device_id: &str, line: Option<&str>) {
        {
            let mut lines = self.progress.lock();
            match line {
                Some(line) => {
                    let kept: String = line.chars().take(PROGRESS_LINE_CHARS).collect();
                    lines.insert(device_id.to_string(), kept);
                }
                None => {
                    lines.remove(device_id);
                }
            }
        }
        self.control_changed(device_id);
    }

    /// `device_id` was unpaired: the presence watcher is told (after its connection closed).
    pub fn unpaired(&self, device_id: &str) {
        if let Some(p) = self.presence.get() {
            p(device_id, Change::Unpaired);
        }
    }

    /// The autopilot line `device_id` shows now, if a run drives it.
    pub fn progress_line(&self, device_id: &str) -> Option<String> {
        self.progress.lock().get(device_id).cloned()
    }

    /// Closes the device's connection (unpaired, re-paired).
    pub fn disconnect(&self, device_id: &str, code: u16, reason: &'static str) {
        let conn = self.conns.lock().remove(device_id);
        if let Some(conn) = conn {
            conn.request_close(code, reason);
            conn.shut();
            if let Some(p) = self.presence.get() {
                p(device_id, Change::Left);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(conn: &Arc<Conn>) -> std::thread::JoinHandle<Result<Value, WorkerFailure>> {
        let conn = Arc::clone(conn);
        std::thread::spawn(move || {
            conn.execute(
                "browser_get_text",
                &Value::Null,
                Duration::from_secs(5),
                &CancelToken::new(),
            )
        })
    }

    fn wait_queued(conn: &Conn) {
        while conn.state.lock().outgoing.is_empty() {
            std::thread::yield_now();
        }
    }

    // R-DEV-FAIL: a command the worker never received is "offline", not "unknown".
    #[test]
    fn disconnect_before_delivery_is_offline_and_after_is_unknown() {
        let hub = Hub::new(crate::clock::system());
        let conn = hub.register("dev_a", Box::new(|| {}));
        let waiting = run(&conn);
        wait_queued(&conn);
        conn.shut();
        let failure = waiting.join().unwrap().unwrap_err();
        assert!(failure.not_sent);

        let conn = hub.register("dev_b", Box::new(|| {}));
        let waiting = run(&conn);
        wait_queued(&conn);
        for item in conn.drain_outgoing() {
            item.mark_sent();
        }
        conn.shut();
        let failure = waiting.join().unwrap().unwrap_err();
        assert_eq!(failure.code, OUTCOME_UNKNOWN);
        assert!(!failure.not_sent);
    }

    // R-DEV-CHAN: results are routed by id; late results are dropped.
    #[test]
    fn results_are_routed_by_id_and_a_replaced_connection_fails_its_commands() {
        let hub = Hub::new(crate::clock::system());
        let conn = hub.register("dev_a", Box::new(|| {}));
        let waiting = run(&conn);
        wait_queued(&conn);
        let sent = conn.drain_outgoing();
        let frame: Value = serde_json::from_str(&sent[0].text).unwrap();
        let id = frame["id"].as_str().unwrap();
        conn.complete("unknown", Ok(Value::Bool(false)));
        conn.complete(id, Ok(Value::Bool(true)));
        assert_eq!(waiting.join().unwrap().unwrap(), Value::Bool(true));
        conn.complete(id, Ok(Value::Bool(false))); // late duplicate: dropped

        let waiting = run(&conn);
        wait_queued(&conn);
        for item in conn.drain_outgoing() {
            item.mark_sent();
        }
        let replacement = hub.register("dev_a", Box::new(|| {}));
        assert_eq!(
            conn.close_request(),
            Some((4000, "REPLACED_BY_NEW_CONNECTION"))
        );
        assert_eq!(waiting.join().unwrap().unwrap_err().code, OUTCOME_UNKNOWN);
        hub.unregister(&conn);
        assert!(hub.online("dev_a"));
        hub.unregister(&replacement);
        assert!(!hub.online("dev_a"));
    }

    // R-TSK-RCPT: a deadline or a cancel that finds the command still queued took it back
    // unwritten (nothing reached the worker); one that finds it taken for writing cannot say.
    #[test]
    fn r_tsk_rcpt_timeout_and_cancel_tell_an_unwritten_command_from_a_written_one() {
        let clock = crate::clock::ManualClock::new();
        let hub = Hub::new(Arc::new(clock.clone()));
        for written in [false, true] {
            for cancelled in [false, true] {
                let conn = hub.register("dev_a", Box::new(|| {}));
                let cancel = CancelToken::new();
                let waiting = {
                    let (conn, cancel) = (Arc::clone(&conn), cancel.clone());
                    std::thread::spawn(move || {
                        conn.send("page_click", &Value::Null, Duration::from_secs(5), &cancel)
                    })
                };
                wait_queued(&conn);
                if written {
                    for item in conn.drain_outgoing() {
                        item.mark_sent();
                    }
                }
                if cancelled {
                    cancel.cancel();
                } else {
                    // Until it ends: the sender may read the clock for its deadline only now.
                    while !waiting.is_finished() {
                        clock.advance(Duration::from_secs(5));
                        std::thread::yield_now();
                    }
                }
                let failure = waiting.join().unwrap().unwrap_err();
                match (cancelled, failure) {
                    (false, SendFailure::TimedOut { written: w })
                    | (true, SendFailure::Cancelled { written: w }) => {
                        assert_eq!(w, written, "cancelled={cancelled}")
                    }
                    (_, other) => panic!("{other:?}"),
                }
                // Unwritten: gone from the queue. Written: the worker is told to cancel it.
                let queued = conn.drain_outgoing();
                assert_eq!(queued.len(), usize::from(written));
                assert!(queued.iter().all(|o| o.text.contains("\"cancel\"")));
                hub.unregister(&conn);
            }
        }
    }
}
