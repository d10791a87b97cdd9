//! Configuration validation over the C ABI.

use super::*;

/// Validates a configuration document (UTF-8 JSON). On failure the error has code
/// `JEV_INVALID_CONFIGURATION` and the JSON path of the first offending value.
///
/// # Safety
/// `config_json` must be NULL or a NUL-terminated string; `err_out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn jevgate_config_validate(
    config_json: *const c_char,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        let json = unsafe { str_arg("config_json", config_json) }?;
        crate::Config::from_json_str(json).map(|_| ())
    })
}
