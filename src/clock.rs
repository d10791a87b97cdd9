//! Time, injected (R-CLK).
//!
//! Every deadline, lease expiry, retention window and reaper in jevgate reads time through a
//! [`Clock`]: a monotonic [`Instant`] for durations and a wall time for records. Production code
//! uses [`SystemClock`]; tests and simulations use [`ManualClock`], which only moves when told
//! to, so no test ever sleeps.
//!
//! This module never reads the system clock except inside [`SystemClock`].

use parking_lot::Mutex;
use std::ops::{Add, Sub};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A point on a clock's monotonic timeline: the time elapsed since that clock's origin.
///
/// Instants of different clocks are not comparable; a gateway uses one clock throughout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Instant(Duration);

impl Instant {
    /// The instant `elapsed` after the clock's origin.
    pub const fn from_origin(elapsed: Duration) -> Instant {
        Instant(elapsed)
    }

    /// Time since the clock's origin.
    pub const fn since_origin(self) -> Duration {
        self.0
    }

    /// `self - earlier`, or zero when `earlier` is later.
    pub fn saturating_duration_since(self, earlier: Instant) -> Duration {
        self.0.saturating_sub(earlier.0)
    }

    /// `self + d`, or `None` on overflow.
    pub fn checked_add(self, d: Duration) -> Option<Instant> {
        self.0.checked_add(d).map(Instant)
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, d: Duration) -> Instant {
        Instant(self.0.saturating_add(d))
    }
}

impl Sub<Instant> for Instant {
    type Output = Duration;
    fn sub(self, earlier: Instant) -> Duration {
        self.saturating_duration_since(earlier)
    }
}

/// A source of monotonic and wall time.
///
/// ```
/// use jevgate::clock::{Clock, ManualClock};
/// use std::time::Duration;
///
/// let clock = ManualClock::new();
/// let start = clock.now();
/// clock.advance(Duration::from_secs(120));
/// assert_eq!(clock.now() - start, Duration::from_secs(120));
/// ```
pub trait Clock: Send + Sync + std::fmt::Debug + 'static {
    /// The current monotonic instant. Never goes backwards.
    fn now(&self) -> Instant;
    /// The current wall-clock time, for records shown to people. May jump.
    fn wall(&self) -> SystemTime;
    /// Wall time as milliseconds since the Unix epoch (0 before the epoch).
    fn wall_millis(&self) -> i64 {
        self.wall()
            .duration_since(UNIX_EPOCH)
            .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
            .unwrap_or(0)
    }
    /// The longest a blocking wait (condvar, poll, socket read timeout, sleep) may sleep before
    /// it reads this clock again. A clock that does not follow real time (a [`ManualClock`], a
    /// simulation) must keep the default, [`MAX_WAIT_SLICE`], so that a wait notices an
    /// `advance` past its deadline within that slice instead of sleeping the deadline's full
    /// length; [`SystemClock`] waits the whole remaining time.
    fn max_wait(&self) -> Duration {
        MAX_WAIT_SLICE
    }
}

/// The default of [`Clock::max_wait`]: how often a wait on a clock that does not follow real
/// time re-reads it.
pub const MAX_WAIT_SLICE: Duration = Duration::from_millis(5);

/// How long a blocking wait for `deadline` may sleep now (R-CLK): the time left on `clock`, at
/// most [`Clock::max_wait`]; `None` once `clock` reached the deadline. A wait that loops on it
/// until `None` ends when the clock passes the deadline — a [`ManualClock`] advanced past it
/// included — neither spinning (every slice is positive) nor sleeping past it.
///
/// ```
/// use jevgate::clock::{wait_slice, Clock, ManualClock, MAX_WAIT_SLICE};
/// use std::time::Duration;
/// let clock = ManualClock::new();
/// let deadline = clock.now() + Duration::from_secs(60);
/// assert_eq!(wait_slice(&clock, deadline), Some(MAX_WAIT_SLICE));
/// clock.advance(Duration::from_secs(60));
/// assert_eq!(wait_slice(&clock, deadline), None);
/// ```
pub fn wait_slice(clock: &dyn Clock, deadline: Instant) -> Option<Duration> {
    let left = deadline - clock.now();
    if left.is_zero() {
        None
    } else {
        Some(left.min(clock.max_wait()))
    }
}

