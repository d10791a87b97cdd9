//! Browser tasks over the C ABI (R-TSK, R-RUN, R-TSK-RCPT, R-TSK-VER): spawn, status, wait,
//! command, cancel, list, receipts, verify and the host's verifier — JSON in (`owner_json`,
//! `request_json`) and JSON out (the task's status, lists, receipts), and a progress callback
//! that receives each outcome line.
//! Translation only: every check (owner triple, sizes, URLs, budgets) is the core's.

use super::*;
use crate::task::{ProgressFn, SpawnRequest, TaskOwner, TaskProgress};
use std::ffi::c_int;
use std::time::Duration;

/// Receives each settled outcome line of a task as `progress_json`,
/// `{"taskId":…,"line":…,"reason":…}`: a NUL-terminated UTF-8 string borrowed for the call
/// only (copy what you keep; do not free it). Called on the task's thread, one line at a time
/// per task; keep it short and never call the task API from it.
pub type jevgate_task_progress_fn =
    Option<unsafe extern "C" fn(user_data: *mut std::ffi::c_void, progress_json: *const c_char)>;

/// The host's `user_data`, moved to the task's thread.
struct UserData(*mut std::ffi::c_void);
// SAFETY: the host promises (documented on `jevgate_task_spawn`) that its callback and
// `user_data` may be used from the task's thread.
unsafe impl Send for UserData {}
// SAFETY: as above; jevgate never dereferences the pointer itself.
unsafe impl Sync for UserData {}

/// Parses the owner triple.
///
/// # Safety
/// `owner_json` NULL or NUL-terminated.
unsafe fn owner_arg(owner_json: *const c_char) -> Result<TaskOwner, Error> {
    // SAFETY: forwarded contract.
    TaskOwner::from_json(unsafe { str_arg("owner_json", owner_json) }?)
}

/// The gateway, the owner and the task id of a call on one task.
///
/// # Safety
/// `gateway` NULL or a live handle; strings NULL or NUL-terminated.
unsafe fn task_args<'a>(
    gateway: *const jevgate_gateway,
    owner_json: *const c_char,
    task_id: *const c_char,
) -> Result<(&'a crate::Gateway, TaskOwner, &'a str), Error> {
    // SAFETY: forwarded contract.
    let gw = unsafe { gateway_ref(gateway) }?;
    // SAFETY: forwarded contract.
    let owner = unsafe { owner_arg(owner_json) }?;
    // SAFETY: forwarded contract.
    let id = unsafe { str_arg("task_id", task_id) }?;
    Ok((gw, owner, id))
}

/// Starts a task for the owner `owner_json` (`{"agentId","principalId","conversationId"}`)
/// from `request_json` (`{"goal", "userMessage"?, "autopilot"?: {"goal", "values": {name:
/// value}, "maxSteps"?} (the first round is an autopilot run), "target"?: {"kind":"local","profile"?} |
/// {"kind":"device","deviceId"} | {"kind":"computer","deviceId"}, "startUrl"?: http(s) URL, "budget"?: {"maxSteps",
/// "maxEvaluations","timeoutMs"}, "keepOpen"?: bool}`: `goal` is the agent's words, run as a
/// goal run with every action checked for impact; `userMessage` the person's own message, a
/// step list there running verbatim as theirs (with no goal, it runs as their command);
/// neither opens the session and waits for commands) and writes its id (a UUID) to `*task_id_out`. `progress` (may be NULL)
/// receives each outcome line (see `jevgate_task_progress_fn`) with `user_data` first.
/// `INVALID_ARGUMENT` for a bad owner or request (a goal over 4000 characters, a list over 12
/// steps, a start URL that is not http/https); `ORCHESTRATION_DISABLED` (409) unless the live
/// configuration enables Jev and `features.browserTasks`, `EXECUTION_DENIED` (403) when the
/// owner's agent has no Jev access — asked again before each request starts, so a reload that
/// turns tasks off ends a queued or running task with that code before its next browser
/// action. With `features.browserSteps` off a step list runs as one direct command.
///
/// # Safety
/// `gateway` a live handle; strings NUL-terminated; `task_id_out` writable; `err_out` NULL or
/// writable. `progress` and `user_data` must stay valid and be safe to call from the task's
/// thread (another thread than the caller's) until the task has ended
/// (`jevgate_task_wait` reports a state other than `queued`, `running`, `waiting_input`) or the
/// gateway is closed.
#[no_mangle]
pub unsafe extern "C" fn jevgate_task_spawn(
    gateway: *const jevgate_gateway,
    owner_json: *const c_char,
    request_json: *const c_char,
    progress: jevgate_task_progress_fn,
    user_data: *mut std::ffi::c_void,
    task_id_out: *mut *mut c_char,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        let gw = unsafe { gateway_ref(gateway) }?;
        // SAFETY: forwarded contract.
        let owner = unsafe { owner_arg(owner_json) }?;
        // SAFETY: forwarded contract.
        let mut request =
            SpawnRequest::from_json(unsafe { str_arg("request_json", request_json) }?)?;
        let task_id_out = out_arg("task_id_out", task_id_out)?;
        if let Some(progress) = progress {
            let data = UserData(user_data);
            let f: ProgressFn = std::sync::Arc::new(move |p: &TaskProgress| {
                let data = &data;
                // A line that would not encode (never expected) is dropped, not a panic.
                let Ok(json) = json_string(p) else { return };
                let Ok(json) = CString::new(json) else { return };
                // SAFETY: the host's contract: callable from the task's thread with its
                // user_data; the string lives until the call returns.
                unsafe { progress(data.0, json.as_ptr()) };
            });
            request.progress = Some(f);
        }
        let id = gw.tasks().spawn(&owner, request)?;
        // SAFETY: writable per the contract.
        unsafe { task_id_out.write_string(id) }
    })
}

