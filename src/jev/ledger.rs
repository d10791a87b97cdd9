//! The request ledger (R-JEV-LEDGER): caller-supplied `requestId`s seen in the last five minutes.
//!
//! Pure: a data structure over [`Instant`]s from the gateway's clock, no threads, no I/O. It owns
//! the rules "reuse within a caller scope is a conflict", "at most 4096 ids, 1024 per caller" and
//! "each id kept five minutes". When full it rejects new ids; it never evicts a live one. It is in
//! memory only and never answers with a cached result.

use crate::clock::Instant;
use std::collections::{HashMap, VecDeque};
use std::time::Duration;

/// How long an id is remembered.
pub const LEDGER_TTL: Duration = Duration::from_secs(300);
/// Most ids remembered in total.
pub const LEDGER_CAPACITY: usize = 4096;
/// Most ids remembered per caller scope.
pub const LEDGER_PER_CALLER: usize = 1024;

/// Why the ledger refused an id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LedgerRefusal {
    /// The id is live in this caller's scope (`JEV_REQUEST_CONFLICT`).
    Conflict,
    /// This caller already has 1024 live ids; one expires after the given wait.
    CallerFull(Duration),
    /// The ledger holds 4096 live ids; one expires after the given wait.
    Full(Duration),
}

/// The ledger. Keys are `(caller scope, requestId)`.
///
/// ```
/// use jevgate::clock::Instant;
/// use jevgate::unstable::{Ledger, LedgerRefusal, LEDGER_TTL};
/// use std::time::Duration;
/// let mut ledger = Ledger::new();
/// let t0 = Instant::from_origin(Duration::ZERO);
/// ledger.insert("assistant", "r1", t0).unwrap();
/// assert_eq!(ledger.insert("assistant", "r1", t0), Err(LedgerRefusal::Conflict));
/// assert!(ledger.insert("intern", "r1", t0).is_ok()); // another caller's scope
/// assert!(ledger.insert("assistant", "r1", t0 + LEDGER_TTL).is_ok()); // expired
/// ```
#[derive(Debug, Default)]
pub struct Ledger {
    live: HashMap<(String, String), Instant>,
    per_caller: HashMap<String, usize>,
    /// Insertion order; expiry times are non-decreasing because the clock is monotonic and the
    /// lifetime constant.
    order: VecDeque<(Instant, String, String)>,
}

impl Ledger {
    /// An empty ledger.
    pub fn new() -> Ledger {
        Ledger::default()
    }

    /// Number of live ids (after the last purge).
    pub fn len(&self) -> usize {
        self.live.len()
    }

    /// Whether no id is live.
    pub fn is_empty(&self) -> bool {
        self.live.is_empty()
    }

    fn purge(&mut self, now: Instant) {
        while let Some((expires, _, _)) = self.order.front() {
            if *expires > now {
                break;
            }
            let Some((expires, scope, id)) = self.order.pop_front() else {
                break;
            };
            // A released id that was inserted again has a later expiry: keep that one.
            if self.live.get(&(scope.clone(), id.clone())) == Some(&expires) {
                self.forget(&scope, &id);
            }
        }
    }

    fn forget(&mut self, scope: &str, id: &str) {
        if self
            .live
            .remove(&(scope.to_owned(), id.to_owned()))
            .is_some()
        {
            if let Some(n) = self.per_caller.get_mut(scope) {
                *n -= 1;
                if *n == 0 {
                    self.per_caller.remove(scope);
                }
            }
        }
    }

    /// Records `id` in `scope` at `now`, or says why not.
    pub fn insert(&mut self, scope: &str, id: &str, now: Instant) -> Result<(), LedgerRefusal> {
        self.purge(now);
        let key = (scope.to_owned(), id.to_owned());
        if self.live.contains_key(&key) {
            return Err(LedgerRefusal::Conflict);
        }
        if self.per_caller.get(scope).copied().unwrap_or(0) >= LEDGER_PER_CALLER {
            let wait = self
                .order
                .iter()
                .find(|(e, s, i)| s == scope && self.live.get(&(s.clone(), i.clone())) == Some(e))
                .map_or(LEDGER_TTL, |(e, _, _)| e.saturating_duration_since(now));
            return Err(LedgerRefusal::CallerFull(wait));
        }
        if self.live.len() >= LEDGER_CAPACITY {
            let wait = self
                .order
                .iter()
                .find(|(e, s, i)| self.live.get(&(s.clone(), i.clone())) == Some(e))
                .map_or(LEDGER_TTL, |(e, _, _)| e.saturating_duration_since(now));
            return Err(LedgerRefusal::Full(wait));
        }
        let expires = now + LEDGER_TTL;
        self.live.insert(key, expires);
        *self.per_caller.entry(scope.to_owned()).or_insert(0) += 1;
        self.order
            .push_back((expires, scope.to_owned(), id.to_owned()));
        Ok(())
    }

