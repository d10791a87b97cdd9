//! Computer helpers over the C ABI (issue 25): pairing a `jevgate-computer` helper as a device of
//! capability `computer`, and a handle that drives one paired computer for one conversation —
//! observe, act, read an operation's receipt, ask the person for access. JSON in and out.
//! Translation only: every rule lives in `crate::device::computer`. Never logs or echoes names,
//! values or typed text.

use super::*;
use crate::device::computer::ComputerDevice;
use crate::CancelToken;

/// Pairs a computer helper (`jevgate-computer`) for `owner`: a device of capability
/// `computer`. `request_json` is `{"installationId","name"}` (a `browser` field is ignored);
/// writes `{"device":{…},"token":"…"}` — the token is shown this once. Pairing alone
/// authorizes nothing: the person approves applications and an access duration in the helper.
///
/// # Safety
/// `gateway` a live handle; strings NUL-terminated; `pairing_json_out` writable.
#[no_mangle]
pub unsafe extern "C" fn jevgate_pair_computer(
    gateway: *const jevgate_gateway,
    owner: *const c_char,
    request_json: *const c_char,
    pairing_json_out: *mut *mut c_char,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        unsafe {
            super::device::pair_with(
                gateway,
                owner,
                request_json,
                pairing_json_out,
                |gw, o, r| gw.pair_computer(o, r),
            )
        }
    })
}

/// One paired computer driven for one conversation (`jevgate_computer_target`). Opaque; free
/// it with `jevgate_computer_free`. Its calls may run on several threads at once.
pub struct jevgate_computer {
    device: ComputerDevice,
    /// Cancels this handle's access requests (`jevgate_computer_cancel_access`).
    cancel: CancelToken,
}

/// `owner`'s paired computer `device_id` driven for the conversation `root_session`: every
/// call one primitive over the device channel under the device's control lease, with the
/// helper contract's checks. Nothing is sent until a call is made, so an unknown device is
/// reported by the first call (`DEVICE_NOT_PAIRED`), a helper not connected by
/// `DEVICE_OFFLINE`.
///
/// # Safety
/// `gateway` a live handle; strings NUL-terminated; `computer_out` writable.
#[no_mangle]
pub unsafe extern "C" fn jevgate_computer_target(
    gateway: *const jevgate_gateway,
    owner: *const c_char,
    root_session: *const c_char,
    device_id: *const c_char,
    computer_out: *mut *mut jevgate_computer,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        let gw = unsafe { gateway_ref(gateway) }?;
        // SAFETY: forwarded contract.
        let (owner, root_session, device_id) = unsafe {
            (
                str_arg("owner", owner)?,
                str_arg("root_session", root_session)?,
                str_arg("device_id", device_id)?,
            )
        };
        let computer_out = out_arg("computer_out", computer_out)?;
        let device = gw.computer_target(owner, root_session, device_id)?;
        // SAFETY: writable per the contract.
        unsafe {
            computer_out.write_handle(jevgate_computer {
                device,
                cancel: CancelToken::new(),
            })
        }
    })
}

/// The computer behind a handle argument.
///
/// # Safety
/// `computer` NULL or a live handle.
unsafe fn computer_ref<'a>(
    computer: *const jevgate_computer,
) -> Result<&'a jevgate_computer, Error> {
    // SAFETY: forwarded contract.
    unsafe { handle_arg("computer", computer) }
}

/// Observes the front application and writes the validated observation
/// (`{"contractVersion","application","windowTitle","controls":[…],"focused"?,"text":[…],
/// "supportedActions","capabilities","omitted"}`; a sensitive
/// field never carries its value). `CONSENT_REQUIRED` / `APPLICATION_NOT_ALLOWED` when the
/// person has not approved it, `COMPUTER_CONTRACT_UNSUPPORTED` for a helper of another major
/// contract version, `DEVICE_OFFLINE` when the helper is not connected.
///
/// # Safety
/// `computer` a live handle; `observation_json_out` writable.
#[no_mangle]
pub unsafe extern "C" fn jevgate_computer_observe(
    computer: *const jevgate_computer,
    observation_json_out: *mut *mut c_char,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        let c = unsafe { computer_ref(computer) }?;
        let out = out_arg("observation_json_out", observation_json_out)?;
        let json = c.device.observe_json()?;
        // SAFETY: writable per the contract.
        unsafe { out.write_string(json) }
    })
}

