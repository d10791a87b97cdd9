//! The gateway handle over the C ABI.

use super::*;
use crate::{Config, Gateway, GatewayOptions};

/// An open gateway. Opaque; thread-safe (calls, `jevgate_gateway_close` included, may come from
/// any thread at once); closed with `jevgate_gateway_close`, then freed with
/// `jevgate_gateway_free` once no call on it is in flight.
pub struct jevgate_gateway {
    inner: Gateway,
}

/// Borrows the gateway behind `gw`.
///
/// # Safety
/// `gw` must be NULL or a live handle from `jevgate_gateway_open`.
pub(crate) unsafe fn gateway_ref<'a>(gw: *const jevgate_gateway) -> Result<&'a Gateway, Error> {
    // SAFETY: forwarded contract.
    unsafe { handle_arg("gateway", gw) }.map(|g| &g.inner)
}

/// Opens (or creates) the store in `data_dir` and starts a gateway with `config_json`.
/// On success writes the handle to `*gateway_out`.
///
/// # Safety
/// String arguments must be NULL or NUL-terminated; `gateway_out` must be writable;
/// `err_out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn jevgate_gateway_open(
    data_dir: *const c_char,
    config_json: *const c_char,
    gateway_out: *mut *mut jevgate_gateway,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract; no clock.
        unsafe { open(data_dir, config_json, std::ptr::null(), gateway_out) }
    })
}

/// As `jevgate_gateway_open`, with a manual clock (NULL = the system clock) for tests and
/// simulations: lease expiry and reaping then follow `jevgate_manual_clock_advance_ms`.
///
/// # Safety
/// As `jevgate_gateway_open`; `clock` NULL or a live manual clock.
#[no_mangle]
pub unsafe extern "C" fn jevgate_gateway_open_with_clock(
    data_dir: *const c_char,
    config_json: *const c_char,
    clock: *const jevgate_manual_clock,
    gateway_out: *mut *mut jevgate_gateway,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        unsafe { open(data_dir, config_json, clock, gateway_out) }
    })
}

/// Shared body of the two opens.
///
/// # Safety
/// As `jevgate_gateway_open_with_clock`.
unsafe fn open(
    data_dir: *const c_char,
    config_json: *const c_char,
    clock: *const jevgate_manual_clock,
    gateway_out: *mut *mut jevgate_gateway,
) -> Result<(), Error> {
    // SAFETY: forwarded contract.
    let dir = unsafe { str_arg("data_dir", data_dir) }?;
    // SAFETY: forwarded contract.
    let json = unsafe { str_arg("config_json", config_json) }?;
    let gateway_out = out_arg("gateway_out", gateway_out)?;
    let config = Config::from_json_str(json)?;
    let mut options = GatewayOptions::new(dir, config);
    // SAFETY: forwarded contract: `clock` is NULL or a live manual clock.
    options.clock = unsafe { super::lease::manual_clock(clock) };
    let gw = Gateway::open(options)?;
    // SAFETY: writable per the contract.
    unsafe { gateway_out.write_handle(jevgate_gateway { inner: gw }) }
}

/// Closes the gateway: joins its threads, closes the store and releases the data directory (a
/// new gateway may then open it). The handle stays valid until `jevgate_gateway_free`; later
/// calls on it fail with `GATEWAY_CLOSED`. Idempotent, and safe while other threads' calls on
/// the same handle are in flight: each of them finishes or fails with `GATEWAY_CLOSED`. NULL is
/// accepted and ignored.
///
/// # Safety
/// `gateway` must be NULL or a live handle (not yet freed).
#[no_mangle]
pub unsafe extern "C" fn jevgate_gateway_close(gateway: *const jevgate_gateway) {
    ffi_boundary!(on_panic(()), {
        // SAFETY: per the contract, non-NULL `gateway` is a live handle.
        if let Ok(gw) = unsafe { gateway_ref(gateway) } {
            gw.close();
        }
    })
}

/// Frees the handle, closing the gateway first if `jevgate_gateway_close` was not called.
/// NULL is accepted and ignored. Not thread-safe: no other call on this handle may be in flight
/// or start afterwards (by any thread) — call `jevgate_gateway_close`, join the threads that use
/// the handle, then free it.
///
/// # Safety
/// `gateway` must be NULL or a handle from `jevgate_gateway_open`, not yet freed, with no other
/// call on it in flight or to come.
#[no_mangle]
pub unsafe extern "C" fn jevgate_gateway_free(gateway: *mut jevgate_gateway) {
    ffi_boundary!(on_panic(()), {
        // SAFETY: per the contract, `gateway` was made by `open` and no other call uses it.
        if let Some(handle) = unsafe { take_handle(gateway) } {
            handle.inner.close();
        }
    })
}

/// Validates `config_json` and swaps it in atomically; writes the new generation to
/// `*generation_out` (may be NULL). On failure the live configuration is unchanged.
///
/// # Safety
/// `gateway` must be a live handle; `config_json` NUL-terminated; out-pointers NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn jevgate_gateway_reload(
    gateway: *const jevgate_gateway,
    config_json: *const c_char,
    generation_out: *mut u64,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        let gw = unsafe { gateway_ref(gateway) }?;
        // SAFETY: forwarded contract.
        let json = unsafe { str_arg("config_json", config_json) }?;
        let generation = gw.reload_json(json)?;
        // SAFETY: NULL or writable per the contract.
        unsafe { write_opt(generation_out, generation) }
    })
}

/// The live configuration generation (1 after open), or 0 for a NULL handle.
///
/// # Safety
/// `gateway` must be NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn jevgate_gateway_generation(gateway: *const jevgate_gateway) -> u64 {
    ffi_boundary!(on_panic(0), {
        // SAFETY: forwarded contract.
        unsafe { gateway_ref(gateway) }.map_or(0, Gateway::generation)
    })
}

/// Runs the local readiness checks and writes the report as JSON
/// (`{"ok":bool,"checks":[{"name","status","code"?,"detail"}]}`) to `*report_json_out`; free
/// it with `jevgate_string_free`. A failing check is not a call failure: read `ok`.
///
/// # Safety
/// `gateway` must be a live handle; out-pointers writable (`err_out` may be NULL).
#[no_mangle]
pub unsafe extern "C" fn jevgate_gateway_doctor(
    gateway: *const jevgate_gateway,
    report_json_out: *mut *mut c_char,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        let gw = unsafe { gateway_ref(gateway) }?;
        let report_json_out = out_arg("report_json_out", report_json_out)?;
        let report = gw.doctor()?.to_json();
        // SAFETY: writable per the contract.
        unsafe { report_json_out.write_string(report) }
    })
}

/// Writes a JSON array of the environment variable names holding credentials this gateway
/// reads (strip them from child processes) to `*names_json_out`; free it with
/// `jevgate_string_free`.
///
/// # Safety
/// `gateway` must be a live handle; out-pointers writable (`err_out` may be NULL).
#[no_mangle]
pub unsafe extern "C" fn jevgate_gateway_secret_env_names(
    gateway: *const jevgate_gateway,
    names_json_out: *mut *mut c_char,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        let gw = unsafe { gateway_ref(gateway) }?;
        let names_json_out = out_arg("names_json_out", names_json_out)?;
        // SAFETY: writable per the contract.
        unsafe { names_json_out.write_json(&gw.secret_env_names()) }
    })
}
