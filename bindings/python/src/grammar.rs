//! `jevgate.parse_command`, `split_steps`, `split_parts`, `check_model_address`: the pure
//! step-command grammar, dicts and lists out. The GIL is released while parsing.

use crate::errors::IntoPy;
use crate::json_to_py;
use pyo3::prelude::*;

/// The core's size check (`INVALID_ARGUMENT`, as from C).
fn check(text: &str) -> PyResult<()> {
    jevgate::grammar::check_text(text).py_err()
}

/// The intent of a user command as a dict, e.g. {"intent": "scroll", "direction": "down"}.
#[pyfunction]
pub fn parse_command<'py>(py: Python<'py>, text: String) -> PyResult<Bound<'py, PyAny>> {
    check(&text)?;
    let json = py.detach(|| jevgate::grammar::parse_command(&text).to_json());
    json_to_py(py, &json)
}

/// The steps of a message, or None when it keeps the one-command path.
#[pyfunction]
pub fn split_steps(py: Python<'_>, text: String) -> PyResult<Option<Vec<String>>> {
    check(&text)?;
    Ok(py.detach(|| jevgate::grammar::split_steps(&text)))
}

/// The parts of one step joined by แล้ว, จากนั้น or then.
#[pyfunction]
pub fn split_parts(py: Python<'_>, text: String) -> PyResult<Vec<String>> {
    check(&text)?;
    Ok(py.detach(|| jevgate::grammar::split_parts(&text)))
}

/// The URL to open for a model-produced address; raises GrammarError NAVIGATION_UNRESOLVED.
#[pyfunction]
pub fn check_model_address(text: String) -> PyResult<String> {
    check(&text)?;
    jevgate::grammar::check_model_address(&text)
        .map_err(jevgate::Error::from)
        .py_err()
}
