//! Test support: a loopback HTTP server of fixture pages that counts beacons (so a test proves a
//! click happened exactly once), and one shared headless Chromium per test binary that ends when
//! the last test using it drops its handle; in submodules, an in-memory page for task tests and
//! the callback model that drives it (`desk`), a gateway builder with a channel and
//! paired workers (`gateway`), a scripted device worker (`worker`), the capturing logger of the
//! R-LOG tests (`log_capture`), a scripted Jev provider (`jev_server`), the fixture pages, the
//! one device-tool conformance suite every device runs (`conformance`) and a Chromium with the
//! browser extension loaded (`extension`), and a throw-away Linux desktop for the computer helper
//! (`desktop`) with the helper's pairing, approval and calculator reads (`computer`); child
//! test processes that die by SIGKILL at a named point (`crash`); the round trips the benches
//! measure alike (`bench`).
#![allow(dead_code)] // each test binary uses a different part of the support module

pub mod bench;
pub mod computer;
pub mod conformance;
pub mod crash;
pub mod desk;
pub mod desktop;
pub mod extension;
pub mod gateway;
pub mod injection;
pub mod jev_server;
pub mod log_capture;
pub mod pages;
pub mod pg;
pub mod worker;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use jevgate::browser::{LaunchOptions, LocalBrowser};

/// A loopback server: `GET /p/<name>` serves a fixture page (and counts `load:<name>`),
/// `/beacon?n=<name>` counts, `/slow?ms=<n>&to=<name>` answers a fixture page after a delay,
/// `/api` answers JSON, `/download?name=<file>` an attachment and a form posted to `/submit`
/// counts `submit` and `submitted:<its address field>`.
pub struct Server {
    pub base: String,
    counts: Arc<Mutex<HashMap<String, u32>>>,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

impl Server {
    pub fn start() -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let base = format!("http://{}", listener.local_addr().unwrap());
        let counts = Arc::new(Mutex::new(HashMap::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (c, s) = (counts.clone(), stop.clone());
        let accept = std::thread::spawn(move || {
            for conn in listener.incoming() {
                if s.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let c = c.clone();
                std::thread::spawn(move || serve(conn, &c));
            }
        });
        Server {
            base,
            counts,
            stop,
            accept: Some(accept),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    pub fn count(&self, name: &str) -> u32 {
        *self.counts.lock().unwrap().get(name).unwrap_or(&0)
    }

    /// Polls the beacon count (bounded) until it reaches `want`; returns the final count after
    /// a short quiet period so a double count would show.
    pub fn wait_count(&self, name: &str, want: u32) -> u32 {
        self.wait_count_within(name, want, Duration::from_secs(5))
    }

    /// [`Server::wait_count`] with its own bound on the wait.
    #[allow(dead_code)]
    pub fn wait_count_within(&self, name: &str, want: u32, within: Duration) -> u32 {
        let deadline = Instant::now() + within;
        while self.count(name) < want && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        std::thread::sleep(Duration::from_millis(150));
        self.count(name)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.base.trim_start_matches("http://"));
        if let Some(t) = self.accept.take() {
            let _ = t.join();
        }
    }
}

fn serve(mut conn: TcpStream, counts: &Mutex<HashMap<String, u32>>) {
    let _ = conn.set_read_timeout(Some(Duration::from_secs(5)));
    let mut reader = BufReader::new(conn.try_clone().unwrap());
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    let mut content_length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            content_length = v.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; content_length.min(1 << 20)];
    let _ = reader.read_exact(&mut body);
    let target = request_line
        .split_whitespace()
        .nth(1)
        .unwrap_or("/")
        .to_string();
    let (path, query) = target.split_once('?').unwrap_or((&target, ""));
    let param = |k: &str| {
        query
            .split('&')
            .find_map(|kv| kv.strip_prefix(&format!("{k}=")))
            .map(percent_decode)
            .unwrap_or_default()
    };
    let (status, ctype, body): (&str, &str, String) = if path == "/beacon" {
        *counts.lock().unwrap().entry(param("n")).or_insert(0) += 1;
        ("204 No Content", "text/plain", String::new())
    } else if path == "/count" {
        // A child process (crash tests) asks whether a click's beacon has arrived.
        let n = *counts.lock().unwrap().get(&param("n")).unwrap_or(&0);
        ("200 OK", "text/plain", n.to_string())
    } else if path == "/slow" {
        let ms: u64 = param("ms").parse().unwrap_or(1000);
        std::thread::sleep(Duration::from_millis(ms));
        match pages::page(&param("to")) {
            Some(p) => ("200 OK", "text/html; charset=utf-8", p),
            None => ("404 Not Found", "text/plain", "no page".into()),
        }
    } else if let Some(name) = path.strip_prefix("/p/") {
        *counts
            .lock()
            .unwrap()
            .entry(format!("load:{name}"))
            .or_insert(0) += 1;
        match pages::page(name) {
            Some(p) => ("200 OK", "text/html; charset=utf-8", p),
            None => ("404 Not Found", "text/plain", "no page".into()),
        }
    } else if path == "/submit" {
        let form = String::from_utf8_lossy(&body).into_owned();
        let address = form
            .split('&')
            .find_map(|kv| kv.strip_prefix("address="))
            .map(percent_decode)
            .unwrap_or_default();
        let mut counts = counts.lock().unwrap();
        *counts.entry("submit".into()).or_insert(0) += 1;
        *counts.entry(format!("submitted:{address}")).or_insert(0) += 1;
        (
            "200 OK",
            "text/html; charset=utf-8",
            "<title>Sent</title><h1>Thank you</h1>".into(),
        )
    } else if path == "/api" {
        ("200 OK", "application/json", "{\"ok\":true}".into())
    } else if path == "/download" {
        let head = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Disposition: attachment; filename=\"{}\"\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            param("name").replace(['"', '\r', '\n'], ""),
            pages::DOWNLOAD_BODY.len()
        );
        let _ = conn.write_all(head.as_bytes());
        let _ = conn.write_all(pages::DOWNLOAD_BODY.as_bytes());
        return;
    } else if path == "/favicon.ico" {
        ("404 Not Found", "text/plain", String::new())
    } else {
        ("404 Not Found", "text/plain", "no page".into())
    };
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = conn.write_all(head.as_bytes());
    let _ = conn.write_all(body.as_bytes());
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(if bytes[i] == b'+' { b' ' } else { bytes[i] });
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// One headless Chromium shared by the tests of a binary that run at the same time; it is
/// closed (and its processes reaped) when the last of them drops its handle.
fn shared_slot() -> &'static Mutex<Weak<LocalBrowser>> {
    static SHARED: OnceLock<Mutex<Weak<LocalBrowser>>> = OnceLock::new();
    SHARED.get_or_init(|| Mutex::new(Weak::new()))
}

pub fn shared_browser() -> Arc<LocalBrowser> {
    let mut weak = shared_slot().lock().unwrap_or_else(|e| e.into_inner());
    if let Some(b) = weak.upgrade() {
        return b;
    }
    let b = Arc::new(LocalBrowser::launch(LaunchOptions::default()).expect("launch Chromium"));
    track_pid(b.pid().expect("pid"));
    *weak = Arc::downgrade(&b);
    b
}

/// Drops the browser handle, closing the browser when it is the last one.
pub struct Closing(pub Arc<LocalBrowser>);

impl Drop for Closing {
    fn drop(&mut self) {
        // Decided under the slot's lock, so no other test can pick up a browser being closed.
        let last = {
            let mut weak = shared_slot().lock().unwrap_or_else(|e| e.into_inner());
            let last = Arc::strong_count(&self.0) == 1;
            if last {
                *weak = Weak::new();
            }
            last
        };
        if last {
            let pid = self.0.pid();
            self.0.close();
            // No Chromium process of this browser may outlive close().
            if let Some(pid) = pid {
                let left = wait_group_gone(pid, Duration::from_secs(5));
                if !std::thread::panicking() {
                    assert!(
                        left.is_empty(),
                        "Chromium processes left after close: {left:?}"
                    );
                }
            }
        }
    }
}

fn pids() -> &'static Mutex<Vec<u32>> {
    static PIDS: OnceLock<Mutex<Vec<u32>>> = OnceLock::new();
    PIDS.get_or_init(|| Mutex::new(Vec::new()))
}

