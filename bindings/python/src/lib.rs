//! Python binding of jevgate (`jevgate._jevgate`, re-exported by the `jevgate` package).
//!
//! Translation only: Python values in, Rust calls with the GIL released, Python values and
//! exceptions out. No logic lives here. One file per core module, over what they share
//! (`json.rs`, `interrupt.rs`, `errors.rs`, `callable.rs`); this root only declares them and
//! registers the module (tests/layers.rs: no file uses a name defined here).

mod browser;
mod callable;
mod clock;
mod computer;
mod config;
mod device;
mod errors;
mod gateway;
mod grammar;
mod interrupt;
mod jev;
mod json;
mod lease;
mod task;
mod worker;

use pyo3::prelude::*;

pub(crate) use json::{dumps, dumps_arg, json_to_py};

#[pymodule]
fn _jevgate(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(config::validate_config, m)?)?;
    m.add_function(wrap_pyfunction!(grammar::parse_command, m)?)?;
    m.add_function(wrap_pyfunction!(grammar::split_steps, m)?)?;
    m.add_function(wrap_pyfunction!(grammar::split_parts, m)?)?;
    m.add_function(wrap_pyfunction!(grammar::check_model_address, m)?)?;
    m.add_function(wrap_pyfunction!(jev::validate_response, m)?)?;
    m.add_function(wrap_pyfunction!(jev::answer_schema, m)?)?;
    m.add_function(wrap_pyfunction!(device::tool_definitions, m)?)?;
    m.add_function(wrap_pyfunction!(device::managed_tool_definitions, m)?)?;
    m.add_function(wrap_pyfunction!(errors::error_table, m)?)?;
    m.add_class::<device::PyChannelHandle>()?;
    m.add_class::<jev::PyCancelToken>()?;
    m.add_class::<browser::PyLocalBrowser>()?;
    m.add_class::<worker::PyDeviceWorker>()?;
    m.add_class::<computer::PyComputer>()?;
    m.add_class::<gateway::PyGateway>()?;
    m.add_class::<clock::PyManualClock>()?;
    m.add_class::<lease::PyLeases>()?;
    m.add_class::<lease::PyBrowserCall>()?;
    m.add_class::<task::PyTasks>()?;
    Ok(())
}
