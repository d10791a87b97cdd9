//! Python binding of jevgate (`jevgate._jevgate`, re-exported by the `jevgate` package).
//!
//! Translation only: Python values in, Rust calls with the GIL released, Python values and
//! exceptions out. No logic lives here. One file per core module.

mod browser;
mod clock;
mod config;
mod device;
mod errors;
mod gateway;
mod grammar;
mod interrupt;
mod jev;
mod lease;
mod task;
mod worker;

use pyo3::prelude::*;

/// A Python object (dict/list/…) → JSON text, through the standard `json` module, refusing
/// NaN and infinities (`ValueError`) and non-JSON values (`TypeError`). The one place the
/// binding serializes Python values; an argument the caller gave goes through [`dumps_arg`].
pub(crate) fn dumps(value: &Bound<'_, PyAny>) -> PyResult<String> {
    let py = value.py();
    let kwargs = pyo3::types::PyDict::new(py);
    kwargs.set_item("allow_nan", false)?;
    py.import("json")?
        .call_method("dumps", (value,), Some(&kwargs))?
        .extract()
}

/// [`dumps`] for a JSON argument `name` the caller gave: a value JSON cannot carry is the core's
/// `INVALID_ARGUMENT` naming the argument as C does (`jevgate.ArgumentError`, a `ValueError`,
/// with `.code`), the `json` module's exception kept as its `__cause__`. Other exceptions
/// (KeyboardInterrupt, MemoryError) pass unchanged.
pub(crate) fn dumps_arg(name: &'static str, value: &Bound<'_, PyAny>) -> PyResult<String> {
    use pyo3::exceptions::{PyRecursionError, PyTypeError, PyValueError};
    let py = value.py();
    dumps(value).map_err(|e| {
        let reason = if e.is_instance_of::<PyTypeError>(py) {
            "must be JSON (holds a value that is not JSON, such as a set, bytes or an object)"
        } else if e.is_instance_of::<PyValueError>(py) {
            "must be JSON (holds a number that is not finite, or a reference cycle)"
        } else if e.is_instance_of::<PyRecursionError>(py) {
            "must be JSON (nested too deeply)"
        } else {
            return e;
        };
        let err = errors::invalid_argument(name, reason);
        err.set_cause(py, Some(e));
        err
    })
}

/// JSON text → a Python object (dict/list/…), through the standard `json` module.
pub(crate) fn json_to_py<'py>(py: Python<'py>, json: &str) -> PyResult<Bound<'py, PyAny>> {
    py.import("json")?.call_method1("loads", (json,))
}

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
    m.add_class::<gateway::PyGateway>()?;
    m.add_class::<clock::PyManualClock>()?;
    m.add_class::<lease::PyLeases>()?;
    m.add_class::<lease::PyBrowserCall>()?;
    m.add_class::<task::PyTasks>()?;
    Ok(())
}
