//! The C ABI (R-C): translation only, no logic. Built with the `capi` cargo feature (the C
//! libraries: `cargo rustc --lib --features capi --crate-type cdylib --crate-type staticlib`).
//!
//! Conventions (after rustls-ffi and hyper's `ffi`): opaque handles; `_open`/`_close` and
//! `_free` functions accept NULL; every fallible call returns a `jevgate_status` and writes
//! its outputs only on success; on failure it writes a `jevgate_error` to `err_out` when that
//! is not NULL. Strings are UTF-8 and NUL-terminated in both directions; strings returned to the
//! caller are freed with `jevgate_string_free`. NULL pointers and invalid UTF-8 are errors
//! (`INVALID_ARGUMENT`), never undefined behaviour. The whole body of every exported function is
//! one `ffi_boundary!` (tests/header.rs checks it for every function of the header): a panic
//! never crosses into C (`INTERNAL`, status `JEVGATE_PANIC`, or the function's panic value).
//! A helper that reads a raw pointer is an `unsafe fn` with a `# Safety` contract. Closing a
//! handle (`jevgate_gateway_close`) is thread-safe and keeps it valid; only `_free` releases it.
#![allow(unsafe_code)] // reason: this module is the C boundary; every unsafe block is commented
#![allow(non_camel_case_types)] // reason: C names (jevgate_status, jevgate_error) are the API

/// The one panic boundary of the C ABI (after rustls-ffi's `ffi_panic_boundary!`): the whole
/// body of every exported function is this macro's argument, so no panic unwinds into C and no
/// export can forget the boundary (tests/header.rs checks every function of the header).
///
/// - `ffi_boundary!(err_out, { body })`: a fallible call. `body` returns `Result<(), Error>`;
///   `Ok` is `JEVGATE_OK`, `Err` a status plus an error object written to `err_out` (when not
///   NULL), a panic `JEVGATE_PANIC` with an `INTERNAL` error object.
/// - `ffi_boundary!(on_panic(value), { body })`: a call without an error slot (getters,
///   `_free`, `_close`, the manual clock). `body` returns the function's value; a panic
///   returns `value` (`()` for functions without a result).
macro_rules! ffi_boundary {
    (on_panic($on_panic:expr), $body:block) => {
        ::std::panic::catch_unwind(::std::panic::AssertUnwindSafe(|| $body)).unwrap_or($on_panic)
    };
    ($err_out:expr, $body:block) => {{
        let err_out: *mut *mut $crate::ffi::jevgate_error = $err_out;
        // The body is built outside the `unsafe` block so that it keeps its own, commented
        // `unsafe` blocks.
        let body = || -> ::core::result::Result<(), $crate::Error> { $body };
        // SAFETY: `err_out` is the export's own error slot: NULL or writable per its contract.
        unsafe { $crate::ffi::guard(err_out, body) }
    }};
}

mod agent;
mod browser;
mod client;
mod computer;
mod config;
mod device;
mod error;
mod gateway;
mod grammar;
mod jev;
mod lease;
mod managed;
mod task;
mod worker;

pub use agent::*;
pub use browser::*;
pub use client::*;
pub use computer::*;
pub use config::*;
pub use device::*;
pub use error::*;
pub use gateway::*;
pub use grammar::*;
pub use jev::*;
pub use lease::*;
pub use managed::*;
pub use task::*;
pub use worker::*;

use crate::Error;
use std::ffi::{c_char, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// The result of every fallible C call.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum jevgate_status {
    /// Success; outputs were written.
    JEVGATE_OK = 0,
    /// Failure; the error object says why (`jevgate_error_code`).
    JEVGATE_ERROR = 1,
    /// A pointer argument was NULL or a string was not valid UTF-8.
    JEVGATE_INVALID_ARGUMENT = 2,
    /// jevgate panicked; the call had no effect it could guarantee. Please report it.
    JEVGATE_PANIC = 3,
}

/// The NUL-terminated version string of the library, e.g. `"0.1.0"`. Static; do not free.
#[no_mangle]
pub extern "C" fn jevgate_version() -> *const c_char {
    ffi_boundary!(on_panic(std::ptr::null()), {
        concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
    })
}

/// Frees a string returned by jevgate. NULL is accepted and ignored.
///
/// # Safety
/// `s` must be NULL or a string returned by a jevgate function, not yet freed.
#[no_mangle]
pub unsafe extern "C" fn jevgate_string_free(s: *mut c_char) {
    ffi_boundary!(on_panic(()), {
        if !s.is_null() {
            // SAFETY: per the contract, `s` came from `CString::into_raw` in this library.
            drop(unsafe { CString::from_raw(s) });
        }
    })
}

