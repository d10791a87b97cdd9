//! What an evaluation needs of the gateway that runs it, and nothing more: the clock, the live
//! configuration cell and the closed flag. The gateway lends one [`JevContext`] per call
//! (`Gateway::jev_context`), so the Jev client never sees the [`crate::Gateway`] above it.
//!
//! It only reads: it must never swap the configuration or set the closed flag (the gateway
//! owns both).

use crate::clock::SharedClock;
use crate::config::ConfigSnapshot;
use crate::{Error, Result};
use parking_lot::RwLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The gateway's clock, live configuration and closed flag, borrowed for one call.
#[derive(Debug, Clone, Copy)]
pub(crate) struct JevContext<'a> {
    clock: &'a SharedClock,
    live: &'a RwLock<Arc<ConfigSnapshot>>,
    closed: &'a AtomicBool,
}

impl<'a> JevContext<'a> {
    pub(crate) fn new(
        clock: &'a SharedClock,
        live: &'a RwLock<Arc<ConfigSnapshot>>,
        closed: &'a AtomicBool,
    ) -> JevContext<'a> {
        JevContext {
            clock,
            live,
            closed,
        }
    }

    /// The gateway's clock.
    pub(crate) fn clock(&self) -> &'a SharedClock {
        self.clock
    }

    /// The live configuration snapshot right now (a reload later does not change it).
    pub(crate) fn config(&self) -> Arc<ConfigSnapshot> {
        Arc::clone(&self.live.read())
    }

    /// Whether the gateway has been closed.
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// `GATEWAY_CLOSED` once the gateway is closed.
    pub(crate) fn check_open(&self) -> Result<()> {
        if self.is_closed() {
            Err(Error::GatewayClosed)
        } else {
            Ok(())
        }
    }
}
