//! Shared test support.

pub mod jev_server;
