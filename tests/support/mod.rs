//! Test support shared by integration tests.
#![allow(dead_code)] // reason: each test binary uses a different subset of the helpers

pub mod jev_server;
pub mod worker;
