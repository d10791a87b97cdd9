//! `jevgate.validate_response` and `jevgate.answer_schema` (R-VAL): dicts or JSON text in, the
//! answers dict out. The GIL is released while the bytes are validated.

use crate::errors::IntoPy;
use crate::json_to_py;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyDict, PyString};

/// A JSON document given as str, bytes, bytearray, or a dict/list (serialized with `json`).
/// A value `json` cannot encode is `INVALID_ARGUMENT` naming `arg`, the C argument's name.
fn json_bytes(value: &Bound<'_, PyAny>, what: &str, arg: &'static str) -> PyResult<Vec<u8>> {
    if let Ok(s) = value.cast::<PyString>() {
        return Ok(s.extract::<String>()?.into_bytes());
    }
    if let Ok(b) = value.cast::<PyBytes>() {
        return Ok(b.as_bytes().to_vec());
    }
    if let Ok(b) = value.cast::<PyByteArray>() {
        return Ok(b.to_vec());
    }
    if value.is_instance_of::<PyDict>() || value.hasattr("keys")? {
        return Ok(crate::dumps_arg(arg, value)?.into_bytes());
    }
    Err(PyTypeError::new_err(format!(
        "{what} must be a dict, str, bytes or bytearray"
    )))
}

/// Validates a provider response against the questions; returns the answers dict (numbers
/// unchanged) or raises `jevgate.ValidationError` with `.code` and `.reason`.
#[pyfunction]
pub fn validate_response<'py>(
    py: Python<'py>,
    questions: &Bound<'py, PyAny>,
    response: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let q = json_bytes(questions, "questions", "questions_json")?;
    let r = json_bytes(response, "response", "response_json")?;
    let answers = py
        .detach(|| jevgate::jev::validate_to_json(&q, &r))
        .py_err()?;
    json_to_py(py, &answers)
}

/// The JSON Schema (a dict) of a valid answers object for the questions.
#[pyfunction]
pub fn answer_schema<'py>(
    py: Python<'py>,
    questions: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let q = json_bytes(questions, "questions", "questions_json")?;
    let schema = jevgate::jev::answer_schema_json(&q).py_err()?;
    json_to_py(py, &schema)
}

/// A cancel handle for an evaluation, usable from another thread.
#[pyclass(module = "jevgate", name = "CancelToken", frozen)]
pub struct PyCancelToken {
    pub token: jevgate::CancelToken,
}

#[pymethods]
impl PyCancelToken {
    #[new]
    fn new() -> Self {
        PyCancelToken {
            token: jevgate::CancelToken::new(),
        }
    }

    /// Cancels the evaluation using this token (`JEV_CANCELLED`).
    fn cancel(&self) {
        self.token.cancel();
    }
}

pub fn evaluate<'py>(
    py: Python<'py>,
    gw: &jevgate::Gateway,
    call: &Bound<'py, PyAny>,
    cancel: Option<&Bound<'py, PyCancelToken>>,
) -> PyResult<Bound<'py, PyAny>> {
    // Not UTF-8: the same INVALID_ARGUMENT the C ABI gives for `call_json`.
    let text = String::from_utf8(json_bytes(call, "call", "call_json")?)
        .map_err(|_| jevgate::Error::InvalidArgument {
            name: "call_json",
            reason: "is not valid UTF-8".into(),
        })
        .py_err()?;
    // a token always, so that Ctrl-C cancels the evaluation (JEV_CANCELLED in the background)
    let token = cancel.map_or_else(jevgate::CancelToken::new, |c| c.get().token.clone());
    let (gw, t) = (gw.clone(), token.clone());
    let out = crate::interrupt::interruptible(
        py,
        move || gw.evaluate_json(&text, Some(&t)),
        || token.cancel(),
    )?
    .py_err()?;
    json_to_py(py, &out)
}

pub fn usage<'py>(
    py: Python<'py>,
    gw: &jevgate::Gateway,
    agent_id: String,
    limit: u32,
    offset: u64,
) -> PyResult<Bound<'py, PyAny>> {
    let page = py.detach(|| gw.usage(&agent_id, limit, offset)).py_err()?;
    crate::device::to_py_json(py, serde_json::to_string(&page))
}

/// Wraps a Python callable as the `callback` provider: it receives the request as a dict and
/// returns the response (dict, str or bytes). Called with the GIL taken, on whatever thread
/// runs the evaluation; an exception becomes `JEV_PROVIDER_FAILURE` (its text is not kept).
/// The callable is read from `cell` at each call (None once the gateway was cleared by the
/// garbage collector or the callback removed).
pub fn callback(cell: crate::callable::CallableCell) -> jevgate::jev::JevCallback {
    std::sync::Arc::new(move |request: &[u8]| {
        Python::attach(|py| {
            let fail = |what: &str| jevgate::Error::ProviderFailure {
                reason: format!("the Python callback {what}"),
            };
            let text = std::str::from_utf8(request).map_err(|_| fail("got a non-UTF-8 request"))?;
            let arg = json_to_py(py, text).map_err(|_| fail("got an unreadable request"))?;
            let callable = cell
                .lock()
                .as_ref()
                .map(|c| c.clone_ref(py))
                .ok_or_else(|| fail("is gone"))?;
            let out = callable
                .bind(py)
                .call1((arg,))
                .map_err(|_| fail("raised an exception"))?;
            json_bytes(&out, "response", "response_json")
                .map_err(|_| fail("returned something that is not JSON"))
        })
    })
}