/// Writes the task's status JSON (`{"id","owner","target","goal","state","reason","outcome",
/// "actions","evaluations","actionLog","stepRun","lastDispatchedMutation",…}`; `state` is
/// one of `queued`, `running`, `waiting_input`, `completed`, `failed`, `cancelled`,
/// `needs_reconciliation`; a computer task's open session adds `computerConnection`:
/// `connected`, `disconnected`, `waiting_access` or `unknown`) to `*status_json_out`. `ACCESS_DENIED` when `task_id` is not a task
/// of the owner triple: an unknown id and another owner's answer alike (code and message).
///
/// # Safety
/// `gateway` a live handle; strings NUL-terminated; `status_json_out` writable; `err_out` NULL
/// or writable.
#[no_mangle]
pub unsafe extern "C" fn jevgate_task_status(
    gateway: *const jevgate_gateway,
    owner_json: *const c_char,
    task_id: *const c_char,
    status_json_out: *mut *mut c_char,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        let (gw, owner, id) = unsafe { task_args(gateway, owner_json, task_id) }?;
        let status_json_out = out_arg("status_json_out", status_json_out)?;
        let status = gw.tasks().status(&owner, id)?;
        // SAFETY: writable per the contract.
        unsafe { status_json_out.write_json(&status) }
    })
}

/// Blocks until the task is neither `queued` nor `running`, or `timeout_ms` passed (any value;
/// `UINT64_MAX` waits as long as it takes), and writes its status JSON then (as
/// `jevgate_task_status`; a `state` still `queued`/`running` means the timeout came first).
///
/// # Safety
/// `gateway` a live handle; strings NUL-terminated; `status_json_out` writable; `err_out` NULL
/// or writable.
#[no_mangle]
pub unsafe extern "C" fn jevgate_task_wait(
    gateway: *const jevgate_gateway,
    owner_json: *const c_char,
    task_id: *const c_char,
    timeout_ms: u64,
    status_json_out: *mut *mut c_char,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        let (gw, owner, id) = unsafe { task_args(gateway, owner_json, task_id) }?;
        let status_json_out = out_arg("status_json_out", status_json_out)?;
        let status = gw
            .tasks()
            .wait(&owner, id, Duration::from_millis(timeout_ms))?;
        // SAFETY: writable per the contract.
        unsafe { status_json_out.write_json(&status) }
    })
}

