//! Control leases and the manual clock over the C ABI.

use super::*;
use crate::clock::{Clock, ManualClock};
use crate::lease::{ControlCaller, Credential};
use std::time::Duration;

/// A manual clock for tests and simulations: time moves only when told. Pass it to
/// `jevgate_gateway_open_with_clock`; free it with `jevgate_manual_clock_free` (a gateway
/// using it keeps its own reference).
pub struct jevgate_manual_clock {
    clock: ManualClock,
}

/// A new manual clock at monotonic zero and wall time 2026-01-01T00:00:00Z. NULL only if
/// jevgate panicked (never expected).
#[no_mangle]
pub extern "C" fn jevgate_manual_clock_new() -> *mut jevgate_manual_clock {
    ffi_boundary!(on_panic(std::ptr::null_mut()), {
        Box::into_raw(Box::new(jevgate_manual_clock {
            clock: ManualClock::new(),
        }))
    })
}

/// Moves the clock forward by `ms` milliseconds (monotonic and wall time), saturating: any
/// `ms`, even `UINT64_MAX` repeatedly, is accepted (wall time stops at
/// 9999-12-31T23:59:59.999Z). NULL is ignored.
///
/// # Safety
/// `clock` must be NULL or a live clock from `jevgate_manual_clock_new`.
#[no_mangle]
pub unsafe extern "C" fn jevgate_manual_clock_advance_ms(
    clock: *const jevgate_manual_clock,
    ms: u64,
) {
    ffi_boundary!(on_panic(()), {
        // SAFETY: per the contract.
        if let Some(c) = unsafe { clock.as_ref() } {
            c.clock.advance(Duration::from_millis(ms));
        }
    })
}

/// Sets the wall time (Unix ms) without moving monotonic time — a suspend/resume or an NTP
/// jump. Negative values are clamped to the epoch, values after 9999-12-31T23:59:59.999Z to
/// that time. NULL is ignored.
///
/// # Safety
/// `clock` must be NULL or a live clock from `jevgate_manual_clock_new`.
#[no_mangle]
pub unsafe extern "C" fn jevgate_manual_clock_set_wall_ms(
    clock: *const jevgate_manual_clock,
    unix_ms: i64,
) {
    ffi_boundary!(on_panic(()), {
        // SAFETY: per the contract.
        if let Some(c) = unsafe { clock.as_ref() } {
            c.clock
                .set_wall_since_epoch(Duration::from_millis(unix_ms.max(0).unsigned_abs()));
        }
    })
}

/// The clock's wall time in Unix ms, or 0 for NULL.
///
/// # Safety
/// `clock` must be NULL or a live clock from `jevgate_manual_clock_new`.
#[no_mangle]
pub unsafe extern "C" fn jevgate_manual_clock_wall_ms(clock: *const jevgate_manual_clock) -> i64 {
    ffi_boundary!(on_panic(0), {
        // SAFETY: per the contract.
        unsafe { clock.as_ref() }.map_or(0, |c| c.clock.wall_millis())
    })
}

/// Frees a manual clock. NULL is accepted and ignored.
///
/// # Safety
/// `clock` must be NULL or a clock from `jevgate_manual_clock_new`, not yet freed.
#[no_mangle]
pub unsafe extern "C" fn jevgate_manual_clock_free(clock: *mut jevgate_manual_clock) {
    ffi_boundary!(on_panic(()), {
        // SAFETY: per the contract, made by `jevgate_manual_clock_new`.
        drop(unsafe { take_handle(clock) });
    })
}

/// The gateway's clock behind `clock`, or `None` (the system clock) for NULL.
///
/// # Safety
/// `clock` must be NULL or a live clock from `jevgate_manual_clock_new`.
pub(crate) unsafe fn manual_clock(
    clock: *const jevgate_manual_clock,
) -> Option<crate::clock::SharedClock> {
    // SAFETY: per the contract, non-NULL `clock` points to a live clock.
    unsafe { clock.as_ref() }
        .map(|c| std::sync::Arc::new(c.clock.clone()) as crate::clock::SharedClock)
}

fn caller(principal: &str, delegated: bool, root_session: Option<&str>) -> ControlCaller {
    ControlCaller {
        principal: principal.to_string(),
        credential: if delegated {
            Credential::Delegated
        } else {
            Credential::Owner
        },
        root_session: root_session.map(str::to_string),
    }
}