/// Remembers a browser pid this binary started.
pub fn track_pid(pid: u32) {
    pids().lock().unwrap().push(pid);
}

/// Processes of the process group `pgid` (the browser and everything it started).
pub fn group_members(pgid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for entry in dir.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let rest = stat.rsplit(')').next().unwrap_or("");
        let fields: Vec<&str> = rest.split_whitespace().collect();
        // fields[0] = state, fields[2] = pgrp
        if fields.get(2).and_then(|g| g.parse::<u32>().ok()) == Some(pgid) && fields[0] != "Z" {
            out.push(pid);
        }
    }
    out
}

/// Polls (bounded) until no process of the group `pgid` is left; returns what is left.
pub fn wait_group_gone(pgid: u32, within: Duration) -> Vec<u32> {
    let deadline = Instant::now() + within;
    loop {
        let left = group_members(pgid);
        if left.is_empty() || Instant::now() >= deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Direct children of `pid` (for a worker process: the Chromium it started, which leads its
/// own process group).
pub fn children_of(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for entry in dir.flatten() {
        let Ok(child) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{child}/stat")) else {
            continue;
        };
        let rest = stat.rsplit(')').next().unwrap_or("");
        let fields: Vec<&str> = rest.split_whitespace().collect();
        // fields[0] = state, fields[1] = ppid
        if fields.get(1).and_then(|p| p.parse::<u32>().ok()) == Some(pid) && fields[0] != "Z" {
            out.push(child);
        }
    }
    out
}
