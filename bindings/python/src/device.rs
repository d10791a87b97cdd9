//! Devices from Python (SPEC §5): pairing, inventory, the channel server, tool calls, artifacts
//! (reading, deleting, purging), tool definitions. Dicts in and out; blocking calls release the GIL.

use crate::errors::{invalid_json, IntoPy};
use crate::json_to_py;
use jevgate::device::{
    ChannelHandle, ChannelOptions, ChannelTls, PairRequest, ToolCall, ToolFormat,
};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

/// The JSON argument `name` (as C names it): `INVALID_ARGUMENT` when it is not JSON.
fn py_to_json(name: &'static str, value: &Bound<'_, PyAny>) -> PyResult<serde_json::Value> {
    let text = crate::dumps_arg(name, value)?;
    serde_json::from_str(&text).map_err(|e| invalid_json(name, "JSON", &e))
}

/// `jevgate.tool_definitions(format="mcp"|"openai")`: the nine browser tools as JSON Schema.
#[pyfunction]
#[pyo3(signature = (format = "mcp"))]
pub fn tool_definitions<'py>(py: Python<'py>, format: &str) -> PyResult<Bound<'py, PyAny>> {
    let f: ToolFormat = format.parse().py_err()?;
    json_to_py(py, &jevgate::device::tool_definitions(f).to_string())
}

/// `jevgate.managed_tool_definitions(format="mcp", tabs=False, files=False, vision=False, *,
/// data_handling="standard")`: the managed browser tool family (issue 15) for those caps as
/// JSON Schema; `data_handling="strict"` lists what strict data handling exposes (seed 001).
#[pyfunction]
#[pyo3(signature = (format = "mcp", tabs = false, files = false, vision = false, *, data_handling = "standard"))]
pub fn managed_tool_definitions<'py>(
    py: Python<'py>,
    format: &str,
    tabs: bool,
    files: bool,
    vision: bool,
    data_handling: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let f: ToolFormat = format.parse().py_err()?;
    let caps = jevgate::browser::managed::ManagedCaps {
        tabs,
        files,
        vision,
    };
    let data = parse_data_handling(data_handling)?;
    json_to_py(
        py,
        &jevgate::browser::managed::managed_tool_definitions_for(f, caps, data).to_string(),
    )
}

/// `"standard"` or `"strict"`; `INVALID_ARGUMENT` `data_handling` otherwise.
fn parse_data_handling(text: &str) -> PyResult<jevgate::browser::managed::DataHandling> {
    use jevgate::browser::managed::DataHandling;
    match text {
        "standard" => Ok(DataHandling::Standard),
        "strict" => Ok(DataHandling::Strict),
        _ => Err(jevgate::Error::InvalidArgument {
            name: "data_handling",
            reason: "must be \"standard\" or \"strict\"".into(),
        })
        .py_err(),
    }
}

/// `gw.browser_tool(...)`: one managed tool on the thread's local browser session; the GIL is
/// released while it runs.
#[allow(clippy::too_many_arguments)]
pub fn browser_tool<'py>(
    py: Python<'py>,
    gw: &jevgate::Gateway,
    thread_id: String,
    organization: String,
    name: String,
    args: Option<&Bound<'py, PyAny>>,
    profile_key: Option<String>,
    authenticated_allowed: bool,
    data_handling: &str,
) -> PyResult<Bound<'py, PyAny>> {
    use jevgate::browser::managed::ManagedCall;
    let args = match args {
        Some(a) => py_to_json("args_json", a)?,
        None => serde_json::json!({}),
    };
    let data_handling = parse_data_handling(data_handling)?;
    let call = ManagedCall {
        thread_id,
        organization,
        profile_key,
        authenticated_allowed,
        data_handling,
    };
    let out = py
        .detach(|| gw.browser_tool_call(&call, &name, &args, None))
        .py_err()?;
    json_to_py(py, &out.to_string())
}

/// A running channel server; `stop()` ends it (the gateway also stops it on close).
#[pyclass(module = "jevgate", name = "ChannelHandle", frozen)]
pub struct PyChannelHandle {
    handle: ChannelHandle,
}

#[pymethods]
impl PyChannelHandle {
    /// `ws://host:port/v1/device-worker/channel` (or `wss://…`).
    #[getter]
    fn url(&self) -> String {
        self.handle.url()
    }

    /// The bound port (useful with port 0).
    #[getter]
    fn port(&self) -> u16 {
        self.handle.local_addr().port()
    }

    /// Stops accepting and closes every connection; joins the server's threads.
    fn stop(&self, py: Python<'_>) {
        let h = &self.handle;
        py.detach(|| h.stop());
    }
}