    /// Forgets an id that was never dispatched (rejected locally before any I/O), so the caller
    /// may use it again. Its stale entry in the expiry order is skipped when it comes up.
    pub fn release(&mut self, scope: &str, id: &str) {
        self.forget(scope, id);
    }
}

/// What a shared (PostgreSQL) ledger holds for one insert, read under its lock at the
/// database's time (ms): the rules of [`Ledger::insert`] decide on it ([`decide`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Seen {
    /// The id is live in its caller's scope.
    pub live: bool,
    /// Live ids of the caller, and the earliest expiry among them.
    pub caller: (usize, Option<i64>),
    /// Live ids in all, and the earliest expiry among them.
    pub total: (usize, Option<i64>),
    /// The database's time.
    pub now_ms: i64,
}

/// The ledger's rules over what a shared ledger [`Seen`]: a conflict, a full caller scope, a
/// full ledger (each with the wait until its earliest id expires), or room.
#[cfg_attr(not(feature = "postgres"), allow(dead_code))] // reason: only the PostgreSQL ledger asks
pub(crate) fn decide(seen: &Seen) -> Result<(), LedgerRefusal> {
    let wait = |oldest: Option<i64>| {
        oldest.map_or(LEDGER_TTL, |e| {
            Duration::from_millis(u64::try_from(e.saturating_sub(seen.now_ms)).unwrap_or(0))
        })
    };
    if seen.live {
        return Err(LedgerRefusal::Conflict);
    }
    if seen.caller.0 >= LEDGER_PER_CALLER {
        return Err(LedgerRefusal::CallerFull(wait(seen.caller.1)));
    }
    if seen.total.0 >= LEDGER_CAPACITY {
        return Err(LedgerRefusal::Full(wait(seen.total.1)));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shared_ledger_decides_by_the_same_rules() {
        let seen = |live, caller, total| Seen {
            live,
            caller,
            total,
            now_ms: 1_000,
        };
        assert_eq!(decide(&seen(false, (0, None), (0, None))), Ok(()));
        assert_eq!(
            decide(&seen(true, (1, Some(2_000)), (1, Some(2_000)))),
            Err(LedgerRefusal::Conflict)
        );
        assert_eq!(
            decide(&seen(
                false,
                (LEDGER_PER_CALLER, Some(4_000)),
                (LEDGER_PER_CALLER, Some(3_000))
            )),
            Err(LedgerRefusal::CallerFull(Duration::from_secs(3)))
        );
        assert_eq!(
            decide(&seen(
                false,
                (3, Some(9_000)),
                (LEDGER_CAPACITY, Some(1_500))
            )),
            Err(LedgerRefusal::Full(Duration::from_millis(500)))
        );
        assert_eq!(
            decide(&seen(false, (0, None), (LEDGER_CAPACITY, Some(i64::MIN)))),
            Err(LedgerRefusal::Full(Duration::ZERO)),
            "saturating, never a panic"
        );
    }

    fn at(secs: u64) -> Instant {
        Instant::from_origin(Duration::from_secs(secs))
    }

    // R-JEV-LEDGER: 1024 per caller, 4096 in total, never evicting a live id.
    #[test]
    fn caps_reject_new_ids_and_never_evict_live_ones() {
        let mut l = Ledger::new();
        for i in 0..LEDGER_PER_CALLER {
            l.insert("a", &format!("r{i}"), at(10)).unwrap();
        }
        assert_eq!(
            l.insert("a", "one-more", at(20)),
            Err(LedgerRefusal::CallerFull(Duration::from_secs(290)))
        );
        for c in ["b", "c", "d"] {
            for i in 0..LEDGER_PER_CALLER {
                l.insert(c, &format!("r{i}"), at(30)).unwrap();
            }
        }
        assert_eq!(l.len(), LEDGER_CAPACITY);
        assert_eq!(
            l.insert("e", "x", at(40)),
            Err(LedgerRefusal::Full(Duration::from_secs(270)))
        );
        assert_eq!(l.insert("a", "r0", at(40)), Err(LedgerRefusal::Conflict));
        // the first 1024 expire at 310 s; then there is room again
        assert!(l.insert("e", "x", at(310)).is_ok());
        assert!(l.insert("a", "r0", at(310)).is_ok());
    }

    #[test]
    fn expiry_is_exactly_five_minutes() {
        let mut l = Ledger::new();
        l.insert("a", "r", at(0)).unwrap();
        assert_eq!(l.insert("a", "r", at(299)), Err(LedgerRefusal::Conflict));
        assert!(l.insert("a", "r", at(300)).is_ok());
    }

    #[test]
    fn released_ids_can_be_used_again_and_stale_order_entries_are_harmless() {
        let mut l = Ledger::new();
        l.insert("a", "r", at(0)).unwrap();
        l.release("a", "r");
        assert!(l.is_empty());
        l.insert("a", "r", at(100)).unwrap();
        // the stale entry (expiring at 300) must not drop the new one (expiring at 400)
        assert_eq!(l.insert("a", "r", at(350)), Err(LedgerRefusal::Conflict));
        assert!(l.insert("a", "r", at(400)).is_ok());
    }
}
