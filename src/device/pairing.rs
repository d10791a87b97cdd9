//! One-time pairing codes and the failure window of `POST /devices/pair` (R-DEV-PAIR, issue 22
//! item 2): a host mints a code for an owner ([`PairingCodes::mint`]), a person types it into the
//! extension's options page, and the channel listener's pairing route redeems it once for a
//! device token ([`PairingCodes::redeem`], then the registry's pairing).
//!
//! A code is 40 bits from the OS random source, shown as `XXXX-XXXX` from [`ALPHABET`] (32
//! uppercase characters without `0`, `1`, `I`, `O`); input is matched case-insensitively,
//! ignoring spaces and dashes ([`normalise`]). Only its SHA-256 hash is kept, in memory, with
//! its owner and its end on the gateway's monotonic clock: a restart forgets unredeemed codes
//! (a person mints a new one), and a redeemed, expired or unknown code is one and the same
//! answer. On the shared PostgreSQL store (issue 23) the codes live there instead — keyed by
//! an HMAC under the fleet's secret, ending on the database clock, consumed by one atomic
//! `DELETE … RETURNING` — so a code minted by one process is redeemed by any, once. The route allows [`MAX_FAILURES`] wrong codes per address per [`FAILURE_WINDOW`] of
//! the gateway's clock ([`FailureWindow`], pure over explicit instants).
//!
//! [`pair_device`] is the one pairing path (the host's `Gateway::pair` and the route): the
//! registry row, the lease manager's owner, a re-paired device's old connection closed.
//!
//! This module must never log, store, return (after `mint`) or put into an error a code or its
//! hash, and never answers whose a code is except by pairing for that owner.

use super::hub::Hub;
use super::registry::{Capability, PairRequest, Pairing, Registry};
use crate::clock::{Instant, SharedClock};
use crate::lease::Leases;
use crate::{Error, Result};
use parking_lot::Mutex;
use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::time::Duration;

/// The characters of a pairing code: uppercase letters and digits without the look-alikes
/// `0`/`O` and `1`/`I`. 32 of them: 5 bits each.
pub const ALPHABET: &[u8; 32] = b"ABCDEFGHJKLMNPQRSTUVWXYZ23456789";
/// Characters in a code (without its dash): 8 × 5 = 40 bits.
pub const CODE_CHARS: usize = 8;
/// The longest a pairing code may live.
pub const MAX_CODE_TTL: Duration = Duration::from_secs(10 * 60);
/// Wrong codes allowed from one address per [`FAILURE_WINDOW`]; the next try is `429`.
pub const MAX_FAILURES: usize = 5;
/// The window [`MAX_FAILURES`] counts over, on the gateway's clock.
pub const FAILURE_WINDOW: Duration = Duration::from_secs(60);
/// Live codes kept at once (minting past it first drops expired ones, then refuses).
const MAX_LIVE_CODES: usize = 10_000;
/// Addresses the failure window remembers at once before it forgets the oldest idle ones.
const MAX_ADDRESSES: usize = 10_000;

/// A freshly minted code: shown once to the person who pairs. Its `Debug` never prints it.
#[derive(Clone, PartialEq, Eq)]
pub struct PairingCode {
    code: String,
    /// When it stops working, Unix ms on the gateway's wall clock (for display).
    pub expires_at: i64,
}

impl PairingCode {
    /// The code, `XXXX-XXXX`, to show to the person (never log it).
    pub fn expose(&self) -> &str {
        &self.code
    }
}

impl std::fmt::Debug for PairingCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PairingCode")
            .field("code", &"<redacted>")
            .field("expires_at", &self.expires_at)
            .finish()
    }
}

/// `{"code":"ABCD-EFGH","expiresAt":<unix ms>}`: the one place a code is written out, for the
/// host that minted it (C and Python return this once).
impl serde::Serialize for PairingCode {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("PairingCode", 2)?;
        st.serialize_field("code", &self.code)?;
        st.serialize_field("expiresAt", &self.expires_at)?;
        st.end()
    }
}

/// Formats 40 random bits as `XXXX-XXXX`. Pure.
pub(crate) fn format_code(bits: [u8; 5]) -> String {
    let mut n = bits.iter().fold(0u64, |n, b| (n << 8) | u64::from(*b));
    let mut chars = [0u8; CODE_CHARS];
    for c in chars.iter_mut().rev() {
        *c = ALPHABET[(n & 31) as usize];
        n >>= 5;
    }
    let text: String = chars.iter().map(|&b| char::from(b)).collect();
    format!("{}-{}", &text[..4], &text[4..])
}

