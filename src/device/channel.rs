//! A channel server's configuration ([`ChannelOptions`], [`ChannelTls`]) and the state its I/O
//! threads share (`Shared`: options, flags, the connection budgets): below both `server.rs`
//! (which binds, accepts and runs the I/O threads) and `connection.rs` (one worker's state
//! machine), so neither needs the other's file.
//!
//! It holds values, flags and counters only: it must never open a socket or start a thread.

use super::hub::Hub;
use super::pairing::PairingCodes;
use super::registry::Registry;
use crate::lease::Leases;
use crate::{Error, Result};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// The default of [`ChannelOptions::max_connections`]. Kept as the default (and clamped to the
/// open-file limit with a log line) when a host leaves it at this value.
pub const DEFAULT_MAX_CONNECTIONS: usize = 10_000;
/// The largest first (authenticate) message, in bytes: an unauthenticated socket never makes
/// the gateway hold more than this for its message.
pub const MAX_FIRST_MESSAGE_BYTES: usize = 8 * 1024;

/// TLS for the channel (`wss://`): a rustls server configuration.
#[derive(Clone)]
pub struct ChannelTls {
    config: Arc<rustls::ServerConfig>,
}

impl std::fmt::Debug for ChannelTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ChannelTls")
    }
}

impl ChannelTls {
    /// [`ChannelTls::from_pem`] when both PEMs are given, `None` (plain `ws://`) when neither
    /// is, `INVALID_ARGUMENT` (`tls_key_pem` / `tls_cert_pem`) when only one is.
    pub fn from_optional_pem(
        cert_chain_pem: Option<&[u8]>,
        private_key_pem: Option<&[u8]>,
    ) -> Result<Option<ChannelTls>> {
        match (cert_chain_pem, private_key_pem) {
            (Some(cert), Some(key)) => ChannelTls::from_pem(cert, key).map(Some),
            (None, None) => Ok(None),
            (Some(_), None) => Err(Error::InvalidArgument {
                name: "tls_key_pem",
                reason: "is missing: give both tls_cert_pem and tls_key_pem, or neither".into(),
            }),
            (None, Some(_)) => Err(Error::InvalidArgument {
                name: "tls_cert_pem",
                reason: "is missing: give both tls_cert_pem and tls_key_pem, or neither".into(),
            }),
        }
    }

    /// TLS from a PEM certificate chain and a PEM private key (PKCS#8, PKCS#1 or SEC1), with
    /// rustls' safe defaults and the `ring` provider. `INVALID_ARGUMENT` if either does not
    /// parse or they do not match; the key is never echoed.
    pub fn from_pem(cert_chain_pem: &[u8], private_key_pem: &[u8]) -> Result<ChannelTls> {
        use rustls::pki_types::pem::PemObject;
        use rustls::pki_types::{CertificateDer, PrivateKeyDer};
        let certs = CertificateDer::pem_slice_iter(cert_chain_pem)
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|_| Error::InvalidArgument {
                name: "cert_chain_pem",
                reason: "not a PEM certificate chain".into(),
            })?;
        if certs.is_empty() {
            return Err(Error::InvalidArgument {
                name: "cert_chain_pem",
                reason: "no certificate found".into(),
            });
        }
        let key =
            PrivateKeyDer::from_pem_slice(private_key_pem).map_err(|_| Error::InvalidArgument {
                name: "private_key_pem",
                reason: "not a PEM private key".into(),
            })?;
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .map_err(|_| Error::Internal {
            reason: "rustls rejected its default protocol versions".into(),
        })?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|_| Error::InvalidArgument {
            name: "private_key_pem",
            reason: "the key does not match the certificate or is unsupported".into(),
        })?;
        Ok(ChannelTls {
            config: Arc::new(config),
        })
    }

    /// TLS from a rustls configuration the host built itself.
    pub fn from_config(config: Arc<rustls::ServerConfig>) -> ChannelTls {
        ChannelTls { config }
    }

    pub(crate) fn config(&self) -> Arc<rustls::ServerConfig> {
        Arc::clone(&self.config)
    }
}

