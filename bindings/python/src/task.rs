//! `gateway.tasks`: browser tasks (R-TSK, R-RUN, R-TSK-RCPT) with dicts in and out; blocking
//! calls release the GIL, `wait` in slices so Ctrl-C interrupts it.
//!
//! The `on_outcome` callable is called on the task's thread with the GIL taken; whatever it
//! raises is dropped (the line is lost, the task goes on), and it is never called once the
//! interpreter is shutting down. It is held until the task ends.

use crate::device::to_py_json;
use crate::errors::IntoPy;
use jevgate::task::{Budget, ProgressFn, SpawnRequest, TaskOwner, TaskProgress, TaskTarget, Tasks};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use serde::de::DeserializeOwned;
use std::sync::Arc;
use std::time::Duration;

#[pyclass(module = "jevgate", name = "Tasks", frozen)]
pub struct PyTasks {
    pub gateway: jevgate::Gateway,
}

/// The owner triple from a dict (`{"agentId", "principalId", "conversationId"}`);
/// `ArgumentError` naming `owner` otherwise.
fn owner_arg(owner: &Bound<'_, PyAny>) -> PyResult<TaskOwner> {
    let text = crate::dumps_arg("owner", owner)?;
    TaskOwner::from_json(&text).py_err()
}

/// An optional JSON argument (a dict) read straight into its request type `T`, whose JSON shape
/// is `shape`; `ArgumentError` naming the argument otherwise.
fn json_arg<T: DeserializeOwned>(
    name: &'static str,
    shape: &str,
    value: Option<&Bound<'_, PyAny>>,
) -> PyResult<Option<T>> {
    let Some(v) = value else { return Ok(None) };
    let text = crate::dumps_arg(name, v)?;
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| crate::errors::invalid_json(name, shape, &e))
}

/// A wait's bound in seconds: finite and not negative, or infinity (until the task settles).
fn timeout_arg(seconds: f64) -> PyResult<Option<Duration>> {
    if seconds == f64::INFINITY {
        return Ok(None);
    }
    Duration::try_from_secs_f64(seconds).map(Some).map_err(|_| {
        crate::errors::invalid_argument("timeout", "must be a number of seconds, 0 or more")
    })
}

/// Wraps the Python callable as the task's progress function.
fn progress_fn(callable: Py<PyAny>) -> ProgressFn {
    Arc::new(move |p: &TaskProgress| {
        // Not during interpreter shutdown; an exception (or a failure to build the dict) loses
        // this line only.
        let _ = Python::try_attach(|py| -> PyResult<()> {
            let d = PyDict::new(py);
            d.set_item("taskId", &p.task_id)?;
            d.set_item("line", &p.line)?;
            d.set_item("reason", &p.reason)?;
            callable.bind(py).call1((d,))?;
            Ok(())
        });
    })
}

/// Runs `call` with the GIL released and returns its result as Python objects (through JSON),
/// or its error as the matching jevgate exception.
fn detached_json<'py, T: serde::Serialize + Send>(
    py: Python<'py>,
    call: impl FnOnce() -> jevgate::Result<T> + Send,
) -> PyResult<Bound<'py, PyAny>> {
    let r = py.detach(call).py_err()?;
    to_py_json(py, serde_json::to_string(&r))
}

impl PyTasks {
    /// One task verb: the owner triple from `owner` (`ArgumentError` naming it, before anything
    /// else), then `call` on the gateway's tasks with the GIL released ([`detached_json`]).
    fn verb<'py, T: serde::Serialize + Send>(
        &self,
        py: Python<'py>,
        owner: &Bound<'py, PyAny>,
        call: impl FnOnce(Tasks<'_>, &TaskOwner) -> jevgate::Result<T> + Send,
    ) -> PyResult<Bound<'py, PyAny>> {
        let owner = owner_arg(owner)?;
        let gw = &self.gateway;
        detached_json(py, || call(gw.tasks(), &owner))
    }
}

