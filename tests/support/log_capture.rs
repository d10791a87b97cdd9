//! The one capturing logger of the R-LOG tests: installed as the process's logger (once per test
//! binary) at `Trace`, it keeps each record it is told to keep — the thread that logged it, its
//! level, target and formatted message — so a test can look for sentinels in every record of
//! every crate, as a host debugging with `RUST_LOG=trace` would see them.
//!
//! Owns: the process's `log` logger in the binaries that install it. Never: prints a record, or
//! formats one it does not keep (a WebSocket library's trace of a 1 MiB frame is megabytes).

use std::sync::{Mutex, OnceLock};

/// One captured record.
#[derive(Debug, Clone)]
pub struct Captured {
    /// The logging thread's id (`ThreadId(7)`).
    pub thread: String,
    pub level: log::Level,
    pub target: String,
    pub message: String,
}

/// Which records to keep: [`everything`], or a test's own choice by target and level.
pub type Keep = fn(&log::Metadata<'_>) -> bool;

/// Keeps every record of every target at every level.
pub fn everything(_: &log::Metadata<'_>) -> bool {
    true
}

struct Capture;

static KEEP: OnceLock<Keep> = OnceLock::new();
static RECORDS: Mutex<Vec<Captured>> = Mutex::new(Vec::new());

impl log::Log for Capture {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        KEEP.get().is_some_and(|keep| keep(metadata))
    }
    fn log(&self, record: &log::Record<'_>) {
        if !self.enabled(record.metadata()) {
            return;
        }
        let captured = Captured {
            thread: format!("{:?}", std::thread::current().id()),
            level: record.level(),
            target: record.target().to_string(),
            message: record.args().to_string(),
        };
        RECORDS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(captured);
    }
    fn flush(&self) {}
}

/// Installs the capture as the process's logger at `Trace`, keeping what `keep` accepts. Once
/// per binary: a second call (another test of the binary) keeps the first call's choice.
/// Panics when another logger was installed first.
pub fn install(keep: Keep) {
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        let _ = KEEP.set(keep);
        static LOGGER: Capture = Capture;
        log::set_logger(&LOGGER).expect("the capture is the process's only logger");
        log::set_max_level(log::LevelFilter::Trace);
    });
}

/// Every record kept so far, oldest first.
pub fn records() -> Vec<Captured> {
    RECORDS.lock().unwrap_or_else(|e| e.into_inner()).clone()
}
