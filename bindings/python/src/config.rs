//! `jevgate.validate_config` and the dict-or-string configuration argument.

use crate::errors::IntoPy;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

/// A configuration given as a JSON string or a mapping, as JSON text.
pub fn config_text(config: &Bound<'_, PyAny>) -> PyResult<String> {
    if let Ok(s) = config.cast::<PyString>() {
        return s.extract::<String>();
    }
    if config.is_instance_of::<PyDict>() || config.hasattr("keys")? {
        let py = config.py();
        return crate::dumps(config).map_err(|e| {
            let reason = if e.is_instance_of::<PyTypeError>(py) {
                "the configuration holds a value that is not JSON"
            } else {
                "the configuration holds a number that is not finite"
            };
            crate::errors::to_py(jevgate_config_error(reason))
        });
    }
    Err(PyTypeError::new_err(
        "config must be a dict or a JSON string",
    ))
}

fn jevgate_config_error(reason: &str) -> jevgate::Error {
    jevgate::Error::InvalidConfiguration {
        path: String::new(),
        reason: reason.to_owned(),
    }
}

/// Validates a configuration (a dict or a JSON string). Raises `jevgate.ConfigError` with
/// `.code`, `.path` and `.http_status` on the first offending value.
#[pyfunction]
pub fn validate_config(py: Python<'_>, config: &Bound<'_, PyAny>) -> PyResult<()> {
    let text = config_text(config)?;
    py.detach(|| jevgate::Config::from_json_str(&text).map(|_| ()))
        .py_err()
}
