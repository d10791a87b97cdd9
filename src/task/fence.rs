//! The cancel fence of one task (R-TSK-CTL, R-TSK-RCPT): a `cancel()` that has returned
//! prevents every later checkpoint and dispatch of that task.
//!
//! Owns one flag behind one lock. A dispatch takes the lock, sees the flag clear and commits its
//! checkpoint while holding it; a cancellation takes the same lock to set the flag. So a
//! checkpoint either committed before the cancellation (the operation was on its way when
//! `cancel()` returned) or it never commits. It must never be held across the dispatch itself
//! (a cancellation waits for a checkpoint write, never for a browser).

use parking_lot::Mutex;

/// See the module doc.
#[derive(Debug, Default)]
pub(crate) struct Fence {
    closed: Mutex<bool>,
}

impl Fence {
    /// Closes the fence; returns once no checkpoint is being committed past it.
    pub(crate) fn close(&self) {
        *self.closed.lock() = true;
    }

    /// Whether the fence is closed.
    #[cfg(test)]
    pub(crate) fn is_closed(&self) -> bool {
        *self.closed.lock()
    }

    /// Runs `checkpoint` while the fence is open and held; `None` when it is closed.
    pub(crate) fn pass<T>(&self, checkpoint: impl FnOnce() -> T) -> Option<T> {
        let closed = self.closed.lock();
        if *closed {
            return None;
        }
        Some(checkpoint())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    // R-TSK-CTL: a close that returned is seen by every later pass; a pass in progress
    // finishes before the close returns.
    #[test]
    fn r_tsk_ctl_a_closed_fence_lets_nothing_pass_and_close_waits_for_a_pass() {
        let f = Arc::new(Fence::default());
        assert_eq!(f.pass(|| 1), Some(1));
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
        assert_eq!(t.join().unwrap(), Some(7));
        closer.join().unwrap();
        assert!(f.is_closed());
        assert_eq!(f.pass(|| 2), None);
    }
}
