//! Paired devices and the browser tools (SPEC §5: R-DEV-PAIR, R-DEV-CHAN, R-DEV-VER,
//! R-DEV-FAIL, R-DEV-TOOLS, R-DEV-CAPS, R-DEV-SHOT; §6 R-BRW-UNTRUSTED).
//!
//! A person pairs their browser ([`Gateway::pair`](crate::Gateway::pair)) and gets a device
//! token once; the browser's worker keeps one WebSocket open to the channel
//! ([`Gateway::serve_channel`](crate::Gateway::serve_channel)), authenticates with its first
//! frame and then receives commands. Agents call the nine browser tools through
//! [`Gateway::call_tool`](crate::Gateway::call_tool), which picks the device, holds the control
//! lease, enforces every cap and answers `{success, result}` or `{success:false, errorCode,
//! message}`.
//!
//! A task drives a paired browser with the backend primitives of SPEC §6 instead (`observe`,
//! `page_click`, …): the crate-internal `PrimitiveSender` (`device/primitive.rs`) sends one
//! under the same device choice and control lease, without the nine tools' validation, and
//! tells "not sent" from "sent, outcome unknown" (`OUTCOME_UNKNOWN`); `task::DeviceTarget` is the
//! [`BrowserBackend`](crate::browser::BrowserBackend) over it.
//!
//! # The channel protocol (version 2)
//!
//! One JSON object per text message, at `/v1/device-worker/channel`:
//!
//! ```text
//! worker → {"type":"authenticate","authorization":"Device <token>","protocol":2}
//! gateway → {"type":"ready","deviceId":"dev_…"}
//! gateway → {"type":"command","id":"c7","tool":"browser_get_text","args":{…},"deadlineMs":60000}
//! worker → {"type":"result","id":"c7","success":true,"result":{"text":"…"}}
//! worker → {"type":"result","id":"c7","success":false,"errorCode":"tab_unavailable","message":"…"}
//! gateway → {"type":"cancel","id":"c7"}
//! either  → WebSocket ping/pong; the worker may also send {"type":"ping"} → {"type":"pong"}
//! ```
//!
//! A worker that adds `"features":["status"]` to its authenticate frame also gets
//! `{"type":"status","controlled":true,"until":<unix ms>,"autopilot":null}` after `ready` and on
//! every change of its device's control lease (acquired, renewed, released, taken back,
//! expired); other workers never do.
//!
//! # Pairing with a code
//!
//! [`Gateway::pairing_code`](crate::Gateway::pairing_code) mints a one-time code
//! ([`PairingCode`], at most [`MAX_CODE_TTL`]); the same listener that serves the channel answers
//! `POST` [`PAIR_PATH`] with `{installationId, name, browser, pairingCode}` (at most
//! [`MAX_PAIR_BODY`] bytes) → `{deviceId, token}` for the code's owner, CORS for a
//! `chrome-extension://` origin; a wrong, used or expired code is one `401
//! PAIRING_CODE_INVALID`, and wrong codes are rate limited per address (`429 RATE_LIMITED`).
//!
//! Worker results per tool: `{"text"}` for read_page/get_text (the text capped to `max_chars`,
//! the fields beside it to 2,000 characters), `{"value"}` for javascript (serialized value
//! capped), `{"image","mediaType"}` for browser_computer's screenshot/zoom (base64 ≤ 150,000
//! characters, stored as an artifact; other fields ≤ 2,000), any JSON for the rest (≤ 50,000
//! characters serialized). Every cap holds whatever shape a worker answers with; a cut result
//! says `truncated: true`. `browser_batch` is never sent as such: the gateway runs its actions
//! one by one.
//!
//! # The reference worker
//!
//! [`DeviceWorker`] is the worker side of this protocol; with
//! [`crate::browser::BrowserTools`] it serves the nine tools from a local headless Chromium.
//! The `jevgate-worker` binary is exactly that (`jevgate-worker --url <channel url>`, token in
//! `JEVGATE_DEVICE_TOKEN` or `--token-file`).
//!
//! # Untrusted content (R-BRW-UNTRUSTED)
//!
//! Everything a worker returns is page-derived and sits under `result.untrustedContent`, one
//! fixed envelope `{"notice": UNTRUSTED_NOTICE, "data": …}` ([`crate::untrusted::wrap_value`]);
//! the fields beside it (`truncated`, `maxChars`, `artifactId`, `mediaType`, `bytes`, and a
//! batch's per-action statuses) are the gateway's own. Text that is shown outside a tool result (a snapshot from
//! [`crate::browser::LocalBrowser`], the `observe` CLI) uses the text form of the same
//! envelope, [`crate::untrusted::wrap_text`]; a worker returns page text unwrapped so that
//! nothing is ever wrapped twice.
//!
//! Logging: jevgate logs codes, device ids, sizes and durations only. The channel's WebSocket
//! (handshake and frames) is jevgate's own (`device/wire.rs`), which logs nothing, so no frame — the
//! token in `authenticate`, typed text, page text — reaches a log record at any level.
//!
//! This module must never log or store a device token after pairing, page content, field
//! values or screenshots; never retry a command; and never tell one owner about another owner's
//! devices.
//!
//! ```
//! use jevgate::device::{ChannelOptions, PairRequest, BrowserInfo, ToolCall};
//! # let dir = tempfile::tempdir().unwrap();
//! # let gw = jevgate::Gateway::open(jevgate::GatewayOptions::new(dir.path(), Default::default())).unwrap();
//! let pairing = gw.pair("alice", &PairRequest {
//!     installation_id: "ext-1".into(),
//!     name: "Work laptop".into(),
//!     browser: Some(BrowserInfo { name: "Chrome".into(), version: "131".into() }),
//! }).unwrap();
//! let channel = gw.serve_channel(ChannelOptions::new("127.0.0.1:0")).unwrap();
//! assert!(channel.url().starts_with("ws://127.0.0.1:"));
//! // No worker is connected yet: the call is not attempted.
//! let answer = gw.call_tool(&ToolCall::new("alice", "conv-1", "browser_get_text", serde_json::json!({})));
//! assert_eq!(answer.error_code(), Some("DEVICE_OFFLINE"));
//! assert_eq!(gw.devices("alice").unwrap()[0].label, "browser");
//! gw.close();
//! ```

