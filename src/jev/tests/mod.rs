//! Tests of the jev module: table-driven verdicts for every reason and every edge of the
//! rounding envelope, property tests, exact float parsing and the request model.

mod differential;
mod floats;
mod props;
mod request;
mod support;
mod table;
