//! A channel server's configuration ([`ChannelOptions`], [`ChannelTls`]) and the state its
//! accept thread and connection threads share (`Shared`): below both `server.rs` (which binds and
//! accepts) and `connection.rs` (which serves one worker), so neither needs the other's file.
//!
//! It holds values and flags only: it must never open a socket or start a thread.

use super::hub::Hub;
use super::registry::Registry;
use crate::{Error, Result};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

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
/// assert_eq!(options.auth_timeout, std::time::Duration::from_secs(10));
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ChannelOptions {
    /// Where to listen (`127.0.0.1:0` picks a free port; see [`ChannelHandle::local_addr`](super::ChannelHandle::local_addr)).
    pub addr: String,
    /// Serve `wss://` with this TLS configuration.
    pub tls: Option<ChannelTls>,
    /// The WebSocket handshake and the first (authenticate) frame must arrive within this.
    pub auth_timeout: Duration,
    /// How often the gateway pings an idle worker.
    pub ping_interval: Duration,
    /// A worker silent for this long (no frame, no pong) is disconnected.
    pub idle_timeout: Duration,
    /// The largest message (and frame) a worker may send, in bytes; larger closes the
    /// connection with 1009 `MESSAGE_TOO_BIG`.
    pub max_message_bytes: usize,
    /// Connections served at once; more are dropped at accept.
    pub max_connections: usize,
}

impl ChannelOptions {
    /// Defaults: auth 10 s, ping every 20 s, idle 60 s, messages ≤ 1 MiB, 256 connections.
    pub fn new(addr: impl Into<String>) -> ChannelOptions {
        ChannelOptions {
            addr: addr.into(),
            tls: None,
            auth_timeout: Duration::from_secs(10),
            ping_interval: Duration::from_secs(20),
            idle_timeout: Duration::from_secs(60),
            max_message_bytes: 1 << 20,
            max_connections: 256,
        }
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
        if self.max_message_bytes < 1024 || self.max_connections == 0 {
            return Err(Error::InvalidArgument {
                name: "max_message_bytes",
                reason: "messages must allow at least 1024 bytes and one connection".into(),
            });
        }
        Ok(())
    }
}

/// State shared by a server's accept thread and its connection threads.
pub(crate) struct Shared {
    pub options: ChannelOptions,
    pub registry: Arc<Registry>,
    pub hub: Arc<Hub>,
    pub stopping: AtomicBool,
    pub live: AtomicUsize,
    pub accept: Mutex<Option<JoinHandle<()>>>,
}

impl Shared {
    pub fn stop(&self) {
        self.stopping.store(true, Ordering::Release);
        self.hub.wake_all();
        let accept = self.accept.lock().take();
        if let Some(thread) = accept {
            if thread.thread().id() != std::thread::current().id() {
                let _ = thread.join();
            }
        }
    }
}
