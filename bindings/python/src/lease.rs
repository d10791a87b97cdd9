//! `gateway.leases`: device control leases (R-LEASE) with dicts out.

use crate::device::to_py_json;
use crate::errors::IntoPy;
use jevgate::lease::{BrowserCall, BrowserCallGuard, ControlCaller, Credential, SessionMode};
use parking_lot::Mutex;
use pyo3::prelude::*;
use std::sync::Arc;

#[pyclass(module = "jevgate", name = "Leases", frozen)]
pub struct PyLeases {
    pub gateway: jevgate::Gateway,
}

fn caller(principal: String, delegated: bool, root_session: Option<String>) -> ControlCaller {
    ControlCaller {
        principal,
        credential: if delegated {
            Credential::Delegated
        } else {
            Credential::Owner
        },
        root_session,
    }
}

type GrantCall =
    fn(&jevgate::lease::Leases, &str, &str) -> jevgate::Result<jevgate::lease::LeaseGrant>;

impl PyLeases {
    fn grant<'py>(
        &self,
        py: Python<'py>,
        device: &str,
        session: &str,
        call: GrantCall,
    ) -> PyResult<Bound<'py, PyAny>> {
        let gw = &self.gateway;
        let g = py.detach(|| call(gw.leases(), device, session)).py_err()?;
        to_py_json(py, serde_json::to_string(&g))
    }
}

#[pymethods]
impl PyLeases {
    /// A browser call: acquire a free lease or renew your own. Returns
    /// {"acquired": bool, "expiresAt": unix_ms, "fencingToken": int} (the token is the same for
    /// every renewal of one tenure, strictly greater for every later one). Raises LeaseError
    /// DEVICE_CONTROL_ELSEWHERE, or
    /// DEVICE_CONTROL_REVOKED exactly once after the owner took the device back.
    fn acquire<'py>(
        &self,
        py: Python<'py>,
        device_id: String,
        root_session: String,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.grant(
            py,
            &device_id,
            &root_session,
            jevgate::lease::Leases::acquire,
        )
    }

    /// Renew only (LeaseError DEVICE_CONTROL_NOT_HELD when the session holds nothing).
    fn renew<'py>(
        &self,
        py: Python<'py>,
        device_id: String,
        root_session: String,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.grant(py, &device_id, &root_session, jevgate::lease::Leases::renew)
    }

    /// The owner takes the device back; returns whether a holder was dispossessed.
    /// AccessDeniedError for anyone else, a delegated credential, or a device with no owner.
    #[pyo3(signature = (device_id, principal, *, delegated = false))]
    fn take_back(
        &self,
        py: Python<'_>,
        device_id: String,
        principal: String,
        delegated: bool,
    ) -> PyResult<bool> {
        let gw = &self.gateway;
        py.detach(|| {
            gw.leases()
                .take_back(&device_id, &caller(principal, delegated, None))
        })
        .py_err()
    }

    /// {"held", "heldByRootSession", "expiresAt", "revoked"} for the device's owner.
    #[pyo3(signature = (device_id, principal, *, root_session = None, delegated = false))]
    fn status<'py>(
        &self,
        py: Python<'py>,
        device_id: String,
        principal: String,
        root_session: Option<String>,
        delegated: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        let gw = &self.gateway;
        let s = py
            .detach(|| {
                gw.leases()
                    .status(&device_id, &caller(principal, delegated, root_session))
            })
            .py_err()?;
        to_py_json(py, serde_json::to_string(&s))
    }

    /// Session end / Chat Stop: releases the session's leases without cancelling; returns the
    /// number of devices released.
    fn release_session(&self, py: Python<'_>, root_session: String) -> PyResult<usize> {
        let gw = &self.gateway;
        py.detach(|| gw.leases().release_session(&root_session))
            .py_err()
    }

    /// Records the device's owner (control routes then accept only that principal). Stored, so
    /// it survives a restart; a device with no recorded owner accepts nobody.
    fn set_device_owner(&self, device_id: String, owner: String) -> PyResult<()> {
        self.gateway
            .leases()
            .set_device_owner(&device_id, &owner)
            .py_err()
    }

    /// Starts a browser tool call's session lease (R-PROF-2..4); use as a context manager.
    /// Raises LeaseError BROWSER_CONTEXT_BUSY / BROWSER_AUTHENTICATED_UNAVAILABLE.
    #[pyo3(signature = (thread_id, organization, *, mode = None, profile_key = None, authenticated_allowed = true))]
    fn browser_call(
        &self,
        py: Python<'_>,
        thread_id: String,
        organization: String,
        mode: Option<String>,
        profile_key: Option<String>,
        authenticated_allowed: bool,
    ) -> PyResult<PyBrowserCall> {
        let mode = mode
            .as_deref()
            .map(str::parse::<SessionMode>)
            .transpose()
            .py_err()?;
        let call = BrowserCall {
            thread_id,
            organization,
            mode,
            profile_key,
            authenticated_allowed,
        };
        let gw = &self.gateway;
        let guard = py
            .detach(|| gw.leases().begin_browser_call(&call))
            .py_err()?;
        Ok(PyBrowserCall {
            gateway: gw.clone(),
            session_id: guard.session_id.clone(),
            mode: guard.mode.as_str(),
            created: guard.created,
            guard: Arc::new(Mutex::new(Some(guard))),
        })
    }

    /// Reaps idle browser sessions now (the gateway also does so every second); returns how
    /// many were closed.
    fn reap(&self, py: Python<'_>) -> usize {
        let gw = &self.gateway;
        py.detach(|| gw.leases().reap())
    }
}