/// The fallible arm of [`ffi_boundary!`] (call the macro, not this): runs an exported
/// function's body behind the panic boundary, turning `Err` into a status plus an error object
/// written to `err_out`.
///
/// # Safety
/// `err_out` must be NULL or writable storage for one pointer.
pub(crate) unsafe fn guard(
    err_out: *mut *mut jevgate_error,
    body: impl FnOnce() -> Result<(), Error>,
) -> jevgate_status {
    let (status, err) = match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => return jevgate_status::JEVGATE_OK,
        Ok(Err(e)) => {
            let status = match e {
                Error::InvalidArgument { .. } => jevgate_status::JEVGATE_INVALID_ARGUMENT,
                _ => jevgate_status::JEVGATE_ERROR,
            };
            (status, e)
        }
        Err(_) => (
            jevgate_status::JEVGATE_PANIC,
            Error::Internal {
                reason: "a panic was caught at the C boundary".into(),
            },
        ),
    };
    if let Some(err_out) = opt_out(err_out) {
        // SAFETY: per the contract, writable storage for one pointer. (A write cannot fail.)
        let _ = unsafe { err_out.write(jevgate_error::boxed(&err)) };
    }
    status
}

/// Borrows a NUL-terminated UTF-8 argument.
///
/// # Safety
/// `ptr` must be NULL or point to a NUL-terminated string valid for the call.
pub(crate) unsafe fn str_arg<'a>(name: &'static str, ptr: *const c_char) -> Result<&'a str, Error> {
    if ptr.is_null() {
        return Err(null_arg(name));
    }
    // SAFETY: non-NULL and NUL-terminated per the caller's contract.
    let c = unsafe { CStr::from_ptr(ptr) };
    c.to_str().map_err(|_| Error::InvalidArgument {
        name,
        reason: "is not valid UTF-8".into(),
    })
}

/// Borrows an optional NUL-terminated UTF-8 argument: NULL is `None` (the documented default),
/// anything else is read as [`str_arg`] reads it.
///
/// # Safety
/// `ptr` must be NULL or point to a NUL-terminated string valid for the call.
pub(crate) unsafe fn opt_str_arg<'a>(
    name: &'static str,
    ptr: *const c_char,
) -> Result<Option<&'a str>, Error> {
    if ptr.is_null() {
        return Ok(None);
    }
    // SAFETY: non-NULL here; NUL-terminated per the caller's contract.
    unsafe { str_arg(name, ptr) }.map(Some)
}

/// Borrows the object behind a handle argument; NULL is `INVALID_ARGUMENT` naming it.
///
/// # Safety
/// `ptr` must be NULL or a live handle of this library, valid for the call.
pub(crate) unsafe fn handle_arg<'a, T>(name: &'static str, ptr: *const T) -> Result<&'a T, Error> {
    // SAFETY: per the contract, non-NULL `ptr` points to a live handle.
    unsafe { ptr.as_ref() }.ok_or_else(|| null_arg(name))
}

/// Takes back a handle this library gave out (`Box::into_raw`, as [`Out::write_handle`] does),
/// for `_free`/`_close`: NULL (accepted and ignored by every release function) is `None`.
///
/// # Safety
/// `ptr` must be NULL or a handle from `Box::into_raw` in this library, not yet released and
/// not used again.
pub(crate) unsafe fn take_handle<T>(ptr: *mut T) -> Option<Box<T>> {
    // SAFETY: per the contract, non-NULL `ptr` came from `Box::into_raw` and is released once.
    (!ptr.is_null()).then(|| unsafe { Box::from_raw(ptr) })
}

/// `INVALID_ARGUMENT` for a NULL pointer (or function pointer) argument.
pub(crate) fn null_arg(name: &'static str) -> Error {
    Error::InvalidArgument {
        name,
        reason: "is NULL".into(),
    }
}

/// An out-pointer checked non-NULL ([`out_arg`]) before the call does anything, so that a NULL
/// one is refused without effect; written once, on success only.
pub(crate) struct Out<T>(std::ptr::NonNull<T>);

/// Checks that a required out-pointer is non-NULL (`INVALID_ARGUMENT` naming it otherwise).
pub(crate) fn out_arg<T>(name: &'static str, ptr: *mut T) -> Result<Out<T>, Error> {
    std::ptr::NonNull::new(ptr)
        .map(Out)
        .ok_or_else(|| null_arg(name))
}

/// An optional out-pointer: NULL means the caller does not want that output.
pub(crate) fn opt_out<T>(ptr: *mut T) -> Option<Out<T>> {
    std::ptr::NonNull::new(ptr).map(Out)
}

