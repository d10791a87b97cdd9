//! Cancellation, one concept for every layer (R-JEV-LIMIT, R-LEASE-3, R-DEV-CHAN): the
//! [`CancelToken`] a caller, a take-back or a worker's cancel frame fires, and the
//! [`CancelRegistration`] that keeps a wake-up hook registered while a wait lasts.
//!
//! Owns only the token. Cancelling wakes whatever a call is blocked on (the Jev queue, the wait
//! for the provider, the wait for a device's answer, a `browser_wait_for`) through hooks
//! registered for the duration of that wait; what each waiter does then is its own business
//! (an evaluation returns `JEV_CANCELLED`, a device command answers `cancelled`). This module
//! must never block, never read a clock, and never know who waits on it: it sits at the bottom
//! beside the clock so every layer can share the one type.

use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

type Hook = Box<dyn FnOnce() + Send>;

#[derive(Default)]
struct State {
    cancelled: AtomicBool,
    hooks: Mutex<Vec<(u64, Hook)>>,
    next: AtomicU64,
}

/// A cancellation token. Cheap to clone; clones share state. Cancelling is permanent and
/// idempotent: every registered hook runs once, outside the token's lock.
///
/// ```
/// use jevgate::CancelToken;
/// let token = CancelToken::new();
/// let other = token.clone();
/// let seen = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
/// let s = seen.clone();
/// let _hook = token.on_cancel(move || s.store(true, std::sync::atomic::Ordering::SeqCst));
/// std::thread::spawn(move || other.cancel()).join().unwrap();
/// assert!(token.is_cancelled() && seen.load(std::sync::atomic::Ordering::SeqCst));
/// ```
#[derive(Clone, Default)]
pub struct CancelToken {
    state: Arc<State>,
}

impl std::fmt::Debug for CancelToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CancelToken")
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}

/// Unregisters a cancellation hook when dropped.
pub struct CancelRegistration {
    token: CancelToken,
    id: u64,
}

impl std::fmt::Debug for CancelRegistration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CancelRegistration").finish_non_exhaustive()
    }
}

impl Drop for CancelRegistration {
    fn drop(&mut self) {
        self.token
            .state
            .hooks
            .lock()
            .retain(|(id, _)| *id != self.id);
    }
}

impl CancelToken {
    /// A fresh token, not cancelled.
    pub fn new() -> CancelToken {
        CancelToken::default()
    }

    /// Whether [`CancelToken::cancel`] has been called.
    pub fn is_cancelled(&self) -> bool {
        self.state.cancelled.load(Ordering::Acquire)
    }

    /// Cancels: runs every registered hook once. Every call using this token (now or later)
    /// ends as soon as it notices, which is at once when it is waiting. Idempotent.
    pub fn cancel(&self) {
        if self.state.cancelled.swap(true, Ordering::AcqRel) {
            return;
        }
        let hooks = std::mem::take(&mut *self.state.hooks.lock());
        for (_, hook) in hooks {
            hook();
        }
    }

    /// Runs `hook` on cancellation — at once, on this thread, if the token is already
    /// cancelled (so a caller must not hold a lock the hook takes). Dropping the registration
    /// unregisters a hook that has not run.
    pub fn on_cancel(&self, hook: impl FnOnce() + Send + 'static) -> CancelRegistration {
        let id = self.state.next.fetch_add(1, Ordering::Relaxed);
        let mut hooks = self.state.hooks.lock();
        if self.is_cancelled() {
            drop(hooks);
            hook();
        } else {
            hooks.push((id, Box::new(hook)));
        }
        CancelRegistration {
            token: self.clone(),
            id,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn hooks_run_once_and_a_dropped_registration_never_runs() {
        let token = CancelToken::new();
        let runs = Arc::new(AtomicUsize::new(0));
        let kept = {
            let runs = Arc::clone(&runs);
            token.on_cancel(move || {
                runs.fetch_add(1, Ordering::SeqCst);
            })
        };
        let dropped = {
            let runs = Arc::clone(&runs);
            token.on_cancel(move || {
                runs.fetch_add(100, Ordering::SeqCst);
            })
        };
        drop(dropped);
        token.cancel();
        token.cancel();
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        // Registered after the fact: runs at once.
        let late = {
            let runs = Arc::clone(&runs);
            token.on_cancel(move || {
                runs.fetch_add(10, Ordering::SeqCst);
            })
        };
        assert_eq!(runs.load(Ordering::SeqCst), 11);
        drop((kept, late));
        assert!(token.clone().is_cancelled());
    }
}
