//! The step-command grammar over the C ABI (SPEC §7): pure functions, JSON out.

use super::*;

/// Borrows a command text argument (UTF-8, at most 1 MiB: `grammar::check_text`).
///
/// # Safety
/// `ptr` must be NULL or NUL-terminated.
unsafe fn text_arg<'a>(ptr: *const c_char) -> Result<&'a str, Error> {
    // SAFETY: forwarded contract.
    let text = unsafe { str_arg("text", ptr) }?;
    crate::grammar::check_text(text)?;
    Ok(text)
}

/// Shared body: a text in, a JSON string out.
///
/// # Safety
/// `text` NUL-terminated; `json_out` writable.
unsafe fn text_to_json(
    text: *const c_char,
    json_out: *mut *mut c_char,
    name: &'static str,
    f: fn(&str) -> Result<String, Error>,
) -> Result<(), Error> {
    // SAFETY: forwarded contract.
    let text = unsafe { text_arg(text) }?;
    let json_out = out_arg(name, json_out)?;
    let json = f(text)?;
    // SAFETY: writable per the contract.
    unsafe { json_out.write_string(json) }
}

/// Parses a user command (Thai or English) into its intent and writes the intent JSON, e.g.
/// `{"intent":"scroll","direction":"down"}` or `{"intent":"decide"}` (R-GRM-PARSE).
///
/// # Safety
/// `text` NUL-terminated; `intent_json_out` writable; `err_out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn jevgate_parse_command(
    text: *const c_char,
    intent_json_out: *mut *mut c_char,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        unsafe {
            text_to_json(text, intent_json_out, "intent_json_out", |t| {
                Ok(crate::grammar::parse_command(t).to_json())
            })
        }
    })
}

/// Splits a message into steps (R-GRM-STEPS): writes a JSON array of strings, or `null` when
/// the message keeps the one-command path.
///
/// # Safety
/// `text` NUL-terminated; `steps_json_out` writable; `err_out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn jevgate_split_steps(
    text: *const c_char,
    steps_json_out: *mut *mut c_char,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        unsafe {
            text_to_json(text, steps_json_out, "steps_json_out", |t| {
                json_string(&crate::grammar::split_steps(t))
            })
        }
    })
}

/// Splits one step into its parts (R-GRM-PARTS: แล้ว, จากนั้น, then): writes a JSON array.
///
/// # Safety
/// `text` NUL-terminated; `parts_json_out` writable; `err_out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn jevgate_split_parts(
    text: *const c_char,
    parts_json_out: *mut *mut c_char,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        unsafe {
            text_to_json(text, parts_json_out, "parts_json_out", |t| {
                json_string(&crate::grammar::split_parts(t))
            })
        }
    })
}

/// Checks an address produced by a model or text helper (R-GRM-URL, the strict rule) and
/// writes the URL to open as a JSON string; refused addresses fail with
/// `NAVIGATION_UNRESOLVED`.
///
/// # Safety
/// `text` NUL-terminated; `url_json_out` writable; `err_out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn jevgate_check_model_address(
    text: *const c_char,
    url_json_out: *mut *mut c_char,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        unsafe {
            text_to_json(text, url_json_out, "url_json_out", |t| {
                json_string(&crate::grammar::check_model_address(t)?)
            })
        }
    })
}
