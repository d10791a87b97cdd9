//! Caller cancellation (R-JEV-LIMIT): a token shared between the thread running an evaluation
//! and any other thread that may cancel it.
//!
//! Cancelling wakes whatever the evaluation is blocked on (the queue, the wait for the provider)
//! through wakers registered for the duration of that wait. The evaluation returns
//! `JEV_CANCELLED` at once; an HTTP provider request in flight has its socket shut down (issue 12
//! item 5), so its I/O thread returns and frees the concurrency slot; a host callback cannot be
//! interrupted and keeps its slot until it returns.

use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

type Waker = Arc<dyn Fn() + Send + Sync>;

/// A cancellation token. Cheap to clone; clones share state. Cancelling is permanent.
///
/// ```
/// let token = jevgate::jev::CancelToken::new();
/// let other = token.clone();
/// std::thread::spawn(move || other.cancel()).join().unwrap();
/// assert!(token.is_cancelled());
/// ```
#[derive(Clone, Default)]
pub struct CancelToken {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    cancelled: AtomicBool,
    next: AtomicU64,
    wakers: Mutex<Vec<(u64, Waker)>>,
}

impl std::fmt::Debug for CancelToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CancelToken")
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}

impl CancelToken {
    /// A fresh, not cancelled token.
    pub fn new() -> CancelToken {
        CancelToken::default()
    }

    /// Cancels: every evaluation using this token (now or later) ends with `JEV_CANCELLED` as
    /// soon as it notices, which is immediately when it is waiting.
    pub fn cancel(&self) {
        self.inner.cancelled.store(true, Ordering::Release);
        let wakers: Vec<Waker> = self
            .inner
            .wakers
            .lock()
            .iter()
            .map(|(_, w)| Arc::clone(w))
            .collect();
        for w in wakers {
            w();
        }
    }

    /// Whether [`CancelToken::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancelled.load(Ordering::Acquire)
    }

    /// Registers `wake` to run on cancellation while the returned guard lives.
    pub(crate) fn on_cancel(&self, wake: impl Fn() + Send + Sync + 'static) -> WakerGuard {
        let id = self.inner.next.fetch_add(1, Ordering::Relaxed);
        self.inner.wakers.lock().push((id, Arc::new(wake)));
        WakerGuard {
            token: self.clone(),
            id,
        }
    }
}

/// Unregisters a waker when dropped.
pub(crate) struct WakerGuard {
    token: CancelToken,
    id: u64,
}

impl Drop for WakerGuard {
    fn drop(&mut self) {
        self.token
            .inner
            .wakers
            .lock()
            .retain(|(i, _)| *i != self.id);
    }
}