/// A typed code in its canonical form (the 8 characters, uppercase, no dash), or `None` when it
/// cannot be a code: spaces and dashes are ignored, letters matched case-insensitively, and
/// anything else (another character, another length) is refused. Pure; reads at most a few
/// dozen characters of `input` whatever its length.
pub(crate) fn normalise(input: &str) -> Option<String> {
    let mut out = String::with_capacity(CODE_CHARS);
    for (i, c) in input.chars().enumerate() {
        if i > 64 {
            return None;
        }
        if c == ' ' || c == '-' {
            continue;
        }
        let upper = c.to_ascii_uppercase();
        if !upper.is_ascii() || !ALPHABET.contains(&(upper as u8)) || out.len() == CODE_CHARS {
            return None;
        }
        out.push(upper);
    }
    (out.len() == CODE_CHARS).then_some(out)
}

fn hash(canonical: &str) -> [u8; 32] {
    let digest = ring::digest::digest(&ring::digest::SHA256, canonical.as_bytes());
    let mut out = [0u8; 32];
    out.copy_from_slice(digest.as_ref());
    out
}

/// Wrong tries per address over a sliding window of explicit instants. Pure: the caller passes
/// the gateway clock's instant.
#[derive(Debug)]
pub(crate) struct FailureWindow {
    max: usize,
    window: Duration,
    tries: HashMap<IpAddr, VecDeque<Instant>>,
}

impl FailureWindow {
    pub fn new(max: usize, window: Duration) -> FailureWindow {
        FailureWindow {
            max: max.max(1),
            window,
            tries: HashMap::new(),
        }
    }

    /// `Err(retry_after)` when `addr` has used up its tries at `now`: how long until its oldest
    /// failure leaves the window.
    pub fn check(&mut self, addr: IpAddr, now: Instant) -> std::result::Result<(), Duration> {
        let window = self.window;
        let Some(tries) = self.tries.get_mut(&addr) else {
            return Ok(());
        };
        while tries.front().is_some_and(|&t| now - t >= window) {
            tries.pop_front();
        }
        if tries.is_empty() {
            self.tries.remove(&addr);
            return Ok(());
        }
        if tries.len() < self.max {
            return Ok(());
        }
        let oldest = tries.front().copied().unwrap_or(now);
        Err(window.saturating_sub(now - oldest))
    }

    /// Counts one wrong try of `addr` at `now`.
    pub fn record(&mut self, addr: IpAddr, now: Instant) {
        if self.tries.len() >= MAX_ADDRESSES && !self.tries.contains_key(&addr) {
            let window = self.window;
            self.tries
                .retain(|_, t| t.back().is_some_and(|&last| now - last < window));
        }
        let tries = self.tries.entry(addr).or_default();
        tries.push_back(now);
        // Only the last `max` matter.
        while tries.len() > self.max {
            tries.pop_front();
        }
    }

    #[cfg(test)]
    fn addresses(&self) -> usize {
        self.tries.len()
    }
}

struct Live {
    owner: String,
    until: Instant,
}

/// The gateway's live pairing codes (hashes only) and the pairing route's failure window.
pub(crate) struct PairingCodes {
    clock: SharedClock,
    codes: Mutex<HashMap<[u8; 32], Live>>,
    failures: Mutex<FailureWindow>,
    /// On the shared store: the codes live there instead, so any process of the fleet redeems
    /// a code another minted, and a restart forgets none (issue 23).
    #[cfg(feature = "postgres")]
    fleet: std::sync::OnceLock<fleet::FleetCodes>,
}

/// Pairing codes in the shared PostgreSQL store (issue 23): keyed by the code's HMAC-SHA-256
/// under the fleet's secret (a database dump does not give 40-bit codes away to a brute
/// force), ending on the database clock, single use by one `DELETE … RETURNING`.
#[cfg(feature = "postgres")]
mod fleet {
    use crate::store::pg::PgStore;
    use crate::{Error, Result};
    use std::sync::Arc;
    use std::time::Duration;

    pub(crate) struct FleetCodes {
        store: Arc<PgStore>,
        key: ring::hmac::Key,
    }

    impl FleetCodes {
        pub(crate) fn open(store: Arc<PgStore>) -> Result<FleetCodes> {
            let secret = store.fleet_secret()?;
            Ok(FleetCodes {
                key: ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &secret),
                store,
            })
        }