/// Runs one action: `command_json` is `{"operation_id","kind","ref"?,"text"?,"key"?}` with
/// `kind` one of `press`, `set_text`, `focus`, `key`; writes the helper's result. A refusal
/// means not executed (its code says why); `OUTCOME_UNKNOWN` means it may have run: read
/// `jevgate_computer_operation_status`, never send it again.
///
/// # Safety
/// `computer` a live handle; `command_json` NUL-terminated; `result_json_out` writable.
#[no_mangle]
pub unsafe extern "C" fn jevgate_computer_act(
    computer: *const jevgate_computer,
    command_json: *const c_char,
    result_json_out: *mut *mut c_char,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        let c = unsafe { computer_ref(computer) }?;
        // SAFETY: forwarded contract.
        let command = unsafe { str_arg("command_json", command_json) }?;
        let out = out_arg("result_json_out", result_json_out)?;
        let json = c.device.act_json(command)?;
        // SAFETY: writable per the contract.
        unsafe { out.write_string(json) }
    })
}

/// Reads the helper's receipt of `operation_id` (no control lease taken) and writes
/// `{"state":"not_found"}` (never executed), `{"state":"unreadable"}` or the receipt
/// `{"operation_id","state":"started"|"completed"|"failed","action"?,"code"?}` (`started`:
/// recorded before acting, its end never recorded — unknown, never replay it).
/// `DEVICE_OFFLINE` when the helper cannot be reached.
///
/// # Safety
/// `computer` a live handle; `operation_id` NUL-terminated; `receipt_json_out` writable.
#[no_mangle]
pub unsafe extern "C" fn jevgate_computer_operation_status(
    computer: *const jevgate_computer,
    operation_id: *const c_char,
    receipt_json_out: *mut *mut c_char,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        let c = unsafe { computer_ref(computer) }?;
        // SAFETY: forwarded contract.
        let id = unsafe { str_arg("operation_id", operation_id) }?;
        let out = out_arg("receipt_json_out", receipt_json_out)?;
        let json = c.device.operation_status_json(id)?;
        // SAFETY: writable per the contract.
        unsafe { out.write_string(json) }
    })
}

/// Asks the person for access on the device and waits for the answer: writes
/// `{"state":"granted","applications":[…],"expiresAt":…}`. Blocks while the request is
/// pending (the helper keeps answering receipts meanwhile), at most the helper's five minutes
/// (`COMPUTER_ACCESS_TIMEOUT`); `jevgate_computer_cancel_access` from another thread ends the
/// wait with `DEVICE_CONTROL_REVOKED`, as does closing the gateway (its own code).
///
/// # Safety
/// `computer` a live handle; `access_json_out` writable.
#[no_mangle]
pub unsafe extern "C" fn jevgate_computer_request_access(
    computer: *const jevgate_computer,
    access_json_out: *mut *mut c_char,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        let c = unsafe { computer_ref(computer) }?;
        let out = out_arg("access_json_out", access_json_out)?;
        let answer = c.device.request_access(&c.cancel)?;
        // SAFETY: writable per the contract.
        unsafe { out.write_json(&answer) }
    })
}

/// Stops every wait of `jevgate_computer_request_access` on this handle, now and later (they
/// answer `DEVICE_CONTROL_REVOKED`; the request stays pending on the helper until the person
/// answers or it times out). Thread-safe. NULL is ignored.
///
/// # Safety
/// `computer` NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn jevgate_computer_cancel_access(computer: *const jevgate_computer) {
    ffi_boundary!(on_panic(()), {
        // SAFETY: per the contract.
        if let Some(c) = unsafe { computer.as_ref() } {
            c.cancel.cancel();
        }
    })
}

/// Frees a computer handle (no call on it may still run). NULL is accepted and ignored.
///
/// # Safety
/// `computer` NULL or a handle from `jevgate_computer_target`, not used again.
#[no_mangle]
pub unsafe extern "C" fn jevgate_computer_free(computer: *mut jevgate_computer) {
    ffi_boundary!(on_panic(()), {
        // SAFETY: per the contract; made by `jevgate_computer_target`.
        drop(unsafe { take_handle(computer) });
    })
}
