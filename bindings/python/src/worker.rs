//! `jevgate.DeviceWorker`: the reference device worker in process — connects to a gateway's
//! channel with a device token and serves the nine browser tools from a `jevgate.LocalBrowser`,
//! or every command with a Python callable (R-DEV-CHAN, R-DEV-TOOLS). A context manager; the GIL
//! is released while it connects, waits and closes.

use crate::browser::PyLocalBrowser;
use crate::errors::IntoPy;
use jevgate::browser::BrowserTools;
use jevgate::device::{
    DeviceToken, DeviceWorker, ToolExecutor, WorkerExit, WorkerFailure, WorkerOptions,
};
use jevgate::CancelToken;
use parking_lot::Mutex;
use pyo3::gc::{PyTraverseError, PyVisit};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyType};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// A Python callable serving commands: `executor(tool, args) -> result`. Called with the GIL
/// taken on the worker's executor thread, one command at a time. An exception with a string
/// `code` attribute (`jevgate.ToolError`) fails the command with that code and its `message`;
/// any other exception fails it with `execution_failed` (its text is not kept).
struct PyExecutor {
    /// Shared with the `DeviceWorker` object, which reports it to Python's garbage collector
    /// (so a worker referenced from its own executor is collected); None once cleared.
    callable: Arc<Mutex<Option<Py<PyAny>>>>,
}

impl ToolExecutor for PyExecutor {
    fn execute(
        &self,
        tool: &str,
        args: &Value,
        _deadline: Duration,
        _cancel: &CancelToken,
    ) -> Result<Value, WorkerFailure> {
        Python::attach(|py| {
            let fail = |what: &str| WorkerFailure::new("execution_failed", what);
            let args = crate::json_to_py(py, &args.to_string())
                .map_err(|_| fail("the worker could not read the arguments"))?;
            let Some(callable) = self.callable.lock().as_ref().map(|c| c.clone_ref(py)) else {
                return Err(fail("the executor is gone"));
            };
            match callable.bind(py).call1((tool, args)) {
                Ok(out) => {
                    let text = crate::dumps(&out)
                        .map_err(|_| fail("the executor returned something that is not JSON"))?;
                    serde_json::from_str(&text)
                        .map_err(|_| fail("the executor returned something that is not JSON"))
                }
                Err(e) => {
                    let value = e.value(py);
                    let code = value
                        .getattr("code")
                        .ok()
                        .and_then(|c| c.extract::<String>().ok());
                    match code {
                        Some(code) => {
                            let message = value
                                .getattr("message")
                                .ok()
                                .and_then(|m| m.extract::<String>().ok())
                                .unwrap_or_default();
                            Err(WorkerFailure::from_worker(&code, &message))
                        }
                        None => Err(fail("the executor raised an exception")),
                    }
                }
            }
        })
    }
}

#[pyclass(module = "jevgate", name = "DeviceWorker", frozen)]
pub struct PyDeviceWorker {
    worker: DeviceWorker,
    /// The executor callable, when one serves the commands (see [`PyExecutor`]).
    executor: Arc<Mutex<Option<Py<PyAny>>>>,
}

fn exit_dict<'py>(py: Python<'py>, exit: &WorkerExit) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("close_code", exit.close_code)?;
    d.set_item("reason", &exit.reason)?;
    Ok(d)
}

/// A host-supplied number of seconds as a duration (the conversion's failure reported as the
/// core's `INVALID_ARGUMENT`, `ArgumentError`); `positive` refuses zero too. The positive
/// connect timeout is the core's own check (`DeviceWorker::connect`); a zero `wait` timeout is
/// a Python-only refusal (C's 0 means "forever").
fn seconds(name: &'static str, value: f64, positive: bool) -> PyResult<Duration> {
    Duration::try_from_secs_f64(value)
        .ok()
        .filter(|d| !(positive && d.is_zero()))
        .ok_or(jevgate::Error::InvalidArgument {
            name,
            reason: "must be a positive number of seconds".into(),
        })
        .py_err()
}

impl Drop for PyDeviceWorker {
    fn drop(&mut self) {
        // A Python executor may be waiting for the GIL on the worker's thread: close without it.
        let worker = &self.worker;
        Python::attach(|py| py.detach(|| worker.close()));
    }
}

#[pymethods]
impl PyDeviceWorker {
    #[new]
    #[allow(clippy::too_many_arguments)] // reason: the Python signature is keyword arguments
    #[pyo3(signature = (url, token, browser = None, *, executor = None, tls_roots_pem = None, protocol = 2, connect_timeout = 10.0))]
    fn new(
        py: Python<'_>,
        url: String,
        token: String,
        browser: Option<PyRef<'_, PyLocalBrowser>>,
        executor: Option<Py<PyAny>>,
        tls_roots_pem: Option<Vec<u8>>,
        protocol: u64,
        connect_timeout: f64,
    ) -> PyResult<Self> {
        let mut options = WorkerOptions::new(url, DeviceToken::new(token));
        options.tls_roots_pem = tls_roots_pem;
        options.protocol = protocol;
        options.connect_timeout = seconds("connect_timeout", connect_timeout, false)?;
        let cell = Arc::new(Mutex::new(None));
        let tools: Arc<dyn ToolExecutor> = match (browser, executor) {
            (Some(b), None) => Arc::new(BrowserTools::new(Arc::new(b.browser.clone()))),
            (None, Some(callable)) => {
                if !callable.bind(py).is_callable() {
                    return Err(pyo3::exceptions::PyTypeError::new_err(
                        "executor must be callable as executor(tool, args)",
                    ));
                }
                *cell.lock() = Some(callable);
                Arc::new(PyExecutor {
                    callable: Arc::clone(&cell),
                })
            }
            _ => {
                return Err(crate::errors::invalid_argument(
                    "executor",
                    "give exactly one of browser= (a LocalBrowser) or executor= (a callable)",
                ))
            }
        };
        // Ctrl-C stops the wait; a connection made after it is closed when dropped
        let worker = crate::interrupt::interruptible(
            py,
            move || DeviceWorker::connect(options, tools),
            || {},
        )?
        .py_err()?;
        Ok(PyDeviceWorker {
            worker,
            executor: cell,
        })
    }

    /// Python's cycle collector: the executor is the one Python object a worker holds.
    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        if let Some(cell) = self.executor.try_lock() {
            if let Some(cb) = cell.as_ref() {
                visit.call(cb)?;
            }
        }
        Ok(())
    }

    /// Breaks a worker → executor → worker cycle (commands then fail with execution_failed).
    fn __clear__(&self) {
        let old = self.executor.lock().take();
        drop(old);
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
        let total = timeout.map(|t| seconds("timeout", t, true)).transpose()?;
        // in slices, so that Ctrl-C is seen while waiting
        let exit = crate::interrupt::wait_in_slices(py, total, |slice| w.wait_timeout(slice))?;
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