mod artifacts;
mod caps;
mod channel;
mod claim;
pub mod computer;
mod connection;
mod dispatch;
mod executor;
pub(crate) mod frames;
mod http;
mod hub;
mod pairing;
mod primitive;
mod reconnect;
mod registry;
mod remote;
mod server;
mod socket;
mod tools;
mod watch;
mod wire;
mod worker;

pub use artifacts::Artifact;
pub(crate) use artifacts::Purger;
pub use caps::DeviceLimits;
pub use channel::{ChannelOptions, ChannelTls};
pub use dispatch::{ToolCall, ToolResult, AUTOPILOT_AGENT};
pub use executor::{
    truncate_chars, ToolExecutor, WorkerFailure, MAX_WORKER_MESSAGE_CHARS, OUTCOME_UNKNOWN,
    RESULT_CAP_EXCEEDED, WORKER_CODES,
};
pub use http::{MAX_PAIR_BODY, PAIR_PATH};
pub use pairing::{PairingCode, MAX_CODE_TTL};
pub(crate) use primitive::{PrimitiveSender, PRIMITIVES};
pub use reconnect::{read_device_token, serve_worker, ServeEnd, WorkerControl, MAX_BACKOFF};
pub use registry::{
    BrowserInfo, Capability, Device, DeviceToken, PairRequest, Pairing, LABEL_BROWSER,
    LABEL_BROWSER_OUTDATED, LABEL_COMPUTER, LABEL_SHELL,
};
pub use server::ChannelHandle;
pub use tools::{tool_definitions, Tool, ToolFormat, TOOLS};
#[cfg(all(test, feature = "capi"))]
pub(crate) use worker::CancelledInQueue;
pub use worker::{DeviceWorker, WorkerExit, WorkerOptions};

use crate::clock::SharedClock;
use crate::lease::Leases;
use crate::store::Store;
use crate::Result;
use parking_lot::{Mutex, RwLock};
use std::path::PathBuf;
use std::sync::Arc;

