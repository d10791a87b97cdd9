//! Devices over the C ABI (SPEC §5): pairing, inventory, the channel server, tool calls, tool
//! definitions and screenshot artifact retention. JSON in and out.

use super::*;
use crate::device::{ChannelHandle, ChannelOptions, PairRequest, ToolCall, ToolFormat};

/// Pairs a device for `owner`. `request_json` is
/// `{"installationId","name","browser"?:{"name","version"}}`; writes
/// `{"device":{…},"token":"…"}` — the token is shown this once; only its hash is stored.
///
/// # Safety
/// `gateway` a live handle; strings NUL-terminated; `pairing_json_out` writable.
#[no_mangle]
pub unsafe extern "C" fn jevgate_pair(
    gateway: *const jevgate_gateway,
    owner: *const c_char,
    request_json: *const c_char,
    pairing_json_out: *mut *mut c_char,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        unsafe {
            pair_with(
                gateway,
                owner,
                request_json,
                pairing_json_out,
                |gw, o, r| gw.pair(o, r),
            )
        }
    })
}

/// The body of [`jevgate_pair`] and `jevgate_pair_computer`: reads the arguments, pairs with
/// `pair`, writes the pairing's JSON.
///
/// # Safety
/// As [`jevgate_pair`].
pub(super) unsafe fn pair_with(
    gateway: *const jevgate_gateway,
    owner: *const c_char,
    request_json: *const c_char,
    pairing_json_out: *mut *mut c_char,
    pair: impl FnOnce(&crate::Gateway, &str, &PairRequest) -> Result<crate::device::Pairing, Error>,
) -> Result<(), Error> {
    // SAFETY: forwarded contract.
    let gw = unsafe { gateway_ref(gateway) }?;
    // SAFETY: forwarded contract.
    let (owner, req) = unsafe {
        (
            str_arg("owner", owner)?,
            str_arg("request_json", request_json)?,
        )
    };
    let pairing_json_out = out_arg("pairing_json_out", pairing_json_out)?;
    let pairing = pair(gw, owner, &PairRequest::from_json(req)?)?;
    // SAFETY: writable per the contract.
    unsafe { pairing_json_out.write_json(&pairing) }
}

/// Mints a one-time pairing code for `owner`, valid `ttl_ms` milliseconds (1 ..= 600,000;
/// else `INVALID_ARGUMENT`), and writes `{"code":"ABCD-EFGH","expiresAt":<unix ms>}`. The person
/// types the code into the browser extension, which redeems it once at `POST /devices/pair` on
/// the channel listener. The code is shown this once; only its hash is kept (in memory).
///
/// # Safety
/// `gateway` a live handle; `owner` NUL-terminated; `code_json_out` writable.
#[no_mangle]
pub unsafe extern "C" fn jevgate_pairing_code(
    gateway: *const jevgate_gateway,
    owner: *const c_char,
    ttl_ms: u64,
    code_json_out: *mut *mut c_char,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        let gw = unsafe { gateway_ref(gateway) }?;
        // SAFETY: forwarded contract.
        let owner = unsafe { str_arg("owner", owner) }?;
        let code_json_out = out_arg("code_json_out", code_json_out)?;
        let code = gw.pairing_code(owner, std::time::Duration::from_millis(ttl_ms))?;
        // SAFETY: writable per the contract.
        unsafe { code_json_out.write_json(&code) }
    })
}

/// Unpairs `owner`'s device: its token stops working and an open connection is closed.
///
/// # Safety
/// `gateway` a live handle; strings NUL-terminated; `err_out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn jevgate_unpair(
    gateway: *const jevgate_gateway,
    owner: *const c_char,
    device_id: *const c_char,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        let gw = unsafe { gateway_ref(gateway) }?;
        // SAFETY: forwarded contract.
        let (owner, device) =
            unsafe { (str_arg("owner", owner)?, str_arg("device_id", device_id)?) };
        gw.unpair(owner, device)
    })
}

/// Writes `owner`'s devices as a JSON array (labels, online state; never tokens).
///
/// # Safety
/// `gateway` a live handle; `owner` NUL-terminated; `devices_json_out` writable.
#[no_mangle]
pub unsafe extern "C" fn jevgate_devices(
    gateway: *const jevgate_gateway,
    owner: *const c_char,
    devices_json_out: *mut *mut c_char,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        let gw = unsafe { gateway_ref(gateway) }?;
        // SAFETY: forwarded contract.
        let owner = unsafe { str_arg("owner", owner) }?;
        let devices_json_out = out_arg("devices_json_out", devices_json_out)?;
        let devices = gw.devices(owner)?;
        // SAFETY: writable per the contract.
        unsafe { devices_json_out.write_json(&devices) }
    })
}

/// A running device-worker channel server. Stopped by `jevgate_channel_free` or when the
/// gateway closes.
pub struct jevgate_channel {
    handle: ChannelHandle,
}

