//! The claim step every command to a paired browser takes before anything is sent (R-DEV-FAIL,
//! R-LEASE-1..3): the device check, its live connection, and the control lease acquired
//! together with the command's cancellation hook, in that order — shared by tool dispatch
//! (`dispatch.rs`) and the task layer's primitives (`primitive.rs`).
//!
//! Owns only that step (and its first half, [`reach_anywhere`], for the one question that is
//! not control: `operation_status`). A device with no connection here that another live
//! process of the fleet holds (issue 23 item 4) is claimed the same way, with the same refusals
//! in the same order and the lease taken here; its [`Route`] carries the command there.
//! Choosing the device (an explicit id, or the owner's only browser) and what a take-back that
//! came right after the acquire means for the answer stay with each caller. It must never send anything, never retry, and never release the lease early: the
//! returned [`AnyClaim`] holds the command's registration until the caller drops it.

use super::executor::ToolExecutor;
use super::hub::{Conn, Hub};
use super::registry::{Capability, DeviceRecord};
use super::remote::Remote;
use crate::lease::{CommandGuard, Leases};
use crate::{CancelToken, Error};
use std::sync::Arc;

// Test seam: runs on the claiming thread right after the lease step, before anything is sent —
// exactly where a take-back used to find nothing to cancel.
#[cfg(test)]
thread_local! {
    pub(crate) static AFTER_LEASE: std::cell::RefCell<Option<Box<dyn FnOnce()>>> =
        const { std::cell::RefCell::new(None) };
}

/// Where a command for a device goes: its live connection here, or the carrier to the other
/// live process of the fleet holding it (issue 23 item 4).
pub(crate) enum Route {
    /// Connected to this process.
    Here(Arc<Conn>),
    /// Connected to another process: the executor carries the command there.
    Elsewhere(Arc<dyn ToolExecutor>),
}

impl Route {
    /// The route as dispatch's executor.
    pub(crate) fn executor(&self) -> Arc<dyn ToolExecutor> {
        match self {
            Route::Here(conn) => Arc::clone(conn) as Arc<dyn ToolExecutor>,
            Route::Elsewhere(e) => Arc::clone(e),
        }
    }
}

/// A device claimed for one command: where it goes, and the command's cancel token, fired by
/// a take-back (R-LEASE-3) for as long as the claim lives.
pub(crate) struct AnyClaim {
    /// The device's connection here, or the carrier to its process.
    pub(crate) route: Route,
    /// Fired when the person takes the device back while the command runs.
    pub(crate) cancel: CancelToken,
    _command: CommandGuard,
}

/// Claims `device` for one command of `root_session`, wherever in the fleet it is connected:
/// `DEVICE_CAPABILITY_MISMATCH` (not of capability `want`, or too old), `DEVICE_OFFLINE` (connected
/// nowhere alive), then the lease's refusals (`DEVICE_CONTROL_ELSEWHERE`,
/// `DEVICE_CONTROL_REVOKED`). The lease is acquired here and the command registered for
/// cancellation in one step ([`Leases::acquire_command`]), the same for a device connected to
/// another process (then the route carries the command there, and a take-back cancels it).
pub(crate) fn claim_anywhere(
    hub: &Hub,
    remote: Option<&Remote>,
    leases: &Leases,
    device: &DeviceRecord,
    want: Capability,
    root_session: &str,
) -> Result<AnyClaim, Error> {
    let route = reach_anywhere(hub, remote, device, want)?;
    let cancel = CancelToken::new();
    let (_, command) = {
        let cancel = cancel.clone();
        leases.acquire_command(&device.id, root_session, move || cancel.cancel())?
    };
    #[cfg(test)]
    if let Some(hook) = AFTER_LEASE.with(|h| h.borrow_mut().take()) {
        hook();
    }
    Ok(AnyClaim {
        route,
        cancel,
        _command: command,
    })
}

/// [`reach`] across the fleet: the connection here, else the carrier to the other live process
/// holding the device's connection, else `DEVICE_OFFLINE`. Without the control lease; alone
/// only for a question that is not control (`operation_status`).
pub(crate) fn reach_anywhere(
    hub: &Hub,
    remote: Option<&Remote>,
    device: &DeviceRecord,
    want: Capability,
) -> Result<Route, Error> {
    match (reach(hub, device, want), remote) {
        (Ok(conn), _) => Ok(Route::Here(conn)),
        (Err(Error::DeviceOffline), Some(remote)) => {
            let process = remote
                .known(&device.id)?
                .and_then(|e| e.process)
                .ok_or(Error::DeviceOffline)?;
            Ok(Route::Elsewhere(remote.executor(&device.id, process)))
        }
        (Err(e), _) => Err(e),
    }
}

