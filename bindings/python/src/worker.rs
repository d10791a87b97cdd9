//! `jevgate.DeviceWorker`: the reference device worker in process — connects a
//! `jevgate.LocalBrowser` to a gateway's channel with a device token and serves the nine browser
//! tools from it (R-DEV-CHAN, R-DEV-TOOLS). A context manager; the GIL is released while it
//! connects and waits.

use crate::browser::PyLocalBrowser;
use crate::errors::IntoPy;
use jevgate::browser::BrowserTools;
use jevgate::device::{DeviceToken, DeviceWorker, WorkerExit, WorkerOptions};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyType};
use std::sync::Arc;
use std::time::Duration;

#[pyclass(module = "jevgate", name = "DeviceWorker", frozen)]
pub struct PyDeviceWorker {
    worker: DeviceWorker,
}

fn exit_dict<'py>(py: Python<'py>, exit: &WorkerExit) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("close_code", exit.close_code)?;
    d.set_item("reason", &exit.reason)?;
    Ok(d)
}

fn seconds(name: &str, value: f64) -> PyResult<Duration> {
    Duration::try_from_secs_f64(value)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| {
            pyo3::exceptions::PyValueError::new_err(format!(
                "{name} must be a positive number of seconds"
            ))
        })
}

#[pymethods]
impl PyDeviceWorker {
    #[new]
    #[pyo3(signature = (url, token, browser, *, tls_roots_pem = None, protocol = 2, connect_timeout = 10.0))]
    fn new(
        py: Python<'_>,
        url: String,
        token: String,
        browser: &PyLocalBrowser,
        tls_roots_pem: Option<Vec<u8>>,
        protocol: u64,
        connect_timeout: f64,
    ) -> PyResult<Self> {
        let mut options = WorkerOptions::new(url, DeviceToken::new(token));
        options.tls_roots_pem = tls_roots_pem;
        options.protocol = protocol;
        options.connect_timeout = seconds("connect_timeout", connect_timeout)?;
        let tools = Arc::new(BrowserTools::new(Arc::new(browser.browser.clone())));
        let worker = py
            .detach(|| DeviceWorker::connect(options, tools))
            .py_err()?;
        Ok(PyDeviceWorker { worker })
    }

    /// The device id the gateway answered `ready` with.
    #[getter]
    fn device_id(&self) -> String {
        self.worker.device_id().to_string()
    }

    /// The connection is open.
    #[getter]
    fn running(&self) -> bool {
        self.worker.is_running()
    }

    /// Commands answered so far.
    #[getter]
    fn commands_served(&self) -> u64 {
        self.worker.commands_served()
    }

    /// Waits for the connection to end (`timeout` seconds, or forever); returns
    /// {"close_code", "reason"}, or None if still running at the timeout.
    #[pyo3(signature = (timeout = None))]
    fn wait<'py>(
        &self,
        py: Python<'py>,
        timeout: Option<f64>,
    ) -> PyResult<Option<Bound<'py, PyDict>>> {
        let w = &self.worker;
        let exit = match timeout {
            None => Some(py.detach(|| w.wait())),
            Some(t) => {
                let t = seconds("timeout", t)?;
                py.detach(|| w.wait_timeout(t))
            }
        };
        exit.map(|e| exit_dict(py, &e)).transpose()
    }

    /// Closes the connection and joins the worker's threads. Idempotent.
    fn close(&self, py: Python<'_>) {
        let w = &self.worker;
        py.detach(|| w.close());
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
}