/// Writes `value` to an optional out-pointer ([`opt_out`]); NULL writes nothing.
///
/// # Safety
/// `ptr` must be NULL or writable storage for one `T` (the export's contract).
pub(crate) unsafe fn write_opt<T>(ptr: *mut T, value: T) -> Result<(), Error> {
    match opt_out(ptr) {
        // SAFETY: forwarded contract.
        Some(out) => unsafe { out.write(value) },
        None => Ok(()),
    }
}

/// Writes `value` as JSON text ([`Out::write_json`]) to an optional string out-pointer
/// ([`opt_out`]); NULL writes (and encodes) nothing.
///
/// # Safety
/// `ptr` must be NULL or writable storage for one pointer (the export's contract).
pub(crate) unsafe fn write_opt_json<T: serde::Serialize>(
    ptr: *mut *mut c_char,
    value: &T,
) -> Result<(), Error> {
    match opt_out(ptr) {
        // SAFETY: forwarded contract.
        Some(out) => unsafe { out.write_json(value) },
        None => Ok(()),
    }
}

impl<T> Out<T> {
    /// Writes the output (the call succeeded).
    ///
    /// # Safety
    /// The pointer must be writable storage for one `T` (the export's contract).
    pub(crate) unsafe fn write(self, value: T) -> Result<(), Error> {
        // SAFETY: non-NULL (checked when made) and writable per the contract; the old content
        // is the caller's and is not read or dropped.
        unsafe { self.0.as_ptr().write(value) };
        Ok(())
    }
}

impl<H> Out<*mut H> {
    /// Writes a new handle owning `value`; [`take_handle`] releases it.
    ///
    /// # Safety
    /// As [`Out::write`].
    pub(crate) unsafe fn write_handle(self, value: H) -> Result<(), Error> {
        // SAFETY: forwarded contract.
        unsafe { self.write(Box::into_raw(Box::new(value))) }
    }
}

impl Out<*mut c_char> {
    /// Writes `s` as a string the caller frees with `jevgate_string_free`.
    ///
    /// # Safety
    /// As [`Out::write`].
    pub(crate) unsafe fn write_string(self, s: String) -> Result<(), Error> {
        let s = c_string(s)?;
        // SAFETY: forwarded contract.
        unsafe { self.write(s) }
    }

    /// Writes `value` as JSON text (the one encoder of the C surface, [`json_string`]).
    ///
    /// # Safety
    /// As [`Out::write`].
    pub(crate) unsafe fn write_json<T: serde::Serialize>(self, value: &T) -> Result<(), Error> {
        // SAFETY: forwarded contract.
        unsafe { self.write_string(json_string(value)?) }
    }
}

/// A result as JSON text (the one encoder of the C surface).
pub(crate) fn json_string<T: serde::Serialize>(value: &T) -> Result<String, Error> {
    serde_json::to_string(value).map_err(|_| Error::Internal {
        reason: "could not encode a result".into(),
    })
}

