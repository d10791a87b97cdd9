//! jevgate::Error → the exception classes of `jevgate._errors`, with code, status, path,
//! retry-after, retryable, worker code and (for `BROWSER_CONTEXT_BUSY`) `isolated_available`
//! attached; a bad argument found by the binding itself is the core's
//! [`Error::InvalidArgument`] too ([`invalid_argument`]), so Python reports `INVALID_ARGUMENT`
//! as C does, and a broken invariant inside the binding is [`Error::Internal`] ([`internal`]).
//! `error_table()` hands Python the core's error table (R-ERR-1, R-ERR-3).

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
        ErrorFamily::Task => "TaskError",
        _ => "Error",
    };
    let kwargs = PyDict::new(py);
    kwargs.set_item("code", err.code())?;
    kwargs.set_item("http_status", err.http_status())?;
    kwargs.set_item("retry_after", err.retry_after().map(|d| d.as_secs_f64()))?;
    kwargs.set_item("retryable", err.retryable())?;
    kwargs.set_item("worker_code", err.worker_code())?;
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

/// A wrong argument caught by the binding (a value Python accepted but jevgate does not):
/// `jevgate.ArgumentError` (a `ValueError`) with code `INVALID_ARGUMENT`, as from C.
pub fn invalid_argument(name: &'static str, reason: impl Into<String>) -> PyErr {
    to_py(Error::InvalidArgument {
        name,
        reason: reason.into(),
    })
}

/// A broken invariant inside the binding (a core result that would not encode, a call's
/// thread that could not start or ended without an answer): the core's `INTERNAL`
/// (`jevgate.Error` with code `INTERNAL`, 500), as C reports it.
pub fn internal(reason: impl Into<String>) -> PyErr {
    to_py(Error::Internal {
        reason: reason.into(),
    })
}

/// JSON argument `name` that is not the `expected` shape: `INVALID_ARGUMENT` with the core's
/// one serde classification ([`Error::invalid_json`]), the words C uses.
pub fn invalid_json(name: &'static str, expected: &str, e: &serde_json::Error) -> PyErr {
    to_py(Error::invalid_json(name, expected, e))
}

/// `jevgate._jevgate.error_table()`: one dict per row of `jevgate::ERROR_TABLE`, in order:
/// `{"code", "http_status", "family", "retryable", "worker_code"}`.
#[pyfunction]
pub fn error_table(py: Python<'_>) -> PyResult<Vec<Bound<'_, PyDict>>> {
    jevgate::ERROR_TABLE
        .iter()
        .map(|row| {
            let d = PyDict::new(py);
            d.set_item("code", row.code)?;
            d.set_item("http_status", row.http_status)?;
            d.set_item("family", row.family.as_str())?;
            d.set_item("retryable", row.retryable)?;
            d.set_item("worker_code", row.worker_code)?;
            Ok(d)
        })
        .collect()
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