/// The bound of a teardown wait (a socket close's grace, a lingering close, a process's exit), R-CLK: it ends when the
/// clock reaches `grace` after its start. On a clock that does not follow real time (its
/// [`Clock::max_wait`] cuts the slices short) the slices handed out also count against `grace`,
/// so a close on a manual clock nobody advances still ends after about `grace` of waiting
/// instead of never.
#[derive(Debug)]
pub struct Grace<'a> {
    clock: &'a dyn Clock,
    bound: GraceBound,
}

impl<'a> Grace<'a> {
    /// A grace of `grace` from now on `clock`.
    pub fn new(clock: &'a dyn Clock, grace: Duration) -> Grace<'a> {
        Grace {
            clock,
            bound: GraceBound::new(clock, grace),
        }
    }

    /// The next wait, at most `cap` (positive), or `None` when the grace is over.
    pub fn next(&mut self, cap: Duration) -> Option<Duration> {
        self.bound.next(self.clock, cap)
    }
}

/// A [`Grace`] that does not hold its clock: the same bound for a wait that keeps its clock
/// elsewhere (a pooled connection's socket deadlines, `jev/http.rs`), given the clock at each
/// step.
#[derive(Debug, Clone, Copy)]
pub(crate) struct GraceBound {
    until: Instant,
    budget: Duration,
}

impl GraceBound {
    /// A bound of `grace` from now on `clock`.
    pub(crate) fn new(clock: &dyn Clock, grace: Duration) -> GraceBound {
        GraceBound {
            until: clock.now() + grace,
            budget: grace,
        }
    }

    /// The next wait on `clock` (the one the bound was made on), at most `cap` (positive), or
    /// `None` when the bound is over.
    pub(crate) fn next(&mut self, clock: &dyn Clock, cap: Duration) -> Option<Duration> {
        let left = self.until - clock.now();
        let max_wait = clock.max_wait();
        let slice = left.min(max_wait).min(cap);
        if max_wait >= left {
            return (!slice.is_zero()).then_some(slice);
        }
        let slice = slice.min(self.budget);
        self.budget = self.budget.saturating_sub(slice);
        (!slice.is_zero()).then_some(slice)
    }
}

/// The system clock as a [`SharedClock`]: the default of every component that has no gateway
/// (a local browser, a device worker).
pub fn system() -> SharedClock {
    Arc::new(SystemClock::new())
}

/// A shared, dynamically chosen clock, as a gateway holds it.
pub type SharedClock = Arc<dyn Clock>;

/// The real clock: `std::time::Instant` for monotonic time, `SystemTime` for wall time.
#[derive(Debug, Clone)]
pub struct SystemClock {
    origin: std::time::Instant,
}

impl SystemClock {
    /// A system clock whose origin is now.
    pub fn new() -> SystemClock {
        SystemClock {
            origin: std::time::Instant::now(),
        }
    }
}

impl Default for SystemClock {
    fn default() -> Self {
        SystemClock::new()
    }
}

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Instant(self.origin.elapsed())
    }
    fn wall(&self) -> SystemTime {
        SystemTime::now()
    }
    /// Real time: a wait sleeps the whole time left.
    fn max_wait(&self) -> Duration {
        Duration::MAX
    }
}

#[derive(Debug)]
struct ManualState {
    mono: Duration,
    wall: SystemTime,
}

/// A clock that moves only when told to. Cloning shares the same time.
///
/// Monotonic time starts at zero; wall time starts at 2026-01-01T00:00:00Z unless set.
///
/// Every operation saturates, never panics, whatever the duration a host passes: monotonic time
/// stops at `Duration::MAX` and wall time at [`ManualClock::max_wall`] (the last millisecond of
/// the year 9999).
///
/// ```
/// use jevgate::clock::{Clock, ManualClock};
/// use std::time::Duration;
/// let c = ManualClock::new();
/// c.advance(Duration::MAX);
/// c.advance(Duration::MAX);
/// assert_eq!(c.wall(), ManualClock::max_wall());
/// c.set_wall_since_epoch(Duration::from_secs(u64::MAX));
/// assert_eq!(c.wall(), ManualClock::max_wall());
/// ```
#[derive(Debug, Clone)]
pub struct ManualClock {
    state: Arc<Mutex<ManualState>>,
}