/// Queues a person's next direct command or step list (`text`, 1 to 4000 characters; more
/// than 12 steps is one command) on the task's open session. `INVALID_ARGUMENT` for bad text (never echoed),
/// `COMMAND_QUEUE_FULL` when 20 wait already, `AUTOMATION_SESSION_CLOSED` when the session
/// is over, `ORCHESTRATION_DISABLED` / `EXECUTION_DENIED` as `jevgate_task_spawn` (on the
/// configuration live at the call), `ACCESS_DENIED` when the task is not the owner's.
///
/// # Safety
/// `gateway` a live handle; strings NUL-terminated; `err_out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn jevgate_task_command(
    gateway: *const jevgate_gateway,
    owner_json: *const c_char,
    task_id: *const c_char,
    text: *const c_char,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        let (gw, owner, id) = unsafe { task_args(gateway, owner_json, task_id) }?;
        // SAFETY: forwarded contract.
        let text = unsafe { str_arg("text", text) }?;
        gw.tasks().command(&owner, id, text).map(|_| ())
    })
}

/// Cancels the task (idempotent): a queued task never starts, a running one stops before its
/// next action (an operation already sent keeps its outcome). Writes the status JSON after
/// the call to `*status_json_out` when it is not NULL (free it with `jevgate_string_free`);
/// `jevgate_task_wait` then waits until the thread settled it (`cancelled`).
///
/// # Safety
/// `gateway` a live handle; strings NUL-terminated; `status_json_out` NULL or writable;
/// `err_out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn jevgate_task_cancel(
    gateway: *const jevgate_gateway,
    owner_json: *const c_char,
    task_id: *const c_char,
    status_json_out: *mut *mut c_char,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        let (gw, owner, id) = unsafe { task_args(gateway, owner_json, task_id) }?;
        let status = gw.tasks().cancel(&owner, id)?;
        // SAFETY: NULL or writable per the contract.
        unsafe { write_opt_json(status_json_out, &status) }
    })
}

/// Steers the task (R-TSK-CTL): `control_json` is `{"id": "<uuid>", "action":
/// "pause"|"revise"|"resume"|"agent"|"user", "expectedRevision": N, "text"?: "…"}` (only
/// `revise` takes text, 1 to 4000 characters). Writes the status after the command to
/// `*status_json_out` when it is not NULL. `INVALID_INPUT`, `ACCESS_DENIED`,
/// `REVISION_CONFLICT`, `STATE_CONFLICT`, `IDEMPOTENCY_CONFLICT` (the same id with other
/// contents; the same contents answer the same result), `NOTHING_TO_RESUME`,
/// `AUTOMATION_SESSION_CLOSED`.
///
/// # Safety
/// `gateway` a live handle; strings NUL-terminated; `status_json_out` NULL or writable;
/// `err_out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn jevgate_task_control(
    gateway: *const jevgate_gateway,
    owner_json: *const c_char,
    task_id: *const c_char,
    control_json: *const c_char,
    status_json_out: *mut *mut c_char,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        let (gw, owner, id) = unsafe { task_args(gateway, owner_json, task_id) }?;
        // SAFETY: forwarded contract.
        let control = unsafe { str_arg("control_json", control_json) }?;
        let control = crate::task::ControlRequest::from_json(control)?;
        let status = gw.tasks().control(&owner, id, &control)?;
        // SAFETY: NULL or writable per the contract.
        unsafe { write_opt_json(status_json_out, &status) }
    })
}

/// Continues the task with a revised goal (seed 003 "Continuing a browser task"):
/// `update_json` is `{"expectedRevision": N, "mode"?: "when_ready", "goal": "…"}`. The goal
/// runs after the active request settles; a completed or failed task is reopened. Writes the
/// status after the call to `*status_json_out` when it is not NULL. `INVALID_INPUT`,
/// `ACCESS_DENIED`, `REVISION_CONFLICT`, `STATE_CONFLICT` (`UNRESOLVED_MUTATION`,
/// `REPLAN_LIMIT`, `REPLAN_DUPLICATE`, `TARGET_GONE`), `AUTOMATION_SESSION_CLOSED` (cancelled).
///
/// # Safety
/// `gateway` a live handle; strings NUL-terminated; `status_json_out` NULL or writable;
/// `err_out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn jevgate_task_update(
    gateway: *const jevgate_gateway,
    owner_json: *const c_char,
    task_id: *const c_char,
    update_json: *const c_char,
    status_json_out: *mut *mut c_char,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        let (gw, owner, id) = unsafe { task_args(gateway, owner_json, task_id) }?;
        // SAFETY: forwarded contract.
        let update = unsafe { str_arg("update_json", update_json) }?;
        let update = crate::task::UpdateRequest::from_json(update)?;
        let status = gw.tasks().update(&owner, id, &update)?;
        // SAFETY: NULL or writable per the contract.
        unsafe { write_opt_json(status_json_out, &status) }
    })
}

