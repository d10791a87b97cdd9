//! The reference device worker over the C ABI (issues 7 and 8): connect a local Chromium to a
//! gateway's channel with a device token and serve the nine browser tools from it; wait for
//! the connection to end; close.

use super::*;
use crate::browser::BrowserTools;
use crate::device::{DeviceToken, DeviceWorker, ToolExecutor, WorkerFailure, WorkerOptions};
use crate::CancelToken;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// A connected device worker. Free it with `jevgate_device_worker_close`.
pub struct jevgate_device_worker {
    worker: DeviceWorker,
}

/// Borrows the worker behind `worker`.
///
/// # Safety
/// `worker` must be NULL or a live handle from a `jevgate_device_worker_connect*` call.
unsafe fn worker_ref<'a>(worker: *const jevgate_device_worker) -> Result<&'a DeviceWorker, Error> {
    // SAFETY: forwarded contract.
    unsafe { handle_arg("worker", worker) }.map(|w| &w.worker)
}

/// Builds the options of a connect call.
///
/// # Safety
/// `url`, `token` NUL-terminated; `options_json` NULL or NUL-terminated.
unsafe fn worker_options(
    url: *const c_char,
    token: *const c_char,
    options_json: *const c_char,
) -> Result<WorkerOptions, Error> {
    // SAFETY: forwarded contract.
    let (url, token) = unsafe { (str_arg("url", url)?, str_arg("token", token)?) };
    let token = DeviceToken::new(token);
    // SAFETY: forwarded contract.
    match unsafe { opt_str_arg("options_json", options_json) }? {
        None => Ok(WorkerOptions::new(url, token)),
        Some(json) => WorkerOptions::from_json(url, token, json),
    }
}

/// Connects and writes the handle.
///
/// # Safety
/// `worker_out` NULL or writable.
unsafe fn connect_into(
    options: WorkerOptions,
    executor: Arc<dyn ToolExecutor>,
    worker_out: *mut *mut jevgate_device_worker,
) -> Result<(), Error> {
    let worker_out = out_arg("worker_out", worker_out)?;
    let worker = DeviceWorker::connect(options, executor)?;
    // SAFETY: writable per the contract.
    unsafe { worker_out.write_handle(jevgate_device_worker { worker }) }
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
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        let options = unsafe { worker_options(url, token, options_json) }?;
        // SAFETY: forwarded contract.
        let browser = unsafe { handle_arg("browser", browser) }?;
        let tools = Arc::new(BrowserTools::new(Arc::new(browser.browser.clone())));
        // SAFETY: forwarded contract.
        unsafe { connect_into(options, tools, worker_out) }
    })
}

/// A host's tool server for `jevgate_device_worker_connect_with`: receives the tool name and
/// its arguments JSON and returns a NUL-terminated result JSON in the channel's shape,
/// `{"success":true,"result":…}` or `{"success":false,"errorCode":…,"message":…}` (NULL =
/// `execution_failed`). Called on the worker's executor thread, one command at a time.
pub type jevgate_tool_fn = Option<
    unsafe extern "C" fn(
        user_data: *mut std::ffi::c_void,
        tool: *const c_char,
        args_json: *const c_char,
    ) -> *mut c_char,
>;

/// Frees a result returned by a `jevgate_tool_fn` once jevgate has copied it.
pub type jevgate_tool_free_fn =
    Option<unsafe extern "C" fn(user_data: *mut std::ffi::c_void, result_json: *mut c_char)>;

struct CExecutor {
    serve: unsafe extern "C" fn(*mut std::ffi::c_void, *const c_char, *const c_char) -> *mut c_char,
    free: jevgate_tool_free_fn,
    user_data: *mut std::ffi::c_void,
}

// SAFETY: the host promises (documented on `jevgate_device_worker_connect_with`) that its
// callbacks and `user_data` may be used from the worker's thread.
unsafe impl Send for CExecutor {}
// SAFETY: as above; commands are served one at a time and jevgate never dereferences the data.
unsafe impl Sync for CExecutor {}

impl ToolExecutor for CExecutor {
    fn execute(
        &self,
        tool: &str,
        args: &Value,
        _deadline: Duration,
        _cancel: &CancelToken,
    ) -> Result<Value, WorkerFailure> {
        let fail = |what: &str| WorkerFailure::new("execution_failed", what);
        let tool = CString::new(tool).map_err(|_| fail("the tool name holds a NUL"))?;
        let args = CString::new(args.to_string()).map_err(|_| fail("the arguments hold a NUL"))?;
        // SAFETY: the host's contract: callable from this thread with its user_data.
        let out = unsafe { (self.serve)(self.user_data, tool.as_ptr(), args.as_ptr()) };
        if out.is_null() {
            return Err(fail("the host's tool server returned nothing"));
        }
        // SAFETY: the callback returned a NUL-terminated string it owns.
        let text = unsafe { CStr::from_ptr(out) }
            .to_string_lossy()
            .into_owned();
        if let Some(free) = self.free {
            // SAFETY: handing the host's own string back to its own free function.
            unsafe { free(self.user_data, out) };
        }
        WorkerFailure::from_reply(&text)
    }
}

