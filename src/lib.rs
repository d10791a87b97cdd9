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

pub mod browser;
pub mod clock;
mod error;
pub mod grammar;
pub mod observation;

pub use error::{Error, ErrorFamily, Result};
pub mod config;

pub use config::Config;
mod gateway;
pub mod lease;
pub mod store;

pub use gateway::{ConfigSnapshot, Gateway, GatewayOptions};
pub mod ffi;
