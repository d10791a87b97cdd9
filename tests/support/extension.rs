//! The browser extension under test (issue 22): a real headless Chromium started with
//! `extension/` loaded (`--load-extension`), driven over its own DevTools port by a small CDP
//! client — to open the extension's options page and pair it with a gateway (a real pairing
//! code typed into the real form), press the popup's Stop and Resume, read the extension's
//! storage, and open or close tabs the way a person would.
//!
//! Also the setup the extension's tests share: [`World`] (a gateway with a channel, a fixture
//! server and the extension paired as bob's device), a long command to act under
//! ([`during_long_command`]), and waiting for the device to come online.
//!
//! Owns: how a test starts, pairs and stops that browser. Never: asserts a behaviour of the
//! extension or the gateway (tests do; a helper only asserts its own setup step worked), or
//! sleeps to wait for a condition (bounded polls).
//! Chromium's stderr goes to a file in the profile directory so a test can check that no
//! secret ever reached it.

use super::gateway::{Paired, TestGateway};
use super::Server;
use jevgate::device::{ToolCall, ToolResult};
use jevgate::Gateway;
use serde_json::{json, Value};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};
use tungstenite::{Message, WebSocket};

/// The extension's id: fixed by the `key` in extension/manifest.json.
pub const EXTENSION_ID: &str = "hghkhjakfdmelmnflpbmaoneolegkcal";

/// The extension's source directory.
pub fn extension_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("extension")
}

/// A copy of the extension in `into` with the protocol number of its `authenticate` frame
/// replaced — a build of the test harness, never a switch of the extension itself.
pub fn build_with_protocol(into: &Path, protocol: u64) -> PathBuf {
    let dest = into.join("extension-protocol");
    copy_dir(&extension_dir(), &dest);
    let sw = dest.join("service_worker.js");
    let text = std::fs::read_to_string(&sw).unwrap();
    let from = "const PROTOCOL = 2;";
    assert!(
        text.contains(from),
        "service_worker.js no longer declares {from}"
    );
    std::fs::write(
        &sw,
        text.replace(from, &format!("const PROTOCOL = {protocol};")),
    )
    .unwrap();
    dest
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// A synchronous DevTools client on the browser's WebSocket (flattened sessions).
pub struct Cdp {
    ws: Mutex<WebSocket<TcpStream>>,
    next: AtomicU64,
}

impl Cdp {
    fn connect(port: u16, path: &str) -> Cdp {
        let tcp = TcpStream::connect(("127.0.0.1", port)).unwrap();
        tcp.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        let config = tungstenite::protocol::WebSocketConfig::default()
            .max_message_size(Some(256 << 20))
            .max_frame_size(Some(256 << 20));
        let (ws, _) = tungstenite::client::client_with_config(
            format!("ws://127.0.0.1:{port}{path}"),
            tcp,
            Some(config),
        )
        .unwrap_or_else(|e| panic!("DevTools handshake: {e}"));
        Cdp {
            ws: Mutex::new(ws),
            next: AtomicU64::new(1),
        }
    }

    /// One call; events in between are dropped. Panics on a DevTools error.
    pub fn call(&self, method: &str, params: Value, session: Option<&str>) -> Value {
        self.try_call(method, params, session)
            .unwrap_or_else(|e| panic!("{method}: {e}"))
    }

    /// One call, or DevTools' error object.
    pub fn try_call(
        &self,
        method: &str,
        params: Value,
        session: Option<&str>,
    ) -> Result<Value, Value> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let mut msg = json!({"id": id, "method": method, "params": params});
        if let Some(s) = session {
            msg["sessionId"] = json!(s);
        }
        let mut ws = self.ws.lock().unwrap();
        ws.send(Message::text(msg.to_string())).unwrap();
        loop {
            match ws.read().unwrap() {
                Message::Text(t) => {
                    let v: Value = serde_json::from_str(&t).unwrap();
                    if v["id"].as_u64() == Some(id) {
                        return match v.get("error") {
                            Some(e) => Err(e.clone()),
                            None => Ok(v["result"].clone()),
                        };
                    }
                }
                Message::Close(_) => panic!("DevTools closed"),
                _ => {}
            }
        }
    }
}

