//! The server's file descriptors (issue 15 items 3 and 4): the protocol's own copy of stdout,
//! stdout itself pointed at stderr (so nothing but protocol messages can ever reach the
//! client's pipe, whatever a library prints), a bounded line reader over stdin that also wakes
//! on SIGTERM/SIGINT/SIGHUP, and the signal handler.
//!
//! The only `unsafe` of the server lives here: `libc` calls on descriptors this file owns, and
//! a signal handler that does one thing — `write(2)` one byte to a non-blocking pipe, which is
//! async-signal-safe — saving and restoring `errno`. This file never interprets a message.

#![allow(unsafe_code)]

use std::fs::File;
use std::io::Write;
use std::os::fd::{FromRawFd, RawFd};
use std::sync::atomic::{AtomicI32, Ordering};

/// The write end of the wake pipe, for the signal handler (-1 before [`Stdio::open`]).
static WAKE_FD: AtomicI32 = AtomicI32::new(-1);

extern "C" fn on_signal(_sig: libc::c_int) {
    // SAFETY: errno is thread-local and saved/restored around one write(2) of one byte to a
    // non-blocking pipe (async-signal-safe); a full pipe already means "wake up".
    unsafe {
        let errno = *libc::__errno_location();
        let fd = WAKE_FD.load(Ordering::Relaxed);
        if fd >= 0 {
            let byte = 1u8;
            let _ = libc::write(fd, (&byte as *const u8).cast(), 1);
        }
        *libc::__errno_location() = errno;
    }
}

/// The descriptors of one server.
pub struct Stdio {
    /// The protocol's stdout (a `CLOEXEC` duplicate of fd 1 taken before fd 1 was pointed at
    /// stderr).
    pub out: File,
    wake_read: RawFd,
    wake_write: RawFd,
}

/// A wake-up writer: shutdown from any thread (a failed write to the client) goes through the
/// same pipe as a signal.
#[derive(Clone, Copy)]
pub struct Waker(RawFd);

impl Waker {
    /// Wakes the reader: it stops reading and the server shuts down.
    pub fn wake(self) {
        let byte = 1u8;
        // SAFETY: a write of one byte from a live buffer to a pipe this process owns until
        // exit (never closed: see `Stdio`).
        let _ = unsafe { libc::write(self.0, (&byte as *const u8).cast(), 1) };
    }
}

fn os_error(what: &str) -> String {
    format!("{what}: {}", std::io::Error::last_os_error().kind())
}

impl Stdio {
    /// Takes over the process's stdio: duplicates stdout for the protocol, points fd 1 at
    /// stderr, makes the wake pipe and installs the signal handlers.
    pub fn open() -> Result<Stdio, String> {
        // SAFETY: plain descriptor calls on fds 1 and 2 and a fresh pipe; results checked.
        unsafe {
            let out = libc::fcntl(1, libc::F_DUPFD_CLOEXEC, 3);
            if out < 0 {
                return Err(os_error("cannot duplicate stdout"));
            }
            if libc::dup2(2, 1) < 0 {
                return Err(os_error("cannot point stdout at stderr"));
            }
            let mut fds = [0 as libc::c_int; 2];
            if libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) != 0 {
                return Err(os_error("cannot create the wake pipe"));
            }
            WAKE_FD.store(fds[1], Ordering::Relaxed);
            for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
                action.sa_flags = libc::SA_RESTART;
                libc::sigemptyset(&mut action.sa_mask);
                if libc::sigaction(sig, &action, std::ptr::null_mut()) != 0 {
                    return Err(os_error("cannot install the signal handler"));
                }
            }
            Ok(Stdio {
                out: File::from_raw_fd(out),
                wake_read: fds[0],
                wake_write: fds[1],
            })
        }
    }

    /// A handle that wakes the reader.
    pub fn waker(&self) -> Waker {
        Waker(self.wake_write)
    }

    /// A reader of stdin's lines, at most `limit` bytes each.
    pub fn lines(&self, limit: usize) -> Lines {
        Lines {
            wake: self.wake_read,
            chunk: vec![0; 64 * 1024],
            start: 0,
            end: 0,
            line: Vec::new(),
            discarding: false,
            eof: false,
            limit,
        }
    }
}

