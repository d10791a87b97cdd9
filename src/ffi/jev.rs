//! The Jev response validator over the C ABI (R-VAL).

use super::*;

/// Validates a provider response against the questions (both UTF-8 JSON) and, when every
/// answer is valid, writes the answers object as JSON to `*answers_json_out` (numbers exactly
/// as the provider sent them). A failure is `JEV_MALFORMED_RESPONSE` with
/// `jevgate_error_validation_reason` (`DISTRIBUTION_SUM`, …), or `JEV_INVALID_REQUEST` when the
/// questions themselves are invalid.
///
/// # Safety
/// Strings NUL-terminated; `answers_json_out` writable; `err_out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn jevgate_validate_response(
    questions_json: *const c_char,
    response_json: *const c_char,
    answers_json_out: *mut *mut c_char,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        let q = unsafe { str_arg("questions_json", questions_json) }?;
        // SAFETY: forwarded contract.
        let r = unsafe { str_arg("response_json", response_json) }?;
        let answers_json_out = out_arg("answers_json_out", answers_json_out)?;
        let answers = crate::jev::validate_to_json(q.as_bytes(), r.as_bytes())?;
        // SAFETY: writable per the contract.
        unsafe { answers_json_out.write_string(answers) }
    })
}

/// Writes the JSON Schema of a valid answers object for the questions (R-VAL-SCHEMA) to
/// `*schema_json_out`. Distribution sums cannot be expressed in JSON Schema and are not.
///
/// # Safety
/// `questions_json` NUL-terminated; `schema_json_out` writable; `err_out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn jevgate_answer_schema(
    questions_json: *const c_char,
    schema_json_out: *mut *mut c_char,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        let q = unsafe { str_arg("questions_json", questions_json) }?;
        let schema_json_out = out_arg("schema_json_out", schema_json_out)?;
        let schema = crate::jev::answer_schema_json(q.as_bytes())?;
        // SAFETY: writable per the contract.
        unsafe { schema_json_out.write_string(schema) }
    })
}
