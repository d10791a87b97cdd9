//! Jev evaluations over the C ABI (R-JEV): evaluate, usage, and a C function as the
//! `callback` provider.

use super::*;

/// Evaluates one call: `call_json` is `{"agentId","sessionId"?,"taskId"?,"requestId"?,"state",
/// "questions"}`; writes the evaluation `{"requestId","requestedModel","model","answers",
/// "usage","billing"?}` to `*result_json_out`. Errors carry the `JEV_*` codes, statuses and
/// (for `JEV_RATE_LIMITED`) `jevgate_error_retry_after_ms`.
///
/// # Safety
/// `gateway` a live handle; `call_json` NUL-terminated; `result_json_out` writable.
#[no_mangle]
pub unsafe extern "C" fn jevgate_evaluate(
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
        let result = gw.evaluate_json(json, None)?;
        // SAFETY: writable per the contract.
        unsafe { result_json_out.write_string(result) }
    })
}

/// Usage records of `agent_id`, newest first: writes `{"records":[…],"total":n}`; `limit`
/// 1..=100.
///
/// # Safety
/// `gateway` a live handle; `agent_id` NUL-terminated; `usage_json_out` writable.
#[no_mangle]
pub unsafe extern "C" fn jevgate_usage(
    gateway: *const jevgate_gateway,
    agent_id: *const c_char,
    limit: u32,
    offset: u64,
    usage_json_out: *mut *mut c_char,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        let gw = unsafe { gateway_ref(gateway) }?;
        // SAFETY: forwarded contract.
        let agent = unsafe { str_arg("agent_id", agent_id) }?;
        let usage_json_out = out_arg("usage_json_out", usage_json_out)?;
        let page = gw.usage(agent, limit, offset)?;
        // SAFETY: writable per the contract.
        unsafe { usage_json_out.write_json(&page) }
    })
}

/// A host's model, answering evaluations when the provider is `callback`: receives the
/// request JSON and returns a NUL-terminated response JSON (or NULL for a failure). Called on
/// whatever thread runs the evaluation, possibly several at once.
pub type jevgate_provider_fn = Option<
    unsafe extern "C" fn(
        user_data: *mut std::ffi::c_void,
        request_json: *const c_char,
    ) -> *mut c_char,
>;

/// Frees a response returned by a `jevgate_provider_fn` once jevgate has copied it.
pub type jevgate_provider_free_fn =
    Option<unsafe extern "C" fn(user_data: *mut std::ffi::c_void, response_json: *mut c_char)>;

/// The host's `user_data`, moved to whichever thread runs an evaluation.
struct UserData(*mut std::ffi::c_void);
// SAFETY: the host promises (documented on `jevgate_gateway_set_jev_callback`) that its
// callback and `user_data` may be used from any thread.
unsafe impl Send for UserData {}
// SAFETY: as above; jevgate never dereferences the pointer itself.
unsafe impl Sync for UserData {}

/// Registers `provider` (NULL removes it) as the `callback` provider; its responses go through
/// the validator like any provider's. `free_response` (may be NULL) is called with each
/// non-NULL response after jevgate copied it. `user_data` is passed first to both.
///
/// # Safety
/// `gateway` a live handle. `provider`, `free_response` and `user_data` must stay valid and be
/// safe to call from any thread, concurrently, until replaced or the gateway closes.
#[no_mangle]
pub unsafe extern "C" fn jevgate_gateway_set_jev_callback(
    gateway: *const jevgate_gateway,
    provider: jevgate_provider_fn,
    free_response: jevgate_provider_free_fn,
    user_data: *mut std::ffi::c_void,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        let gw = unsafe { gateway_ref(gateway) }?;
        let Some(provider) = provider else {
            gw.set_jev_callback(None);
            return Ok(());
        };
        let data = UserData(user_data);
        let callback: crate::jev::JevCallback = std::sync::Arc::new(move |request: &[u8]| {
            let data = &data;
            let fail = |what: &str| Error::ProviderFailure {
                reason: format!("the C callback {what}"),
            };
            let request = CString::new(request).map_err(|_| fail("got a request with a NUL"))?;
            // SAFETY: the host's contract: callable from any thread with its user_data.
            let response = unsafe { provider(data.0, request.as_ptr()) };
            if response.is_null() {
                return Err(fail("returned NULL"));
            }
            // SAFETY: the callback returned a NUL-terminated string it owns.
            let bytes = unsafe { CStr::from_ptr(response) }.to_bytes().to_vec();
            if let Some(free) = free_response {
                // SAFETY: handing the host's own string back to its own free function.
                unsafe { free(data.0, response) };
            }
            Ok(bytes)
        });
        gw.set_jev_callback(Some(callback));
        Ok(())
    })
}

/// The thinking (text) helper (R-PRV-THINK): `request_json` is
/// `{"agentId","instructions","input","timeoutMs"?}`; writes `{"text": string | null}` (null =
/// missing information). Provider or parse failures are errors, never text.
///
/// # Safety
/// `gateway` a live handle; `request_json` NUL-terminated; `thought_json_out` writable.
#[no_mangle]
pub unsafe extern "C" fn jevgate_think(
    gateway: *const jevgate_gateway,
    request_json: *const c_char,
    thought_json_out: *mut *mut c_char,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        let gw = unsafe { gateway_ref(gateway) }?;
        // SAFETY: forwarded contract.
        let json = unsafe { str_arg("request_json", request_json) }?;
        let thought_json_out = out_arg("thought_json_out", thought_json_out)?;
        let thought = gw.think(&crate::jev::ThinkRequest::from_json(json)?)?;
        // SAFETY: writable per the contract.
        unsafe { thought_json_out.write_json(&thought) }
    })
}
