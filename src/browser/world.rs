//! The page library (`page.js`), the isolated world it is evaluated in and how its answer is
//! read, and the ids of the operations the local backend starts on its own (a navigation it
//! waits for, a lease's tab).
//! Below the files that drive a tab (`actions.rs`, `frame_walk.rs`, `local.rs`), which all
//! need them.
//!
//! It must never talk to a browser.

use serde_json::Value;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::{Error, Result};

/// The page library, evaluated once per isolated world.
pub(crate) const PAGE_JS: &str = include_str!("../../extension/page.js");
/// The isolated world's name.
pub(crate) const WORLD: &str = "jevgate";

static INTERNAL_ID: AtomicU64 = AtomicU64::new(1);

/// A process-unique number for an operation id the backend makes itself (`nav-…`, `lease-…`).
pub(crate) fn next_internal_id() -> u64 {
    INTERNAL_ID.fetch_add(1, Ordering::Relaxed)
}

/// The page library's JSON answer out of a `Runtime.evaluate` result.
pub(crate) fn library_answer(v: &Value) -> Result<Value> {
    if v.get("exceptionDetails").is_some() {
        return Err(Error::ExecutionFailed {
            reason: "the page library threw".into(),
        });
    }
    let text = v["result"]["value"].as_str().unwrap_or("null");
    serde_json::from_str(text).map_err(|_| Error::ExecutionFailed {
        reason: "the page library answered malformed JSON".into(),
    })
}