/// Starts the device-worker WebSocket channel on `addr` (`"127.0.0.1:0"` picks a free port).
///
/// # Safety
/// `gateway` a live handle; `addr` NUL-terminated; `channel_out` writable.
#[no_mangle]
pub unsafe extern "C" fn jevgate_serve_channel(
    gateway: *const jevgate_gateway,
    addr: *const c_char,
    channel_out: *mut *mut jevgate_channel,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        let gw = unsafe { gateway_ref(gateway) }?;
        // SAFETY: forwarded contract.
        let addr = unsafe { str_arg("addr", addr) }?;
        let channel_out = out_arg("channel_out", channel_out)?;
        let handle = gw.serve_channel(ChannelOptions::new(addr))?;
        // SAFETY: writable per the contract.
        unsafe { channel_out.write_handle(jevgate_channel { handle }) }
    })
}

/// Starts the device-worker channel with options: `options_json` is
/// `{"addr"?, "maxConnections"?, "maxUnauthenticated"?, "maxUnauthenticatedPerAddress"?,
/// "ioThreads"?, "authTimeoutMs"?, "pingIntervalMs"?, "idleTimeoutMs"?, "maxMessageBytes"?,
/// "slowReaderBytes"?, "slowReaderTimeoutMs"?, "tlsCertPem"?, "tlsKeyPem"?}` (NULL or `{}`:
/// the defaults on `127.0.0.1:0` — 10,000 devices, 256 unauthenticated sockets, 16 per
/// address, an I/O thread per core up to 4). `INVALID_ARGUMENT` names a bad field; a
/// `maxConnections` above the open-file limit is one too.
///
/// # Safety
/// `gateway` a live handle; `options_json` NULL or NUL-terminated; `channel_out` writable.
#[no_mangle]
pub unsafe extern "C" fn jevgate_serve_channel_with(
    gateway: *const jevgate_gateway,
    options_json: *const c_char,
    channel_out: *mut *mut jevgate_channel,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        let gw = unsafe { gateway_ref(gateway) }?;
        // SAFETY: forwarded contract.
        let options = unsafe { opt_str_arg("options_json", options_json) }?;
        let channel_out = out_arg("channel_out", channel_out)?;
        let options = ChannelOptions::from_json(options.unwrap_or("{}"))?;
        let handle = gw.serve_channel(options)?;
        // SAFETY: writable per the contract.
        unsafe { channel_out.write_handle(jevgate_channel { handle }) }
    })
}

/// The channel's bound port, or 0 for NULL.
///
/// # Safety
/// `channel` NULL or a live channel.
#[no_mangle]
pub unsafe extern "C" fn jevgate_channel_port(channel: *const jevgate_channel) -> u16 {
    ffi_boundary!(on_panic(0), {
        // SAFETY: per the contract.
        unsafe { channel.as_ref() }.map_or(0, |c| c.handle.local_addr().port())
    })
}

/// Stops the channel (closes every connection, joins its threads) and frees the handle. NULL
/// is accepted and ignored.
///
/// # Safety
/// `channel` NULL or a live channel, not used again.
#[no_mangle]
pub unsafe extern "C" fn jevgate_channel_free(channel: *mut jevgate_channel) {
    ffi_boundary!(on_panic(()), {
        // SAFETY: per the contract; made by `jevgate_serve_channel`.
        if let Some(c) = unsafe { take_handle(channel) } {
            c.handle.stop();
        }
    })
}

/// Runs one browser tool: `call_json` is
/// `{"owner","rootSession","tool","args"?,"deviceId"?,"inlineImages"?,"agentId"?}` (`agentId`:
/// whose Jev evaluations `browser_autopilot` makes). Writes the tool result
/// `{"success":true,"result":…}` or `{"success":false,"errorCode":…,"message":…}` — a tool
/// failure is a result, not a call failure (the status is still `JEVGATE_OK`).
///
/// # Safety
/// `gateway` a live handle; `call_json` NUL-terminated; `result_json_out` writable.
#[no_mangle]
pub unsafe extern "C" fn jevgate_call_tool(
    gateway: *const jevgate_gateway,
    call_json: *const c_char,
    result_json_out: *mut *mut c_char,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        let gw = unsafe { gateway_ref(gateway) }?;
        // SAFETY: forwarded contract.
        let json = unsafe { str_arg("call_json", call_json) }?;
        let result_json_out = out_arg("result_json_out", result_json_out)?;
        let call = ToolCall::from_json(json)?;
        let result = gw.call_tool(&call).to_json();
        // SAFETY: writable per the contract.
        unsafe { result_json_out.write_json(&result) }
    })
}

/// Receives each `browser_autopilot` step as it happens: `line` is
/// `Autopilot: <goal> — <step>` (values masked as `[name]`; the step names a control, page
/// text), a NUL-terminated UTF-8 string borrowed for the call only (copy what you keep; do not
/// free it). Called on the thread of `jevgate_call_tool_with_progress`, before the step's
/// action is sent; keep it short and never call the gateway from it.
pub type jevgate_tool_progress_fn =
    Option<unsafe extern "C" fn(user_data: *mut std::ffi::c_void, line: *const c_char)>;