/// How to serve the channel. Every duration and size is bounded; the defaults suit real workers,
/// tests shrink them.
///
/// ```
/// let options = jevgate::device::ChannelOptions::new("127.0.0.1:0");
/// assert_eq!(options.auth_timeout, std::time::Duration::from_secs(5));
/// assert_eq!(options.max_connections, 10_000);
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ChannelOptions {
    /// Where to listen (`127.0.0.1:0` picks a free port; see [`ChannelHandle::local_addr`](super::ChannelHandle::local_addr)).
    pub addr: String,
    /// Serve `wss://` with this TLS configuration.
    pub tls: Option<ChannelTls>,
    /// The WebSocket handshake and the first (authenticate) frame must arrive within this, on
    /// the gateway's clock.
    pub auth_timeout: Duration,
    /// How often the gateway pings an idle worker.
    pub ping_interval: Duration,
    /// A worker silent for this long (no frame, no pong) is disconnected.
    pub idle_timeout: Duration,
    /// The largest message (and frame) a worker may send, in bytes; larger closes the
    /// connection with 1009 `MESSAGE_TOO_BIG`.
    pub max_message_bytes: usize,
    /// Authenticated devices connected at once; one more is refused at authentication with
    /// 1013 `CONNECTION_LIMIT` (a device that reconnects replaces its own connection and is
    /// never refused). At start the soft open-file limit is raised to the hard one; the default
    /// is then lowered to fit (with a log line), while a value a host set above what fits is an
    /// `INVALID_ARGUMENT`.
    pub max_connections: usize,
    /// Sockets not yet authenticated, at once: their own budget, so they can never push a
    /// paired device's connection out. More are closed at accept.
    pub max_unauthenticated: usize,
    /// Sockets not yet authenticated from one address, at once.
    pub max_unauthenticated_per_address: usize,
    /// The I/O threads that serve every connection (0: the number of cores, at most 4).
    pub io_threads: usize,
    /// A worker whose unread outgoing bytes stay above this for [`Self::slow_reader_timeout`]
    /// is closed (its in-flight commands end unknown if sent, `DEVICE_OFFLINE` if not); while
    /// above it, nothing more is read from that worker.
    pub slow_reader_bytes: usize,
    /// See [`Self::slow_reader_bytes`].
    pub slow_reader_timeout: Duration,
}

impl ChannelOptions {
    /// Defaults: auth 5 s, ping every 20 s, idle 60 s, messages ≤ 1 MiB, 10,000 devices, 256
    /// unauthenticated sockets (16 per address), I/O threads = cores (≤ 4), a slow reader
    /// closed after 10 s above 1 MiB unread.
    pub fn new(addr: impl Into<String>) -> ChannelOptions {
        ChannelOptions {
            addr: addr.into(),
            tls: None,
            auth_timeout: Duration::from_secs(5),
            ping_interval: Duration::from_secs(20),
            idle_timeout: Duration::from_secs(60),
            max_message_bytes: 1 << 20,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_unauthenticated: 256,
            max_unauthenticated_per_address: 16,
            io_threads: 0,
            slow_reader_bytes: 1 << 20,
            slow_reader_timeout: Duration::from_secs(10),
        }
    }

    /// The I/O threads to run: [`Self::io_threads`], or the cores (at most 4) for 0.
    pub(crate) fn io_thread_count(&self) -> usize {
        match self.io_threads {
            0 => std::thread::available_parallelism()
                .map_or(1, |n| n.get())
                .min(4),
            n => n,
        }
    }

