//! A gateway for the device tests: a fresh data directory, optionally a manual clock, device
//! limits and a device channel on loopback; browsers paired for an owner with the suites' one
//! pairing request; a scripted worker ([`super::worker::Worker`]) or the library's own
//! [`DeviceWorker`] connected as that device; and a worker executor that counts what reaches it.
//!
//! Owns: how a test builds that world. Never: asserts a behaviour of the gateway (tests do),
//! or sleeps (waits are bounded polls on observable state).

use super::worker::{Handler, Worker};
use jevgate::clock::ManualClock;
use jevgate::device::{
    BrowserInfo, ChannelHandle, ChannelOptions, DeviceLimits, DeviceToken, DeviceWorker,
    PairRequest, ToolExecutor, WorkerFailure, WorkerOptions,
};
use jevgate::CancelToken;
use jevgate::{Config, Gateway, GatewayOptions};
use serde_json::Value;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A gateway in its own temporary data directory. Fields drop in order: the channel handle,
/// the gateway, then the directory.
pub struct TestGateway {
    /// The device channel, when the builder asked for one.
    pub channel: Option<ChannelHandle>,
    pub gw: Gateway,
    /// The gateway's manual clock, when the builder gave it one.
    pub clock: Option<ManualClock>,
    pub dir: tempfile::TempDir,
}

/// What [`builder`] builds.
pub struct Builder {
    config: Config,
    clock: Option<ManualClock>,
    limits: Option<DeviceLimits>,
    channel: Option<ChannelOptions>,
}

/// The suites' task configuration: the local evaluator (no network, no key) with browser tasks
/// and step lists on — both are off by default, and a task refuses to start without the first
/// (`ORCHESTRATION_DISABLED`, issue 21 defect 6).
pub const TASKS_CONFIG: &str = r#"{"gateway":{"jev":{"enabled":true,"provider":"local","features":{"browserTasks":{"enabled":true},"browserSteps":{"enabled":true}}}}}"#;

/// [`TASKS_CONFIG`], parsed.
pub fn tasks_config() -> Config {
    Config::from_json_str(TASKS_CONFIG).unwrap()
}

/// `config` (a configuration document) with `features.browserTasks` and `features.browserSteps`
/// turned on in its `gateway.jev` block, whatever else it sets.
pub fn with_tasks(mut config: Value) -> Value {
    let features = &mut config["gateway"]["jev"]["features"];
    features["browserTasks"] = serde_json::json!({"enabled": true});
    features["browserSteps"] = serde_json::json!({"enabled": true});
    config
}

/// A gateway with the suites' task configuration ([`TASKS_CONFIG`]) on the system clock,
/// without a channel.
pub fn builder() -> Builder {
    Builder {
        config: tasks_config(),
        clock: None,
        limits: None,
        channel: None,
    }
}

impl Builder {
    pub fn config(mut self, config: Config) -> Builder {
        self.config = config;
        self
    }

    /// The gateway runs on this manual clock (R-CLK).
    pub fn clock(mut self, clock: &ManualClock) -> Builder {
        self.clock = Some(clock.clone());
        self
    }

    pub fn limits(mut self, limits: DeviceLimits) -> Builder {
        self.limits = Some(limits);
        self
    }

    /// Serves the device channel on a free loopback port with the default options.
    pub fn channel(self) -> Builder {
        self.channel_with(channel_options())
    }

    pub fn channel_with(mut self, options: ChannelOptions) -> Builder {
        self.channel = Some(options);
        self
    }

    pub fn build(self) -> TestGateway {
        let dir = tempfile::tempdir().unwrap();
        let mut options = GatewayOptions::new(dir.path(), self.config);
        if let Some(clock) = &self.clock {
            options = options.with_clock(Arc::new(clock.clone()));
        }
        let gw = Gateway::open(options).unwrap();
        if let Some(limits) = self.limits {
            gw.set_device_limits(limits).unwrap();
        }
        let channel = self.channel.map(|o| gw.serve_channel(o).unwrap());
        TestGateway {
            channel,
            gw,
            clock: self.clock,
            dir,
        }
    }
}