/// 2026-01-01T00:00:00Z, the default wall time of a [`ManualClock`].
const MANUAL_WALL_START_SECS: u64 = 1_767_225_600;

/// 9999-12-31T23:59:59.999Z as a duration since the Unix epoch.
const MAX_WALL_SINCE_EPOCH: Duration = Duration::from_millis(253_402_300_799_999);

/// `wall + d`, saturating at [`ManualClock::max_wall`].
fn saturating_wall(wall: SystemTime, d: Duration) -> SystemTime {
    wall.checked_add(d)
        .map_or(ManualClock::max_wall(), |t| t.min(ManualClock::max_wall()))
}

impl ManualClock {
    /// A manual clock at monotonic zero and wall time 2026-01-01T00:00:00Z.
    pub fn new() -> ManualClock {
        ManualClock {
            state: Arc::new(Mutex::new(ManualState {
                mono: Duration::ZERO,
                wall: UNIX_EPOCH + Duration::from_secs(MANUAL_WALL_START_SECS),
            })),
        }
    }

    /// The latest wall time a manual clock shows: 9999-12-31T23:59:59.999Z. Later values
    /// saturate to it (every platform's `SystemTime` can hold it; the wall in milliseconds fits an
    /// `i64`).
    pub fn max_wall() -> SystemTime {
        UNIX_EPOCH
            .checked_add(MAX_WALL_SINCE_EPOCH)
            .unwrap_or(UNIX_EPOCH)
    }

    /// Moves both monotonic and wall time forward by `d` (saturating).
    pub fn advance(&self, d: Duration) {
        let mut s = self.state.lock();
        s.mono = s.mono.saturating_add(d);
        s.wall = saturating_wall(s.wall, d);
    }

    /// Sets the wall time without touching monotonic time (a wall-clock jump, e.g. NTP). A time
    /// after [`ManualClock::max_wall`] is saturated to it.
    pub fn set_wall(&self, wall: SystemTime) {
        self.state.lock().wall = wall.min(Self::max_wall());
    }

    /// Sets the wall time to `since_epoch` after the Unix epoch (saturating at
    /// [`ManualClock::max_wall`]); the form the C and Python surfaces use.
    pub fn set_wall_since_epoch(&self, since_epoch: Duration) {
        self.state.lock().wall = saturating_wall(UNIX_EPOCH, since_epoch);
    }
}