/// The device side of a gateway: registry, live connections, channel servers, limits and
/// artifacts.
pub(crate) struct DeviceService {
    registry: Arc<registry::Registry>,
    hub: Arc<hub::Hub>,
    pairing: Arc<pairing::PairingCodes>,
    servers: Mutex<Vec<Arc<channel::Shared>>>,
    limits: Arc<RwLock<DeviceLimits>>,
    artifacts: Arc<artifacts::Artifacts>,
    /// The gateway's clock: every deadline of a call, a batch and a channel connection (R-CLK).
    clock: SharedClock,
    /// On the shared store: commands for devices connected to another process (issue 23
    /// item 4). Set once, by [`DeviceService::join_fleet`].
    /// Shared with the task layer's [`PrimitiveSender`]s.
    remote: Arc<std::sync::OnceLock<remote::Remote>>,
    /// The paired computers open task sessions watch (seed 003 "Computer connection status").
    computer_watch: Arc<watch::AccessWatch>,
}

impl std::fmt::Debug for DeviceService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceService").finish_non_exhaustive()
    }
}

impl DeviceService {
    /// Opens the service and tells the lease manager who owns each paired device. The registry
    /// lives in the fleet's store when the gateway has one (`shared`), else in `store`.
    pub fn open(
        store: Arc<Store>,
        shared: Option<&crate::store::SharedStore>,
        clock: SharedClock,
        leases: &Leases,
        data_dir: PathBuf,
    ) -> Result<DeviceService> {
        let registry = Arc::new(registry::Registry::new(
            crate::store::Records::new(Arc::clone(&store), shared),
            Arc::clone(&clock),
        ));
        for (device, owner) in registry.owners()? {
            leases.set_device_owner(&device, &owner)?;
        }
        let hub = Arc::new(hub::Hub::new(Arc::clone(&clock)));
        // Lease changes reach the workers that asked for `status` frames (issue 22 item 3).
        let watched = Arc::downgrade(&hub);
        leases.set_control_watcher(Arc::new(move |device: &str| {
            if let Some(hub) = watched.upgrade() {
                hub.control_changed(device);
            }
        }));
        Ok(DeviceService {
            registry,
            hub,
            pairing: Arc::new(pairing::PairingCodes::new(Arc::clone(&clock))),
            servers: Mutex::new(Vec::new()),
            limits: Arc::new(RwLock::new(DeviceLimits::default())),
            artifacts: Arc::new(artifacts::Artifacts::new(
                data_dir.join("artifacts"),
                store,
                Arc::clone(&clock),
            )),
            clock,
            remote: Arc::new(std::sync::OnceLock::new()),
            computer_watch: Arc::default(),
        })
    }

    pub fn limits(&self) -> DeviceLimits {
        self.limits.read().clone()
    }

    pub fn set_limits(&self, limits: DeviceLimits) -> Result<()> {
        limits.validate()?;
        *self.limits.write() = limits;
        Ok(())
    }

    pub fn pair(&self, leases: &Leases, owner: &str, request: &PairRequest) -> Result<Pairing> {
        pairing::pair_device(&self.registry, &self.hub, leases, owner, request, None)
    }

    /// Pairs a computer helper for `owner` (issue 25): a device of capability `computer`.
    pub fn pair_computer(
        &self,
        leases: &Leases,
        owner: &str,
        request: &PairRequest,
    ) -> Result<Pairing> {
        pairing::pair_device(
            &self.registry,
            &self.hub,
            leases,
            owner,
            request,
            Some(Capability::Computer),
        )
    }

    /// A one-time pairing code for `owner` (R-DEV-PAIR, issue 22 item 2).
    pub fn pairing_code(&self, owner: &str, ttl: std::time::Duration) -> Result<PairingCode> {
        let code = self.pairing.mint(owner, ttl)?;
        log::info!("pairing code minted");
        Ok(code)
    }

    pub fn unpair(&self, owner: &str, device_id: &str) -> Result<()> {
        if !self.registry.unpair(owner, device_id)? {
            return Err(crate::Error::DeviceNotPaired);
        }
        self.hub.disconnect(device_id, 1008, "DEVICE_UNPAIRED");
        self.hub.unpaired(device_id);
        log::info!("device {device_id} unpaired");
        Ok(())
    }