pub fn pair<'py>(
    py: Python<'py>,
    gw: &jevgate::Gateway,
    owner: String,
    request: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let req = PairRequest::from_json(&crate::dumps_arg("request_json", request)?).py_err()?;
    let pairing = py.detach(|| gw.pair(&owner, &req)).py_err()?;
    to_py_json(py, serde_json::to_string(&pairing))
}

/// A core result as encoded by `serde_json::to_string` (every result is `Serialize`) → a
/// Python value.
pub(crate) fn to_py_json(
    py: Python<'_>,
    json: serde_json::Result<String>,
) -> PyResult<Bound<'_, PyAny>> {
    let json = json.map_err(|_| crate::errors::internal("a result that would not encode"))?;
    json_to_py(py, &json)
}

pub fn devices<'py>(
    py: Python<'py>,
    gw: &jevgate::Gateway,
    owner: String,
) -> PyResult<Bound<'py, PyAny>> {
    let list = py.detach(|| gw.devices(&owner)).py_err()?;
    to_py_json(py, serde_json::to_string(&list))
}

/// The channel's limits as Python passes them (None: the default).
pub struct ChannelLimits {
    pub max_connections: Option<u64>,
    pub max_unauthenticated: Option<u64>,
    pub max_unauthenticated_per_address: Option<u64>,
    pub io_threads: Option<u64>,
}

pub fn serve_channel(
    py: Python<'_>,
    gw: &jevgate::Gateway,
    addr: String,
    tls_cert_pem: Option<Vec<u8>>,
    tls_key_pem: Option<Vec<u8>>,
    limits: ChannelLimits,
) -> PyResult<PyChannelHandle> {
    let mut options = ChannelOptions::new(addr);
    let size = |v: u64| usize::try_from(v).unwrap_or(usize::MAX);
    if let Some(v) = limits.max_connections {
        options.max_connections = size(v);
    }
    if let Some(v) = limits.max_unauthenticated {
        options.max_unauthenticated = size(v);
    }
    if let Some(v) = limits.max_unauthenticated_per_address {
        options.max_unauthenticated_per_address = size(v);
    }
    if let Some(v) = limits.io_threads {
        options.io_threads = size(v);
    }
    if let Some(tls) =
        ChannelTls::from_optional_pem(tls_cert_pem.as_deref(), tls_key_pem.as_deref()).py_err()?
    {
        options = options.with_tls(tls);
    }
    let handle = py.detach(|| gw.serve_channel(options)).py_err()?;
    Ok(PyChannelHandle { handle })
}

#[allow(clippy::too_many_arguments)] // reason: mirrors the Python keyword signature
pub fn call_tool<'py>(
    py: Python<'py>,
    gw: &jevgate::Gateway,
    owner: String,
    root_session: String,
    tool: String,
    args: Option<&Bound<'py, PyAny>>,
    device_id: Option<String>,
    inline_images: bool,
    agent_id: Option<String>,
    on_progress: Option<Py<PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let args = match args {
        Some(a) => py_to_json("args", a)?,
        None => serde_json::json!({}),
    };
    let mut call = ToolCall::new(owner, root_session, tool, args);
    call.device_id = device_id;
    call.inline_images = inline_images;
    call.agent_id = agent_id;
    // Ctrl-C stops the wait; the call ends in the background within its own deadline
    let gw = gw.clone();
    let result = crate::interrupt::interruptible(
        py,
        move || {
            // Each browser_autopilot step's line, on the call's thread; an exception (or
            // interpreter shutdown) loses that line only.
            let tell = |line: &str| {
                if let Some(f) = &on_progress {
                    let _ = Python::try_attach(|py| f.bind(py).call1((line,)).map(|_| ()));
                }
            };
            gw.call_tool_with_progress(&call, &tell)
        },
        || {},
    )?;
    json_to_py(py, &result.to_json().to_string())
}

pub fn artifact<'py>(
    py: Python<'py>,
    gw: &jevgate::Gateway,
    root_session: String,
    artifact_id: String,
) -> PyResult<(String, Bound<'py, PyBytes>)> {
    let a = py
        .detach(|| gw.artifact(&root_session, &artifact_id))
        .py_err()?;
    Ok((a.media_type, PyBytes::new(py, &a.bytes)))
}

pub fn delete_artifacts(
    py: Python<'_>,
    gw: &jevgate::Gateway,
    root_session: String,
) -> PyResult<usize> {
    py.detach(|| gw.delete_artifacts(&root_session)).py_err()
}

pub fn purge_artifacts(py: Python<'_>, gw: &jevgate::Gateway) -> PyResult<usize> {
    py.detach(|| gw.purge_artifacts()).py_err()
}