    /// Options from JSON (the C and configuration form): `{"addr"?, "maxConnections"?,
    /// "maxUnauthenticated"?, "maxUnauthenticatedPerAddress"?, "ioThreads"?, "authTimeoutMs"?,
    /// "pingIntervalMs"?, "idleTimeoutMs"?, "maxMessageBytes"?, "slowReaderBytes"?,
    /// "slowReaderTimeoutMs"?, "tlsCertPem"?, "tlsKeyPem"?}`; what is absent keeps its default
    /// (`addr`: `127.0.0.1:0`). Unknown fields, wrong types and a half TLS pair are
    /// `INVALID_ARGUMENT`; values are checked when the channel starts.
    ///
    /// ```
    /// let o = jevgate::device::ChannelOptions::from_json(r#"{"maxConnections": 50}"#).unwrap();
    /// assert_eq!(o.max_connections, 50);
    /// assert!(jevgate::device::ChannelOptions::from_json(r#"{"maxConections": 50}"#).is_err());
    /// ```
    pub fn from_json(json: &str) -> Result<ChannelOptions> {
        #[derive(serde::Deserialize)]
        #[serde(rename_all = "camelCase", deny_unknown_fields)]
        struct Settings {
            addr: Option<String>,
            max_connections: Option<usize>,
            max_unauthenticated: Option<usize>,
            max_unauthenticated_per_address: Option<usize>,
            io_threads: Option<usize>,
            auth_timeout_ms: Option<u64>,
            ping_interval_ms: Option<u64>,
            idle_timeout_ms: Option<u64>,
            max_message_bytes: Option<usize>,
            slow_reader_bytes: Option<usize>,
            slow_reader_timeout_ms: Option<u64>,
            tls_cert_pem: Option<String>,
            tls_key_pem: Option<String>,
        }
        let s: Settings = crate::args::from_json(
            "options_json",
            json,
            "{addr?, maxConnections?, maxUnauthenticated?, maxUnauthenticatedPerAddress?, ioThreads?, authTimeoutMs?, pingIntervalMs?, idleTimeoutMs?, maxMessageBytes?, slowReaderBytes?, slowReaderTimeoutMs?, tlsCertPem?, tlsKeyPem?}",
        )?;
        let mut o = ChannelOptions::new(s.addr.unwrap_or_else(|| "127.0.0.1:0".into()));
        let ms = Duration::from_millis;
        o.max_connections = s.max_connections.unwrap_or(o.max_connections);
        o.max_unauthenticated = s.max_unauthenticated.unwrap_or(o.max_unauthenticated);
        o.max_unauthenticated_per_address = s
            .max_unauthenticated_per_address
            .unwrap_or(o.max_unauthenticated_per_address);
        o.io_threads = s.io_threads.unwrap_or(o.io_threads);
        o.auth_timeout = s.auth_timeout_ms.map_or(o.auth_timeout, ms);
        o.ping_interval = s.ping_interval_ms.map_or(o.ping_interval, ms);
        o.idle_timeout = s.idle_timeout_ms.map_or(o.idle_timeout, ms);
        o.max_message_bytes = s.max_message_bytes.unwrap_or(o.max_message_bytes);
        o.slow_reader_bytes = s.slow_reader_bytes.unwrap_or(o.slow_reader_bytes);
        o.slow_reader_timeout = s.slow_reader_timeout_ms.map_or(o.slow_reader_timeout, ms);
        o.tls = ChannelTls::from_optional_pem(
            s.tls_cert_pem.as_deref().map(str::as_bytes),
            s.tls_key_pem.as_deref().map(str::as_bytes),
        )?;
        Ok(o)
    }

    /// Serves `wss://` with `tls`.
    pub fn with_tls(mut self, tls: ChannelTls) -> ChannelOptions {
        self.tls = Some(tls);
        self
    }

    pub(super) fn validate(&self) -> Result<()> {
        let positive = |name: &'static str, d: Duration| {
            if d.is_zero() {
                Err(Error::InvalidArgument {
                    name,
                    reason: "must be positive".into(),
                })
            } else {
                Ok(())
            }
        };
        positive("auth_timeout", self.auth_timeout)?;
        positive("ping_interval", self.ping_interval)?;
        positive("idle_timeout", self.idle_timeout)?;
        positive("slow_reader_timeout", self.slow_reader_timeout)?;
        let at_least = |name: &'static str, value: usize, min: usize, reason: &str| {
            if value < min {
                Err(Error::InvalidArgument {
                    name,
                    reason: reason.into(),
                })
            } else {
                Ok(())
            }
        };
        at_least(
            "max_message_bytes",
            self.max_message_bytes,
            1024,
            "must allow at least 1024 bytes",
        )?;
        at_least(
            "max_connections",
            self.max_connections,
            1,
            "must be positive",
        )?;
        at_least(
            "max_unauthenticated",
            self.max_unauthenticated,
            1,
            "must be positive",
        )?;
        at_least(
            "max_unauthenticated_per_address",
            self.max_unauthenticated_per_address,
            1,
            "must be positive",
        )?;
        at_least(
            "slow_reader_bytes",
            self.slow_reader_bytes,
            1024,
            "must be at least 1024",
        )?;
        if self.io_threads > 64 {
            return Err(Error::InvalidArgument {
                name: "io_threads",
                reason: "at most 64".into(),
            });
        }
        Ok(())
    }
}

/// The unauthenticated sockets' budget: at most `max_total` at once, `max_per_address` from one
/// address. Pure bookkeeping (the server holds it under a lock).
#[derive(Debug)]
pub(crate) struct Admissions {
    max_total: usize,
    max_per_address: usize,
    total: usize,
    per_address: HashMap<IpAddr, usize>,
}

