//! The device-worker channel server (R-DEV-CHAN): a listening socket, its accept thread and one
//! thread per connection, optionally behind TLS (rustls), all stopped and joined by
//! [`ChannelHandle::stop`] or [`Gateway::close`](crate::Gateway::close).
//!
//! It owns sockets and threads only; authentication, frames and commands are handled per
//! connection in [`super::connection`]. It must never block the accept loop on one client (each
//! connection, handshake included, runs on its own thread with deadlines) and never leave a
//! thread running after stop returns.

use super::connection;
use super::hub::Hub;
use super::registry::Registry;
use crate::{Error, Result};
use parking_lot::Mutex;
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
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
    /// Where to listen (`127.0.0.1:0` picks a free port; see [`ChannelHandle::local_addr`]).
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

    fn validate(&self) -> Result<()> {
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
    live: AtomicUsize,
    accept: Mutex<Option<JoinHandle<()>>>,
}

/// A running channel server. Stop it with [`ChannelHandle::stop`]; [`Gateway::close`]
/// (crate::Gateway::close) stops every server of the gateway. Dropping the handle does not stop
/// the server.
#[derive(Clone)]
pub struct ChannelHandle {
    addr: SocketAddr,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for ChannelHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChannelHandle")
            .field("addr", &self.addr)
            .field("tls", &self.shared.options.tls.is_some())
            .finish()
    }
}

impl ChannelHandle {
    /// The bound address (the real port when `:0` was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// `ws://host:port/v1/device-worker/channel` (or `wss://`).
    pub fn url(&self) -> String {
        let scheme = if self.shared.options.tls.is_some() {
            "wss"
        } else {
            "ws"
        };
        format!("{scheme}://{}{}", self.addr, super::frames::CHANNEL_PATH)
    }

    /// Whether the server has been stopped.
    pub fn is_stopped(&self) -> bool {
        self.shared.stopping.load(Ordering::Acquire)
    }

    /// Stops accepting, closes every connection (1001 `GATEWAY_CLOSING`) and joins every thread.
    /// Idempotent.
    pub fn stop(&self) {
        self.shared.stop();
    }
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

const ACCEPT_POLL: Duration = Duration::from_millis(10);

/// Binds and starts serving.
pub(crate) fn serve(
    options: ChannelOptions,
    registry: Arc<Registry>,
    hub: Arc<Hub>,
) -> Result<(ChannelHandle, Arc<Shared>)> {
    options.validate()?;
    let addrs: Vec<SocketAddr> = options
        .addr
        .to_socket_addrs()
        .map_err(|_| Error::InvalidArgument {
            name: "addr",
            reason: "not a socket address".into(),
        })?
        .collect();
    let listener = TcpListener::bind(&addrs[..]).map_err(|e| Error::ChannelIo {
        reason: format!("bind: {}", e.kind()),
    })?;
    let addr = listener.local_addr().map_err(|e| Error::ChannelIo {
        reason: format!("local address: {}", e.kind()),
    })?;
    listener
        .set_nonblocking(true)
        .map_err(|e| Error::ChannelIo {
            reason: format!("configure listener: {}", e.kind()),
        })?;
    let shared = Arc::new(Shared {
        options,
        registry,
        hub,
        stopping: AtomicBool::new(false),
        live: AtomicUsize::new(0),
        accept: Mutex::new(None),
    });
    let for_thread = Arc::clone(&shared);
    let thread = std::thread::Builder::new()
        .name("jevgate-channel-accept".into())
        .spawn(move || accept_loop(listener, for_thread))
        .map_err(|e| Error::ChannelIo {
            reason: format!("start accept thread: {}", e.kind()),
        })?;
    *shared.accept.lock() = Some(thread);
    log::info!("device channel listening on {addr}");
    Ok((
        ChannelHandle {
            addr,
            shared: Arc::clone(&shared),
        },
        shared,
    ))
}

fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    let mut threads: Vec<JoinHandle<()>> = Vec::new();
    while !shared.stopping.load(Ordering::Acquire) {
        threads.retain(|t| !t.is_finished());
        match listener.accept() {
            Ok((stream, _)) => {
                if shared.live.load(Ordering::Acquire) >= shared.options.max_connections {
                    log::warn!("device channel at its connection limit; connection dropped");
                    drop(stream);
                    continue;
                }
                if let Some(t) = spawn_connection(stream, &shared) {
                    threads.push(t);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::sleep(ACCEPT_POLL),
            Err(e) => {
                log::warn!("device channel accept failed: {}", e.kind());
                std::thread::sleep(ACCEPT_POLL);
            }
        }
    }
    drop(listener);
    for t in threads {
        let _ = t.join();
    }
    log::info!("device channel stopped");
}

fn spawn_connection(stream: TcpStream, shared: &Arc<Shared>) -> Option<JoinHandle<()>> {
    if stream.set_nonblocking(false).is_err() {
        return None;
    }
    shared.live.fetch_add(1, Ordering::AcqRel);
    let for_thread = Arc::clone(shared);
    let spawned = std::thread::Builder::new()
        .name("jevgate-channel-conn".into())
        .spawn(move || {
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                connection::serve(stream, &for_thread)
            }));
            if result.is_err() {
                log::error!("a device channel connection thread panicked");
            }
            for_thread.live.fetch_sub(1, Ordering::AcqRel);
        });
    match spawned {
        Ok(t) => Some(t),
        Err(e) => {
            shared.live.fetch_sub(1, Ordering::AcqRel);
            log::warn!("cannot start a connection thread: {}", e.kind());
            None
        }
    }
}