    /// `owner`'s devices: the registry (the fleet's on the shared store), and on the shared
    /// store (issue 23 item 4) any other device whose connection row the fleet keeps for
    /// `owner`, marked `connected_elsewhere` while another live process holds the worker's
    /// connection. A device known only from the fleet carries what its
    /// connection row holds (no browser details, no `last_seen_at`).
    pub fn devices(&self, owner: &str) -> Result<Vec<Device>> {
        let mut out: Vec<Device> = self
            .registry
            .list(owner)?
            .iter()
            .map(|r| r.to_device(self.hub.online(&r.id)))
            .collect();
        if let Some(remote) = self.remote.get() {
            for e in remote.known_of(owner)? {
                if e.record.owner != owner {
                    continue;
                }
                let elsewhere = e.process.is_some();
                match out.iter_mut().find(|d| d.id == e.record.id) {
                    Some(d) if !d.online && elsewhere => {
                        d.online = true;
                        d.connected_elsewhere = true;
                    }
                    Some(_) => {}
                    None => {
                        let mut d = e.record.to_device(elsewhere);
                        d.connected_elsewhere = elsewhere;
                        out.push(d);
                    }
                }
            }
        }
        Ok(out)
    }

    pub fn serve(&self, leases: &Leases, options: ChannelOptions) -> Result<ChannelHandle> {
        let (handle, shared) = server::serve(
            options,
            Arc::clone(&self.registry),
            Arc::clone(&self.hub),
            Arc::clone(&self.pairing),
            leases.clone(),
        )?;
        let mut servers = self.servers.lock();
        servers.retain(|s| !s.stopping.load(std::sync::atomic::Ordering::Acquire));
        servers.push(shared);
        Ok(handle)
    }

    pub fn artifact(&self, root_session: &str, id: &str) -> Result<Artifact> {
        self.artifacts.get(root_session, id)
    }

    /// Stores a screenshot taken outside the channel (the managed browser family, issue 15)
    /// as an artifact of `root_session`, under the same per-session cap (R-DEV-SHOT).
    pub fn store_artifact(
        &self,
        root_session: &str,
        source: &str,
        media_type: &str,
        bytes: &[u8],
    ) -> Result<String> {
        let keep = self.limits.read().artifact_max_per_session;
        self.artifacts
            .put(root_session, source, media_type, bytes, keep)
    }

    pub fn delete_artifacts(&self, root_session: &str) -> Result<usize> {
        let n = self.artifacts.delete_session(root_session)?;
        if n > 0 {
            log::info!("deleted {n} artifacts of an ended session");
        }
        Ok(n)
    }

    pub fn purge_artifacts(&self) -> Result<usize> {
        self.artifact_purger().purge(usize::MAX)
    }

    /// What purges expired artifacts, for the gateway's reaper thread.
    pub(crate) fn artifact_purger(&self) -> artifacts::Purger {
        artifacts::Purger::new(Arc::clone(&self.artifacts), Arc::clone(&self.limits))
    }

    /// Stops every channel server and joins its threads.
    pub fn close(&self) {
        let servers = std::mem::take(&mut *self.servers.lock());
        for s in servers {
            s.stop();
        }
        if let Some(remote) = self.remote.get() {
            remote.close();
        }
    }

    /// On the shared store, the cleanup of the device rows dead processes left, now (it also
    /// runs about every minute): how many command rows and connections were pruned; `None`
    /// without a fleet.
    pub(crate) fn prune_dead_rows(&self) -> Option<Result<(u64, u64)>> {
        self.remote.get().map(remote::Remote::prune_dead)
    }

    /// On the shared store (issue 23 item 4): records which devices are connected to this
    /// process, serves commands other processes carry to them, and lets this process's calls
    /// reach devices connected elsewhere. Once; `shared` and `process` are the fleet's.
    pub(crate) fn join_fleet(&self, shared: &crate::store::SharedStore, process: String) {
        if self.remote.get().is_none() {
            if let Ok(remote) = remote::Remote::start(shared, process, &self.hub) {
                let _ = self.remote.set(remote);
            }
        }
        #[cfg(feature = "postgres")]
        if let Err(e) = self.pairing.join_fleet(std::sync::Arc::clone(&shared.0)) {
            log::warn!("pairing codes stay in this process: {}", e.code());
        }
    }
}