/// Shared body of acquire and renew.
///
/// # Safety
/// As `jevgate_lease_acquire`.
unsafe fn grant_call(
    gateway: *const jevgate_gateway,
    device_id: *const c_char,
    root_session: *const c_char,
    grant_json_out: *mut *mut c_char,
    call: fn(&crate::lease::Leases, &str, &str) -> crate::Result<crate::lease::LeaseGrant>,
) -> Result<(), Error> {
    // SAFETY: forwarded contract.
    let gw = unsafe { gateway_ref(gateway) }?;
    // SAFETY: forwarded contract.
    let (device, session) = unsafe {
        (
            str_arg("device_id", device_id)?,
            str_arg("root_session", root_session)?,
        )
    };
    let grant_json_out = out_arg("grant_json_out", grant_json_out)?;
    let grant = call(gw.leases(), device, session)?;
    // SAFETY: writable per the contract.
    unsafe { grant_json_out.write_json(&grant) }
}

/// A browser call by `root_session` on `device_id` (R-LEASE-1..4): acquires or renews the
/// control lease. Writes `{"acquired":bool,"expiresAt":unix_ms,"fencingToken":n}` to
/// `*grant_json_out`: the fencing token is the same for every renewal of one tenure and strictly
/// greater for every later tenure of the device (fleet-wide on the PostgreSQL store).
/// Fails with `DEVICE_CONTROL_ELSEWHERE` or (once, after a take-back) `DEVICE_CONTROL_REVOKED`.
///
/// # Safety
/// `gateway` a live handle; strings NUL-terminated; `grant_json_out` writable; `err_out` NULL
/// or writable.
#[no_mangle]
pub unsafe extern "C" fn jevgate_lease_acquire(
    gateway: *const jevgate_gateway,
    device_id: *const c_char,
    root_session: *const c_char,
    grant_json_out: *mut *mut c_char,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        unsafe {
            grant_call(
                gateway,
                device_id,
                root_session,
                grant_json_out,
                crate::lease::Leases::acquire,
            )
        }
    })
}

/// Renews the caller's control lease without acquiring (`DEVICE_CONTROL_NOT_HELD`). Writes
/// `{"acquired":false,"expiresAt":unix_ms,"fencingToken":n}`.
///
/// # Safety
/// As `jevgate_lease_acquire`.
#[no_mangle]
pub unsafe extern "C" fn jevgate_lease_renew(
    gateway: *const jevgate_gateway,
    device_id: *const c_char,
    root_session: *const c_char,
    grant_json_out: *mut *mut c_char,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        unsafe {
            grant_call(
                gateway,
                device_id,
                root_session,
                grant_json_out,
                crate::lease::Leases::renew,
            )
        }
    })
}

/// The device's owner takes control back (R-LEASE-3, -7): clears the holder, cancels its
/// in-flight command, and opens the revoked window. Writes whether a holder was dispossessed
/// to `*took_back_out` (may be NULL). `delegated` = the caller used a delegated credential
/// (refused with `ACCESS_DENIED`). A principal other than the recorded owner, or any principal
/// on a device with no recorded owner, is refused with `ACCESS_DENIED`.
///
/// # Safety
/// `gateway` a live handle; strings NUL-terminated; out-pointers NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn jevgate_lease_take_back(
    gateway: *const jevgate_gateway,
    device_id: *const c_char,
    principal: *const c_char,
    delegated: bool,
    took_back_out: *mut bool,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        let gw = unsafe { gateway_ref(gateway) }?;
        // SAFETY: forwarded contract.
        let (device, principal) = unsafe {
            (
                str_arg("device_id", device_id)?,
                str_arg("principal", principal)?,
            )
        };
        let took = gw
            .leases()
            .take_back(device, &caller(principal, delegated, None))?;
        // SAFETY: NULL or writable per the contract.
        unsafe { write_opt(took_back_out, took) }
    })
}

/// `control_status` for the device's owner (R-LEASE-4, -5, -7; anyone else, or a device with no
/// recorded owner, is `ACCESS_DENIED`): writes
/// `{"held","heldByRootSession","expiresAt","revoked"}`. `root_session` (may be NULL) is the
/// caller's own conversation; `heldByRootSession` is only ever that session.
///
/// # Safety
/// `gateway` a live handle; strings NUL-terminated (`root_session` may be NULL);
/// `status_json_out` writable; `err_out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn jevgate_lease_status(
    gateway: *const jevgate_gateway,
    device_id: *const c_char,
    principal: *const c_char,
    root_session: *const c_char,
    delegated: bool,
    status_json_out: *mut *mut c_char,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        let gw = unsafe { gateway_ref(gateway) }?;
        // SAFETY: forwarded contract.
        let (device, principal) = unsafe {
            (
                str_arg("device_id", device_id)?,
                str_arg("principal", principal)?,
            )
        };
        // SAFETY: forwarded contract.
        let session = unsafe { opt_str_arg("root_session", root_session) }?;
        let status_json_out = out_arg("status_json_out", status_json_out)?;
        let status = gw
            .leases()
            .status(device, &caller(principal, delegated, session))?;
        // SAFETY: writable per the contract.
        unsafe { status_json_out.write_json(&status) }
    })
}

