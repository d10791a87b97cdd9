//! The device-worker channel server (R-DEV-CHAN): a listening socket, its accept thread and one
//! thread per connection, optionally behind TLS (rustls), all stopped and joined by
//! [`ChannelHandle::stop`] or [`Gateway::close`](crate::Gateway::close).
//!
//! It owns sockets and threads only; authentication, frames and commands are handled per
//! connection in [`super::connection`]. It must never block the accept loop on one client (each
//! connection, handshake included, runs on its own thread with deadlines) and never leave a
//! thread running after stop returns.

use super::channel::{ChannelOptions, Shared};
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

/// A running channel server. Stop it with [`ChannelHandle::stop`]; [`Gateway::close`](crate::Gateway::close)
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