#[pymethods]
impl PyTasks {
    /// Starts a task for `owner` and returns its status right after the start (a dict, as
    /// `status` returns it; its id, a UUID, is `["id"]`).
    #[pyo3(signature = (owner, goal = String::new(), *, user_message = None, autopilot = None, target = None, start_url = None, budget = None, keep_open = false, on_outcome = None))]
    #[allow(clippy::too_many_arguments)] // reason: mirrors the Python keyword signature
    fn spawn<'py>(
        &self,
        py: Python<'py>,
        owner: &Bound<'py, PyAny>,
        goal: String,
        user_message: Option<String>,
        autopilot: Option<&Bound<'_, PyAny>>,
        target: Option<&Bound<'_, PyAny>>,
        start_url: Option<String>,
        budget: Option<&Bound<'_, PyAny>>,
        keep_open: bool,
        on_outcome: Option<Py<PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let owner = owner_arg(owner)?;
        if let Some(f) = &on_outcome {
            if !f.bind(py).is_callable() {
                return Err(crate::errors::invalid_argument(
                    "on_outcome",
                    "must be callable or None",
                ));
            }
        }
        // The request is built once, from the keywords; only the dicts go through JSON.
        let autopilot = match json_arg::<serde_json::Value>(
            "autopilot",
            "{goal, values: {name: value}, maxSteps?}",
            autopilot,
        )? {
            None => None,
            Some(args) => Some(
                jevgate::task::AutopilotRequest::from_json(&args.to_string())
                    .map_err(crate::errors::to_py)?,
            ),
        };
        let request = SpawnRequest {
            goal,
            user_message,
            autopilot,
            target: json_arg::<TaskTarget>(
                "target",
                "{kind: \"local\", profile?}, {kind: \"device\", deviceId} or {kind: \"computer\", deviceId}",
                target,
            )?
            .unwrap_or_default(),
            start_url,
            budget: json_arg::<Budget>("budget", "{maxSteps, maxEvaluations, timeoutMs}", budget)?
                .unwrap_or_default(),
            keep_open,
            progress: on_outcome.map(progress_fn),
        };
        let gw = &self.gateway;
        detached_json(py, || {
            let id = gw.tasks().spawn(&owner, request)?;
            gw.tasks().status(&owner, &id)
        })
    }

    /// The task as its owner sees it (a dict).
    fn status<'py>(
        &self,
        py: Python<'py>,
        owner: &Bound<'py, PyAny>,
        id: String,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.verb(py, owner, |t, owner| t.status(owner, &id))
    }

    /// Waits until the task is neither queued nor running, or `timeout` seconds passed
    /// (`math.inf`: as long as it takes), and returns its status then. The GIL is released;
    /// Ctrl-C interrupts the wait (the task goes on).
    fn wait<'py>(
        &self,
        py: Python<'py>,
        owner: &Bound<'py, PyAny>,
        id: String,
        timeout: f64,
    ) -> PyResult<Bound<'py, PyAny>> {
        let owner = owner_arg(owner)?;
        let total = timeout_arg(timeout)?;
        let gw = &self.gateway;
        // Each slice is a bounded core wait; done when it fails or the task is settled.
        let settled = crate::interrupt::wait_in_slices(py, total, |slice| {
            match gw.tasks().wait(&owner, &id, slice) {
                Ok(s) if s.state.is_busy() => None,
                other => Some(other),
            }
        })?;
        let s = match settled {
            Some(r) => r,
            None => py.detach(|| gw.tasks().status(&owner, &id)),
        }
        .py_err()?;
        to_py_json(py, serde_json::to_string(&s))
    }

    /// Queues a person's next direct command or step list on the task's open session and
    /// returns its control receipt (a dict: `commandId`, `state` `accepted`, …).
    fn command<'py>(
        &self,
        py: Python<'py>,
        owner: &Bound<'py, PyAny>,
        id: String,
        text: String,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.verb(py, owner, |t, owner| t.command(owner, &id, &text))
    }

    /// Steers the task (R-TSK-CTL): `action` is `pause`, `revise` (with `text`), `resume`,
    /// `agent` or `user`; `id` a UUID you choose (a replay with the same contents answers the
    /// same). Returns the status after the command.
    #[pyo3(signature = (owner, task_id, *, id, action, expected_revision, text=None))]
    #[allow(clippy::too_many_arguments)] // reason: the control route's fields, as keywords
    fn control<'py>(
        &self,
        py: Python<'py>,
        owner: &Bound<'py, PyAny>,
        task_id: String,
        id: String,
        action: String,
        expected_revision: u32,
        text: Option<String>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let mut v =
            serde_json::json!({"id": id, "action": action, "expectedRevision": expected_revision});
        if let Some(t) = text {
            v["text"] = serde_json::Value::String(t);
        }
        // The request is read after the owner, as the C and Rust surfaces read it.
        self.verb(py, owner, |t, owner| {
            let request = jevgate::task::ControlRequest::from_json(&v.to_string())?;
            t.control(owner, &task_id, &request)
        })
    }

    /// Continues the task with a revised goal (after the active request settles; a completed
    /// or failed task is reopened). Returns the status after the call.
    #[pyo3(signature = (owner, task_id, *, expected_revision, goal, mode="when_ready"))]
    fn update<'py>(
        &self,
        py: Python<'py>,
        owner: &Bound<'py, PyAny>,
        task_id: String,
        expected_revision: u32,
        goal: String,
        mode: &str,
    ) -> PyResult<Bound<'py, PyAny>> {
        let v =
            serde_json::json!({"expectedRevision": expected_revision, "mode": mode, "goal": goal});
        self.verb(py, owner, |t, owner| {
            let request = jevgate::task::UpdateRequest::from_json(&v.to_string())?;
            t.update(owner, &task_id, &request)
        })
    }

    /// Answers the field question a step list stopped on; the run continues from the step that
    /// asked. Returns the status.
    fn answer<'py>(
        &self,
        py: Python<'py>,
        owner: &Bound<'py, PyAny>,
        task_id: String,
        field: String,
        text: String,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.verb(py, owner, |t, owner| {
            t.answer(owner, &task_id, &field, &text)
        })
    }

    /// Verifies the task's completion candidate (issue 26 item 6, R-TSK-VER) on fresh evidence
    /// of its request: the task completes (VERIFIED), its browser is let go and the status's
    /// "verification" records {"by": "parent", "request", "evidenceId", "at"}. Returns the
    /// status.
    #[pyo3(signature = (owner, task_id, *, expected_revision, expected_request_id, evidence_id, instruction))]
    #[allow(clippy::too_many_arguments)] // reason: the verb's keyword arguments, as the seed names them
    fn verify<'py>(
        &self,
        py: Python<'py>,
        owner: &Bound<'py, PyAny>,
        task_id: String,
        expected_revision: u32,
        expected_request_id: u32,
        evidence_id: String,
        instruction: String,
    ) -> PyResult<Bound<'py, PyAny>> {
        let request = jevgate::task::VerifyRequest {
            expected_revision,
            expected_request_id,
            evidence_id,
            instruction,
        };
        self.verb(py, owner, |t, owner| t.verify(owner, &task_id, &request))
    }

    /// Installs (None removes) the host's verifier of completion candidates: called on the
    /// task's thread with {"taskId", "request", "goal", "evidence"} after each request that ends
    /// COMPLETION_CANDIDATE; it must return a bool (True completes the task, False leaves it
    /// waiting with VERIFICATION_FAILED). Anything else, and an exception, is INVALID_CONTRACT.
    fn set_verifier(&self, verifier: Option<Py<PyAny>>) {
        let f = verifier.map(|callable| -> jevgate::task::Verifier {
            Arc::new(move |input: &jevgate::task::VerifierInput| {
                // Not during interpreter shutdown: then no answer (INVALID_CONTRACT).
                Python::try_attach(|py| -> serde_json::Value {
                    let Ok(arg) = to_py_json(py, serde_json::to_string(input)) else {
                        return serde_json::Value::Null;
                    };
                    match callable.bind(py).call1((arg,)) {
                        Ok(answer) if answer.is_instance_of::<pyo3::types::PyBool>() => {
                            serde_json::Value::Bool(answer.is_truthy().unwrap_or(false))
                        }
                        // A non-bool, or an exception (dropped): never read as False.
                        _ => serde_json::Value::Null,
                    }
                })
                .unwrap_or(serde_json::Value::Null)
            })
        });
        self.gateway.tasks().set_verifier(f);
    }

    /// Browser evidence of the task (issue 21 item 7): a bounded observation of its page
    /// inside the untrusted envelope, with an evidenceId valid five minutes. fresh=False: the
    /// last observation the receipts kept; fresh=True: a new observation and operation_status
    /// of the receipt's last operation (never a replay).
    #[pyo3(signature = (owner, task_id, fresh = false))]
    fn evidence<'py>(
        &self,
        py: Python<'py>,
        owner: &Bound<'py, PyAny>,
        task_id: String,
        fresh: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.verb(py, owner, |t, owner| t.evidence(owner, &task_id, fresh))
    }

    /// Reconciles a task left needs_reconciliation from the browser's own record (never a
    /// replay); returns the status after the call.
    fn reconcile<'py>(
        &self,
        py: Python<'py>,
        owner: &Bound<'py, PyAny>,
        task_id: String,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.verb(py, owner, |t, owner| t.reconcile(owner, &task_id))
    }

    /// A person resolves an in-doubt operation: it happened or not. Returns the status.
    fn resolve<'py>(
        &self,
        py: Python<'py>,
        owner: &Bound<'py, PyAny>,
        task_id: String,
        operation_id: String,
        happened: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.verb(py, owner, |t, owner| {
            t.resolve(owner, &task_id, &operation_id, happened)
        })
    }

    /// The control receipt of one command of the task, or None for an id it never accepted.
    fn command_receipt<'py>(
        &self,
        py: Python<'py>,
        owner: &Bound<'py, PyAny>,
        task_id: String,
        command_id: String,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.verb(py, owner, |t, owner| {
            t.command_receipt(owner, &task_id, &command_id)
        })
    }

    /// Cancels the task (idempotent); returns its status after the call.
    fn cancel<'py>(
        &self,
        py: Python<'py>,
        owner: &Bound<'py, PyAny>,
        id: String,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.verb(py, owner, |t, owner| t.cancel(owner, &id))
    }

    /// The owner's tasks, newest first (at most 100).
    fn list<'py>(&self, py: Python<'py>, owner: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        self.verb(py, owner, |t, owner| t.list(owner))
    }

    /// The task's receipts, one per request, with the operations dispatched for it.
    fn receipts<'py>(
        &self,
        py: Python<'py>,
        owner: &Bound<'py, PyAny>,
        id: String,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.verb(py, owner, |t, owner| t.receipts(owner, &id))
    }
}

