//! The cell holding the `callback` provider's Python callable: below both the gateway object
//! (`gateway.rs`, which owns it and reports it to the garbage collector) and the Rust callback
//! that reads it (`jev.rs`), so neither file uses the other. Holds no logic.

use parking_lot::Mutex;
use pyo3::prelude::*;
use std::sync::Arc;

/// The one strong reference to the `callback` provider's Python callable, shared by the
/// gateway object (which reports it to Python's garbage collector, so a gateway referenced from
/// its own callback is collected and its data directory unlocked) and the Rust callback.
pub(crate) type CallableCell = Arc<Mutex<Option<Py<PyAny>>>>;
