//! Blocking calls that Ctrl-C can interrupt (issue 12 item 10).
//!
//! Python runs signal handlers only on the main thread, and only when that thread holds the GIL;
//! a call that waits without the GIL for up to a deadline (an evaluation, a device tool call, a
//! browser command, a worker's wait) would see Ctrl-C only when it returns. [`interruptible`]
//! runs such work on a thread of its own and waits for it in slices of [`SLICE`], taking the GIL
//! between slices to run the signal handlers; when one raises (KeyboardInterrupt), the work is
//! cancelled where it can be (`on_interrupt`) and the exception is raised at once. The work then
//! ends in the background, bounded by its own deadline, and its result is dropped.

use pyo3::prelude::*;
use std::sync::mpsc;
use std::time::Duration;

/// How long a wait runs between two signal checks.
pub(crate) const SLICE: Duration = Duration::from_millis(50);

/// Runs `work` on its own thread and returns its result, raising what a signal handler raises
/// (after calling `on_interrupt`) as soon as it does.
pub(crate) fn interruptible<T: Send + 'static>(
    py: Python<'_>,
    work: impl FnOnce() -> T + Send + 'static,
    on_interrupt: impl FnOnce(),
) -> PyResult<T> {
    let (tx, rx) = mpsc::sync_channel(1);
    std::thread::Builder::new()
        .name("jevgate-py-call".into())
        .spawn(move || {
            let _ = tx.send(work());
        })
        .map_err(|_| crate::errors::internal("could not start a thread for the call"))?;
    let rx = parking_lot::Mutex::new(rx); // Sync, for the wait without the GIL
    loop {
        match py.detach(|| rx.lock().recv_timeout(SLICE)) {
            Ok(v) => return Ok(v),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if let Err(e) = py.check_signals() {
                    on_interrupt();
                    return Err(e);
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(crate::errors::internal(
                    "the call's thread ended without an answer",
                ))
            }
        }
    }
}

/// Waits in slices: `wait_slice(d)` waits at most `d` and returns `Some` when done. Signal
/// handlers run between slices; `total` bounds the whole wait (`None`: until done).
pub(crate) fn wait_in_slices<T: Send>(
    py: Python<'_>,
    total: Option<Duration>,
    wait_slice: impl Fn(Duration) -> Option<T> + Sync,
) -> PyResult<Option<T>> {
    let start = std::time::Instant::now();
    loop {
        let slice = match total {
            None => SLICE,
            Some(t) => {
                let left = t.saturating_sub(start.elapsed());
                if left.is_zero() {
                    return Ok(None);
                }
                left.min(SLICE)
            }
        };
        if let Some(v) = py.detach(|| wait_slice(slice)) {
            return Ok(Some(v));
        }
        py.check_signals()?;
    }
}