/// Verifies the task's completion candidate (issue 26 item 6, R-TSK-VER; seed 003 "Parent
/// verification and recovery"): `verify_json` is `{"expectedRevision": N, "expectedRequestId":
/// R, "evidenceId": "ev_…", "instruction": "…"}` — the candidate request and the id of fresh
/// evidence of it (`jevgate_task_evidence` with `fresh` non-zero, five minutes), and the
/// concrete evidence that establishes the goal (1 to 4000 characters, stored with the task's
/// commands, never logged). Accepted, the task completes (`completed`, `VERIFIED`), its browser
/// is let go and the status's `verification` records `{"by":"parent","request","evidenceId",
/// "at"}`; it never acts on the page. Writes the status after the call to `*status_json_out`
/// when it is not NULL. `INVALID_INPUT`, `ACCESS_DENIED`, `ORCHESTRATION_DISABLED`,
/// `EXECUTION_DENIED`, `REVISION_CONFLICT`, `STATE_CONFLICT` (`UNRESOLVED_MUTATION`,
/// `NOT_A_CANDIDATE`, `INTERRUPTED_RUN`, `TASK_BUSY`, `EVIDENCE_REQUIRED`, `EVIDENCE_EXPIRED`);
/// the same verification again answers the same status, another after it
/// `AUTOMATION_SESSION_CLOSED`.
///
/// # Safety
/// `gateway` a live handle; strings NUL-terminated; `status_json_out` NULL or writable;
/// `err_out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn jevgate_task_verify(
    gateway: *const jevgate_gateway,
    owner_json: *const c_char,
    task_id: *const c_char,
    verify_json: *const c_char,
    status_json_out: *mut *mut c_char,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        let (gw, owner, id) = unsafe { task_args(gateway, owner_json, task_id) }?;
        // SAFETY: forwarded contract.
        let request = unsafe { str_arg("verify_json", verify_json) }?;
        let request = crate::task::VerifyRequest::from_json(request)?;
        let status = gw.tasks().verify(&owner, id, &request)?;
        // SAFETY: NULL or writable per the contract.
        unsafe { write_opt_json(status_json_out, &status) }
    })
}

/// A host's verifier of completion candidates (R-TSK-VER): receives `input_json`,
/// `{"taskId","request","goal","evidence"}` (fresh evidence; its observation inside the
/// untrusted envelope: data, never instructions), borrowed for the call only, and returns a
/// NUL-terminated JSON text that jevgate copies at once and never frees (return a static
/// string, or one you keep until your next call): `true` completes the task, `false` leaves it
/// waiting with `VERIFICATION_FAILED`; anything else — NULL, `"yes"`, `null`, an object, text
/// that is not JSON — `INVALID_CONTRACT`, never read as `false`. Called on the task's thread.
pub type jevgate_verifier_fn = Option<
    unsafe extern "C" fn(
        user_data: *mut std::ffi::c_void,
        input_json: *const c_char,
    ) -> *const c_char,
>;

/// Installs `verifier` (NULL removes it) as the gateway's verifier of completion candidates:
/// it is asked after each request that ends `COMPLETION_CANDIDATE` (see `jevgate_verifier_fn`);
/// `user_data` is passed first.
///
/// # Safety
/// `gateway` a live handle. `verifier` and `user_data` must stay valid and be safe to call from
/// any task thread until replaced or the gateway closes.
#[no_mangle]
pub unsafe extern "C" fn jevgate_tasks_set_verifier(
    gateway: *const jevgate_gateway,
    verifier: jevgate_verifier_fn,
    user_data: *mut std::ffi::c_void,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        let gw = unsafe { gateway_ref(gateway) }?;
        let Some(verifier) = verifier else {
            gw.tasks().set_verifier(None);
            return Ok(());
        };
        let data = UserData(user_data);
        let f: crate::task::Verifier =
            std::sync::Arc::new(move |input: &crate::task::VerifierInput| {
                let data = &data;
                let Ok(json) = serde_json::to_string(input) else {
                    return serde_json::Value::Null;
                };
                let Ok(json) = CString::new(json) else {
                    return serde_json::Value::Null;
                };
                // SAFETY: the host's contract: callable from a task thread with its user_data.
                let answer = unsafe { verifier(data.0, json.as_ptr()) };
                if answer.is_null() {
                    return serde_json::Value::Null;
                }
                // SAFETY: the callback returned a NUL-terminated string it keeps owning.
                let bytes = unsafe { CStr::from_ptr(answer) }.to_bytes();
                serde_json::from_slice(bytes).unwrap_or(serde_json::Value::Null)
            });
        gw.tasks().set_verifier(Some(f));
        Ok(())
    })
}

