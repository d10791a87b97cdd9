//! The device unit tests' fixture (`#[cfg(test)]` only): the device service as the gateway
//! opens it (the gateway sits above this module) — a real store in a temporary directory, the
//! system clock, the lease manager — with a channel on loopback, one browser paired for
//! `alice`, and the library's own worker connected as it, serving every command with an
//! executor that counts what reaches it. tests/support/gateway.rs is its integration-test twin.
//!
//! Owns: building and closing that world. Never: asserts a behaviour (the tests do), or sleeps.

use super::{
    BrowserInfo, CancelToken, ChannelHandle, ChannelOptions, DeviceService, DeviceWorker,
    PairRequest, ToolExecutor, WorkerFailure, WorkerOptions,
};
use crate::clock::{SharedClock, SystemClock};
use crate::lease::Leases;
use crate::store::Store;
use serde_json::Value;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A device service with alice's browser connected through a counting worker.
pub(crate) struct Fixture {
    pub(crate) leases: Leases,
    pub(crate) devices: DeviceService,
    /// Alice's device id.
    pub(crate) device: String,
    reached: Arc<AtomicUsize>,
    worker: DeviceWorker,
    store: Arc<Store>,
    _channel: ChannelHandle,
    _dir: tempfile::TempDir,
}

impl Fixture {
    /// Opens the world; the worker answers every command with `answer`.
    pub(crate) fn open(answer: Value) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(Store::open(dir.path()).unwrap());
        let clock: SharedClock = Arc::new(SystemClock::new());
        let leases = Leases::open(Arc::clone(&store), Arc::clone(&clock)).unwrap();
        let devices =
            DeviceService::open(Arc::clone(&store), clock, &leases, dir.path().to_path_buf())
                .unwrap();
        let channel = devices.serve(ChannelOptions::new("127.0.0.1:0")).unwrap();
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
        Fixture {
            leases,
            devices,
            device: pairing.device.id,
            reached,
            worker,
            store,
            _channel: channel,
            _dir: dir,
        }
    }

    /// How many commands reached the worker's executor.
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

/// A worker's executor that counts the commands that reached it.
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
