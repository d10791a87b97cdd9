//! The channel's socket plumbing, shared by the gateway's connections and the worker: the
//! plain-or-TLS stream the WebSocket of `wire.rs` runs over, and the wait without polling.
//!
//! The worker's connection thread sleeps in `poll(2)` ([`Wake`]) until its socket is readable
//! (or writable, when output is pending), another thread wakes it because a frame was queued,
//! or a timer is due. (The gateway's side serves all its connections from a few I/O threads on
//! mio instead: `server.rs`.)
//! The wake-up is one byte over a Unix socket pair, so it needs nothing but the standard library
//! and `poll`. This is what keeps a tool call's round trip through the channel at loopback speed
//! (a read-timeout loop costs up to its timeout on each hop). On platforms without `poll` the
//! wait falls back to a 1 ms sleep. The wait never reads or writes the socket itself.

#![allow(unsafe_code)] // reason: one `poll(2)` call on two descriptors this module owns or borrows

use std::io::{Read, Write};
use std::net::TcpStream;
use std::ops::{Deref, DerefMut};
use std::time::Duration;

/// A plain TCP stream, or TLS over one (`C` is rustls' client or server connection; `T` the
/// TCP stream: the standard one for the worker, mio's for the gateway's I/O threads).
pub(crate) enum Io<C, T: Read + Write = TcpStream> {
    /// `ws://`.
    Plain(T),
    /// `wss://`.
    Tls(Box<rustls::StreamOwned<C, T>>),
}

impl<C, T: Read + Write> Io<C, T> {
    /// The TCP stream under it (for shutdown and the lingering close, never for data).
    pub(crate) fn tcp(&self) -> &T {
        match self {
            Io::Plain(s) => s,
            Io::Tls(s) => &s.sock,
        }
    }
}

impl<C, S, T: Read + Write> Read for Io<C, T>
where
    C: DerefMut + Deref<Target = rustls::ConnectionCommon<S>>,
    S: rustls::SideData,
{
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Io::Plain(s) => s.read(buf),
            Io::Tls(s) => s.read(buf),
        }
    }
}

impl<C, S, T: Read + Write> Write for Io<C, T>
where
    C: DerefMut + Deref<Target = rustls::ConnectionCommon<S>>,
    S: rustls::SideData,
{
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Io::Plain(s) => s.write(buf),
            Io::Tls(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Io::Plain(s) => s.flush(),
            Io::Tls(s) => s.flush(),
        }
    }
}

/// A wake-up pipe plus the wait on a socket.
#[derive(Debug)]
pub(crate) struct Wake {
    #[cfg(unix)]
    pair: Option<(
        std::os::unix::net::UnixStream,
        std::os::unix::net::UnixStream,
    )>,
}

impl Wake {
    /// A new wake-up pipe; if none can be made (descriptor exhaustion) waits degrade to short
    /// sleeps rather than failing the connection.
    pub(crate) fn new() -> Wake {
        #[cfg(unix)]
        {
            let pair = std::os::unix::net::UnixStream::pair()
                .ok()
                .filter(|(a, b)| {
                    a.set_nonblocking(true).is_ok() && b.set_nonblocking(true).is_ok()
                });
            Wake { pair }
        }
        #[cfg(not(unix))]
        Wake {}
    }

    /// Wakes the waiting thread (or makes its next wait return at once). Never blocks.
    pub(crate) fn notify(&self) {
        #[cfg(unix)]
        if let Some((_, tx)) = &self.pair {
            // A full pipe already holds a pending wake-up: nothing is lost.
            let _ = (&*tx).write(&[1]);
        }
    }

    /// Blocks until `socket` is readable (or writable, with `write`), [`Wake::notify`] was
    /// called, or `timeout` passed. Spurious returns are allowed.
    pub(crate) fn wait(&self, socket: &TcpStream, write: bool, timeout: Duration) {
        #[cfg(unix)]
        if let Some((rx, _)) = &self.pair {
            use std::os::fd::AsRawFd;
            let mut fds = [
                libc::pollfd {
                    fd: socket.as_raw_fd(),
                    events: libc::POLLIN | if write { libc::POLLOUT } else { 0 },
                    revents: 0,
                },
                libc::pollfd {
                    fd: rx.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                },
            ];
            let ms = libc::c_int::try_from(timeout.as_millis()).unwrap_or(libc::c_int::MAX);
            // SAFETY: `fds` is a valid array of two initialized pollfd for the whole call.
            let ready = unsafe { libc::poll(fds.as_mut_ptr(), 2, ms) };
            if ready > 0 && fds[1].revents != 0 {
                let mut sink = [0u8; 64];
                while matches!((&*rx).read(&mut sink), Ok(n) if n > 0) {}
            }
            return;
        }
        let _ = (socket, write);
        std::thread::sleep(timeout.min(Duration::from_millis(1)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::{Clock, SystemClock};
    use std::net::TcpListener;

    #[test]
    fn a_notify_ends_the_wait_and_a_readable_socket_too() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut server, _) = listener.accept().unwrap();
        let wake = Wake::new();
        // Real time on purpose: this measures that a real wait ends early.
        let clock = SystemClock::new();
        // Notified before the wait: returns at once.
        wake.notify();
        let t = clock.now();
        wake.wait(&client, false, Duration::from_secs(10));
        assert!(clock.now() - t < Duration::from_secs(5));
        // Data on the socket ends the wait.
        std::io::Write::write_all(&mut server, b"x").unwrap();
        let t = clock.now();
        wake.wait(&client, false, Duration::from_secs(10));
        assert!(clock.now() - t < Duration::from_secs(5));
    }
}