/// `jevgate_call_tool` with a progress callback (may be NULL): a `browser_autopilot` call
/// gives `progress` each step's line (see `jevgate_tool_progress_fn`) with `user_data` first
/// (R-AUTO); other tools never call it.
///
/// # Safety
/// As `jevgate_call_tool`; `progress` and `user_data` valid for the call.
#[no_mangle]
pub unsafe extern "C" fn jevgate_call_tool_with_progress(
    gateway: *const jevgate_gateway,
    call_json: *const c_char,
    progress: jevgate_tool_progress_fn,
    user_data: *mut std::ffi::c_void,
    result_json_out: *mut *mut c_char,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        let gw = unsafe { gateway_ref(gateway) }?;
        // SAFETY: forwarded contract.
        let json = unsafe { str_arg("call_json", call_json) }?;
        let result_json_out = out_arg("result_json_out", result_json_out)?;
        let call = ToolCall::from_json(json)?;
        let tell = |line: &str| {
            let Some(progress) = progress else { return };
            // A line with a NUL (never expected) is dropped, not a panic.
            let Ok(line) = CString::new(line) else { return };
            // SAFETY: the host's contract: callable on this thread with its user_data; the
            // string lives until the call returns.
            unsafe { progress(user_data, line.as_ptr()) };
        };
        let result = gw.call_tool_with_progress(&call, &tell).to_json();
        // SAFETY: writable per the contract.
        unsafe { result_json_out.write_json(&result) }
    })
}

/// Writes the nine browser tools' definitions as JSON: `format` is `"mcp"` or `"openai"`.
///
/// # Safety
/// `format` NUL-terminated; `tools_json_out` writable; `err_out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn jevgate_tool_definitions(
    format: *const c_char,
    tools_json_out: *mut *mut c_char,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        let f: ToolFormat = unsafe { str_arg("format", format) }?.parse()?;
        let tools_json_out = out_arg("tools_json_out", tools_json_out)?;
        // SAFETY: writable per the contract.
        unsafe { tools_json_out.write_json(&crate::device::tool_definitions(f)) }
    })
}

/// Writes the device tools `gateway` serves through `jevgate_call_tool` as a JSON array in
/// `format` (`"mcp"` or `"openai"`): the nine of `jevgate_tool_definitions`, and
/// `browser_autopilot` tenth when Jev is configured (R-DEV-TOOLS, R-AUTO). Free with
/// `jevgate_string_free`. `INVALID_ARGUMENT` (`format`) for any other format.
///
/// # Safety
/// `gateway` a live handle; `format` NUL-terminated; `tools_json_out` writable; `err_out` NULL
/// or writable.
#[no_mangle]
pub unsafe extern "C" fn jevgate_gateway_tool_definitions(
    gateway: *const jevgate_gateway,
    format: *const c_char,
    tools_json_out: *mut *mut c_char,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        let gw = unsafe { gateway_ref(gateway) }?;
        // SAFETY: forwarded contract.
        let f: ToolFormat = unsafe { str_arg("format", format) }?.parse()?;
        let tools_json_out = out_arg("tools_json_out", tools_json_out)?;
        // SAFETY: writable per the contract.
        unsafe { tools_json_out.write_json(&gw.device_tool_definitions(f)) }
    })
}

/// Deletes every screenshot artifact of `root_session` (call it when that conversation ends)
/// and writes how many were deleted to `*count_out` (R-DEV-SHOT). Other sessions' artifacts are
/// untouched. `STORE_IO` when a file could not be removed: the others are deleted, and a later
/// call retries that one (`*count_out` is then not written).
///
/// # Safety
/// `gateway` a live handle; `root_session` NUL-terminated; `count_out` writable; `err_out` NULL
/// or writable.
#[no_mangle]
pub unsafe extern "C" fn jevgate_gateway_delete_artifacts(
    gateway: *const jevgate_gateway,
    root_session: *const c_char,
    count_out: *mut u64,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        let gw = unsafe { gateway_ref(gateway) }?;
        // SAFETY: forwarded contract.
        let root_session = unsafe { str_arg("root_session", root_session) }?;
        let count_out = out_arg("count_out", count_out)?;
        let n = gw.delete_artifacts(root_session)?;
        // SAFETY: writable per the contract.
        unsafe { count_out.write(n as u64) }
    })
}

/// Deletes the screenshot artifacts older than the artifact retention (24 h by default) by
/// the gateway's clock and writes how many to `*count_out` (R-DEV-SHOT). The gateway also does
/// this about once a minute on its own. Errors as `jevgate_gateway_delete_artifacts`.
///
/// # Safety
/// `gateway` a live handle; `count_out` writable; `err_out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn jevgate_gateway_purge_artifacts(
    gateway: *const jevgate_gateway,
    count_out: *mut u64,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        let gw = unsafe { gateway_ref(gateway) }?;
        let count_out = out_arg("count_out", count_out)?;
        let n = gw.purge_artifacts()?;
        // SAFETY: writable per the contract.
        unsafe { count_out.write(n as u64) }
    })
}
