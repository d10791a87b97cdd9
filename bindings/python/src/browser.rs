//! `jevgate.LocalBrowser`: a headless Chromium started by jevgate, as a context manager. Any
//! backend command runs through `execute({"tool": …, "args": {…}})`; the GIL is released while
//! the browser works, and Ctrl-C interrupts a wait (the command then ends in the background,
//! bounded by its own timeouts).

use crate::errors::IntoPy;
use crate::interrupt::interruptible;
use crate::json_to_py;
use jevgate::browser::{LaunchOptions, LocalBrowser};
use pyo3::prelude::*;
use pyo3::types::PyType;
use std::path::PathBuf;

#[pyclass(module = "jevgate", name = "LocalBrowser", frozen)]
pub struct PyLocalBrowser {
    pub(crate) browser: LocalBrowser,
}

impl PyLocalBrowser {
    /// Runs `f` on the browser without the GIL, interruptible by Ctrl-C.
    fn run<T: Send + 'static>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&LocalBrowser) -> jevgate::Result<T> + Send + 'static,
    ) -> PyResult<T> {
        let b = self.browser.clone();
        interruptible(py, move || f(&b), || {})?.py_err()
    }
}

#[pymethods]
impl PyLocalBrowser {
    #[new]
    #[pyo3(signature = (*, executable = None, profile_dir = None))]
    fn new(
        py: Python<'_>,
        executable: Option<PathBuf>,
        profile_dir: Option<PathBuf>,
    ) -> PyResult<Self> {
        let options = LaunchOptions {
            executable,
            profile_dir,
            ..LaunchOptions::default()
        };
        let browser = interruptible(py, move || LocalBrowser::launch(options), || {})?.py_err()?;
        Ok(PyLocalBrowser { browser })
    }

    /// Runs one backend command, e.g. {"tool": "page_click", "args": {"operationId": "op-1",
    /// "generation": 3, "ref": "e5"}}; returns its result dict.
    fn execute<'py>(
        &self,
        py: Python<'py>,
        command: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let text = crate::dumps_arg("command_json", command)?;
        let out = self.run(py, move |b| jevgate::browser::execute_json(b, &text))?;
        json_to_py(py, &out)
    }

    /// Opens `url` (http, https or about:blank) in the current tab and waits for it to settle.
    fn navigate<'py>(&self, py: Python<'py>, url: String) -> PyResult<Bound<'py, PyAny>> {
        let r = self.run(py, move |b| b.navigate(&url))?;
        crate::device::to_py_json(py, serde_json::to_string(&r))
    }

    /// The current observation (R-BRW-OBS).
    fn observe<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let out = self.run(py, |b| {
            jevgate::browser::execute_json(b, r#"{"tool":"observe","args":{}}"#)
        })?;
        json_to_py(py, &out)
    }

    /// The compact snapshot text with `[ref=eN]`, wrapped as untrusted page content.
    #[pyo3(signature = (region = None))]
    fn snapshot(&self, py: Python<'_>, region: Option<String>) -> PyResult<String> {
        let command =
            serde_json::json!({"tool": "snapshot", "args": {"region": region}}).to_string();
        let out = self.run(py, move |b| jevgate::browser::execute_json(b, &command))?;
        let v: serde_json::Value = serde_json::from_str(&out)
            .map_err(|_| crate::errors::internal("a snapshot result that is not JSON"))?;
        Ok(v["text"].as_str().unwrap_or_default().to_string())
    }

    /// Ends Chromium and every process it started. Idempotent.
    fn close(&self, py: Python<'_>) {
        let b = &self.browser;
        py.detach(|| b.close());
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
