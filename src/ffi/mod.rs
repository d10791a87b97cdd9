//! The C ABI (R-C): translation only, no logic.
//!
//! Conventions (after rustls-ffi and hyper's `ffi`): opaque handles; `_open`/`_close` and
//! `_free` functions accept NULL; every fallible call returns a `jevgate_status` and writes
//! its outputs only on success; on failure it writes a `jevgate_error` to `err_out` when that
//! is not NULL. Strings are UTF-8 and NUL-terminated in both directions; strings returned to the
//! caller are freed with `jevgate_string_free`. NULL pointers and invalid UTF-8 are errors
//! (`INVALID_ARGUMENT`), never undefined behaviour, and a panic is caught inside every exported
//! function (`INTERNAL`, status `JEVGATE_PANIC`).
#![allow(unsafe_code)] // reason: this module is the C boundary; every unsafe block is commented
#![allow(non_camel_case_types)] // reason: C names (jevgate_status, jevgate_error) are the API

mod browser;
mod client;
mod config;
mod device;
mod error;
mod gateway;
mod grammar;
mod jev;
mod lease;
mod worker;

pub use browser::*;
pub use client::*;
pub use config::*;
pub use device::*;
pub use error::*;
pub use gateway::*;
pub use grammar::*;
pub use jev::*;
pub use lease::*;
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
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

/// Frees a string returned by jevgate. NULL is accepted and ignored.
///
/// # Safety
/// `s` must be NULL or a string returned by a jevgate function, not yet freed.
#[no_mangle]
pub unsafe extern "C" fn jevgate_string_free(s: *mut c_char) {
    if s.is_null() {
        return;
    }
    // SAFETY: per the contract, `s` came from `CString::into_raw` in this library.
    let _ = catch_unwind(|| drop(unsafe { CString::from_raw(s) }));
}

/// Runs an exported function's body behind the panic boundary, turning `Err` into a status
/// plus an error object written to `err_out`.
pub(crate) fn guard(
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
    if !err_out.is_null() {
        // SAFETY: `err_out` is non-NULL and, per every function's contract, points to writable
        // storage for one pointer.
        unsafe { *err_out = jevgate_error::boxed(&err) };
    }
    status
}

/// Borrows a NUL-terminated UTF-8 argument.
///
/// # Safety
/// `ptr` must be NULL or point to a NUL-terminated string valid for the call.
pub(crate) unsafe fn str_arg<'a>(name: &'static str, ptr: *const c_char) -> Result<&'a str, Error> {
    if ptr.is_null() {
        return Err(Error::InvalidArgument {
            name,
            reason: "is NULL".into(),
        });
    }
    // SAFETY: non-NULL and NUL-terminated per the caller's contract.
    let c = unsafe { CStr::from_ptr(ptr) };
    c.to_str().map_err(|_| Error::InvalidArgument {
        name,
        reason: "is not valid UTF-8".into(),
    })
}

/// Checks that an out-pointer is non-NULL.
pub(crate) fn out_arg<T>(name: &'static str, ptr: *mut T) -> Result<(), Error> {
    if ptr.is_null() {
        Err(Error::InvalidArgument {
            name,
            reason: "is NULL".into(),
        })
    } else {
        Ok(())
    }
}

/// A result as JSON text (the one encoder of the C surface).
pub(crate) fn json_string<T: serde::Serialize>(value: &T) -> Result<String, Error> {
    serde_json::to_string(value).map_err(|_| Error::Internal {
        reason: "could not encode a result".into(),
    })
}

/// A result as a JSON C string for an out-pointer.
pub(crate) fn json_c_string<T: serde::Serialize>(value: &T) -> Result<*mut c_char, Error> {
    c_string(json_string(value)?)
}

/// Hands a Rust string to C (interior NULs cannot occur in JSON output; they are refused).
pub(crate) fn c_string(s: String) -> Result<*mut c_char, Error> {
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
        let status = guard(&mut err, || panic!("boom"));
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
        assert_eq!(
            guard(std::ptr::null_mut(), || panic!("boom")),
            jevgate_status::JEVGATE_PANIC
        );
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