impl Admissions {
    pub fn new(max_total: usize, max_per_address: usize) -> Admissions {
        Admissions {
            max_total,
            max_per_address,
            total: 0,
            per_address: HashMap::new(),
        }
    }

    /// Takes a slot for `addr` if both limits allow.
    pub fn admit(&mut self, addr: IpAddr) -> bool {
        let here = self.per_address.get(&addr).copied().unwrap_or(0);
        if here >= self.max_per_address || self.total >= self.max_total {
            return false;
        }
        self.per_address.insert(addr, here + 1);
        self.total += 1;
        true
    }

    /// Gives back a slot of `addr` (an address at zero is forgotten).
    pub fn release(&mut self, addr: IpAddr) {
        if let Some(n) = self.per_address.get_mut(&addr) {
            *n -= 1;
            if *n == 0 {
                self.per_address.remove(&addr);
            }
            self.total = self.total.saturating_sub(1);
        }
    }
}

/// State shared by a server's I/O threads (and the handle that stops them).
pub(crate) struct Shared {
    pub options: ChannelOptions,
    pub registry: Arc<Registry>,
    pub hub: Arc<Hub>,
    /// The gateway's pairing codes (the pairing route redeems them on the checker thread).
    pub pairing: Arc<PairingCodes>,
    /// The gateway's leases (a device paired through the route gets its owner recorded).
    pub leases: Leases,
    pub stopping: AtomicBool,
    /// Sockets accepted and not yet authenticated (or refused), in all and per address.
    pub unauthenticated: Mutex<Admissions>,
    /// Authenticated connections (until their socket is closed).
    pub devices: AtomicUsize,
    /// Wakes each I/O thread (set once they exist).
    pub wakers: Mutex<Vec<Arc<dyn Fn() + Send + Sync>>>,
    pub threads: Mutex<Vec<JoinHandle<()>>>,
}

impl Shared {
    /// Takes one unauthenticated slot for `addr`, if both budgets allow.
    pub fn admit(&self, addr: IpAddr) -> bool {
        self.unauthenticated.lock().admit(addr)
    }

    /// Gives back a slot taken by [`Shared::admit`].
    pub fn release(&self, addr: IpAddr) {
        self.unauthenticated.lock().release(addr);
    }

    /// Takes one device slot unless the cap is reached (`replacing`: the device is connected
    /// already and this connection replaces its own, so it is never refused).
    pub fn take_device_slot(&self, replacing: bool) -> bool {
        if replacing {
            self.devices.fetch_add(1, Ordering::AcqRel);
            return true;
        }
        self.devices
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.options.max_connections).then_some(n + 1)
            })
            .is_ok()
    }

    /// Gives back a slot taken by [`Shared::take_device_slot`].
    pub fn release_device_slot(&self) {
        let _ = self
            .devices
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
    }

    /// Stops every I/O thread (they close their connections first) and joins them. Idempotent;
    /// from an I/O thread itself it only asks.
    pub fn stop(&self) {
        self.stopping.store(true, Ordering::Release);
        for wake in self.wakers.lock().iter() {
            wake();
        }
        let me = std::thread::current().id();
        let threads: Vec<JoinHandle<()>> = {
            let mut threads = self.threads.lock();
            if threads.iter().any(|t| t.thread().id() == me) {
                return;
            }
            threads.drain(..).collect()
        };
        for thread in threads {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Issue 24 item 2: per address and in all; a release frees exactly one slot and an address
    // at zero is forgotten (the map holds only addresses with sockets waiting).
    #[test]
    fn admissions_hold_both_limits_and_forget_an_address_at_zero() {
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        let c: IpAddr = "10.0.0.3".parse().unwrap();
        let mut adm = Admissions::new(5, 2);
        assert!(adm.admit(a) && adm.admit(a));
        assert!(!adm.admit(a), "a third from one address");
        assert!(adm.admit(b) && adm.admit(b) && adm.admit(c));
        assert!(!adm.admit(c), "a sixth in all");
        adm.release(a);
        assert!(!adm.admit(b));
        assert!(adm.admit(a));
        for addr in [a, a, b, b, c] {
            adm.release(addr);
        }
        assert_eq!(adm.total, 0);
        assert!(adm.per_address.is_empty());
        // A release of an address that holds nothing changes nothing.
        adm.release(c);
        assert_eq!(adm.total, 0);
    }
}