/// The device's live connection here, without the control lease: `DEVICE_CAPABILITY_MISMATCH`
/// (not of capability `want` — a browser for browser commands, a computer helper for computer
/// ones, issue 25 — or a browser too old), then `DEVICE_OFFLINE`. The first half of
/// [`reach_anywhere`].
pub(crate) fn reach(
    hub: &Hub,
    device: &DeviceRecord,
    want: Capability,
) -> Result<Arc<Conn>, Error> {
    if device.capability != want || device.outdated() {
        return Err(Error::DeviceCapabilityMismatch);
    }
    hub.get(&device.id).ok_or(Error::DeviceOffline)
}

/// The unit tests' fixture of both callers: a device service as the gateway opens it (the
/// gateway sits above this module), one browser paired for `alice` and a real worker connected
/// on a loopback channel, whose executor counts the commands that reach it.
#[cfg(test)]
pub(crate) mod fixture {
    use crate::clock::{SharedClock, SystemClock};
    use crate::device::{
        BrowserInfo, ChannelHandle, ChannelOptions, DeviceService, DeviceWorker, PairRequest,
        ToolExecutor, WorkerFailure, WorkerOptions,
    };
    use crate::lease::Leases;
    use crate::store::Store;
    use crate::CancelToken;
    use serde_json::Value;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    /// A worker's executor that counts the commands that reached it and answers `answer`.
    struct Counting {
        reached: Arc<AtomicUsize>,
        answer: Value,
    }

    impl ToolExecutor for Counting {
        fn execute(
            &self,
            _tool: &str,
            _args: &Value,
            _deadline: Duration,
            _cancel: &CancelToken,
        ) -> Result<Value, WorkerFailure> {
            self.reached.fetch_add(1, Ordering::SeqCst);
            Ok(self.answer.clone())
        }
    }

    /// One paired, connected browser (see the module's `fixture`).
    pub(crate) struct Paired {
        pub(crate) store: Arc<Store>,
        pub(crate) leases: Leases,
        pub(crate) devices: DeviceService,
        /// The paired device's id.
        pub(crate) device: String,
        /// How many commands reached the worker's executor.
        pub(crate) reached: Arc<AtomicUsize>,
        worker: DeviceWorker,
        _channel: ChannelHandle,
        _dir: tempfile::TempDir,
    }

    impl Paired {
        /// Pairs `alice`'s laptop and connects a worker that answers every command `answer`.
        pub(crate) fn new(answer: Value) -> Paired {
            let dir = tempfile::tempdir().unwrap();
            let store = Arc::new(Store::open(dir.path()).unwrap());
            let clock: SharedClock = Arc::new(SystemClock::new());
            let leases = Leases::open(Arc::clone(&store), Arc::clone(&clock), None).unwrap();
            let devices = DeviceService::open(
                Arc::clone(&store),
                None,
                clock,
                &leases,
                dir.path().to_path_buf(),
            )
            .unwrap();
            let channel = devices
                .serve(&leases, ChannelOptions::new("127.0.0.1:0"))
                .unwrap();
            let pairing = devices
                .pair(
                    &leases,
                    "alice",
                    &PairRequest {
                        installation_id: "alice-install".into(),
                        name: "laptop".into(),
                        browser: Some(BrowserInfo {
                            name: "Chromium".into(),
                            version: "131".into(),
                        }),
                    },
                )
                .unwrap();
            let reached = Arc::new(AtomicUsize::new(0));
            let worker = DeviceWorker::connect(
                WorkerOptions::new(channel.url(), pairing.token),
                Arc::new(Counting {
                    reached: Arc::clone(&reached),
                    answer,
                }),
            )
            .unwrap();
            Paired {
                store,
                leases,
                devices,
                device: pairing.device.id,
                reached,
                worker,
                _channel: channel,
                _dir: dir,
            }
        }

        /// How many commands reached the worker so far.
        pub(crate) fn reached(&self) -> usize {
            self.reached.load(Ordering::SeqCst)
        }

        /// Closes the worker, the device service, the leases and the store, in that order.
        pub(crate) fn close(self) {
            self.worker.close();
            self.devices.close();
            self.leases.close_all();
            self.store.close();
        }
    }
}
