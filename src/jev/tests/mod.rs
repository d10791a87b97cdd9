//! Tests of the jev module.
