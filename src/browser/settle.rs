//! Waiting for a navigation in progress to finish loading before a read (R-CLK): the one
//! settle-while-navigating loop of the tool layers ([`super::BrowserTools`] and the managed
//! family), so a model that cannot wait well by itself does not get `NAVIGATION_PENDING` for a
//! page that is a moment from loaded.
//!
//! It owns only the loop: re-read with a short, growing backoff while the read answers
//! `NAVIGATION_PENDING`, for at most [`SETTLE_WITHIN`] as a [`Grace`] on the backend's clock —
//! so it also ends, after about that long in real time, on a clock nobody advances (a manual
//! clock in a test). It never sleeps past the grace, never retries any other error, and never
//! looks at what the read returns.

use std::time::Duration;

use super::StaleCause;
use crate::clock::{Clock, Grace};
use crate::{Error, Result};

/// How long a read waits for a navigation in progress to finish loading.
pub(crate) const SETTLE_WITHIN: Duration = Duration::from_secs(10);
/// The first pause between two reads; it doubles up to [`MAX_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(25);
/// The longest pause between two reads.
const MAX_PAUSE: Duration = Duration::from_millis(400);

/// Runs `read`, re-reading while a navigation is still loading (`NAVIGATION_PENDING` means
/// exactly that), for at most [`SETTLE_WITHIN`] on `clock` (a grace); then the last answer,
/// pending or not.
pub(crate) fn settled<T>(clock: &dyn Clock, mut read: impl FnMut() -> Result<T>) -> Result<T> {
    let mut grace = Grace::new(clock, SETTLE_WITHIN);
    let mut pause = FIRST_PAUSE;
    loop {
        match read() {
            Err(Error::StaleObservation {
                cause: StaleCause::NavigationPending,
            }) => match grace.next(pause) {
                Some(slice) => {
                    std::thread::sleep(slice);
                    pause = pause.saturating_mul(2).min(MAX_PAUSE);
                }
                None => {
                    return Err(Error::StaleObservation {
                        cause: StaleCause::NavigationPending,
                    })
                }
            },
            other => return other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;

    fn pending() -> Result<u32> {
        Err(Error::StaleObservation {
            cause: StaleCause::NavigationPending,
        })
    }

    // R-CLK: a settled read answers at once when the page is loaded or the error is another,
    // and re-reads while a navigation is pending until it loads.
    #[test]
    fn settling_rereads_only_while_a_navigation_is_pending() {
        let clock = ManualClock::new();
        assert_eq!(settled(&clock, || Ok(7)).unwrap(), 7);
        let mut reads = 0;
        let e = settled(&clock, || -> Result<u32> {
            reads += 1;
            Err(Error::TabUnavailable)
        });
        assert_eq!((e.unwrap_err().code(), reads), ("TAB_UNAVAILABLE", 1));
        let mut reads = 0;
        let v = settled(&clock, || {
            reads += 1;
            if reads < 4 {
                pending()
            } else {
                Ok(reads)
            }
        });
        assert_eq!(v.unwrap(), 4);
    }

    // R-CLK: advancing the clock past the grace ends a pending wait at the next read.
    #[test]
    fn settling_ends_when_the_clock_passes_the_grace() {
        let clock = ManualClock::new();
        let mut reads = 0;
        let e = settled(&clock, || {
            reads += 1;
            if reads == 2 {
                clock.advance(SETTLE_WITHIN);
            }
            pending()
        });
        assert_eq!(e.unwrap_err().code(), "STALE_OBSERVATION");
        assert_eq!(reads, 2);
    }
}