/// `gw.agent_tool_definitions(format="mcp"|"openai")`: the agent tools (issue 21 item 8) —
/// `capabilities_list`, the task tools, `jev_evaluate` — in MCP or function-calling form.
pub(crate) fn agent_tool_definitions<'py>(
    py: Python<'py>,
    format: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let f: jevgate::device::ToolFormat = format.parse().py_err()?;
    crate::json_to_py(py, &jevgate::task::agent_tool_definitions(f).to_string())
}

/// `gw.call_agent_tool(owner, name, args=None)`: runs one agent tool for `owner` (a dict);
/// `args` is a dict, the JSON text an LLM's function call carries, or None (`{}`). Returns the
/// result (a dict; page-derived text only under `untrustedContent`). The GIL is released and
/// Ctrl-C interrupts the call (a `task_wait` stops waiting; the task goes on).
pub(crate) fn call_agent_tool<'py>(
    py: Python<'py>,
    gw: &jevgate::Gateway,
    owner: &Bound<'py, PyAny>,
    name: String,
    args: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let owner = owner_arg(owner)?;
    let args = match args {
        None => String::new(),
        Some(a) if a.is_none() => String::new(),
        Some(a) => match a.cast::<pyo3::types::PyString>() {
            Ok(s) => s.extract::<String>()?,
            Err(_) if a.is_instance_of::<PyDict>() || a.hasattr("keys")? => {
                crate::dumps_arg("args", a)?
            }
            Err(_) => {
                return Err(crate::errors::invalid_argument(
                    "args",
                    "must be a dict, a JSON object as str, or None",
                ))
            }
        },
    };
    let token = jevgate::CancelToken::new();
    let (gw, t) = (gw.clone(), token.clone());
    let result = crate::interrupt::interruptible(
        py,
        move || gw.call_agent_tool_with_cancel(&owner, &name, &args, &t),
        || token.cancel(),
    )?
    .py_err()?;
    to_py_json(py, serde_json::to_string(&result))
}