/// As `jevgate_device_worker_connect`, serving every command with the host's `serve` instead
/// of a local browser (a bridge to another browser driver, a test double…). `free_result` (may
/// be NULL) is called with each non-NULL result after jevgate copied it; `user_data` is passed
/// first to both.
///
/// # Safety
/// `url`, `token` NUL-terminated; `serve` non-NULL; `serve`, `free_result` and `user_data` valid
/// and callable from the worker's thread until `jevgate_device_worker_close` returns;
/// `options_json` NULL or NUL-terminated; `worker_out` writable; `err_out` NULL or writable.
#[no_mangle]
#[allow(clippy::too_many_arguments)] // reason: the C signature mirrors jevgate_device_worker_connect
pub unsafe extern "C" fn jevgate_device_worker_connect_with(
    url: *const c_char,
    token: *const c_char,
    serve: jevgate_tool_fn,
    free_result: jevgate_tool_free_fn,
    user_data: *mut std::ffi::c_void,
    options_json: *const c_char,
    worker_out: *mut *mut jevgate_device_worker,
    err_out: *mut *mut jevgate_error,
) -> jevgate_status {
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        let options = unsafe { worker_options(url, token, options_json) }?;
        let serve = serve.ok_or_else(|| null_arg("serve"))?;
        let executor = Arc::new(CExecutor {
            serve,
            free: free_result,
            user_data,
        });
        // SAFETY: forwarded contract.
        unsafe { connect_into(options, executor, worker_out) }
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
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        let w = unsafe { worker_ref(worker) }?;
        let device_id_out = out_arg("device_id_out", device_id_out)?;
        // SAFETY: writable per the contract.
        unsafe { device_id_out.write_string(w.device_id().to_string()) }
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
    ffi_boundary!(on_panic(0), {
        // SAFETY: forwarded contract.
        unsafe { worker_ref(worker) }.map_or(0, DeviceWorker::commands_served)
    })
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
    ffi_boundary!(err_out, {
        // SAFETY: forwarded contract.
        let w = unsafe { worker_ref(worker) }?;
        let exit_json_out = out_arg("exit_json_out", exit_json_out)?;
        let exit = if timeout_ms == 0 {
            Some(w.wait())
        } else {
            w.wait_timeout(Duration::from_millis(timeout_ms))
        };
        // SAFETY: writable per the contract.
        unsafe {
            match exit {
                Some(e) => exit_json_out.write_json(&e),
                None => exit_json_out.write(std::ptr::null_mut()),
            }
        }
    })
}

/// Closes the connection (a running command finishes first), joins the worker's threads and
/// frees the handle. NULL is accepted and ignored. The browser stays open.
///
/// # Safety
/// `worker` NULL or a live handle, not used again.
#[no_mangle]
pub unsafe extern "C" fn jevgate_device_worker_close(worker: *mut jevgate_device_worker) {
    ffi_boundary!(on_panic(()), {
        // SAFETY: per the contract; made by `connect_into`.
        if let Some(w) = unsafe { take_handle(worker) } {
            w.worker.close();
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::CancelledInQueue;
    use parking_lot::{Condvar, Mutex};

    /// The host's state behind `user_data`: the arguments of every command served, and a gate
    /// that holds the first command until the scripted gateway releases it.
    struct Host {
        served: Mutex<Vec<String>>,
        open: Mutex<bool>,
        opened: Condvar,
    }

    unsafe extern "C" fn serve(
        user_data: *mut std::ffi::c_void,
        _tool: *const c_char,
        args_json: *const c_char,
    ) -> *mut c_char {
        // SAFETY: the test passes a live `Host` and jevgate a NUL-terminated string.
        let (host, args) = unsafe { (&*(user_data as *const Host), CStr::from_ptr(args_json)) };
        host.served.lock().push(args.to_string_lossy().into_owned());
        let mut open = host.open.lock();
        while !*open {
            host.opened.wait(&mut open);
        }
        CString::new(r#"{"success":true,"result":{"text":"served by C"}}"#)
            .map_or(std::ptr::null_mut(), CString::into_raw)
    }

    unsafe extern "C" fn free_result(_user_data: *mut std::ffi::c_void, result: *mut c_char) {
        // SAFETY: `serve` made it with `CString::into_raw`.
        drop(unsafe { CString::from_raw(result) });
    }

    // Issue 19 item 1, R-DEV-CHAN: through the C executor (which has no check of its own), a
    // command cancelled while it waits in the worker's queue is answered `cancelled` by the
    // core job loop and the host's callback never sees it.
    #[test]
    fn a_command_cancelled_in_the_queue_never_reaches_the_c_callback() {
        let gateway = CancelledInQueue::bind();
        let host = Host {
            served: Mutex::new(Vec::new()),
            open: Mutex::new(false),
            opened: Condvar::new(),
        };
        let url = CString::new(gateway.url()).unwrap();
        let token = CString::new("jgd_x").unwrap();
        let results = std::thread::scope(|scope| {
            let script = scope.spawn(|| {
                gateway.serve(|| {
                    *host.open.lock() = true;
                    host.opened.notify_all();
                })
            });
            let mut worker: *mut jevgate_device_worker = std::ptr::null_mut();
            // SAFETY: valid strings and out-pointer; `host` outlives the worker (closed below).
            let status = unsafe {
                jevgate_device_worker_connect_with(
                    url.as_ptr(),
                    token.as_ptr(),
                    Some(serve),
                    Some(free_result),
                    &host as *const Host as *mut std::ffi::c_void,
                    std::ptr::null(),
                    &mut worker,
                    std::ptr::null_mut(),
                )
            };
            assert_eq!(status, jevgate_status::JEVGATE_OK);
            let results = script.join().unwrap();
            // SAFETY: the live handle from the connect above, closed once.
            unsafe { jevgate_device_worker_close(worker) };
            results
        });
        assert_eq!(*host.served.lock(), vec![r#"{"n":1}"#.to_string()]);
        assert_eq!(results[0].0, "c1");
        assert_eq!(results[1].0, "c2");
        assert_eq!(
            results[1].1.as_ref().unwrap_err().0,
            "cancelled",
            "{results:?}"
        );
    }
}
