//! The device methods of [`Gateway`]: pairing, inventory, the channel server, tool calls,
//! limits and artifacts (reading, deleting, purging). Thin: each checks that the gateway is open
//! ([`Gateway::check_open`], the one check of every method) and forwards to the device service
//! with the gateway's lease manager; it must never hold a lock across a call.

use super::Gateway;
use crate::device::computer::ComputerDevice;
use crate::device::{
    Artifact, ChannelHandle, ChannelOptions, Device, DeviceLimits, PairRequest, Pairing,
    PairingCode, ToolCall, ToolResult,
};
use crate::task::DeviceTarget;
use crate::{Error, Result};

impl Gateway {
    /// Pairs a worker for `owner` (R-DEV-PAIR): a `browser` device when `request.browser` is
    /// given, else a `shell` worker. Returns the device and its token — shown this once, stored
    /// only hashed. Re-pairing the same installation keeps the device id and replaces the
    /// token: the old token stops working and an open connection with it is closed.
    pub fn pair(&self, owner: &str, request: &PairRequest) -> Result<Pairing> {
        self.check_open()?;
        self.device_service().pair(self.leases(), owner, request)
    }

    /// A one-time pairing code for `owner` (R-DEV-PAIR, issue 22 item 2): the person types it
    /// into the browser extension, which redeems it once at `POST /devices/pair` on the channel
    /// listener for a device token. `ttl` is at most 10 minutes (more, or zero, is
    /// `INVALID_ARGUMENT`); the code (`XXXX-XXXX`, 40 random bits) is shown this once and kept
    /// only hashed, in memory — a restart forgets unredeemed codes.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// let gw = jevgate::Gateway::open(jevgate::GatewayOptions::new(dir.path(), Default::default())).unwrap();
    /// let code = gw.pairing_code("alice", std::time::Duration::from_secs(300)).unwrap();
    /// assert_eq!(code.expose().len(), 9);
    /// assert!(gw.pairing_code("alice", std::time::Duration::from_secs(601)).is_err());
    /// # gw.close();
    /// ```
    pub fn pairing_code(&self, owner: &str, ttl: std::time::Duration) -> Result<PairingCode> {
        self.check_open()?;
        self.device_service().pairing_code(owner, ttl)
    }

    /// Unpairs `owner`'s device and closes its connection. `DEVICE_NOT_PAIRED` when `owner` has
    /// no device with that id.
    pub fn unpair(&self, owner: &str, device_id: &str) -> Result<()> {
        self.check_open()?;
        self.device_service().unpair(owner, device_id)
    }

    /// `owner`'s devices with their inventory labels and online state (R-DEV-VER).
    pub fn devices(&self, owner: &str) -> Result<Vec<Device>> {
        self.check_open()?;
        self.device_service().devices(owner)
    }

    /// Starts serving the device-worker channel (R-DEV-CHAN). The server's threads are the
    /// gateway's: [`Gateway::close`] stops and joins them.
    pub fn serve_channel(&self, options: ChannelOptions) -> Result<ChannelHandle> {
        self.check_open()?;
        self.device_service().serve(self.leases(), options)
    }

    /// Runs a browser tool for an agent (R-DEV-FAIL, R-DEV-CAPS): never fails as a Rust error,
    /// always answers `{success, result}` or `{success:false, errorCode, message}`.
    pub fn call_tool(&self, call: &ToolCall) -> ToolResult {
        if let Err(e) = self.check_open() {
            return ToolResult::Failure {
                error_code: e.code().into(),
                message: e.to_string(),
            };
        }
        if let Some(e) = self.read_request_refusal(call) {
            return ToolResult::Failure {
                error_code: e.code().into(),
                message: e.to_string(),
            };
        }
        if call.tool == crate::task::autopilot::AUTOPILOT_TOOL {
            return self.autopilot_tool(call, &|_| {});
        }
        self.device_service().call_tool(self.leases(), call)
    }

    /// A person's read request on a task driving this device makes the agent's turn read-only
    /// (issue 26 item 3): reads go through, every mutating tool is `READ_REQUEST_ONLY`.
    pub(super) fn read_request_refusal(&self, call: &ToolCall) -> Option<Error> {
        if !mutates(call) {
            return None;
        }
        let device = call.device_id.clone().or_else(|| {
            call.args
                .get("deviceId")
                .and_then(serde_json::Value::as_str)
                .map(str::to_string)
        });
        self.tasks()
            .read_request_on_device(&call.owner, device.as_deref())
            .then_some(Error::ReadRequestOnly)
    }

