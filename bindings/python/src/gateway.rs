//! `jevgate.Gateway`: a context manager around the Rust gateway; blocking calls release the GIL.

use crate::callable::CallableCell;
use crate::clock::PyManualClock;
use crate::config::config_text;
use crate::errors::IntoPy;
use crate::json_to_py;
use crate::lease::PyLeases;
use jevgate::clock::SharedClock;
use parking_lot::Mutex;
use pyo3::gc::{PyTraverseError, PyVisit};
use pyo3::prelude::*;
use pyo3::types::PyType;
use std::path::PathBuf;
use std::sync::Arc;

#[pyclass(module = "jevgate", name = "Gateway", frozen)]
pub struct PyGateway {
    inner: jevgate::Gateway,
    callback: CallableCell,
}

impl Drop for PyGateway {
    fn drop(&mut self) {
        // Closing joins the gateway's task threads, and one of them may be waiting for the GIL
        // to call a Python callable (`on_outcome`, the Jev callback): a gateway collected
        // without `close()` closes here with the GIL released, as `close()` does.
        let gw = &self.inner;
        if !gw.is_closed() {
            Python::attach(|py| py.detach(|| gw.close()));
        }
    }
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
        Ok(PyGateway {
            inner,
            callback: Arc::new(Mutex::new(None)),
        })
    }

    /// Device control leases.
    #[getter]
    fn leases(&self) -> PyLeases {
        PyLeases {
            gateway: self.inner.clone(),
        }
    }

    /// The agent tools' definitions (`capabilities_list`, the task tools, `jev_evaluate`) in
    /// `format` "mcp" or "openai" (function calling): a list of dicts.
    #[pyo3(signature = (format = "mcp"))]
    fn agent_tool_definitions<'py>(
        &self,
        py: Python<'py>,
        format: &str,
    ) -> PyResult<Bound<'py, PyAny>> {
        crate::task::agent_tool_definitions(py, format)
    }

    /// The tools `call_agent_tool` runs on this gateway in `format`: the agent tools, and
    /// "browser_autopilot" (on the principal's paired browser) when Jev is configured.
    #[pyo3(signature = (format = "mcp"))]
    fn agent_tools<'py>(&self, py: Python<'py>, format: &str) -> PyResult<Bound<'py, PyAny>> {
        let f: jevgate::device::ToolFormat = format.parse().py_err()?;
        json_to_py(py, &self.inner.agent_tools(f).to_string())
    }

    /// The device tools `call_tool` serves on this gateway in `format`: the nine, and
    /// "browser_autopilot" tenth when Jev is configured (R-AUTO).
    #[pyo3(signature = (format = "mcp"))]
    fn tool_definitions<'py>(&self, py: Python<'py>, format: &str) -> PyResult<Bound<'py, PyAny>> {
        let f: jevgate::device::ToolFormat = format.parse().py_err()?;
        json_to_py(py, &self.inner.device_tool_definitions(f).to_string())
    }

    /// Runs the agent tool `name` for `owner` ({"agentId", "principalId", "conversationId"})
    /// with `args` (a dict, the JSON text of an LLM's function call, or None) and returns its
    /// result dict: one line wires a model's tool calls to jevgate. Commands and answers are
    /// recorded with origin "agent"; page-derived text comes back only under
    /// "untrustedContent". Ctrl-C interrupts a blocked `task_wait` (the task goes on).
    #[pyo3(signature = (owner, name, args = None))]
    fn call_agent_tool<'py>(
        &self,
        py: Python<'py>,
        owner: &Bound<'py, PyAny>,
        name: String,
        args: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        crate::task::call_agent_tool(py, &self.inner, owner, name, args)
    }

    /// Browser tasks (spawn, status, wait, command, cancel, list, receipts).
    #[getter]
    fn tasks(&self) -> crate::task::PyTasks {
        crate::task::PyTasks {
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

    /// Pairs a device for `owner`: returns {"device": {...}, "token": "..."} (the token is shown
    /// once; store it in the worker).
    fn pair<'py>(
        &self,
        py: Python<'py>,
        owner: String,
        request: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        crate::device::pair(py, &self.inner, owner, request)
    }

    /// Pairs a computer helper (jevgate-computer) for `owner`: a device of capability
    /// "computer". `request` is {"installationId", "name"}; returns {"device": {...}, "token":
    /// "..."} (the token is shown once). Pairing alone authorizes nothing: the person approves
    /// applications and an access duration in the helper.
    fn pair_computer<'py>(
        &self,
        py: Python<'py>,
        owner: String,
        request: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let req = jevgate::device::PairRequest::from_json(&crate::dumps_arg("request", request)?)
            .py_err()?;
        let gw = &self.inner;
        let pairing = py.detach(|| gw.pair_computer(&owner, &req)).py_err()?;
        crate::device::to_py_json(py, serde_json::to_string(&pairing))
    }

    /// `owner`'s paired computer `device_id` driven for the conversation `root_session`: observe,
    /// act, operation_status and request_access over the device channel, under the device's
    /// control lease. Nothing is sent until a method is called (an unknown device raises
    /// DEVICE_NOT_PAIRED then).
    fn computer_target(
        &self,
        owner: String,
        root_session: String,
        device_id: String,
    ) -> PyResult<crate::computer::PyComputer> {
        let device = self
            .inner
            .computer_target(&owner, &root_session, &device_id)
            .py_err()?;
        Ok(crate::computer::PyComputer {
            device: Arc::new(device),
        })
    }

    /// A one-time pairing code for `owner`, valid `ttl` seconds (more than 0, at most 600):
    /// {"code": "ABCD-EFGH", "expiresAt": <unix ms>}. The person types it into the browser
    /// extension, which redeems it once at POST /devices/pair on the channel listener.
    #[pyo3(signature = (owner, *, ttl = 300.0))]
    fn pairing_code<'py>(
        &self,
        py: Python<'py>,
        owner: String,
        ttl: f64,
    ) -> PyResult<Bound<'py, PyAny>> {
        // A NaN, negative or unrepresentable ttl is the core's own refusal of a bad ttl.
        let ttl = std::time::Duration::try_from_secs_f64(ttl).unwrap_or(std::time::Duration::ZERO);
        let gw = &self.inner;
        let code = py.detach(|| gw.pairing_code(&owner, ttl)).py_err()?;
        crate::device::to_py_json(py, serde_json::to_string(&code))
    }

    /// Unpairs a device (its token stops working; an open connection is closed).
    fn unpair(&self, py: Python<'_>, owner: String, device_id: String) -> PyResult<()> {
        let gw = &self.inner;
        py.detach(|| gw.unpair(&owner, &device_id)).py_err()
    }

    /// The owner's devices with labels and online state.
    fn devices<'py>(&self, py: Python<'py>, owner: String) -> PyResult<Bound<'py, PyAny>> {
        crate::device::devices(py, &self.inner, owner)
    }

    /// Starts the device-worker WebSocket channel on `addr` ("127.0.0.1:0" picks a port).
    /// Limits (None keeps the default): `max_connections` devices (10,000; one more is refused
    /// with 1013 CONNECTION_LIMIT), `max_unauthenticated` sockets not yet authenticated (256)
    /// and `max_unauthenticated_per_address` (16), `io_threads` (0: a thread per core, at most
    /// 4).
    #[pyo3(signature = (
        addr = "127.0.0.1:0".to_string(),
        *,
        tls_cert_pem = None,
        tls_key_pem = None,
        max_connections = None,
        max_unauthenticated = None,
        max_unauthenticated_per_address = None,
        io_threads = None
    ))]
    #[allow(clippy::too_many_arguments)] // reason: mirrors the Python keyword signature
    fn serve_channel(
        &self,
        py: Python<'_>,
        addr: String,
        tls_cert_pem: Option<Vec<u8>>,
        tls_key_pem: Option<Vec<u8>>,
        max_connections: Option<u64>,
        max_unauthenticated: Option<u64>,
        max_unauthenticated_per_address: Option<u64>,
        io_threads: Option<u64>,
    ) -> PyResult<crate::device::PyChannelHandle> {
        let limits = crate::device::ChannelLimits {
            max_connections,
            max_unauthenticated,
            max_unauthenticated_per_address,
            io_threads,
        };
        crate::device::serve_channel(py, &self.inner, addr, tls_cert_pem, tls_key_pem, limits)
    }

    /// Runs one browser tool for a root session: {"success": True, "result": ...} or
    /// {"success": False, "errorCode": ..., "message": ...}. `agent_id`: whose Jev
    /// evaluations "browser_autopilot" makes; `on_progress`: called with each of its step
    /// lines ("Autopilot: <goal> — <step>") as they happen.
    #[pyo3(signature = (owner, root_session, tool, args = None, *, device_id = None, inline_images = false, agent_id = None, on_progress = None))]
    #[allow(clippy::too_many_arguments)] // reason: mirrors the Python keyword signature
    fn call_tool<'py>(
        &self,
        py: Python<'py>,
        owner: String,
        root_session: String,
        tool: String,
        args: Option<&Bound<'py, PyAny>>,
        device_id: Option<String>,
        inline_images: bool,
        agent_id: Option<String>,
        on_progress: Option<Py<PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        crate::device::call_tool(
            py,
            &self.inner,
            owner,
            root_session,
            tool,
            args,
            device_id,
            inline_images,
            agent_id,
            on_progress,
        )
    }

    /// Serves browser sessions (`gw.leases.browser_call(...)`) with local headless Chromiums
    /// started on each session's first use and closed with the session (R-PROF-2..4).
    #[pyo3(signature = (*, executable = None))]
    fn enable_local_browsers(&self, py: Python<'_>, executable: Option<PathBuf>) -> PyResult<()> {
        let options = jevgate::browser::LaunchOptions {
            executable,
            ..jevgate::browser::LaunchOptions::default()
        };
        let gw = &self.inner;
        py.detach(|| gw.enable_local_browsers(options)).py_err()
    }

    /// Runs one managed browser tool (issue 15: "browser_snapshot", "browser_click", …) with
    /// `args` (a dict or JSON text) for `thread_id` of `organization` on that thread's local
    /// browser session, started on first use (`enable_local_browsers` first). Returns the
    /// result dict; page-derived text is inside the untrusted envelope. `data_handling="strict"`
    /// stores no screenshot artifact. The GIL is released while it runs.
    #[pyo3(signature = (thread_id, organization, name, args = None, *, profile_key = None, authenticated_allowed = true, data_handling = "standard"))]
    #[allow(clippy::too_many_arguments)]
    fn browser_tool<'py>(
        &self,
        py: Python<'py>,
        thread_id: String,
        organization: String,
        name: String,
        args: Option<&Bound<'py, PyAny>>,
        profile_key: Option<String>,
        authenticated_allowed: bool,
        data_handling: &str,
    ) -> PyResult<Bound<'py, PyAny>> {
        crate::device::browser_tool(
            py,
            &self.inner,
            thread_id,
            organization,
            name,
            args,
            profile_key,
            authenticated_allowed,
            data_handling,
        )
    }

    /// Sets which optional managed tools this gateway serves (`tabs`: browser_tabs; `files`:
    /// the file tools; `vision`: reserved). Default: none.
    #[pyo3(signature = (*, tabs = false, files = false, vision = false))]
    fn set_managed_caps(&self, tabs: bool, files: bool, vision: bool) -> PyResult<()> {
        self.inner
            .set_managed_caps(jevgate::browser::managed::ManagedCaps {
                tabs,
                files,
                vision,
            })
            .py_err()
    }

    /// Names the workspace directory the file tools (browser_file_upload,
    /// browser_download_files) are confined to; None removes it (the file tools are then
    /// refused with ACCESS_DENIED even with `files`). ArgumentError when it is not an existing
    /// directory.
    fn set_managed_workspace(&self, path: Option<PathBuf>) -> PyResult<()> {
        self.inner.set_managed_workspace(path).py_err()
    }

    /// Begins a new turn of `thread_id` for browser_console_messages and
    /// browser_network_requests: what its current tab logged and requested so far is no longer
    /// returned. No-op when the thread has no browser session.
    fn begin_browser_turn(&self, py: Python<'_>, thread_id: String) -> PyResult<()> {
        let gw = &self.inner;
        py.detach(|| gw.begin_browser_turn(&thread_id)).py_err()
    }

    /// A stored screenshot of `root_session`: (media_type, bytes).
    fn artifact<'py>(
        &self,
        py: Python<'py>,
        root_session: String,
        artifact_id: String,
    ) -> PyResult<(String, Bound<'py, pyo3::types::PyBytes>)> {
        crate::device::artifact(py, &self.inner, root_session, artifact_id)
    }

    /// Deletes every stored screenshot of `root_session` (call it when that conversation ends);
    /// returns how many were deleted. Other sessions' artifacts are untouched.
    fn delete_artifacts(&self, py: Python<'_>, root_session: String) -> PyResult<usize> {
        crate::device::delete_artifacts(py, &self.inner, root_session)
    }

    /// Deletes the screenshots older than the artifact retention (24 h) by the gateway's clock;
    /// returns how many. The gateway also does this about once a minute on its own.
    fn purge_artifacts(&self, py: Python<'_>) -> PyResult<usize> {
        crate::device::purge_artifacts(py, &self.inner)
    }

    /// Runs one Jev evaluation: `call` is {"agentId", "sessionId"?, "taskId"?, "requestId"?,
    /// "state", "questions"} (dict or JSON). Returns the evaluation dict. The GIL is released
    /// while waiting.
    #[pyo3(signature = (call, *, cancel = None))]
    fn evaluate<'py>(
        &self,
        py: Python<'py>,
        call: &Bound<'py, PyAny>,
        cancel: Option<&Bound<'py, crate::jev::PyCancelToken>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        crate::jev::evaluate(py, &self.inner, call, cancel)
    }

    /// Usage records of an agent, newest first: {"records": [...], "total": n}.
    #[pyo3(signature = (agent_id, limit = 50, offset = 0))]
    fn usage<'py>(
        &self,
        py: Python<'py>,
        agent_id: String,
        limit: u32,
        offset: u64,
    ) -> PyResult<Bound<'py, PyAny>> {
        crate::jev::usage(py, &self.inner, agent_id, limit, offset)
    }

    /// The thinking (text) helper: returns the text, or None when information is missing.
    /// Provider or parse failures raise JevError; they never become text.
    #[pyo3(signature = (agent_id, instructions, input, *, timeout_ms = None))]
    fn think(
        &self,
        py: Python<'_>,
        agent_id: String,
        instructions: String,
        input: String,
        timeout_ms: Option<u64>,
    ) -> PyResult<Option<String>> {
        let request = jevgate::jev::ThinkRequest {
            agent_id,
            instructions,
            input,
            timeout_ms,
        };
        let gw = self.inner.clone();
        let thought = crate::interrupt::interruptible(py, move || gw.think(&request), || {})?;
        Ok(thought.py_err()?.text)
    }

    /// Sets (or with None removes) the Python callable answering evaluations when the
    /// provider is "callback". It receives the request dict and returns the response.
    fn set_jev_callback(&self, callback: Option<Py<PyAny>>) {
        let set = callback.is_some();
        let old = std::mem::replace(&mut *self.callback.lock(), callback);
        drop(old); // outside the lock: dropping may run Python code
        self.inner
            .set_jev_callback(set.then(|| crate::jev::callback(Arc::clone(&self.callback))));
    }

    /// Python's cycle collector: the callback is the one Python object a gateway holds.
    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        if let Some(cell) = self.callback.try_lock() {
            if let Some(cb) = cell.as_ref() {
                visit.call(cb)?;
            }
        }
        Ok(())
    }

    /// Breaks a gateway → callback → gateway cycle (the callback provider then fails with
    /// JEV_PROVIDER_FAILURE until another is set).
    fn __clear__(&self) {
        let old = self.callback.lock().take();
        drop(old);
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
