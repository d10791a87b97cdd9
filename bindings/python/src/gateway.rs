//! `jevgate.Gateway`: a context manager around the Rust gateway; blocking calls release the GIL.

use crate::clock::PyManualClock;
use crate::config::config_text;
use crate::errors::IntoPy;
use crate::lease::PyLeases;
use jevgate::clock::SharedClock;
use pyo3::prelude::*;
use pyo3::types::PyType;
use std::path::PathBuf;
use std::sync::Arc;

#[pyclass(module = "jevgate", name = "Gateway", frozen)]
pub struct PyGateway {
    inner: jevgate::Gateway,
}

/// JSON text → Python object (dict/list), through the standard `json` module.
fn json_to_py<'py>(py: Python<'py>, json: &str) -> PyResult<Bound<'py, PyAny>> {
    py.import("json")?.call_method1("loads", (json,))
}

#[pymethods]
impl PyGateway {
    #[new]
    #[pyo3(signature = (data_dir, config = None, *, clock = None))]
    fn new(
        py: Python<'_>,
        data_dir: PathBuf,
        config: Option<&Bound<'_, PyAny>>,
        clock: Option<&Bound<'_, PyManualClock>>,
    ) -> PyResult<Self> {
        let text = match config {
            Some(c) => config_text(c)?,
            None => "{}".to_owned(),
        };
        let clock: Option<SharedClock> =
            clock.map(|c| Arc::new(c.get().clock.clone()) as SharedClock);
        let inner = py
            .detach(|| {
                let config = jevgate::Config::from_json_str(&text)?;
                let mut options = jevgate::GatewayOptions::new(data_dir, config);
                options.clock = clock;
                jevgate::Gateway::open(options)
            })
            .py_err()?;
        Ok(PyGateway { inner })
    }

    /// Device control leases.
    #[getter]
    fn leases(&self) -> PyLeases {
        PyLeases {
            gateway: self.inner.clone(),
        }
    }

    #[getter]
    fn generation(&self) -> u64 {
        self.inner.generation()
    }

    #[getter]
    fn closed(&self) -> bool {
        self.inner.is_closed()
    }

    fn reload(&self, py: Python<'_>, config: &Bound<'_, PyAny>) -> PyResult<u64> {
        let text = config_text(config)?;
        let gw = &self.inner;
        py.detach(|| gw.reload_json(&text)).py_err()
    }

    fn doctor<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let gw = &self.inner;
        let report = py.detach(|| gw.doctor()).py_err()?;
        json_to_py(py, &report.to_json())
    }

    fn secret_env_names(&self) -> Vec<String> {
        self.inner.secret_env_names()
    }

    fn close(&self, py: Python<'_>) {
        let gw = &self.inner;
        py.detach(|| gw.close());
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (_exc_type = None, _exc = None, _tb = None))]
    fn __exit__(
        &self,
        py: Python<'_>,
        _exc_type: Option<&Bound<'_, PyType>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) {
        self.close(py);
    }

    fn __repr__(&self) -> String {
        format!(
            "<jevgate.Gateway generation={}{}>",
            self.inner.generation(),
            if self.inner.is_closed() {
                " closed"
            } else {
                ""
            }
        )
    }
}