/// Answers the field question a step list stopped on (`FIELD_TEXT_REQUIRED`; the status's
/// `fieldRequest`): `text` (1 to 2000 characters, never echoed) goes into `field` and the step
/// list continues from the step that asked. Writes the status after the call to
/// `*status_json_out` when it is not NULL. `STATE_CONFLICT` when no question about `field` is
/// pending, `INVALID_INPUT` for text out of bounds.
///
/// # Safety
/// `gateway` a live handle; strings NUL-terminated; `status_json_out` NULL or writable;
/// `err_out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn jevgate_task_answer(
    gateway: *const jevgate_gateway,
    owner_json: *const c_char,
    task_id: *const c_char,
    field: *const c_char,
    text: *const c_char,
    status_json_out: *mut *mut c_char,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        let (gw, owner, id) = unsafe { task_args(gateway, owner_json, task_id) }?;
        // SAFETY: forwarded contract.
        let field = unsafe { str_arg("field", field) }?;
        // SAFETY: forwarded contract.
        let text = unsafe { str_arg("text", text) }?;
        let status = gw.tasks().answer(&owner, id, field, text)?;
        // SAFETY: NULL or writable per the contract.
        unsafe { write_opt_json(status_json_out, &status) }
    })
}

/// Reconciles a task left `needs_reconciliation` (R-TSK-RCPT): asks the browser's own record
/// about the receipt's last in-doubt operation only (never a replay); executed or not executed
/// resolves it, unknown leaves it for `jevgate_task_resolve`. Writes the status after the call
/// to `*status_json_out` when it is not NULL. `STATE_CONFLICT` when nothing is in doubt.
///
/// # Safety
/// `gateway` a live handle; strings NUL-terminated; `status_json_out` NULL or writable;
/// `err_out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn jevgate_task_reconcile(
    gateway: *const jevgate_gateway,
    owner_json: *const c_char,
    task_id: *const c_char,
    status_json_out: *mut *mut c_char,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        let (gw, owner, id) = unsafe { task_args(gateway, owner_json, task_id) }?;
        let status = gw.tasks().reconcile(&owner, id)?;
        // SAFETY: NULL or writable per the contract.
        unsafe { write_opt_json(status_json_out, &status) }
    })
}

/// A person resolves in-doubt operation `operation_id` of the task: `happened` non-zero for
/// "it ran", zero for "it did not" (R-TSK-RCPT). Writes the status after the call to
/// `*status_json_out` when it is not NULL. `STATE_CONFLICT` for an operation not in doubt.
///
/// # Safety
/// `gateway` a live handle; strings NUL-terminated; `status_json_out` NULL or writable;
/// `err_out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn jevgate_task_resolve(
    gateway: *const jevgate_gateway,
    owner_json: *const c_char,
    task_id: *const c_char,
    operation_id: *const c_char,
    happened: c_int,
    status_json_out: *mut *mut c_char,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        let (gw, owner, id) = unsafe { task_args(gateway, owner_json, task_id) }?;
        // SAFETY: forwarded contract.
        let operation_id = unsafe { str_arg("operation_id", operation_id) }?;
        let status = gw
            .tasks()
            .resolve(&owner, id, operation_id, happened != 0)?;
        // SAFETY: NULL or writable per the contract.
        unsafe { write_opt_json(status_json_out, &status) }
    })
}

