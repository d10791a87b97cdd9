//! `jevgate_error`: the error object of the C ABI (R-ERR-3). Everything it reports comes from the
//! core's error table (`jevgate::ERROR_TABLE`); the header's `JEVGATE_CODE_*` strings are the
//! codes `jevgate_error_code` returns.

use super::*;

/// An error: stable code, message, JSON path (configuration errors), HTTP status and
/// retry-after. Opaque; read it with the accessors; free it with `jevgate_error_free`.
pub struct jevgate_error {
    code: CString,
    message: CString,
    path: Option<CString>,
    http_status: u16,
    retry_after_ms: i64,
    validation_reason: Option<CString>,
    isolated_available: Option<bool>,
    retryable: bool,
    worker_code: Option<CString>,
}

fn lossless(s: &str) -> CString {
    CString::new(s.replace('\0', "\u{fffd}")).unwrap_or_default()
}

impl jevgate_error {
    pub(crate) fn boxed(e: &Error) -> *mut jevgate_error {
        Box::into_raw(Box::new(jevgate_error {
            code: lossless(e.code()),
            message: lossless(&e.to_string()),
            path: e.path().map(lossless),
            http_status: e.http_status(),
            retry_after_ms: e
                .retry_after()
                .map_or(-1, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX)),
            validation_reason: e.validation_reason().map(lossless),
            isolated_available: e.isolated_available(),
            retryable: e.retryable(),
            worker_code: e.worker_code().map(lossless),
        }))
    }
}

/// Borrows the error behind `err`, or `None` for NULL.
///
/// # Safety
/// `err` must be NULL or a live error object from jevgate.
unsafe fn get<'a>(err: *const jevgate_error) -> Option<&'a jevgate_error> {
    // SAFETY: per the contract, non-NULL `err` points to a live `jevgate_error`.
    unsafe { err.as_ref() }
}

/// The stable error code (e.g. `"JEV_INVALID_CONFIGURATION"`), or NULL for a NULL error.
/// Valid until the error is freed.
///
/// # Safety
/// `err` must be NULL or a live error object from jevgate.
#[no_mangle]
pub unsafe extern "C" fn jevgate_error_code(err: *const jevgate_error) -> *const c_char {
    ffi_boundary!(on_panic(std::ptr::null()), {
        // SAFETY: forwarded contract.
        unsafe { get(err) }.map_or(std::ptr::null(), |e| e.code.as_ptr())
    })
}

/// The human-readable message (never contains secrets or page text), or NULL for a NULL error.
/// Valid until the error is freed.
///
/// # Safety
/// `err` must be NULL or a live error object from jevgate.
#[no_mangle]
pub unsafe extern "C" fn jevgate_error_message(err: *const jevgate_error) -> *const c_char {
    ffi_boundary!(on_panic(std::ptr::null()), {
        // SAFETY: forwarded contract.
        unsafe { get(err) }.map_or(std::ptr::null(), |e| e.message.as_ptr())
    })
}

/// The JSON path of the offending configuration value (`"gateway.jev.apiKeyEnv"`; `""` for the
/// document itself), or NULL when the error is not about a configuration value.
///
/// # Safety
/// `err` must be NULL or a live error object from jevgate.
#[no_mangle]
pub unsafe extern "C" fn jevgate_error_path(err: *const jevgate_error) -> *const c_char {
    ffi_boundary!(on_panic(std::ptr::null()), {
        // SAFETY: forwarded contract.
        unsafe { get(err) }
            .and_then(|e| e.path.as_ref())
            .map_or(std::ptr::null(), |p| p.as_ptr())
    })
}

/// The HTTP status a host should answer with (400, 403, 409, 500, …); 0 for a NULL error.
///
/// # Safety
/// `err` must be NULL or a live error object from jevgate.
#[no_mangle]
pub unsafe extern "C" fn jevgate_error_http_status(err: *const jevgate_error) -> u16 {
    ffi_boundary!(on_panic(0), {
        // SAFETY: forwarded contract.
        unsafe { get(err) }.map_or(0, |e| e.http_status)
    })
}

