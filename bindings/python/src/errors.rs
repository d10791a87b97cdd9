//! jevgate::Error → the exception classes of `jevgate._errors`, with code, status, path,
//! retry-after and (for `BROWSER_CONTEXT_BUSY`) `isolated_available` attached.

use jevgate::{Error, ErrorFamily};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// Converts a jevgate error into the matching `jevgate` exception.
pub fn to_py(err: Error) -> PyErr {
    Python::attach(|py| match build(py, &err) {
        Ok(e) => e,
        Err(e) => e,
    })
}

fn build(py: Python<'_>, err: &Error) -> PyResult<PyErr> {
    let module = py.import("jevgate._errors")?;
    let class = match err.family() {
        ErrorFamily::Config => "ConfigError",
        ErrorFamily::Store => "StoreError",
        ErrorFamily::Argument => "ArgumentError",
        ErrorFamily::Gateway => "GatewayError",
        ErrorFamily::Lease => "LeaseError",
        ErrorFamily::Device => "DeviceError",
        ErrorFamily::Browser => "BrowserError",
        ErrorFamily::Grammar => "GrammarError",
        ErrorFamily::Jev if err.validation_reason().is_some() => "ValidationError",
        ErrorFamily::Jev => "JevError",
        ErrorFamily::Access => "AccessDeniedError",
        _ => "Error",
    };
    let kwargs = PyDict::new(py);
    kwargs.set_item("code", err.code())?;
    kwargs.set_item("http_status", err.http_status())?;
    kwargs.set_item("retry_after", err.retry_after().map(|d| d.as_secs_f64()))?;
    if matches!(err.family(), ErrorFamily::Config | ErrorFamily::Jev) {
        kwargs.set_item("path", err.path())?;
    }
    if let Some(reason) = err.validation_reason() {
        kwargs.set_item("reason", reason)?;
    }
    if let Some(isolated) = err.isolated_available() {
        kwargs.set_item("isolated_available", isolated)?;
    }
    let instance = module
        .getattr(class)?
        .call((err.to_string(),), Some(&kwargs))?;
    Ok(PyErr::from_value(instance))
}

/// `Result<T, jevgate::Error>` → `PyResult<T>`.
pub trait IntoPy<T> {
    fn py_err(self) -> PyResult<T>;
}

impl<T> IntoPy<T> for Result<T, Error> {
    fn py_err(self) -> PyResult<T> {
        self.map_err(to_py)
    }
}