        fn hash(&self, canonical: &str) -> Vec<u8> {
            ring::hmac::sign(&self.key, canonical.as_bytes())
                .as_ref()
                .to_vec()
        }

        /// Records `canonical` for `owner` until `ttl` from now on the database clock; returns
        /// that end (Unix ms). Expired codes are dropped first; at most `max` live codes.
        pub(crate) fn mint(
            &self,
            canonical: &str,
            owner: &str,
            ttl: Duration,
            max: usize,
        ) -> Result<i64> {
            let hash = self.hash(canonical);
            let ttl_ms = i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX);
            let max = i64::try_from(max).unwrap_or(i64::MAX);
            self.store.tx("mint a pairing code", |tx, clock| {
                let now = clock.now_ms(tx)?;
                tx.execute(
                    "DELETE FROM jevgate_pairing_codes WHERE expires_at <= $1",
                    &[&now],
                )?;
                let live: i64 = tx
                    .query_one("SELECT count(*) FROM jevgate_pairing_codes", &[])?
                    .get(0);
                if live >= max {
                    return Err(crate::store::pg::TxError::Jevgate(Error::InvalidArgument {
                        name: "owner",
                        reason: format!("{max} pairing codes are live already"),
                    }));
                }
                let until = now.saturating_add(ttl_ms);
                // A collision (2^-40 per live code) replaces the older code.
                tx.execute(
                    "INSERT INTO jevgate_pairing_codes (hash, owner, expires_at)
                     VALUES ($1, $2, $3)
                     ON CONFLICT (hash) DO UPDATE SET owner = $2, expires_at = $3",
                    &[&hash, &owner, &until],
                )?;
                Ok(until)
            })
        }

        /// Consumes `canonical`: its owner if it was live. A store that cannot be reached
        /// redeems nothing (logged by code only).
        pub(crate) fn redeem(&self, canonical: &str) -> Option<String> {
            let hash = self.hash(canonical);
            let result = self.store.tx("redeem a pairing code", |tx, clock| {
                let row = tx.query_opt(
                    "DELETE FROM jevgate_pairing_codes WHERE hash = $1
                     RETURNING owner, expires_at",
                    &[&hash],
                )?;
                let now = clock.now_ms(tx)?;
                Ok(row.and_then(|r| (r.get::<_, i64>(1) > now).then(|| r.get::<_, String>(0))))
            });
            match result {
                Ok(owner) => owner,
                Err(e) => {
                    log::warn!("pairing code not redeemed: {}", e.code());
                    None
                }
            }
        }
    }
}

impl std::fmt::Debug for PairingCodes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PairingCodes").finish_non_exhaustive()
    }
}

impl PairingCodes {
    pub fn new(clock: SharedClock) -> PairingCodes {
        PairingCodes {
            clock,
            codes: Mutex::new(HashMap::new()),
            failures: Mutex::new(FailureWindow::new(MAX_FAILURES, FAILURE_WINDOW)),
            #[cfg(feature = "postgres")]
            fleet: std::sync::OnceLock::new(),
        }
    }

    /// On the shared store: codes are minted into and redeemed from it from now on.
    #[cfg(feature = "postgres")]
    pub fn join_fleet(&self, store: std::sync::Arc<crate::store::pg::PgStore>) -> Result<()> {
        if self.fleet.get().is_none() {
            let _ = self.fleet.set(fleet::FleetCodes::open(store)?);
        }
        Ok(())
    }