/// Writes browser evidence of the task (issue 21 item 7, R-TSK-VER) to `*evidence_json_out`:
/// `{"evidenceId","taskId","request","requestState","taskState","inDoubt","source",
/// "observedAt","expiresAt","lastDispatchedMutation","operationStatus","untrustedContent":
/// {"notice","data"}}` — `data` is the observation (page content: treat it as data, never as
/// instructions; never log it) or `null`. `fresh` zero: the last observation the receipts kept
/// (no field values); non-zero: a new observation of the page and `operation_status` of the
/// receipt's last operation (read, never replayed). The evidence id is valid five minutes on
/// the gateway's clock. A sensitive field's value never appears. Evidence changes nothing
/// about the task. `BROWSER_EVIDENCE_UNAVAILABLE` (403) for any access or ownership failure (an
/// unknown id alike), `BROWSER_INSPECTION_UNAVAILABLE` (503) when a fresh inspection cannot be
/// made now (the task's local browser is gone, a request runs on it, the device is offline).
///
/// # Safety
/// `gateway` a live handle; strings NUL-terminated; `evidence_json_out` writable; `err_out`
/// NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn jevgate_task_evidence(
    gateway: *const jevgate_gateway,
    owner_json: *const c_char,
    task_id: *const c_char,
    fresh: c_int,
    evidence_json_out: *mut *mut c_char,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        let (gw, owner, id) = unsafe { task_args(gateway, owner_json, task_id) }?;
        let out = out_arg("evidence_json_out", evidence_json_out)?;
        let evidence = gw.tasks().evidence(&owner, id, fresh != 0)?;
        // SAFETY: writable per the contract.
        unsafe { out.write_json(&evidence) }
    })
}

/// Writes the control receipt of command `command_id` of the task (R-TSK-CTL: `{"commandId",
/// "kind","origin","summary","revision","state","reason","request","acceptedAt","updatedAt"}`,
/// or `null` for an id the task never accepted) to `*receipt_json_out`.
///
/// # Safety
/// `gateway` a live handle; strings NUL-terminated; `receipt_json_out` writable; `err_out`
/// NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn jevgate_task_command_receipt(
    gateway: *const jevgate_gateway,
    owner_json: *const c_char,
    task_id: *const c_char,
    command_id: *const c_char,
    receipt_json_out: *mut *mut c_char,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        let (gw, owner, id) = unsafe { task_args(gateway, owner_json, task_id) }?;
        // SAFETY: forwarded contract.
        let command_id = unsafe { str_arg("command_id", command_id) }?;
        let out = out_arg("receipt_json_out", receipt_json_out)?;
        let receipt = gw.tasks().command_receipt(&owner, id, command_id)?;
        // SAFETY: writable per the contract.
        unsafe { out.write_json(&receipt) }
    })
}

/// Writes the owner's tasks (a JSON array of statuses, newest first, at most 100) to
/// `*tasks_json_out`.
///
/// # Safety
/// `gateway` a live handle; `owner_json` NUL-terminated; `tasks_json_out` writable; `err_out`
/// NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn jevgate_task_list(
    gateway: *const jevgate_gateway,
    owner_json: *const c_char,
    tasks_json_out: *mut *mut c_char,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        let gw = unsafe { gateway_ref(gateway) }?;
        // SAFETY: forwarded contract.
        let owner = unsafe { owner_arg(owner_json) }?;
        let tasks_json_out = out_arg("tasks_json_out", tasks_json_out)?;
        let tasks = gw.tasks().list(&owner)?;
        // SAFETY: writable per the contract.
        unsafe { tasks_json_out.write_json(&tasks) }
    })
}

