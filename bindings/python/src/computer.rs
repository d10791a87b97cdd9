//! `gateway.computer_target(...)`: one paired computer helper (`jevgate-computer`, issue 25)
//! driven for one conversation — observe, act, an operation's receipt and an access request,
//! with dicts in and out. Translation only: the rules live in `jevgate::device::computer`.
//! Never logs or echoes names, values or typed text.

use crate::device::to_py_json;
use crate::errors::IntoPy;
use crate::json_to_py;
use jevgate::device::computer::ComputerDevice;
use pyo3::prelude::*;
use std::sync::Arc;

#[pyclass(module = "jevgate", name = "Computer", frozen)]
pub struct PyComputer {
    pub device: Arc<ComputerDevice>,
}

#[pymethods]
impl PyComputer {
    /// The device driven.
    #[getter]
    fn device_id(&self) -> String {
        self.device.device_id().to_string()
    }

    /// Observes the front application: {"contractVersion", "application", "windowTitle",
    /// "controls": [...], "focused"?, "text": [...], "supportedActions", "capabilities",
    /// "omitted"} (a sensitive field never carries its value). Raises CONSENT_REQUIRED /
    /// APPLICATION_NOT_ALLOWED before the person approved, DEVICE_OFFLINE without a helper.
    fn observe<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let device = Arc::clone(&self.device);
        let json =
            crate::interrupt::interruptible(py, move || device.observe_json(), || {})?.py_err()?;
        json_to_py(py, &json)
    }

    /// Runs one action: `command` is {"operation_id", "kind": "press" | "set_text" | "focus" |
    /// "key", "ref"?, "text"?, "key"?}; returns the helper's result. An error means not executed
    /// (its code says why), except OUTCOME_UNKNOWN: it may have run — read operation_status,
    /// never send it again.
    fn act<'py>(
        &self,
        py: Python<'py>,
        command: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let command = crate::dumps_arg("command", command)?;
        let device = Arc::clone(&self.device);
        let json = crate::interrupt::interruptible(py, move || device.act_json(&command), || {})?
            .py_err()?;
        json_to_py(py, &json)
    }

    /// The helper's receipt of `operation_id` (no control lease taken): {"state": "not_found"}
    /// (never executed), {"state": "unreadable"}, or the receipt {"operation_id", "state":
    /// "started" | "completed" | "failed", "action"?, "code"?}.
    fn operation_status<'py>(
        &self,
        py: Python<'py>,
        operation_id: String,
    ) -> PyResult<Bound<'py, PyAny>> {
        let device = Arc::clone(&self.device);
        let json = crate::interrupt::interruptible(
            py,
            move || device.operation_status_json(&operation_id),
            || {},
        )?
        .py_err()?;
        json_to_py(py, &json)
    }

    /// Asks the person for access on the device and waits for the answer: {"state": "granted",
    /// "applications", "expiresAt"}. Raises COMPUTER_ACCESS_TIMEOUT after the helper's five
    /// minutes; Ctrl-C stops the wait (the request stays pending on the helper).
    fn request_access<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let device = Arc::clone(&self.device);
        let cancel = jevgate::CancelToken::new();
        let stop = cancel.clone();
        let answer = crate::interrupt::interruptible(
            py,
            move || device.request_access(&cancel),
            move || stop.cancel(),
        )?
        .py_err()?;
        to_py_json(py, serde_json::to_string(&answer))
    }

    fn __repr__(&self) -> String {
        format!("Computer(device_id={:?})", self.device.device_id())
    }
}
