//! Python values ↔ JSON text, through the standard `json` module: the one place the binding
//! serializes a Python value or builds one from JSON. Below every file that converts (the crate
//! root re-exports it as `crate::dumps`, `crate::dumps_arg`, `crate::json_to_py`). Never keeps
//! or logs a value.

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
        let err = crate::errors::invalid_argument(name, reason);
        err.set_cause(py, Some(e));
        err
    })
}

/// JSON text → a Python object (dict/list/…), through the standard `json` module.
pub(crate) fn json_to_py<'py>(py: Python<'py>, json: &str) -> PyResult<Bound<'py, PyAny>> {
    py.import("json")?.call_method1("loads", (json,))
}