/// Session end / Chat Stop (R-LEASE-6): releases every lease `root_session` holds without
/// cancelling anything. Writes the number of devices released to `*released_out` (may be NULL).
///
/// # Safety
/// `gateway` a live handle; `root_session` NUL-terminated; out-pointers NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn jevgate_lease_release_session(
    gateway: *const jevgate_gateway,
    root_session: *const c_char,
    released_out: *mut usize,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        let gw = unsafe { gateway_ref(gateway) }?;
        // SAFETY: forwarded contract.
        let session = unsafe { str_arg("root_session", root_session) }?;
        let n = gw.leases().release_session(session)?;
        // SAFETY: NULL or writable per the contract.
        unsafe { write_opt(released_out, n) }
    })
}

/// Records the owner of a device; control routes then accept only that principal (R-LEASE-7).
/// The owner is stored (it survives a restart); a device with no recorded owner accepts nobody.
///
/// # Safety
/// `gateway` a live handle; strings NUL-terminated; `err_out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn jevgate_lease_set_device_owner(
    gateway: *const jevgate_gateway,
    device_id: *const c_char,
    owner: *const c_char,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        let gw = unsafe { gateway_ref(gateway) }?;
        // SAFETY: forwarded contract.
        let (device, owner) =
            unsafe { (str_arg("device_id", device_id)?, str_arg("owner", owner)?) };
        gw.leases().set_device_owner(device, owner)
    })
}

/// A browser tool call's session lease (R-PROF-2..4). Opaque; end it with
/// `jevgate_browser_call_end` when the call finishes.
pub struct jevgate_browser_call {
    pub(crate) guard: Option<crate::lease::BrowserCallGuard>,
    info: CString,
}

/// Starts a browser tool call's session: `call_json` is
/// `{"threadId","organization","mode"?:"authenticated"|"isolated","profileKey"?,"authenticatedAllowed"?}`.
/// The raw profile key is hashed at once and never kept. Fails with `BROWSER_CONTEXT_BUSY` or
/// `BROWSER_AUTHENTICATED_UNAVAILABLE`. Read the session with `jevgate_browser_call_info`.
///
/// # Safety
/// `gateway` a live handle; `call_json` NUL-terminated; `call_out` writable; `err_out` NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn jevgate_browser_call_begin(
    gateway: *const jevgate_gateway,
    call_json: *const c_char,
    call_out: *mut *mut jevgate_browser_call,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        let gw = unsafe { gateway_ref(gateway) }?;
        // SAFETY: forwarded contract.
        let json = unsafe { str_arg("call_json", call_json) }?;
        let call_out = out_arg("call_out", call_out)?;
        let call = crate::lease::BrowserCall::from_json(json)?;
        let g = gw.leases().begin_browser_call(&call)?;
        let info = CString::new(json_string(&g.info())?).map_err(|_| Error::Internal {
            reason: "session info with NUL".into(),
        })?;
        // SAFETY: writable per the contract.
        unsafe {
            call_out.write_handle(jevgate_browser_call {
                guard: Some(g),
                info,
            })
        }
    })
}

/// `{"sessionId","mode","created"}` of a browser call; valid until the call ends. NULL for NULL.
///
/// # Safety
/// `call` NULL or a live browser call.
#[no_mangle]
pub unsafe extern "C" fn jevgate_browser_call_info(
    call: *const jevgate_browser_call,
) -> *const c_char {
    ffi_boundary!(on_panic(std::ptr::null()), {
        // SAFETY: per the contract.
        unsafe { call.as_ref() }.map_or(std::ptr::null(), |c| c.info.as_ptr())
    })
}

/// Ends a browser call (its session stays live for the thread until idle) and frees it. NULL
/// is accepted and ignored.
///
/// # Safety
/// `call` NULL or a live browser call, not used again.
#[no_mangle]
pub unsafe extern "C" fn jevgate_browser_call_end(call: *mut jevgate_browser_call) {
    ffi_boundary!(on_panic(()), {
        // SAFETY: per the contract; made by `jevgate_browser_call_begin`.
        if let Some(mut c) = unsafe { take_handle(call) } {
            drop(c.guard.take());
        }
    })
}

/// Reaps idle (15 min) and over-age (1 h) browser sessions now; writes how many closed to
/// `*reaped_out` (may be NULL). The gateway also reaps every second.
///
/// # Safety
/// `gateway` a live handle; out-pointers NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn jevgate_lease_reap(
    gateway: *const jevgate_gateway,
    reaped_out: *mut usize,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        let gw = unsafe { gateway_ref(gateway) }?;
        let n = gw.leases().reap();
        // SAFETY: NULL or writable per the contract.
        unsafe { write_opt(reaped_out, n) }
    })
}
