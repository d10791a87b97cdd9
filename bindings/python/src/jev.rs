//! `jevgate.validate_response` and `jevgate.answer_schema` (R-VAL): dicts or JSON text in, the
//! answers dict out. The GIL is released while the bytes are validated.

use crate::errors::IntoPy;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyDict, PyString};

/// A JSON document given as str, bytes, bytearray, or a dict/list (serialized with `json`).
fn json_bytes(value: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<u8>> {
    if let Ok(s) = value.cast::<PyString>() {
        return Ok(s.extract::<String>()?.into_bytes());
    }
    if let Ok(b) = value.cast::<PyBytes>() {
        return Ok(b.as_bytes().to_vec());
    }
    if let Ok(b) = value.cast::<PyByteArray>() {
        return Ok(b.to_vec());
    }
    if value.is_instance_of::<PyDict>() || value.hasattr("keys")? {
        let py = value.py();
        let kwargs = PyDict::new(py);
        kwargs.set_item("allow_nan", false)?;
        let text: String = py
            .import("json")?
            .call_method("dumps", (value,), Some(&kwargs))?
            .extract()?;
        return Ok(text.into_bytes());
    }
    Err(PyTypeError::new_err(format!(
        "{what} must be a dict, str, bytes or bytearray"
    )))
}

fn json_to_py<'py>(py: Python<'py>, json: &str) -> PyResult<Bound<'py, PyAny>> {
    py.import("json")?.call_method1("loads", (json,))
}

/// Validates a provider response against the questions; returns the answers dict (numbers
/// unchanged) or raises `jevgate.ValidationError` with `.code` and `.reason`.
#[pyfunction]
pub fn validate_response<'py>(
    py: Python<'py>,
    questions: &Bound<'py, PyAny>,
    response: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let q = json_bytes(questions, "questions")?;
    let r = json_bytes(response, "response")?;
    let answers = py
        .detach(|| jevgate::jev::validate_to_json(&q, &r))
        .py_err()?;
    json_to_py(py, &answers)
}

/// The JSON Schema (a dict) of a valid answers object for the questions.
#[pyfunction]
pub fn answer_schema<'py>(
    py: Python<'py>,
    questions: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let q = json_bytes(questions, "questions")?;
    let schema = jevgate::jev::answer_schema_json(&q).py_err()?;
    json_to_py(py, &schema)
}