    /// `owner`'s paired browser `device_id` as a task target for the conversation
    /// `root_session` (issue 14 item 2): every command one primitive over the channel, under
    /// the device's control lease. Hidden: the task controller makes targets; tests reach it
    /// here until then.
    #[doc(hidden)]
    pub fn device_target(
        &self,
        owner: &str,
        root_session: &str,
        device_id: &str,
    ) -> Result<DeviceTarget> {
        self.check_open()?;
        Ok(DeviceTarget::new(
            self.device_service().primitive_sender(),
            self.leases().clone(),
            owner,
            root_session,
            device_id,
        ))
    }

    /// Pairs a computer helper (`jevgate-computer`, issue 25) for `owner`: a device of
    /// capability `computer` (`request.browser` is ignored for it). Returns the device and its
    /// token, shown this once, as [`Gateway::pair`]. Pairing alone authorizes nothing: the
    /// person approves applications and an access duration in the helper.
    pub fn pair_computer(&self, owner: &str, request: &PairRequest) -> Result<Pairing> {
        self.check_open()?;
        let request = PairRequest {
            browser: None,
            ..request.clone()
        };
        self.device_service()
            .pair_computer(self.leases(), owner, &request)
    }

    /// `owner`'s paired computer `device_id` (capability `computer`, issue 25) driven for the
    /// conversation `root_session`: observe, act and read receipts over the channel under the
    /// device's control lease, with the helper contract's checks (seed 003 "Computer helper
    /// contract"). Nothing is sent until a method is called.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// let gw = jevgate::Gateway::open(jevgate::GatewayOptions::new(dir.path(), Default::default())).unwrap();
    /// let computer = gw.computer_target("alice", "conv-1", "dev_unknown").unwrap();
    /// assert_eq!(computer.observe().unwrap_err().code(), "DEVICE_NOT_PAIRED");
    /// # gw.close();
    /// ```
    pub fn computer_target(
        &self,
        owner: &str,
        root_session: &str,
        device_id: &str,
    ) -> Result<ComputerDevice> {
        self.check_open()?;
        Ok(ComputerDevice::new(
            self.device_service().primitive_sender(),
            self.leases().clone(),
            owner,
            root_session,
            device_id,
        ))
    }

    /// The limits in force (R-DEV-CAPS).
    pub fn device_limits(&self) -> DeviceLimits {
        self.device_service().limits()
    }

    /// Replaces the limits (e.g. shrunk in tests). `INVALID_ARGUMENT` for a zero limit.
    pub fn set_device_limits(&self, limits: DeviceLimits) -> Result<()> {
        self.device_service().set_limits(limits)
    }

    /// A screenshot artifact, only to the root session it belongs to (R-DEV-SHOT);
    /// `ARTIFACT_NOT_FOUND` otherwise.
    pub fn artifact(&self, root_session: &str, artifact_id: &str) -> Result<Artifact> {
        self.check_open()?;
        self.device_service().artifact(root_session, artifact_id)
    }

    /// Deletes every screenshot artifact of `root_session` — call it when that conversation
    /// ends — and returns how many were deleted (R-DEV-SHOT). Other sessions' artifacts are
    /// untouched; an artifact whose file is already gone counts as deleted. `STORE_IO` when a
    /// file could not be removed: the others are deleted and a later call retries that one.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// let gw = jevgate::Gateway::open(jevgate::GatewayOptions::new(dir.path(), Default::default())).unwrap();
    /// assert_eq!(gw.delete_artifacts("conv-1").unwrap(), 0);
    /// assert_eq!(gw.purge_artifacts().unwrap(), 0);
    /// gw.close();
    /// assert_eq!(gw.purge_artifacts().unwrap_err().code(), "GATEWAY_CLOSED");
    /// ```
    pub fn delete_artifacts(&self, root_session: &str) -> Result<usize> {
        self.check_open()?;
        self.device_service().delete_artifacts(root_session)
    }

    /// Deletes the artifacts older than [`DeviceLimits::artifact_retention`] by the gateway's
    /// wall clock (an artifact expires when its age reaches the retention) and returns how many
    /// (R-DEV-SHOT). The gateway's reaper thread also does this about once a minute; call it to
    /// purge now. Errors as [`Gateway::delete_artifacts`].
    pub fn purge_artifacts(&self) -> Result<usize> {
        self.check_open()?;
        self.device_service().purge_artifacts()
    }
}

/// Whether a device tool call may change the page (every tool but the reads: reading the page
/// or its text, finding, listing tabs, a screenshot).
fn mutates(call: &ToolCall) -> bool {
    let action = call.args.get("action").and_then(serde_json::Value::as_str);
    !matches!(
        (call.tool.as_str(), action),
        ("browser_read_page" | "browser_get_text" | "browser_find", _)
            | ("browser_tabs", Some("list"))
            | ("browser_computer", Some("screenshot"))
    )
}
