//! The reference device worker over the C ABI (issues 7 and 8): connect a local Chromium to a
//! gateway's channel with a device token and serve the nine browser tools from it; wait for
//! the connection to end; close.

use super::*;
use crate::browser::BrowserTools;
use crate::device::{DeviceToken, DeviceWorker, WorkerOptions};
use std::sync::Arc;
use std::time::Duration;

/// A connected device worker. Free it with `jevgate_device_worker_close`.
pub struct jevgate_device_worker {
    worker: DeviceWorker,
}

#[derive(serde::Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct WorkerJson {
    #[serde(default)]
    tls_roots_pem: Option<String>,
    #[serde(default)]
    protocol: Option<u64>,
    #[serde(default)]
    connect_timeout_ms: Option<u64>,
}

unsafe fn worker_ref<'a>(worker: *const jevgate_device_worker) -> Result<&'a DeviceWorker, Error> {
    // SAFETY: NULL or a live handle per the caller's contract.
    unsafe { worker.as_ref() }
        .map(|w| &w.worker)
        .ok_or(Error::InvalidArgument {
            name: "worker",
            reason: "is NULL".into(),
        })
}

/// Connects `browser` to the channel at `url` (`ws://…/v1/device-worker/channel` or `wss://…`)
/// as the device whose token is `token`, and serves the nine browser tools from it until the
/// gateway closes the channel or the worker is closed. Returns once the gateway answered
/// `ready`; a refusal is `DEVICE_CHANNEL_IO` naming the close code and reason (never the
/// token). `options_json` (may be NULL) is `{"tlsRootsPem"?: PEM text, "protocol"?: 2,
/// "connectTimeoutMs"?: 10000}`. The browser must outlive the worker.
///
/// # Safety
/// `url`, `token` NUL-terminated; `browser` a live handle; `options_json` NULL or
/// NUL-terminated; `worker_out` writable; `err_out` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn jevgate_device_worker_connect(
    url: *const c_char,
    token: *const c_char,
    browser: *const jevgate_local_browser,
    options_json: *const c_char,
    worker_out: *mut *mut jevgate_device_worker,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    guard(err_out, || {
        // SAFETY: forwarded contract.
        let (url, token) = unsafe { (str_arg("url", url)?, str_arg("token", token)?) };
        // SAFETY: per the contract.
        let browser = unsafe { browser.as_ref() }.ok_or(Error::InvalidArgument {
            name: "browser",
            reason: "is NULL".into(),
        })?;
        let extra: WorkerJson = if options_json.is_null() {
            WorkerJson::default()
        } else {
            // SAFETY: forwarded contract.
            let json = unsafe { str_arg("options_json", options_json) }?;
            serde_json::from_str(json).map_err(|_| Error::InvalidArgument {
                name: "options_json",
                reason: "must be {tlsRootsPem?, protocol?, connectTimeoutMs?}".into(),
            })?
        };
        out_arg("worker_out", worker_out)?;
        let mut options = WorkerOptions::new(url, DeviceToken::new(token));
        options.tls_roots_pem = extra.tls_roots_pem.map(String::into_bytes);
        if let Some(p) = extra.protocol {
            options.protocol = p;
        }
        if let Some(ms) = extra.connect_timeout_ms {
            if ms == 0 {
                return Err(Error::InvalidArgument {
                    name: "options_json",
                    reason: "connectTimeoutMs must be positive".into(),
                });
            }
            options.connect_timeout = Duration::from_millis(ms);
        }
        let tools = Arc::new(BrowserTools::new(Arc::new(browser.browser.clone())));
        let worker = DeviceWorker::connect(options, tools)?;
        // SAFETY: checked non-NULL; writable per the contract.
        unsafe { *worker_out = Box::into_raw(Box::new(jevgate_device_worker { worker })) };
        Ok(())
    })
}

/// Writes the device id the gateway answered `ready` with.
///
/// # Safety
/// `worker` a live handle; `device_id_out` writable.
#[no_mangle]
pub unsafe extern "C" fn jevgate_device_worker_device_id(
    worker: *const jevgate_device_worker,
    device_id_out: *mut *mut c_char,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    guard(err_out, || {
        // SAFETY: forwarded contract.
        let w = unsafe { worker_ref(worker) }?;
        out_arg("device_id_out", device_id_out)?;
        let s = c_string(w.device_id().to_string())?;
        // SAFETY: checked non-NULL; writable per the contract.
        unsafe { *device_id_out = s };
        Ok(())
    })
}

/// How many commands the worker has answered (0 for NULL).
///
/// # Safety
/// `worker` NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn jevgate_device_worker_commands_served(
    worker: *const jevgate_device_worker,
) -> u64 {
    // SAFETY: forwarded contract.
    unsafe { worker_ref(worker) }.map_or(0, DeviceWorker::commands_served)
}

/// Waits for the connection to end, at most `timeout_ms` (0 = without limit). Writes
/// `{"closeCode": 1008|null, "reason": "DEVICE_UNPAIRED"}` when it ended, or NULL when it is
/// still running at the timeout.
///
/// # Safety
/// `worker` a live handle; `exit_json_out` writable.
#[no_mangle]
pub unsafe extern "C" fn jevgate_device_worker_wait(
    worker: *const jevgate_device_worker,
    timeout_ms: u64,
    exit_json_out: *mut *mut c_char,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    guard(err_out, || {
        // SAFETY: forwarded contract.
        let w = unsafe { worker_ref(worker) }?;
        out_arg("exit_json_out", exit_json_out)?;
        let exit = if timeout_ms == 0 {
            Some(w.wait())
        } else {
            w.wait_timeout(Duration::from_millis(timeout_ms))
        };
        let s = match exit {
            Some(e) => {
                json_c_string(&serde_json::json!({"closeCode": e.close_code, "reason": e.reason}))?
            }
            None => std::ptr::null_mut(),
        };
        // SAFETY: checked non-NULL; writable per the contract.
        unsafe { *exit_json_out = s };
        Ok(())
    })
}

/// Closes the connection (a running command finishes first), joins the worker's threads and
/// frees the handle. NULL is accepted and ignored. The browser stays open.
///
/// # Safety
/// `worker` NULL or a live handle, not used again.
#[no_mangle]
pub unsafe extern "C" fn jevgate_device_worker_close(worker: *mut jevgate_device_worker) {
    if worker.is_null() {
        return;
    }
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: from `Box::into_raw` in `jevgate_device_worker_connect`.
        let w = unsafe { Box::from_raw(worker) };
        w.worker.close();
    }));
}