/// A browser call's session lease; `end()` (or leaving the `with` block) ends the call.
#[pyclass(module = "jevgate", name = "BrowserCall", frozen)]
pub struct PyBrowserCall {
    gateway: jevgate::Gateway,
    #[pyo3(get)]
    session_id: String,
    #[pyo3(get)]
    mode: &'static str,
    #[pyo3(get)]
    created: bool,
    guard: Arc<Mutex<Option<BrowserCallGuard>>>,
}

#[pymethods]
impl PyBrowserCall {
    /// Runs one backend command ({"tool": ..., "args": {...}}, as `LocalBrowser.execute`) in
    /// this session's local browser, started on the session's first use. Needs
    /// `gw.enable_local_browsers()` (BrowserError BROWSER_UNAVAILABLE otherwise).
    fn execute<'py>(
        &self,
        py: Python<'py>,
        command: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let text = crate::dumps_arg("command_json", command)?;
        let (gw, guard) = (self.gateway.clone(), Arc::clone(&self.guard));
        // The lock is taken and held without the GIL, so `end()` on another thread cannot
        // deadlock against it; Ctrl-C stops the wait (the command ends in the background).
        let work = move || {
            let call = guard.lock();
            let Some(call) = call.as_ref() else {
                return Ok(None);
            };
            let browser = gw.session_browser(call)?;
            jevgate::browser::execute_json(&browser, &text).map(Some)
        };
        let out = crate::interrupt::interruptible(py, work, || {})?.py_err()?;
        let Some(out) = out else {
            // the code and argument jevgate_browser_call_execute gives for an ended call
            // (src/ffi/browser.rs)
            return Err(crate::errors::invalid_argument("call", "has already ended"));
        };
        crate::json_to_py(py, &out)
    }

    /// Ends the call (idempotent); the thread's session stays live until idle. Waits (without
    /// the GIL) for an `execute` running on another thread.
    fn end(&self, py: Python<'_>) {
        let guard = &self.guard;
        py.detach(|| drop(guard.lock().take()));
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (_exc_type = None, _exc = None, _tb = None))]
    fn __exit__(
        &self,
        py: Python<'_>,
        _exc_type: Option<&Bound<'_, PyAny>>,
        _exc: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) {
        self.end(py);
    }
}