/// What the reader saw next.
#[derive(Debug, PartialEq, Eq)]
pub enum Input {
    /// One line (without its `\n`).
    Line(Vec<u8>),
    /// A line longer than the limit: it was read and thrown away in chunks, never kept whole.
    TooLong,
    /// stdin ended.
    Eof,
    /// A signal, or a wake from another thread: stop.
    Woken,
}

/// stdin's lines, read in 64 KiB chunks; a line over the limit is discarded up to its newline.
pub struct Lines {
    wake: RawFd,
    chunk: Vec<u8>,
    start: usize,
    end: usize,
    line: Vec<u8>,
    discarding: bool,
    eof: bool,
    limit: usize,
}

impl Lines {
    /// The next line, a refusal of an over-long one, the end, or a wake-up.
    pub fn next(&mut self) -> Input {
        loop {
            if self.start < self.end {
                let data = &self.chunk[self.start..self.end];
                let (seg, newline) = match data.iter().position(|&b| b == b'\n') {
                    Some(i) => (&data[..i], true),
                    None => (data, false),
                };
                let seg_len = seg.len();
                if !self.discarding {
                    if self.line.len().saturating_add(seg_len) > self.limit {
                        self.discarding = true;
                        self.line = Vec::new();
                    } else {
                        self.line.extend_from_slice(seg);
                    }
                }
                self.start += seg_len + usize::from(newline);
                if newline {
                    return self.finish();
                }
                continue;
            }
            if self.eof {
                // A last line without its newline still counts.
                if self.discarding || !self.line.is_empty() {
                    return self.finish();
                }
                return Input::Eof;
            }
            match self.fill() {
                Ok(true) => {}
                Ok(false) => self.eof = true,
                Err(woken) => return woken,
            }
        }
    }

    fn finish(&mut self) -> Input {
        if std::mem::take(&mut self.discarding) {
            self.line = Vec::new();
            return Input::TooLong;
        }
        let mut line = std::mem::take(&mut self.line);
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        Input::Line(line)
    }

    /// Reads the next chunk: `Ok(false)` at end of input, `Err(Woken)` on a wake-up.
    fn fill(&mut self) -> Result<bool, Input> {
        loop {
            let mut fds = [
                libc::pollfd {
                    fd: 0,
                    events: libc::POLLIN,
                    revents: 0,
                },
                libc::pollfd {
                    fd: self.wake,
                    events: libc::POLLIN,
                    revents: 0,
                },
            ];
            // SAFETY: two valid pollfd entries on fds this process owns.
            let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
            if n < 0 {
                if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                return Ok(false);
            }
            if fds[1].revents != 0 {
                return Err(Input::Woken);
            }
            if fds[0].revents == 0 {
                continue;
            }
            // SAFETY: reads into our own buffer, at most its length.
            let got = unsafe { libc::read(0, self.chunk.as_mut_ptr().cast(), self.chunk.len()) };
            if got < 0 {
                match std::io::Error::last_os_error().kind() {
                    std::io::ErrorKind::Interrupted | std::io::ErrorKind::WouldBlock => continue,
                    _ => return Ok(false),
                }
            }
            if got == 0 {
                return Ok(false);
            }
            self.start = 0;
            self.end = got as usize;
            return Ok(true);
        }
    }
}

/// Writes one message as one line and flushes; `false` when the client's pipe is gone.
pub fn write_line(out: &mut File, line: &str) -> bool {
    let mut bytes = Vec::with_capacity(line.len() + 1);
    bytes.extend_from_slice(line.as_bytes());
    bytes.push(b'\n');
    out.write_all(&bytes).and_then(|()| out.flush()).is_ok()
}
