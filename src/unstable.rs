//! Internals that tests, fuzz targets, benches and the `jevgate` binary reach into
//! (`jevgate::unstable`, hidden from the documentation). Not part of the supported API: any of
//! it may change or go in any release.
//!
//! This module only re-exports; it must never define behaviour of its own, and nothing in the
//! library itself may use it (it sits in the top layer, beside the bindings).

/// The channel's pure frame parsers and builders (fuzz and hostile-input tests).
pub mod frames {
    pub use crate::device::frames::*;
}
/// The browser's workspace confinement and URL redaction (tested directly, used by the
/// managed tools and `network_requests`).
pub use crate::browser::files::{confine, confine_upload, save_into};
pub use crate::browser::journal::{redact_url, REDACTED};
pub use crate::jev::ledger::{
    Ledger, LedgerRefusal, LEDGER_CAPACITY, LEDGER_PER_CALLER, LEDGER_TTL,
};
pub use crate::jev::limiter::{Admission, LimiterState};
pub use crate::lease::control::{ControlTable, Refusal};
pub use crate::lease::profile::{
    profile_key_hash, SessionRefusal, SessionRequest, SessionTable, MAX_PINS,
};
/// The shared (PostgreSQL) store's test clock and liveness rows (issue 23).
pub use crate::lease::test_hooks::{advance_store_clock_ms, fleet_processes};
pub use crate::store::temp_dirs::private_temp_dir;
/// Every owner's tasks, for the `jevgate task list` of the person who owns the directory.
pub use crate::task::bench::{all_tasks, evidence_record, set_checkpoint_hook, ReceiptBench};

/// The Linux computer helper's AT-SPI observation and actions (issue 25; `jevgate-computer` and
/// tests/computer_desktop.rs).
#[cfg(feature = "computer")]
pub mod computer {
    pub use crate::computer::*;
}

pub use crate::gateway::test_hooks::{prune_dead_device_rows, prune_dead_task_calls};