    /// A new single-use code for `owner`, valid for `ttl` (1 ms ..= 10 minutes) on the gateway's
    /// clock. `INVALID_ARGUMENT` (`owner`, `ttl`) otherwise.
    pub fn mint(&self, owner: &str, ttl: Duration) -> Result<PairingCode> {
        super::registry::text_arg("owner", owner, 256)?;
        if ttl.is_zero() || ttl > MAX_CODE_TTL {
            return Err(Error::InvalidArgument {
                name: "ttl",
                reason: "must be more than 0 and at most 10 minutes".into(),
            });
        }
        let mut bits = [0u8; 5];
        ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut bits).map_err(
            |_| Error::Internal {
                reason: "the system random source failed".into(),
            },
        )?;
        let code = format_code(bits);
        let canonical = normalise(&code).ok_or_else(|| Error::Internal {
            reason: "a minted pairing code does not read back".into(),
        })?;
        #[cfg(feature = "postgres")]
        if let Some(fleet) = self.fleet.get() {
            let expires_at = fleet.mint(&canonical, owner, ttl, MAX_LIVE_CODES)?;
            return Ok(PairingCode { code, expires_at });
        }
        let now = self.clock.now();
        let until = now + ttl;
        let ttl_ms = i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX);
        let expires_at = self.clock.wall_millis().saturating_add(ttl_ms);
        let mut codes = self.codes.lock();
        if codes.len() >= MAX_LIVE_CODES {
            codes.retain(|_, c| c.until > now);
            if codes.len() >= MAX_LIVE_CODES {
                return Err(Error::InvalidArgument {
                    name: "owner",
                    reason: format!("{MAX_LIVE_CODES} pairing codes are live already"),
                });
            }
        }
        // A collision (2^-40 per live code) replaces the older code: it simply stops working.
        codes.insert(
            hash(&canonical),
            Live {
                owner: owner.to_string(),
                until,
            },
        );
        Ok(PairingCode { code, expires_at })
    }

    /// Consumes `typed` and returns its owner: `None` for a code that is malformed, unknown,
    /// used or expired (one answer for all). Exactly one of two concurrent redemptions of one
    /// code wins.
    pub fn redeem(&self, typed: &str) -> Option<String> {
        let canonical = normalise(typed)?;
        #[cfg(feature = "postgres")]
        if let Some(fleet) = self.fleet.get() {
            return fleet.redeem(&canonical);
        }
        let live = self.codes.lock().remove(&hash(&canonical))?;
        (self.clock.now() < live.until).then_some(live.owner)
    }

    /// Whether `addr` may try a code now (`Err(retry_after)` when not).
    pub fn may_try(&self, addr: IpAddr) -> std::result::Result<(), Duration> {
        let now = self.clock.now();
        self.failures.lock().check(addr, now)
    }

    /// Counts a wrong code from `addr`.
    pub fn failed(&self, addr: IpAddr) {
        let now = self.clock.now();
        self.failures.lock().record(addr, now);
    }
}