/// A headless Chromium with the extension loaded.
pub struct ExtensionBrowser {
    child: Child,
    pub cdp: Cdp,
    pub profile: tempfile::TempDir,
    /// Chromium's stderr (and the extension's console, which never logs a secret).
    pub stderr_path: PathBuf,
    options: Mutex<Option<String>>,
}

/// A page target the harness attached to (flattened session).
pub struct PageSession {
    pub target: String,
    pub session: String,
}

impl ExtensionBrowser {
    /// Starts Chromium with the extension at `dir` (the source tree unless a harness build).
    pub fn launch() -> ExtensionBrowser {
        ExtensionBrowser::launch_with(&[extension_dir()])
    }

    /// Starts Chromium with these unpacked extensions (the first is jevgate's).
    pub fn launch_with(dirs: &[PathBuf]) -> ExtensionBrowser {
        use std::os::unix::process::CommandExt;
        let profile = tempfile::tempdir().unwrap();
        let list = dirs
            .iter()
            .map(|d| d.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(",");
        let stderr_path = profile.path().join("chromium-stderr.log");
        let stderr = std::fs::File::create(&stderr_path).unwrap();
        let child = Command::new("/usr/bin/chromium")
            .args([
                "--headless=new",
                &format!("--load-extension={list}"),
                &format!("--disable-extensions-except={list}"),
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--enable-logging=stderr",
                "--v=0",
                "--window-size=1280,800",
                &format!("--user-data-dir={}", profile.path().display()),
                "--remote-debugging-port=0",
                "about:blank",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .process_group(0)
            .spawn()
            .expect("start /usr/bin/chromium");
        let port_file = profile.path().join("DevToolsActivePort");
        let deadline = Instant::now() + Duration::from_secs(30);
        let (port, path) = loop {
            if let Ok(text) = std::fs::read_to_string(&port_file) {
                let mut lines = text.lines();
                if let (Some(p), Some(path)) = (lines.next(), lines.next()) {
                    if let Ok(port) = p.trim().parse::<u16>() {
                        break (port, path.trim().to_string());
                    }
                }
            }
            assert!(
                Instant::now() < deadline,
                "Chromium wrote no DevToolsActivePort"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        let cdp = Cdp::connect(port, &path);
        let browser = ExtensionBrowser {
            child,
            cdp,
            profile,
            stderr_path,
            options: Mutex::new(None),
        };
        browser.wait_service_worker();
        browser
    }

    fn wait_service_worker(&self) {
        let deadline = Instant::now() + Duration::from_secs(20);
        let url = format!("chrome-extension://{EXTENSION_ID}/service_worker.js");
        loop {
            let targets = self.cdp.call("Target.getTargets", json!({}), None);
            if targets["targetInfos"]
                .as_array()
                .unwrap()
                .iter()
                .any(|t| t["url"] == url.as_str())
            {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the extension's service worker never started"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Opens `url` in a new tab (as a person would) and attaches to it.
    pub fn open(&self, url: &str) -> PageSession {
        let made = self
            .cdp
            .call("Target.createTarget", json!({ "url": url }), None);
        let target = made["targetId"].as_str().unwrap().to_string();
        let attached = self.cdp.call(
            "Target.attachToTarget",
            json!({"targetId": target, "flatten": true}),
            None,
        );
        PageSession {
            target,
            session: attached["sessionId"].as_str().unwrap().to_string(),
        }
    }

    /// Closes a tab the harness opened.
    pub fn close_target(&self, target: &str) {
        let mut options = self.options.lock().unwrap();
        if options.as_deref() == Some(target) {
            *options = None;
        }
        drop(options);
        let _ = self
            .cdp
            .try_call("Target.closeTarget", json!({ "targetId": target }), None);
    }

    /// Evaluates `expr` (awaiting a promise) in `page` and returns its JSON value.
    pub fn eval(&self, page: &PageSession, expr: &str) -> Value {
        let r = self.cdp.call(
            "Runtime.evaluate",
            json!({"expression": expr, "returnByValue": true, "awaitPromise": true}),
            Some(&page.session),
        );
        assert!(
            r.get("exceptionDetails").is_none(),
            "evaluation threw: {}",
            r["exceptionDetails"]
        );
        r["result"]["value"].clone()
    }

    /// Polls `expr` in `page` until it is truthy (bounded); returns its last value.
    pub fn wait_eval(&self, page: &PageSession, expr: &str, within: Duration) -> Value {
        let deadline = Instant::now() + within;
        loop {
            let v = self.eval(page, expr);
            let truthy =
                !matches!(v, Value::Null | Value::Bool(false)) && v != json!("") && v != json!(0);
            if truthy {
                return v;
            }
            assert!(Instant::now() < deadline, "timed out waiting for {expr}");
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    /// The extension's options page (opened once, kept).
    pub fn options(&self) -> PageSession {
        let mut slot = self.options.lock().unwrap();
        if let Some(target) = slot.as_ref() {
            let attached = self.cdp.call(
                "Target.attachToTarget",
                json!({"targetId": target, "flatten": true}),
                None,
            );
            return PageSession {
                target: target.clone(),
                session: attached["sessionId"].as_str().unwrap().to_string(),
            };
        }
        let page = self.open(&format!("chrome-extension://{EXTENSION_ID}/options.html"));
        self.wait_eval(
            &page,
            "document.readyState === 'complete' && !!document.body.dataset.paired",
            Duration::from_secs(10),
        );
        *slot = Some(page.target.clone());
        page
    }

    /// Types the gateway address and `code` into the options page's form and submits it;
    /// returns the page's message once the attempt ended (`Paired.` on success).
    pub fn submit_pairing(&self, gateway: &str, code: &str) -> String {
        let page = self.options();
        // A fresh form: a previous attempt's message is cleared first.
        self.eval(
            &page,
            &format!(
                "document.getElementById('message').textContent = '';
                 document.getElementById('gateway').value = {};
                 document.getElementById('code').value = {};
                 document.getElementById('pair-form').requestSubmit(); true",
                json!(gateway),
                json!(code)
            ),
        );
        let message = self.wait_eval(
            &page,
            "(() => { const m = document.getElementById('message').textContent;
                      return m && m !== 'Pairing…' ? m : ''; })()",
            Duration::from_secs(20),
        );
        message.as_str().unwrap_or_default().to_string()
    }

    /// The options page's connection state (`online`, `offline`, `unpaired`…).
    pub fn conn(&self) -> String {
        let page = self.options();
        self.eval(
            &page,
            "chrome.runtime.sendMessage({kind: 'state'}).then(s => s.conn)",
        )
        .as_str()
        .unwrap_or_default()
        .to_string()
    }

    /// Waits until the extension reports `want` as its connection state.
    pub fn wait_conn(&self, want: &str, within: Duration) {
        let page = self.options();
        self.wait_eval(
            &page,
            &format!(
                "chrome.runtime.sendMessage({{kind: 'state'}}).then(s => s.conn === {})",
                json!(want)
            ),
            within,
        );
    }

    /// Presses a button of the extension's popup (opened as a page): `stop`, `resume`.
    pub fn popup_press(&self, button: &str) -> Value {
        let page = self.open(&format!("chrome-extension://{EXTENSION_ID}/popup.html"));
        self.wait_eval(
            &page,
            "document.readyState === 'complete' && !!document.body.dataset.stopped",
            Duration::from_secs(10),
        );
        self.eval(
            &page,
            &format!("document.getElementById({}).click(); true", json!(button)),
        );
        let want = if button == "stop" { "true" } else { "false" };
        let state = self.wait_eval(
            &page,
            &format!(
                "chrome.runtime.sendMessage({{kind: 'state'}}).then(s => String(s.stopped) === {} ? s : null)",
                json!(want)
            ),
            Duration::from_secs(10),
        );
        self.close_target(&page.target);
        state
    }

    /// Evaluates `expr` in an extension page (storage reads and the like).
    pub fn in_extension(&self, expr: &str) -> Value {
        let page = self.options();
        self.eval(&page, expr)
    }

    /// The tabs the browser has (page targets), as `(targetId, url)`.
    pub fn pages(&self) -> Vec<(String, String)> {
        let targets = self.cdp.call("Target.getTargets", json!({}), None);
        targets["targetInfos"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["type"] == "page")
            .map(|t| {
                (
                    t["targetId"].as_str().unwrap_or_default().to_string(),
                    t["url"].as_str().unwrap_or_default().to_string(),
                )
            })
            .collect()
    }

    /// Everything Chromium wrote to stderr so far.
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr_path).unwrap_or_default()
    }
}

impl Drop for ExtensionBrowser {
    fn drop(&mut self) {
        let pgid = self.child.id() as i32;
        // SAFETY: signals the process group this harness started (Chromium and its children).
        unsafe {
            libc::kill(-pgid, libc::SIGKILL);
        }
        let _ = self.child.wait();
    }
}

/// A gateway address as a person types it into the options page.
pub fn gateway_address(channel: &jevgate::device::ChannelHandle) -> String {
    format!("127.0.0.1:{}", channel.local_addr().port())
}

impl ExtensionBrowser {
    /// Stores a pairing made by `gw.pair(...)` the way the options page stores one (its own
    /// storage keys, then the same `paired` message). For tests that are not about pairing and
    /// must not spend a pairing code; pairing itself is tested through [`Self::submit_pairing`].
    pub fn store_pairing(&self, gateway: &str, device: &str, token: &str) {
        let page = self.options();
        self.eval(
            &page,
            &format!(
                "chrome.storage.local.set({{gateway: {}, token: {}, deviceId: {}}})
                   .then(() => chrome.runtime.sendMessage({{kind: 'paired'}})).then(() => true)",
                json!(format!("http://{gateway}")),
                json!(token),
                json!(device)
            ),
        );
    }
}

impl ExtensionBrowser {
    /// Pairs the extension with `gw` for `owner` the way a person does: the host mints a
    /// one-time code, the person types the channel's address and the code into the options
    /// page. Waits until the gateway sees the device online; returns its id (as the options
    /// page shows it).
    pub fn pair_with_code(
        &self,
        gw: &jevgate::Gateway,
        channel: &jevgate::device::ChannelHandle,
        owner: &str,
    ) -> String {
        let code = gw
            .pairing_code(owner, Duration::from_secs(300))
            .expect("a pairing code");
        let message = self.submit_pairing(&gateway_address(channel), code.expose());
        assert_eq!(message, "Paired.", "pairing failed");
        let page = self.options();
        let device = self
            .wait_eval(
                &page,
                "document.getElementById('device-id').textContent",
                Duration::from_secs(10),
            )
            .as_str()
            .unwrap()
            .to_string();
        wait_device_online(gw, owner, Some(&device), Duration::from_secs(20));
        device
    }

    /// Presses Unpair on the options page `page` and waits until the token is gone from the
    /// extension's storage.
    pub fn unpair_from_options(&self, page: &PageSession) {
        self.eval(page, "document.getElementById('unpair').click(); true");
        self.wait_eval(
            page,
            "chrome.storage.local.get('token').then(s => !s.token)",
            Duration::from_secs(10),
        );
    }
}

/// Waits (bounded by `within`) until `gw` sees `device` of `owner` online — or, with `None`,
/// any device of `owner`.
pub fn wait_device_online(
    gw: &jevgate::Gateway,
    owner: &str,
    device: Option<&str>,
    within: Duration,
) {
    let deadline = Instant::now() + within;
    while !gw
        .devices(owner)
        .unwrap()
        .iter()
        .any(|d| d.online && device.is_none_or(|id| d.id == id))
    {
        assert!(
            Instant::now() < deadline,
            "the paired extension never came online"
        );
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// A page script that reports it started (`/beacon?n=long-started`), then runs for 30 s (a
/// long command).
pub const LONG_SCRIPT: &str = "(async () => { await fetch('/beacon?n=long-started'); \
    await new Promise(r => setTimeout(r, 30000)); \
    await fetch('/beacon?n=long-finished'); return 1; })()";

/// Runs `command` (one that runs [`LONG_SCRIPT`]) on a thread, waits (at most 20 s) until the
/// page says the script started, runs `meanwhile`, and returns the command's answer.
pub fn during_long_command(
    server: &Server,
    command: impl FnOnce() -> ToolResult + Send,
    meanwhile: impl FnOnce(),
) -> ToolResult {
    std::thread::scope(|s| {
        let long = s.spawn(command);
        server.wait_count_within("long-started", 1, Duration::from_secs(20));
        meanwhile();
        long.join().unwrap()
    })
}

/// `tool` with `args` on `device` for bob in `conversation`.
pub fn call_as_bob(
    gw: &Gateway,
    conversation: &str,
    device: &str,
    tool: &str,
    mut args: Value,
) -> ToolResult {
    args["deviceId"] = json!(device);
    gw.call_tool(&ToolCall::new("bob", conversation, tool, args))
}

/// A gateway with a channel, a fixture server and the extension paired as bob's device through
/// its options page with a pairing code.
pub struct World {
    pub server: Server,
    pub ext: ExtensionBrowser,
    pub device: String,
    pub t: TestGateway,
}

impl World {
    pub fn new() -> World {
        World::with(ExtensionBrowser::launch())
    }

    pub fn with(ext: ExtensionBrowser) -> World {
        let t = super::gateway::builder().channel().build();
        let device = ext.pair_with_code(&t.gw, t.channel(), "bob");
        World {
            server: Server::start(),
            ext,
            device,
            t,
        }
    }

    /// bob's device as the gateway's helpers name it.
    pub fn bob(&self) -> Paired {
        Paired {
            owner: "bob".into(),
            device: self.device.clone(),
            token: jevgate::device::DeviceToken::new("unknown-to-the-test"),
        }
    }

    /// `tool` on the extension, in bob's conversation `conv-1`.
    pub fn call(&self, tool: &str, args: Value) -> ToolResult {
        call_as_bob(&self.t.gw, "conv-1", &self.device, tool, args)
    }

    /// Navigates the agent's tab to the fixture page `path`; asserts it succeeded.
    pub fn navigate(&self, path: &str) -> ToolResult {
        let nav = self.call("browser_navigate", json!({"url": self.server.url(path)}));
        assert!(nav.is_success(), "{nav:?}");
        nav
    }

    /// Runs [`LONG_SCRIPT`] through `browser_javascript`, and `meanwhile` once it started.
    pub fn during_long_command(&self, meanwhile: impl FnOnce()) -> ToolResult {
        during_long_command(
            &self.server,
            || self.call("browser_javascript", json!({ "code": LONG_SCRIPT })),
            meanwhile,
        )
    }

    /// The extension's record of its commands (chrome.storage.session).
    pub fn ops(&self) -> Vec<Value> {
        let v = self
            .ext
            .in_extension("chrome.storage.session.get('ops').then(s => s.ops || [])");
        v.as_array().cloned().unwrap_or_default()
    }

    /// Waits until the extension recorded a command of `tool` that ended `outcome`.
    pub fn wait_op(&self, tool: &str, outcome: &str) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if self
                .ops()
                .iter()
                .any(|o| o["tool"] == tool && o["outcome"] == outcome)
            {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "no {tool} ended {outcome}: {:?}",
                self.ops()
            );
            std::thread::sleep(Duration::from_millis(25));
        }
    }
}
