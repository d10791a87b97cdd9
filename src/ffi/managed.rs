//! The managed-browser tool family over the C ABI (issue 15): its definitions for a set of
//! caps, the gateway's caps, workspace and turns, and one executor call per tool. JSON in and out; the result's
//! page-derived text is inside the untrusted envelope, as in Rust.

use super::gateway::gateway_ref;
use super::*;
use crate::browser::managed::{managed_tool_definitions, ManagedCall, ManagedCaps};
use crate::device::ToolFormat;

/// Parses the tool arguments (NULL = `{}`); `INVALID_ARGUMENT` `args_json` when not JSON.
///
/// # Safety
/// `args_json` NULL or NUL-terminated.
unsafe fn tool_args(args_json: *const c_char) -> Result<serde_json::Value, Error> {
    // SAFETY: forwarded contract.
    let Some(text) = unsafe { opt_str_arg("args_json", args_json) }? else {
        return Ok(serde_json::json!({}));
    };
    serde_json::from_str(text).map_err(|_| Error::InvalidArgument {
        name: "args_json",
        reason: "is not valid JSON".into(),
    })
}

/// Writes the managed tool family's definitions for the caps (`tabs` adds `browser_tabs`,
/// `files` the file tools; `vision` is reserved) as a JSON array in `format` (`"mcp"` or
/// `"openai"`) to `*tools_json_out` (free with `jevgate_string_free`).
///
/// # Safety
/// `format` NUL-terminated; `tools_json_out` writable; `err_out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn jevgate_managed_tool_definitions(
    format: *const c_char,
    tabs: bool,
    files: bool,
    vision: bool,
    tools_json_out: *mut *mut c_char,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        let f: ToolFormat = unsafe { str_arg("format", format) }?.parse()?;
        let tools_json_out = out_arg("tools_json_out", tools_json_out)?;
        let caps = ManagedCaps {
            tabs,
            files,
            vision,
        };
        // SAFETY: writable per the contract.
        unsafe { tools_json_out.write_json(&managed_tool_definitions(f, caps)) }
    })
}

/// Sets which optional managed tools the gateway serves (`jevgate_browser_tool` refuses a tool
/// outside them with `UNKNOWN_TOOL`). Default: none.
///
/// # Safety
/// `gateway` a live handle; `err_out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn jevgate_gateway_set_managed_caps(
    gateway: *const jevgate_gateway,
    tabs: bool,
    files: bool,
    vision: bool,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        let gw = unsafe { gateway_ref(gateway) }?;
        gw.set_managed_caps(ManagedCaps {
            tabs,
            files,
            vision,
        })
    })
}

/// Names the workspace directory the file tools (`browser_file_upload`,
/// `browser_download_files`) are confined to; NULL removes it (the file tools are then refused
/// with `ACCESS_DENIED` even with the `files` cap). `INVALID_ARGUMENT` `workspace` when it is
/// not an existing directory. Default: none.
///
/// # Safety
/// `gateway` a live handle; `workspace` NULL or NUL-terminated; `err_out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn jevgate_gateway_set_managed_workspace(
    gateway: *const jevgate_gateway,
    workspace: *const c_char,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        let gw = unsafe { gateway_ref(gateway) }?;
        // SAFETY: forwarded contract.
        let path = unsafe { opt_str_arg("workspace", workspace) }?;
        gw.set_managed_workspace(path.map(std::path::PathBuf::from))
    })
}

/// Begins a new turn of `thread_id` for `browser_console_messages` and
/// `browser_network_requests`: what the thread's current tab logged and requested so far is no
/// longer returned ("since this turn started"). OK when the thread has no browser session.
///
/// # Safety
/// `gateway` a live handle; `thread_id` NUL-terminated; `err_out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn jevgate_gateway_begin_browser_turn(
    gateway: *const jevgate_gateway,
    thread_id: *const c_char,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        let gw = unsafe { gateway_ref(gateway) }?;
        // SAFETY: forwarded contract.
        let thread_id = unsafe { str_arg("thread_id", thread_id) }?;
        gw.begin_browser_turn(thread_id)
    })
}

/// Runs one managed tool (`name`, e.g. `"browser_click"`, with `args_json`, a JSON object or
/// NULL) for `thread_id` of `organization` on that thread's local browser session (started on
/// first use; needs `jevgate_gateway_enable_local_browsers`), and writes the result JSON to
/// `*result_json_out` (free with `jevgate_string_free`). Errors: `UNKNOWN_TOOL`,
/// `INVALID_TOOL_ARGUMENTS` (naming the field), `TARGET_NOT_FOUND`, `STALE_OBSERVATION`,
/// `BROWSER_CONTEXT_BUSY`, `BROWSER_AUTHENTICATED_UNAVAILABLE`, …
///
/// # Safety
/// `gateway` a live handle; `thread_id`, `organization`, `name` NUL-terminated; `args_json`
/// NULL or NUL-terminated; `result_json_out` writable; `err_out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn jevgate_browser_tool(
    gateway: *const jevgate_gateway,
    thread_id: *const c_char,
    organization: *const c_char,
    name: *const c_char,
    args_json: *const c_char,
    result_json_out: *mut *mut c_char,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        let gw = unsafe { gateway_ref(gateway) }?;
        // SAFETY: forwarded contract.
        let thread_id = unsafe { str_arg("thread_id", thread_id) }?;
        // SAFETY: forwarded contract.
        let organization = unsafe { str_arg("organization", organization) }?;
        // SAFETY: forwarded contract.
        let name = unsafe { str_arg("name", name) }?;
        // SAFETY: forwarded contract.
        let args = unsafe { tool_args(args_json) }?;
        let result_json_out = out_arg("result_json_out", result_json_out)?;
        let out = gw.browser_tool(thread_id, organization, name, &args)?;
        // SAFETY: writable per the contract.
        unsafe { result_json_out.write_json(&out) }
    })
}

/// As `jevgate_browser_tool`, with the caller described by `call_json`:
/// `{"threadId","organization","profileKey"?,"authenticatedAllowed"? (default true),
/// "dataHandling"?: "standard"|"strict"}`. Strict (seed 001) runs in a strict session of the
/// thread (a standard one is replaced, never reused), always isolated, with no journal, no
/// download, no screenshot artifact; the file and journal tools are `ACCESS_DENIED`.
///
/// # Safety
/// `gateway` a live handle; `call_json`, `name` NUL-terminated; `args_json` NULL or
/// NUL-terminated; `result_json_out` writable; `err_out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn jevgate_browser_tool_call(
    gateway: *const jevgate_gateway,
    call_json: *const c_char,
    name: *const c_char,
    args_json: *const c_char,
    result_json_out: *mut *mut c_char,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        let gw = unsafe { gateway_ref(gateway) }?;
        // SAFETY: forwarded contract.
        let call = ManagedCall::from_json(unsafe { str_arg("call_json", call_json) }?)?;
        // SAFETY: forwarded contract.
        let name = unsafe { str_arg("name", name) }?;
        // SAFETY: forwarded contract.
        let args = unsafe { tool_args(args_json) }?;
        let result_json_out = out_arg("result_json_out", result_json_out)?;
        let out = gw.browser_tool_call(&call, name, &args, None)?;
        // SAFETY: writable per the contract.
        unsafe { result_json_out.write_json(&out) }
    })
}