/// Hands a Rust string to C (interior NULs cannot occur in JSON output; they are refused).
fn c_string(s: String) -> Result<*mut c_char, Error> {
    CString::new(s)
        .map(CString::into_raw)
        .map_err(|_| Error::Internal {
            reason: "string with an interior NUL".into(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    // R-C: a panic inside an exported body never crosses the boundary; it becomes
    // JEVGATE_PANIC with an INTERNAL error object.
    #[test]
    fn a_panic_becomes_a_status_and_an_error_object() {
        let mut err: *mut jevgate_error = std::ptr::null_mut();
        // SAFETY: `err` is writable.
        let status = unsafe { guard(&mut err, || panic!("boom")) };
        assert_eq!(status, jevgate_status::JEVGATE_PANIC);
        assert!(!err.is_null());
        // SAFETY: `err` was just written by `guard` and is freed once below.
        unsafe {
            let code = CStr::from_ptr(jevgate_error_code(err)).to_str().unwrap();
            assert_eq!(code, "INTERNAL");
            assert_eq!(jevgate_error_http_status(err), 500);
            assert!(jevgate_error_path(err).is_null());
            jevgate_error_free(err);
        }
        // With no error slot the status alone reports it.
        // SAFETY: NULL is allowed.
        let status = unsafe { guard(std::ptr::null_mut(), || panic!("boom")) };
        assert_eq!(status, jevgate_status::JEVGATE_PANIC);
    }

    #[test]
    fn null_and_invalid_utf8_arguments_are_invalid_argument() {
        let mut err: *mut jevgate_error = std::ptr::null_mut();
        // SAFETY: NULL is an allowed input; `err` is writable.
        let status = unsafe { jevgate_config_validate(std::ptr::null(), &mut err) };
        assert_eq!(status, jevgate_status::JEVGATE_INVALID_ARGUMENT);
        // SAFETY: written above, freed once.
        unsafe { jevgate_error_free(err) };
        let bad = b"{\"a\":\xff}\0";
        let mut err: *mut jevgate_error = std::ptr::null_mut();
        // SAFETY: `bad` is NUL-terminated.
        let status = unsafe { jevgate_config_validate(bad.as_ptr().cast(), &mut err) };
        assert_eq!(status, jevgate_status::JEVGATE_INVALID_ARGUMENT);
        // SAFETY: written above; the message is NUL-terminated and lives until the free.
        unsafe {
            let msg = CStr::from_ptr(jevgate_error_message(err)).to_str().unwrap();
            assert!(
                msg.contains("config_json") && msg.contains("UTF-8"),
                "{msg}"
            );
            jevgate_error_free(err);
        }
    }

    // R-C: close leaves the handle valid and is idempotent and safe under concurrent calls
    // (each finishes or fails with GATEWAY_CLOSED); only free releases it. Before, close freed
    // the handle, so the calls below would have read freed memory (and free did not exist).
    #[test]
    fn close_keeps_the_handle_valid_under_concurrent_calls_and_free_releases_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = CString::new(dir.path().to_str().unwrap()).unwrap();
        let mut gw: *mut jevgate_gateway = std::ptr::null_mut();
        // SAFETY: valid strings and writable out-pointers.
        let status = unsafe {
            jevgate_gateway_open(path.as_ptr(), c"{}".as_ptr(), &mut gw, std::ptr::null_mut())
        };
        assert_eq!(status, jevgate_status::JEVGATE_OK);
        let addr = gw as usize;
        let started = std::sync::Arc::new(std::sync::Barrier::new(2));
        let caller = {
            let started = std::sync::Arc::clone(&started);
            std::thread::spawn(move || {
                let gw = addr as *const jevgate_gateway;
                started.wait();
                loop {
                    let mut grant: *mut c_char = std::ptr::null_mut();
                    let mut err: *mut jevgate_error = std::ptr::null_mut();
                    // SAFETY: the handle lives until the free below, after this thread joined.
                    let status = unsafe {
                        jevgate_lease_acquire(
                            gw,
                            c"dev".as_ptr(),
                            c"s".as_ptr(),
                            &mut grant,
                            &mut err,
                        )
                    };
                    // SAFETY: each output is freed once (NULL is accepted).
                    unsafe { jevgate_string_free(grant) };
                    if status == jevgate_status::JEVGATE_OK {
                        continue;
                    }
                    // SAFETY: `err` was written by the failed call; freed once.
                    let code = unsafe { CStr::from_ptr(jevgate_error_code(err)) };
                    assert_eq!(code.to_str().unwrap(), "GATEWAY_CLOSED");
                    // SAFETY: as above.
                    unsafe { jevgate_error_free(err) };
                    break;
                }
            })
        };
        started.wait();
        // SAFETY: a live handle; close may race the caller thread.
        unsafe {
            jevgate_gateway_close(gw);
            jevgate_gateway_close(gw);
        }
        caller.join().unwrap();
        let mut report: *mut c_char = std::ptr::null_mut();
        let mut err: *mut jevgate_error = std::ptr::null_mut();
        // SAFETY: the handle is closed but not freed.
        let status = unsafe { jevgate_gateway_doctor(gw, &mut report, &mut err) };
        assert_eq!(status, jevgate_status::JEVGATE_ERROR);
        assert!(report.is_null());
        // SAFETY: written above, freed once; then no thread uses the handle: free it.
        unsafe {
            assert_eq!(
                CStr::from_ptr(jevgate_error_code(err)).to_str().unwrap(),
                "GATEWAY_CLOSED"
            );
            jevgate_error_free(err);
            assert_eq!(jevgate_gateway_generation(gw), 1);
            jevgate_gateway_free(gw);
            jevgate_gateway_free(std::ptr::null_mut());
        }
    }

    #[test]
    fn outputs_are_written_only_on_success() {
        let dir = tempfile::tempdir().unwrap();
        let path = std::ffi::CString::new(dir.path().to_str().unwrap()).unwrap();
        let bad = c"{\"gateway\":{\"jev\":{\"enabled\":true}}}";
        let sentinel = std::ptr::dangling_mut::<jevgate_gateway>();
        let mut out = sentinel;
        let mut err: *mut jevgate_error = std::ptr::null_mut();
        // SAFETY: valid strings and writable out-pointers.
        let status =
            unsafe { jevgate_gateway_open(path.as_ptr(), bad.as_ptr(), &mut out, &mut err) };
        assert_eq!(status, jevgate_status::JEVGATE_ERROR);
        assert_eq!(out, sentinel, "the handle slot is untouched on failure");
        // SAFETY: written above, freed once.
        unsafe {
            let p = CStr::from_ptr(jevgate_error_path(err)).to_str().unwrap();
            assert_eq!(p, "gateway.jev.provider");
            jevgate_error_free(err);
        }
    }
}