/// Milliseconds the provider asked to wait before retrying, or -1 when it did not say.
///
/// # Safety
/// `err` must be NULL or a live error object from jevgate.
#[no_mangle]
pub unsafe extern "C" fn jevgate_error_retry_after_ms(err: *const jevgate_error) -> i64 {
    ffi_boundary!(on_panic(-1), {
        // SAFETY: forwarded contract.
        unsafe { get(err) }.map_or(-1, |e| e.retry_after_ms)
    })
}

/// The fixed `validationReason` of a `JEV_MALFORMED_RESPONSE` error (`"DISTRIBUTION_SUM"`,
/// `"MISSING_ANSWER"`, …), or NULL for other errors and NULL.
///
/// # Safety
/// `err` must be NULL or a live error object from jevgate.
#[no_mangle]
pub unsafe extern "C" fn jevgate_error_validation_reason(
    err: *const jevgate_error,
) -> *const c_char {
    ffi_boundary!(on_panic(std::ptr::null()), {
        // SAFETY: forwarded contract.
        unsafe { get(err) }
            .and_then(|e| e.validation_reason.as_ref())
            .map_or(std::ptr::null(), |p| p.as_ptr())
    })
}

/// `isolatedAvailable` of a `BROWSER_CONTEXT_BUSY` error (R-PROF-2): 1 when the call may be
/// retried in isolated mode, 0 when not, -1 for other errors and NULL.
///
/// # Safety
/// `err` must be NULL or a live error object from jevgate.
#[no_mangle]
pub unsafe extern "C" fn jevgate_error_isolated_available(err: *const jevgate_error) -> i32 {
    ffi_boundary!(on_panic(-1), {
        // SAFETY: forwarded contract.
        unsafe { get(err) }
            .and_then(|e| e.isolated_available)
            .map_or(-1, i32::from)
    })
}

/// 1 when the same call may succeed if simply tried again later (after
/// `jevgate_error_retry_after_ms` when given; a Jev retry needs a fresh requestId), 0 when
/// something must change first or a retry must not happen unasked, -1 for NULL.
///
/// # Safety
/// `err` must be NULL or a live error object from jevgate.
#[no_mangle]
pub unsafe extern "C" fn jevgate_error_retryable(err: *const jevgate_error) -> i32 {
    ffi_boundary!(on_panic(-1), {
        // SAFETY: forwarded contract.
        unsafe { get(err) }.map_or(-1, |e| i32::from(e.retryable))
    })
}

/// The seed's lower-case worker code (`"timed_out"`, `"tab_unavailable"`, `"javascript_error"`,
/// `"execution_failed"`) a device result carries for this error, or NULL when it is not a
/// worker failure (and for NULL). `jevgate_error_code` stays upper snake case.
///
/// # Safety
/// `err` must be NULL or a live error object from jevgate.
#[no_mangle]
pub unsafe extern "C" fn jevgate_error_worker_code(err: *const jevgate_error) -> *const c_char {
    ffi_boundary!(on_panic(std::ptr::null()), {
        // SAFETY: forwarded contract.
        unsafe { get(err) }
            .and_then(|e| e.worker_code.as_ref())
            .map_or(std::ptr::null(), |p| p.as_ptr())
    })
}

/// Frees an error object. NULL is accepted and ignored.
///
/// # Safety
/// `err` must be NULL or an error object from jevgate, not yet freed.
#[no_mangle]
pub unsafe extern "C" fn jevgate_error_free(err: *mut jevgate_error) {
    ffi_boundary!(on_panic(()), {
        // SAFETY: per the contract, `err` came from `Box::into_raw` in `jevgate_error::boxed`.
        drop(unsafe { take_handle(err) });
    })
}
