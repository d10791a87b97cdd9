//! The fence of one task (R-TSK-CTL, R-TSK-RCPT): a `cancel()` — or a `pause`/`revise` — that
//! has returned prevents every later checkpoint and dispatch of that task (of its current
//! round, for a pause or a revision).
//!
//! Owns one small state behind one lock. A dispatch takes the lock, sees the fence open and
//! commits its checkpoint while holding it; a cancellation or an interruption takes the same
//! lock to close it. So a checkpoint either committed before (the operation was on its way
//! when the call returned) or it never commits. It must never be held across the dispatch
//! itself (a cancellation waits for a checkpoint write, never for a browser). A cancellation is
//! final; an interruption (`PAUSED`, `REVISED`) lasts until the next round starts.

use parking_lot::Mutex;

#[derive(Debug, Default)]
struct State {
    cancelled: bool,
    interrupted: Option<&'static str>,
}

/// See the module doc.
#[derive(Debug, Default)]
pub(crate) struct Fence {
    state: Mutex<State>,
}

impl Fence {
    /// Closes the fence for good; returns once no checkpoint is being committed past it.
    pub(crate) fn close(&self) {
        self.state.lock().cancelled = true;
    }

    /// Stops the current round (`reason`: `PAUSED`, `REVISED`) until [`Fence::reopen`].
    pub(crate) fn interrupt(&self, reason: &'static str) {
        let mut s = self.state.lock();
        if s.interrupted.is_none() {
            s.interrupted = Some(reason);
        }
    }

    /// A new round starts: an interruption ends (a cancellation never does).
    pub(crate) fn reopen(&self) {
        self.state.lock().interrupted = None;
    }

    /// Why nothing may pass now (`CANCELLED`, `PAUSED`, `REVISED`), if so.
    pub(crate) fn stopped(&self) -> Option<&'static str> {
        let s = self.state.lock();
        if s.cancelled {
            Some("CANCELLED")
        } else {
            s.interrupted
        }
    }

    /// Runs `checkpoint` while the fence is open and held; the reason when it is not.
    pub(crate) fn pass<T>(&self, checkpoint: impl FnOnce() -> T) -> Result<T, &'static str> {
        let s = self.state.lock();
        if s.cancelled {
            return Err("CANCELLED");
        }
        if let Some(r) = s.interrupted {
            return Err(r);
        }
        Ok(checkpoint())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    // R-TSK-CTL: a close that returned is seen by every later pass; a pass in progress
    // finishes before the close returns; an interruption lasts until the next round, a
    // cancellation for good.
    #[test]
    fn r_tsk_ctl_a_closed_fence_lets_nothing_pass_and_close_waits_for_a_pass() {
        let f = Arc::new(Fence::default());
        assert_eq!(f.pass(|| 1), Ok(1));
        f.interrupt("PAUSED");
        f.interrupt("REVISED");
        assert_eq!(f.pass(|| 1), Err("PAUSED"));
        f.reopen();
        assert_eq!(f.pass(|| 1), Ok(1));
        let (entered_tx, entered_rx) = std::sync::mpsc::channel();
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        let f2 = Arc::clone(&f);
        let t = std::thread::spawn(move || {
            f2.pass(|| {
                entered_tx.send(()).unwrap();
                go_rx.recv().unwrap();
                7
            })
        });
        entered_rx.recv().unwrap();
        let f3 = Arc::clone(&f);
        let closer = std::thread::spawn(move || f3.close());
        go_tx.send(()).unwrap();
        assert_eq!(t.join().unwrap(), Ok(7));
        closer.join().unwrap();
        assert_eq!(f.stopped(), Some("CANCELLED"));
        f.reopen();
        assert_eq!(f.pass(|| 2), Err("CANCELLED"));
    }
}