impl Default for ManualClock {
    fn default() -> Self {
        ManualClock::new()
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Instant {
        Instant(self.state.lock().mono)
    }
    fn wall(&self) -> SystemTime {
        self.state.lock().wall
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // R-CLK: the manual clock moves only when told, and shares time between clones.
    #[test]
    fn manual_clock_moves_only_when_advanced_and_clones_share_time() {
        let a = ManualClock::new();
        let b = a.clone();
        let t0 = a.now();
        assert_eq!(a.now(), t0);
        b.advance(Duration::from_millis(1500));
        assert_eq!(a.now() - t0, Duration::from_millis(1500));
        assert_eq!(a.wall_millis(), MANUAL_WALL_START_SECS as i64 * 1000 + 1500);
    }

    #[test]
    fn wall_jump_does_not_move_monotonic_time() {
        let c = ManualClock::new();
        let t0 = c.now();
        c.set_wall(UNIX_EPOCH);
        assert_eq!(c.now(), t0);
        assert_eq!(c.wall_millis(), 0);
    }

    #[test]
    fn instant_arithmetic_saturates() {
        let early = Instant::from_origin(Duration::from_secs(1));
        let late = early + Duration::from_secs(2);
        assert_eq!(late - early, Duration::from_secs(2));
        assert_eq!(early - late, Duration::ZERO);
        assert_eq!(
            Instant::from_origin(Duration::MAX) + Duration::from_secs(1),
            Instant::from_origin(Duration::MAX)
        );
        assert!(Instant::from_origin(Duration::MAX)
            .checked_add(Duration::from_secs(1))
            .is_none());
    }

    // R-CLK, issue 12 item 6: no host-supplied duration makes a manual clock panic; both
    // timelines saturate (the old `wall += d` overflowed SystemTime and panicked).
    #[test]
    fn manual_clock_saturates_instead_of_panicking() {
        let c = ManualClock::new();
        c.advance(Duration::from_secs(u64::MAX / 2));
        c.advance(Duration::MAX);
        assert_eq!(c.now(), Instant::from_origin(Duration::MAX));
        assert_eq!(c.wall(), ManualClock::max_wall());
        assert_eq!(c.wall_millis(), 253_402_300_799_999);
        c.advance(Duration::from_millis(1));
        assert_eq!(c.wall(), ManualClock::max_wall());
        c.set_wall_since_epoch(Duration::from_secs_f64(1.7e19));
        assert_eq!(c.wall(), ManualClock::max_wall());
        c.set_wall_since_epoch(Duration::from_secs(1));
        assert_eq!(c.wall_millis(), 1000);
        c.set_wall(ManualClock::max_wall() + Duration::from_secs(10));
        assert_eq!(c.wall(), ManualClock::max_wall());
        // an instant at the end of time still yields deadlines (saturating)
        assert_eq!(c.now() + Duration::from_secs(5), c.now());
    }

    // R-CLK: a wait slice is positive and bounded on a manual clock (a wait re-reads it, so an
    // advance past the deadline ends the wait), the whole remaining time on the system clock,
    // and `None` exactly from the deadline on.
    #[test]
    fn wait_slices_are_bounded_on_a_manual_clock_and_end_at_the_deadline() {
        let c = ManualClock::new();
        let deadline = c.now() + Duration::from_secs(90);
        assert_eq!(wait_slice(&c, deadline), Some(MAX_WAIT_SLICE));
        c.advance(Duration::from_secs(90) - Duration::from_nanos(1));
        assert_eq!(wait_slice(&c, deadline), Some(Duration::from_nanos(1)));
        c.advance(Duration::from_nanos(1));
        assert_eq!(wait_slice(&c, deadline), None);
        c.advance(Duration::MAX);
        assert_eq!(wait_slice(&c, deadline), None);
        let s = SystemClock::new();
        let far = s.now() + Duration::from_secs(3600);
        assert!(wait_slice(&s, far).is_some_and(|d| d > Duration::from_secs(3000)));
        assert_eq!(wait_slice(&s, s.now()), None);
    }

    // R-CLK: a teardown grace ends at its deadline on the clock, and on a manual clock nobody
    // advances once the slices it handed out add up to the grace — it never waits forever.
    #[test]
    fn a_grace_ends_on_a_still_manual_clock_after_its_length_of_slices() {
        let c = ManualClock::new();
        let mut g = Grace::new(&c, Duration::from_millis(500));
        let mut total = Duration::ZERO;
        let mut n = 0;
        while let Some(slice) = g.next(Duration::from_millis(10)) {
            assert!(!slice.is_zero() && slice <= MAX_WAIT_SLICE);
            total += slice;
            n += 1;
            assert!(n <= 1000, "a grace must end");
        }
        assert_eq!(total, Duration::from_millis(500));
        // Advancing the clock past the end ends a grace at once.
        let mut g = Grace::new(&c, Duration::from_secs(5));
        assert!(g.next(Duration::MAX).is_some());
        c.advance(Duration::from_secs(5));
        assert_eq!(g.next(Duration::MAX), None);
        // On the system clock the deadline alone bounds it: one slice may be the whole grace.
        let s = SystemClock::new();
        let mut g = Grace::new(&s, Duration::from_secs(60));
        assert!(g.next(Duration::MAX).unwrap() > Duration::from_secs(50));
        assert!(g.next(Duration::from_millis(10)).is_some());
        assert_eq!(Grace::new(&s, Duration::ZERO).next(Duration::MAX), None);
    }

    #[test]
    fn system_clock_is_monotonic() {
        let c = SystemClock::new();
        let a = c.now();
        let b = c.now();
        assert!(b >= a);
        assert!(c.wall_millis() > 1_700_000_000_000);
    }
}
