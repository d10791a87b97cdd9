//! # jevgate
//!
//! Safe, bounded, auditable control of browsers for AI agents, embedded in the host process.
//!
//! jevgate is synchronous and thread-based: every call blocks and returns, long work runs on
//! threads the [`Gateway`] owns and joins on close. It links from Rust, from C through
//! `include/jevgate.h`, and from Python (`import jevgate`).
//!
//! Modules land one by one; see the README for what is available.
#![deny(missing_docs)]
#![deny(unsafe_code)]

mod args;
pub mod browser;
mod caps;
pub mod clock;
pub mod config;
pub mod device;
mod error;
#[cfg(feature = "capi")]
pub mod ffi;
mod gateway;
pub mod grammar;
mod ids;
pub mod jev;
pub mod lease;
pub mod observation;
mod reasons;
pub mod store;
pub mod untrusted;

pub use config::{Config, ConfigSnapshot};
pub use error::{Error, ErrorFamily, ErrorKind, ErrorRow, Result, RetryInfo, ERROR_TABLE};
pub use gateway::{Gateway, GatewayOptions};