/// The channel options of a loopback test channel (a free port).
pub fn channel_options() -> ChannelOptions {
    ChannelOptions::new("127.0.0.1:0")
}

/// A device paired for an owner: its id and its token (shown once at pairing).
pub struct Paired {
    pub owner: String,
    pub device: String,
    pub token: DeviceToken,
}

impl Paired {
    /// The token's text, as a worker sends it.
    pub fn token_text(&self) -> String {
        self.token.expose().to_string()
    }
}

/// The suites' one pairing request: a Chrome browser installed as `installation`.
pub fn pair_request(installation: &str) -> PairRequest {
    PairRequest {
        installation_id: installation.into(),
        name: format!("Chrome on {installation}"),
        browser: Some(BrowserInfo {
            name: "Chrome".into(),
            version: "131.0".into(),
        }),
    }
}

/// Pairs a browser for `owner` ([`pair_request`]).
pub fn pair(gw: &Gateway, owner: &str, installation: &str) -> Paired {
    let p = gw.pair(owner, &pair_request(installation)).unwrap();
    Paired {
        owner: owner.to_string(),
        device: p.device.id,
        token: p.token,
    }
}

impl TestGateway {
    /// The device channel (the builder must have asked for one).
    pub fn channel(&self) -> &ChannelHandle {
        self.channel.as_ref().expect("built with .channel()")
    }

    /// The manual clock (the builder must have given one).
    pub fn clock(&self) -> &ManualClock {
        self.clock.as_ref().expect("built with .clock()")
    }

    /// Pairs a browser for `owner`.
    pub fn pair(&self, owner: &str, installation: &str) -> Paired {
        pair(&self.gw, owner, installation)
    }

    /// Pairs a browser for `owner` and connects a scripted worker as it (authenticated when
    /// this returns).
    pub fn scripted_worker(
        &self,
        owner: &str,
        installation: &str,
        handler: Handler,
    ) -> (Paired, Worker) {
        let paired = self.pair(owner, installation);
        let worker = Worker::start(self.channel().local_addr(), paired.token.expose(), handler);
        (paired, worker)
    }

    /// Connects the library's own worker as `paired` with `executor`, and waits (bounded) until
    /// the gateway sees the device online.
    pub fn device_worker(&self, paired: &Paired, executor: Arc<dyn ToolExecutor>) -> DeviceWorker {
        device_worker(&self.gw, &self.channel().url(), paired, executor)
    }

    /// Bounded poll of a device's online state (the gateway sees a connection come or go on
    /// its own thread).
    pub fn wait_online(&self, paired: &Paired, online: bool) {
        wait_online(&self.gw, paired, online)
    }
}

/// Connects the library's own worker as `paired` with `executor` to the channel at `url` of
/// `gw` (a gateway the test opened itself, e.g. on a data directory another process used), and
/// waits (bounded) until `gw` sees the device online.
pub fn device_worker(
    gw: &Gateway,
    url: &str,
    paired: &Paired,
    executor: Arc<dyn ToolExecutor>,
) -> DeviceWorker {
    let worker =
        DeviceWorker::connect(WorkerOptions::new(url, paired.token.clone()), executor).unwrap();
    wait_online(gw, paired, true);
    worker
}

/// Bounded poll of a device's online state on `gw`.
pub fn wait_online(gw: &Gateway, paired: &Paired, online: bool) {
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        let now = gw
            .devices(&paired.owner)
            .unwrap()
            .iter()
            .any(|d| d.id == paired.device && d.online);
        if now == online {
            return;
        }
        assert!(Instant::now() < end, "device never became online={online}");
        std::thread::yield_now();
    }
}

/// A worker executor that counts the commands reaching it and answers each with `answer`.
pub struct Counting {
    reached: Arc<AtomicUsize>,
    answer: Value,
}

impl Counting {
    /// The executor and its counter.
    pub fn new(answer: Value) -> (Arc<Counting>, Arc<AtomicUsize>) {
        let reached = Arc::new(AtomicUsize::new(0));
        let executor = Arc::new(Counting {
            reached: Arc::clone(&reached),
            answer,
        });
        (executor, reached)
    }
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
