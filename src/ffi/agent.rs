//! The agent tools over the C ABI (issue 21 build item 8): their definitions in MCP or
//! function-calling form, and one call that executes any of them for an owner triple — so a C
//! host wires an LLM's tool calls to jevgate in one line. JSON in and out; translation only:
//! every rule and the untrusted envelope of page-derived text are the core's.

use super::gateway::gateway_ref;
use super::*;
use crate::device::ToolFormat;
use crate::task::TaskOwner;

/// Writes the agent tools' definitions (`capabilities_list`, `task_spawn`, `task_status`,
/// `task_wait`, `task_command`, `task_update`, `task_answer`, `task_cancel`, `task_receipts`,
/// `jev_evaluate`) as a JSON array in `format` (`"mcp"`: `{name, description, inputSchema}`;
/// `"openai"`: `{type: "function", function: {name, description, parameters}}`) to
/// `*tools_json_out` (free with `jevgate_string_free`). `INVALID_ARGUMENT` (`format`) for any
/// other format.
///
/// # Safety
/// `format` NUL-terminated; `tools_json_out` writable; `err_out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn jevgate_agent_tool_definitions(
    format: *const c_char,
    tools_json_out: *mut *mut c_char,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        let f: ToolFormat = unsafe { str_arg("format", format) }?.parse()?;
        let tools_json_out = out_arg("tools_json_out", tools_json_out)?;
        // SAFETY: writable per the contract.
        unsafe { tools_json_out.write_json(&crate::task::agent_tool_definitions(f)) }
    })
}

/// Writes the tools `jevgate_call_agent_tool` runs on `gateway` as a JSON array in `format`:
/// the agent tools of `jevgate_agent_tool_definitions`, and `browser_autopilot` (on the
/// principal's paired browser) when Jev is configured (R-AUTO). Free with
/// `jevgate_string_free`. `INVALID_ARGUMENT` (`format`) for any other format.
///
/// # Safety
/// `gateway` a live handle; `format` NUL-terminated; `tools_json_out` writable; `err_out` NULL
/// or writable.
#[no_mangle]
pub unsafe extern "C" fn jevgate_gateway_agent_tools(
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
        unsafe { tools_json_out.write_json(&gw.agent_tools(f)) }
    })
}

/// Runs the agent tool `name` for the owner `owner_json` (`{"agentId", "principalId",
/// "conversationId"}`) with the tool call's arguments `args_json` (a JSON object, as an LLM's
/// function call carries it; NULL or `""` is `{}`) and writes the tool's result as JSON to
/// `*result_json_out` (free with `jevgate_string_free`). Commands and answers sent this way are
/// recorded with origin `agent`. Page-derived text in a result (outcome lines, the action log,
/// a field question, receipts' results and observations, evidence) is only ever inside
/// `untrustedContent: {notice, data}`. A `task_wait` blocks up to its `timeoutMs` (at most
/// 600000).
///
/// Errors: `UNKNOWN_TOOL`, `INVALID_ARGUMENT` (`args_json` not JSON, a bad owner),
/// `INVALID_TOOL_ARGUMENTS` (naming the argument and the rule, never its value), then the task
/// API's and the Jev client's (`ACCESS_DENIED` for another owner's task or an unknown id,
/// alike; `ORCHESTRATION_DISABLED`, `REVISION_CONFLICT`, …).
///
/// # Safety
/// `gateway` a live handle; `owner_json` and `name` NUL-terminated; `args_json` NULL or
/// NUL-terminated; `result_json_out` writable; `err_out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn jevgate_call_agent_tool(
    gateway: *const jevgate_gateway,
    owner_json: *const c_char,
    name: *const c_char,
    args_json: *const c_char,
    result_json_out: *mut *mut c_char,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        let gw = unsafe { gateway_ref(gateway) }?;
        // SAFETY: forwarded contract.
        let owner = TaskOwner::from_json(unsafe { str_arg("owner_json", owner_json) }?)?;
        // SAFETY: forwarded contract.
        let name = unsafe { str_arg("name", name) }?;
        // SAFETY: forwarded contract.
        let args = unsafe { opt_str_arg("args_json", args_json) }?.unwrap_or("");
        let result_json_out = out_arg("result_json_out", result_json_out)?;
        let result = gw.call_agent_tool(&owner, name, args)?;
        // SAFETY: writable per the contract.
        unsafe { result_json_out.write_json(&result) }
    })
}
