//! The local headless Chromium over the C ABI (SPEC §6): launch, navigate, run any backend
//! command as JSON, close.

use super::gateway::gateway_ref;
use super::*;
use crate::browser::{LaunchOptions, LocalBrowser};

/// A headless Chromium started by jevgate. Close it with `jevgate_local_browser_close`
/// (which also reaps every process it started).
pub struct jevgate_local_browser {
    pub(crate) browser: LocalBrowser,
}

/// Parses `{"executable"?, "profileDir"?, "maxTabs"?, "maxUploadBytes"?}` (NULL = defaults).
///
/// # Safety
/// `options_json` NULL or NUL-terminated.
unsafe fn launch_options(options_json: *const c_char) -> Result<LaunchOptions, Error> {
    // SAFETY: forwarded contract.
    match unsafe { opt_str_arg("options_json", options_json) }? {
        None => Ok(LaunchOptions::default()),
        Some(json) => LaunchOptions::from_json(json),
    }
}

/// Starts a headless Chromium. `options_json` (may be NULL) is
/// `{"executable"?: path, "profileDir"?: path, "maxTabs"?: n, "maxUploadBytes"?: n}` (tab cap,
/// default 10, `TAB_LIMIT` past it; largest upload, default 100 MiB); without an executable,
/// `JEVGATE_CHROMIUM`, `/usr/bin/chromium`, `chromium-browser`, `google-chrome` are tried
/// (`BROWSER_UNAVAILABLE`).
///
/// # Safety
/// `options_json` NULL or NUL-terminated; `browser_out` writable; `err_out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn jevgate_local_browser_launch(
    options_json: *const c_char,
    browser_out: *mut *mut jevgate_local_browser,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        let launch = unsafe { launch_options(options_json) }?;
        let browser_out = out_arg("browser_out", browser_out)?;
        let browser = LocalBrowser::launch(launch)?;
        // SAFETY: writable per the contract.
        unsafe { browser_out.write_handle(jevgate_local_browser { browser }) }
    })
}

/// Runs one backend command, `{"tool": …, "args": {…}}` (`observe`, `snapshot`, `page_click`,
/// `page_type`, `tab_navigate`, `page_screenshot`, …), and writes its result JSON.
///
/// # Safety
/// `browser` a live handle; `command_json` NUL-terminated; `result_json_out` writable.
#[no_mangle]
pub unsafe extern "C" fn jevgate_local_browser_execute(
    browser: *const jevgate_local_browser,
    command_json: *const c_char,
    result_json_out: *mut *mut c_char,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        let b = unsafe { handle_arg("browser", browser) }?;
        // SAFETY: forwarded contract.
        let json = unsafe { str_arg("command_json", command_json) }?;
        let result_json_out = out_arg("result_json_out", result_json_out)?;
        let result = crate::browser::execute_json(&b.browser, json)?;
        // SAFETY: writable per the contract.
        unsafe { result_json_out.write_string(result) }
    })
}

/// Closes the browser (every process it started is ended and reaped) and frees the handle.
/// NULL is accepted and ignored.
///
/// # Safety
/// `browser` NULL or a live handle, not used again.
#[no_mangle]
pub unsafe extern "C" fn jevgate_local_browser_close(browser: *mut jevgate_local_browser) {
    ffi_boundary!(on_panic(()), {
        // SAFETY: per the contract; made by `jevgate_local_browser_launch`.
        if let Some(b) = unsafe { take_handle(browser) } {
            b.browser.close();
        }
    })
}

/// Serves the gateway's browser sessions (R-PROF-2..4) with local headless Chromiums started
/// on each session's first use: isolated sessions get a fresh profile, authenticated ones
/// `<data_dir>/profiles/<keyed hash>`; a session's browser closes when the lease manager closes
/// the session (idle, ceiling, mode switch, hand-over, gateway close). `options_json` (may be
/// NULL) is `{"executable"?: path}`. `INVALID_ARGUMENT` when already enabled.
///
/// # Safety
/// `gateway` a live handle; `options_json` NULL or NUL-terminated; `err_out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn jevgate_gateway_enable_local_browsers(
    gateway: *const jevgate_gateway,
    options_json: *const c_char,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        let gw = unsafe { gateway_ref(gateway) }?;
        // SAFETY: forwarded contract.
        let mut options = unsafe { launch_options(options_json) }?;
        options.profile_dir = None;
        gw.enable_local_browsers(options)
    })
}

/// Runs one backend command (`{"tool": …, "args": {…}}`, as `jevgate_local_browser_execute`)
/// in the local browser of `call`'s session, starting it on the session's first use. Needs
/// `jevgate_gateway_enable_local_browsers` (`BROWSER_UNAVAILABLE` otherwise).
///
/// # Safety
/// `gateway` and `call` live handles (the call not ended); `command_json` NUL-terminated;
/// `result_json_out` writable; `err_out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn jevgate_browser_call_execute(
    gateway: *const jevgate_gateway,
    call: *const jevgate_browser_call,
    command_json: *const c_char,
    result_json_out: *mut *mut c_char,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        let gw = unsafe { gateway_ref(gateway) }?;
        // SAFETY: per the contract.
        let session = unsafe { call.as_ref() }
            .and_then(|c| c.guard.as_ref())
            .ok_or(Error::InvalidArgument {
                name: "call",
                reason: "is NULL or already ended".into(),
            })?;
        // SAFETY: forwarded contract.
        let json = unsafe { str_arg("command_json", command_json) }?;
        let result_json_out = out_arg("result_json_out", result_json_out)?;
        let browser = gw.session_browser(session)?;
        let result = crate::browser::execute_json(&browser, json)?;
        // SAFETY: writable per the contract.
        unsafe { result_json_out.write_string(result) }
    })
}
