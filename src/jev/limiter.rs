//! The concurrency limiter (R-JEV-LIMIT): at most `maxConcurrentRequests` evaluations in flight,
//! at most `maxQueueSize` waiting in FIFO order, more rejected at once (`JEV_QUEUE_FULL`).
//!
//! [`LimiterState`] is the pure core (counters and a FIFO of tickets); [`Limiter`] wraps it in a
//! `parking_lot` mutex and condvar so callers can wait until their deadline or a cancellation.
//! The limits are read from each caller's captured configuration, so a reload applies to new
//! arrivals. No lock is held while a slot is in use, and the lock is never held across I/O.

use crate::clock::{Instant, SharedClock};
use crate::CancelToken;
use parking_lot::{Condvar, Mutex};
use std::collections::VecDeque;
use std::sync::Arc;

/// What the limiter says to an arriving evaluation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// A slot was taken; go.
    Go,
    /// Queued with this ticket; wait for [`LimiterState::poll`].
    Queued(u64),
    /// The queue is full: reject immediately.
    Full,
}

/// Slots in use and the FIFO of waiting tickets. Pure.
///
/// ```
/// use jevgate::unstable::{Admission, LimiterState};
/// let mut s = LimiterState::default();
/// assert_eq!(s.arrive(1, 1), Admission::Go);
/// let Admission::Queued(t) = s.arrive(1, 1) else { panic!() };
/// assert_eq!(s.arrive(1, 1), Admission::Full);
/// assert!(!s.poll(t, 1));
/// s.release();
/// assert!(s.poll(t, 1));
/// ```
#[derive(Debug, Default)]
pub struct LimiterState {
    active: usize,
    queue: VecDeque<u64>,
    next: u64,
}

impl LimiterState {
    /// Evaluations holding a slot.
    pub fn active(&self) -> usize {
        self.active
    }

    /// Evaluations waiting.
    pub fn waiting(&self) -> usize {
        self.queue.len()
    }

    /// An evaluation arrives. It goes at once only if a slot is free and nobody waits (FIFO).
    pub fn arrive(&mut self, max_active: usize, max_queue: usize) -> Admission {
        if self.active < max_active && self.queue.is_empty() {
            self.active += 1;
            return Admission::Go;
        }
        if self.queue.len() >= max_queue {
            return Admission::Full;
        }
        let t = self.next;
        self.next += 1;
        self.queue.push_back(t);
        Admission::Queued(t)
    }

    /// A waiting ticket asks again: it takes a slot when it is first in line and one is free.
    pub fn poll(&mut self, ticket: u64, max_active: usize) -> bool {
        if self.queue.front() == Some(&ticket) && self.active < max_active {
            self.queue.pop_front();
            self.active += 1;
            true
        } else {
            false
        }
    }

    /// A waiting ticket gives up (deadline or cancellation).
    pub fn leave(&mut self, ticket: u64) {
        self.queue.retain(|t| *t != ticket);
    }

    /// A slot is given back.
    pub fn release(&mut self) {
        self.active = self.active.saturating_sub(1);
    }
}

/// Why waiting for a slot ended without one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WaitEnd {
    Full,
    Deadline,
    Cancelled,
}

/// The shared limiter. Slots are returned by dropping the [`Slot`].
#[derive(Debug, Default)]
pub(crate) struct Limiter {
    state: Mutex<LimiterState>,
    changed: Condvar,
}

/// A held slot; dropping it frees the slot and wakes the queue.
#[derive(Debug)]
pub(crate) struct Slot {
    limiter: Arc<Limiter>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.limiter.state.lock().release();
        self.limiter.changed.notify_all();
    }
}

impl Limiter {
    /// Takes a slot, waiting in FIFO order until `deadline` (on `clock`) or cancellation.
    pub(crate) fn acquire(
        self: &Arc<Self>,
        max_active: usize,
        max_queue: usize,
        clock: &SharedClock,
        deadline: Instant,
        cancel: &CancelToken,
    ) -> Result<Slot, WaitEnd> {
        let mut state = self.state.lock();
        let ticket = match state.arrive(max_active, max_queue) {
            Admission::Go => {
                return Ok(Slot {
                    limiter: Arc::clone(self),
                })
            }
            Admission::Full => return Err(WaitEnd::Full),
            Admission::Queued(t) => t,
        };
        // The waker takes the state lock (so its notification cannot slip between a check and
        // the wait), and runs at once if the token is already cancelled: register it unlocked.
        drop(state);
        let me = Arc::clone(self);
        let _waker = cancel.on_cancel(move || {
            drop(me.state.lock());
            me.changed.notify_all();
        });
        let mut state = self.state.lock();
        loop {
            if cancel.is_cancelled() {
                state.leave(ticket);
                drop(state);
                self.changed.notify_all();
                return Err(WaitEnd::Cancelled);
            }
            if state.poll(ticket, max_active) {
                drop(state);
                // The next in line may also fit (a reload may have raised the limit).
                self.changed.notify_all();
                return Ok(Slot {
                    limiter: Arc::clone(self),
                });
            }
            let now = clock.now();
            if now >= deadline {
                state.leave(ticket);
                drop(state);
                self.changed.notify_all();
                return Err(WaitEnd::Deadline);
            }
            self.changed.wait_for(&mut state, deadline - now);
        }
    }

    /// `(active, waiting)` right now.
    pub(crate) fn counts(&self) -> (usize, usize) {
        let s = self.state.lock();
        (s.active(), s.waiting())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // R-JEV-LIMIT: 4 active, 16 queued, the 17th waiting one rejected; FIFO order.
    #[test]
    fn four_active_sixteen_queued_then_full_in_fifo_order() {
        let mut s = LimiterState::default();
        for _ in 0..4 {
            assert_eq!(s.arrive(4, 16), Admission::Go);
        }
        let tickets: Vec<u64> = (0..16)
            .map(|_| match s.arrive(4, 16) {
                Admission::Queued(t) => t,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(s.arrive(4, 16), Admission::Full);
        assert!(!s.poll(tickets[1], 4), "not first in line");
        s.release();
        assert!(
            !s.poll(tickets[1], 4),
            "FIFO: the second waits for the first"
        );
        assert!(s.poll(tickets[0], 4));
        s.leave(tickets[1]);
        s.release();
        assert!(s.poll(tickets[2], 4));
        assert_eq!((s.active(), s.waiting()), (4, 13));
    }

    #[test]
    fn zero_queue_rejects_when_busy() {
        let mut s = LimiterState::default();
        assert_eq!(s.arrive(1, 0), Admission::Go);
        assert_eq!(s.arrive(1, 0), Admission::Full);
    }
}