/// Pairs (or re-pairs) a device for `owner` (as `capability`, else a browser when the request
/// names one and a shell worker otherwise): the registry row, the lease manager's owner, and
/// the old connection of a re-paired device closed. The one path of [`crate::Gateway::pair`]
/// and of the pairing route.
pub(crate) fn pair_device(
    registry: &Registry,
    hub: &Hub,
    leases: &Leases,
    owner: &str,
    request: &PairRequest,
    capability: Option<Capability>,
) -> Result<Pairing> {
    let (record, token) = match capability {
        Some(c) => registry.pair_as(owner, request, c)?,
        None => registry.pair(owner, request)?,
    };
    leases.set_device_owner(&record.id, owner)?;
    // A re-paired device's old token stops working, including on an open connection.
    hub.disconnect(&record.id, 1008, "DEVICE_UNPAIRED");
    log::info!("device {} paired", record.id);
    Ok(Pairing {
        device: record.to_device(false),
        token,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::{Clock, ManualClock};
    use std::collections::HashSet;
    use std::sync::Arc;

    #[test]
    fn r_dev_pair_codes_format_and_normalise() {
        assert_eq!(format_code([0; 5]), "AAAA-AAAA");
        assert_eq!(format_code([0xFF; 5]), "9999-9999");
        // 0b00001_00010_... : the bits are read big-endian, 5 at a time.
        assert_eq!(format_code([0x08, 0x86, 0x42, 0x98, 0xE8]), "BCDE-FGHJ");
        for typed in [
            "ABCD-EFGH",
            "abcd-efgh",
            " ab cd ef gh ",
            "ABCDEFGH",
            "a-b-c-d-e-f-g-h",
            "AbCd--EfGh",
        ] {
            assert_eq!(normalise(typed).as_deref(), Some("ABCDEFGH"), "{typed}");
        }
        for bad in [
            "",
            "ABCD-EFG",
            "ABCD-EFGHJ",
            "ABCD-EFG0",
            "ABCD-EFGI",
            "ABCD-EFGO",
            "ABCD-EFG1",
            "ABCD_EFGH",
            "ABCD\tEFGH",
            "ÄBCD-EFGH",
            "ABCD-EFGĦ",
        ] {
            assert_eq!(normalise(bad), None, "{bad:?}");
        }
        // A huge input is refused after a bounded look.
        assert_eq!(normalise(&"-".repeat(1_000_000)), None);
        assert_eq!(normalise(&format!("{}ABCDEFGH", " ".repeat(100))), None);
    }

    #[test]
    fn r_dev_pair_minted_codes_are_distinct_and_round_trip() {
        let codes = PairingCodes::new(crate::clock::system());
        let mut seen = HashSet::new();
        for _ in 0..200 {
            let c = codes.mint("alice", Duration::from_secs(60)).unwrap();
            let text = c.expose().to_string();
            assert_eq!(text.len(), 9);
            assert_eq!(&text[4..5], "-");
            assert!(normalise(&text).is_some());
            assert!(seen.insert(text));
            assert!(!format!("{c:?}").contains(c.expose()));
        }
        assert_eq!(codes.codes.lock().len(), 200);
    }

    #[test]
    fn r_dev_pair_a_code_is_single_use_and_expires_on_the_gateway_clock() {
        let clock = ManualClock::new();
        let codes = PairingCodes::new(Arc::new(clock.clone()));
        let c = codes.mint("alice", Duration::from_secs(60)).unwrap();
        assert_eq!(
            c.expires_at,
            clock.wall_millis() + 60_000,
            "expiresAt is wall ms"
        );
        let lower = c.expose().to_lowercase().replace('-', " ");
        assert_eq!(codes.redeem(&lower).as_deref(), Some("alice"));
        assert_eq!(codes.redeem(c.expose()), None, "used");
        let c = codes.mint("bob", Duration::from_secs(60)).unwrap();
        clock.advance(Duration::from_secs(60));
        assert_eq!(codes.redeem(c.expose()), None, "expired at its end");
        let c = codes.mint("bob", Duration::from_secs(60)).unwrap();
        clock.advance(Duration::from_millis(59_999));
        assert_eq!(codes.redeem(c.expose()).as_deref(), Some("bob"));
        for ttl in [Duration::ZERO, MAX_CODE_TTL + Duration::from_millis(1)] {
            let e = codes.mint("bob", ttl).unwrap_err();
            assert_eq!(e.code(), "INVALID_ARGUMENT");
        }
        assert!(codes.mint("bob", MAX_CODE_TTL).is_ok());
        assert_eq!(
            codes.mint("", Duration::from_secs(1)).unwrap_err().code(),
            "INVALID_ARGUMENT"
        );
    }

    #[test]
    fn r_dev_pair_failure_window_limits_then_recovers() {
        let clock = ManualClock::new();
        let addr: IpAddr = "10.0.0.1".parse().unwrap();
        let other: IpAddr = "10.0.0.2".parse().unwrap();
        let mut w = FailureWindow::new(5, Duration::from_secs(60));
        let t0 = clock.now();
        for i in 0..5 {
            assert_eq!(w.check(addr, t0 + Duration::from_secs(i)), Ok(()));
            w.record(addr, t0 + Duration::from_secs(i));
        }
        let t = t0 + Duration::from_secs(10);
        assert_eq!(w.check(addr, t), Err(Duration::from_secs(50)));
        assert_eq!(w.check(other, t), Ok(()), "per address");
        // The oldest failure leaves the window at t0 + 60 s: one more try.
        let t = t0 + Duration::from_secs(60);
        assert_eq!(w.check(addr, t), Ok(()));
        w.record(addr, t);
        assert_eq!(
            w.check(addr, t),
            Err(Duration::from_secs(1)),
            "the next oldest (t0 + 1 s) leaves at t0 + 61 s"
        );
        // Everything old is forgotten, the address too.
        assert_eq!(w.check(addr, t + Duration::from_secs(60)), Ok(()));
        assert_eq!(w.addresses(), 0);
    }

    #[test]
    fn r_dev_pair_failure_window_memory_is_bounded() {
        let clock = ManualClock::new();
        let mut w = FailureWindow::new(5, Duration::from_secs(60));
        let t0 = clock.now();
        for i in 0..(MAX_ADDRESSES as u32 + 10) {
            let addr = IpAddr::from(i.to_be_bytes());
            w.record(addr, t0 + Duration::from_millis(u64::from(i) * 10));
        }
        assert!(w.addresses() <= MAX_ADDRESSES + 10);
        for _ in 0..100 {
            w.record("10.9.9.9".parse().unwrap(), t0);
        }
        assert_eq!(w.tries[&"10.9.9.9".parse::<IpAddr>().unwrap()].len(), 5);
    }
}