/// Writes the task's receipts (R-TSK-RCPT: a JSON array, one per request, `{"request",
/// "state","reason","outcome","startedAt","endedAt","operations":[{"operationId","tool",
/// "dispatchedAt","status","errorCode","result","observation"}]}`) to `*receipts_json_out`.
/// Results and observations are the owner's to investigate: never log them.
///
/// # Safety
/// `gateway` a live handle; strings NUL-terminated; `receipts_json_out` writable; `err_out`
/// NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn jevgate_task_receipts(
    gateway: *const jevgate_gateway,
    owner_json: *const c_char,
    task_id: *const c_char,
    receipts_json_out: *mut *mut c_char,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        let (gw, owner, id) = unsafe { task_args(gateway, owner_json, task_id) }?;
        let receipts_json_out = out_arg("receipts_json_out", receipts_json_out)?;
        let receipts = gw.tasks().receipts(&owner, id)?;
        // SAFETY: writable per the contract.
        unsafe { receipts_json_out.write_json(&receipts) }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(dir: &std::path::Path) -> *mut jevgate_gateway {
        let path = CString::new(dir.to_str().unwrap()).unwrap();
        let mut gw: *mut jevgate_gateway = std::ptr::null_mut();
        // SAFETY: valid strings and writable out-pointers.
        let status = unsafe {
            jevgate_gateway_open(path.as_ptr(), c"{}".as_ptr(), &mut gw, std::ptr::null_mut())
        };
        assert_eq!(status, jevgate_status::JEVGATE_OK);
        gw
    }

    /// The code of a failed call's error object, freed.
    ///
    /// # Safety
    /// `err` written by a failed call.
    unsafe fn code(err: *mut jevgate_error) -> String {
        // SAFETY: per the contract.
        let c = unsafe { CStr::from_ptr(jevgate_error_code(err)) }
            .to_str()
            .unwrap()
            .to_string();
        // SAFETY: freed once.
        unsafe { jevgate_error_free(err) };
        c
    }

    // R-TSK over C: bad arguments are INVALID_ARGUMENT naming the argument, an unknown id is
    // ACCESS_DENIED as another owner's is (issue 21 defect 10), and outputs are written only
    // on success.
    #[test]
    fn r_tsk_c_arguments_and_unknown_ids_are_clear_errors() {
        let dir = tempfile::tempdir().unwrap();
        let gw = open(dir.path());
        let owner = c"{\"agentId\":\"a\",\"principalId\":\"p\",\"conversationId\":\"c\"}";
        let sentinel = std::ptr::dangling_mut::<c_char>();
        let mut out = sentinel;
        let mut err: *mut jevgate_error = std::ptr::null_mut();
        // SAFETY: a live handle, valid strings, writable out-pointers.
        let status = unsafe {
            jevgate_task_status(gw, owner.as_ptr(), c"nope".as_ptr(), &mut out, &mut err)
        };
        assert_eq!(status, jevgate_status::JEVGATE_ERROR);
        assert_eq!(out, sentinel);
        // SAFETY: written by the failed call.
        assert_eq!(unsafe { code(err) }, "ACCESS_DENIED");
        for (owner_json, task_id) in [
            (std::ptr::null(), c"x".as_ptr()),
            (c"{\"agentId\":\"a\"}".as_ptr(), c"x".as_ptr()),
            (owner.as_ptr(), std::ptr::null()),
            (owner.as_ptr(), c"\xff".as_ptr()),
        ] {
            let mut err: *mut jevgate_error = std::ptr::null_mut();
            // SAFETY: NULL or NUL-terminated strings; writable out-pointers.
            let status =
                unsafe { jevgate_task_wait(gw, owner_json, task_id, 0, &mut out, &mut err) };
            assert_eq!(status, jevgate_status::JEVGATE_INVALID_ARGUMENT);
            // SAFETY: written by the failed call.
            assert_eq!(unsafe { code(err) }, "INVALID_ARGUMENT");
        }
        assert_eq!(out, sentinel);
        let mut err: *mut jevgate_error = std::ptr::null_mut();
        // SAFETY: as above; `task_id_out` NULL is refused before anything starts.
        let status = unsafe {
            jevgate_task_spawn(
                gw,
                owner.as_ptr(),
                c"{\"goal\":\"\",\"startUrl\":\"file:///etc/passwd\"}".as_ptr(),
                None,
                std::ptr::null_mut(),
                &mut out,
                &mut err,
            )
        };
        assert_eq!(status, jevgate_status::JEVGATE_INVALID_ARGUMENT);
        // SAFETY: written by the failed call.
        assert_eq!(unsafe { code(err) }, "INVALID_ARGUMENT");
        let mut list: *mut c_char = std::ptr::null_mut();
        // SAFETY: as above.
        let status =
            unsafe { jevgate_task_list(gw, owner.as_ptr(), &mut list, std::ptr::null_mut()) };
        assert_eq!(status, jevgate_status::JEVGATE_OK);
        // SAFETY: written on success; freed once.
        unsafe {
            assert_eq!(CStr::from_ptr(list).to_str().unwrap(), "[]");
            jevgate_string_free(list);
            jevgate_gateway_close(gw);
            jevgate_gateway_free(gw);
        }
    }
}
