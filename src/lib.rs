//! # jevgate
//!
//! Safe, bounded, auditable control of browsers for AI agents, embedded in the host process.
//!
//! jevgate is synchronous and thread-based: every call blocks and returns, long work runs on
//! threads the [`Gateway`] owns and joins on close. It links from Rust, from C through
//! `include/jevgate.h` (cargo feature `capi`), and from Python (`import jevgate`).
//!
//! ## What to open first
//!
//! 1. [`Config`] and [`Gateway`] — a validated configuration and the one object that owns the
//!    store, the clock, the leases, the devices and the Jev client. Everything else hangs off it.
//! 2. The capability you need, each one module: [`lease`] (who drives a browser), [`jev`]
//!    (typed model decisions and the validator), [`grammar`] (step commands without a model),
//!    [`device`] (paired browsers over the worker channel), [`browser`] (the local headless
//!    Chromium and the backend trait).
//! 3. [`Error`] — every failure has a stable [`Error::code`], an HTTP status and a family
//!    ([`ERROR_TABLE`] lists them all); [`untrusted`] — the envelope around everything read from
//!    a page; [`clock`] — the injectable clock ([`clock::ManualClock`] in tests).
//!
//! ## Open and close a gateway
//!
//! ```
//! use jevgate::{Config, Gateway, GatewayOptions};
//! let dir = tempfile::tempdir().unwrap();
//! let config = Config::from_json_str(
//!     r#"{"gateway": {"jev": {"enabled": true, "provider": "local"}},
//!         "agents": [{"id": "assistant"}]}"#,
//! )?;
//! let gw = Gateway::open(GatewayOptions::new(dir.path(), config))?;
//! assert!(gw.doctor()?.ok);
//! gw.close(); // joins the gateway's threads; later calls fail with GATEWAY_CLOSED
//! assert_eq!(gw.doctor().unwrap_err().code(), "GATEWAY_CLOSED");
//! # Ok::<(), jevgate::Error>(())
//! ```
//!
//! ## Leases: one conversation drives a device at a time
//!
//! ```
//! # let dir = tempfile::tempdir().unwrap();
//! # let gw = jevgate::Gateway::open(jevgate::GatewayOptions::new(dir.path(), Default::default()))?;
//! use jevgate::lease::ControlCaller;
//! let leases = gw.leases();
//! leases.set_device_owner("laptop", "me")?;
//! assert!(leases.acquire("laptop", "conversation-1")?.acquired);
//! let busy = leases.acquire("laptop", "conversation-2").unwrap_err();
//! assert_eq!(busy.code(), "DEVICE_CONTROL_ELSEWHERE");
//! assert!(leases.take_back("laptop", &ControlCaller::owner("me"))?); // the person takes it back
//! # gw.close();
//! # Ok::<(), jevgate::Error>(())
//! ```
//!
//! ## The validator: a model's answers, strictly checked
//!
//! ```
//! let questions = br#"{"greeting":{"type":"noul","instructions":"Is this a greeting?"}}"#;
//! let response = br#"{"model":"jev-1.13.0","answers":{"greeting":{"type":"noul","noul":0.99}},
//!                     "usage":{"input_tokens":120,"output_tokens":8}}"#;
//! let answers = jevgate::jev::validate_to_json(questions, response)?;
//! assert_eq!(answers, r#"{"greeting":{"type":"noul","noul":0.99}}"#);
//! # Ok::<(), jevgate::Error>(())
//! ```
//!
//! ## Jev evaluate (here with the offline `local` provider)
//!
//! ```
//! use jevgate::jev::{EvalAnswer, EvaluateCall, Limits, Question, Questions};
//! # let dir = tempfile::tempdir().unwrap();
//! # let config = jevgate::Config::from_json_str(
//! #     r#"{"gateway":{"jev":{"enabled":true,"provider":"local"}}}"#)?;
//! # let gw = jevgate::Gateway::open(jevgate::GatewayOptions::new(dir.path(), config))?;
//! let questions = Questions::new(
//!     [Question::choice(
//!         "next",
//!         "What next?",
//!         [("explain", "Compare the options"), ("execute", "Execute the choice")],
//!     )?],
//!     &Limits::default(),
//! )?;
//! let call = EvaluateCall::new("assistant", "Compare the options please", questions);
//! let evaluation = gw.evaluate(&call)?;
//! assert!(matches!(evaluation.answer("next"), Some(EvalAnswer::Choice { .. })));
//! # gw.close();
//! # Ok::<(), jevgate::Error>(())
//! ```
//!
//! ## Step commands: split and parse without a model
//!
//! ```
//! use jevgate::grammar::{parse_command, split_steps};
//! let steps = split_steps("เปิด tab ใหม่, เข้า google, ค้นหา แมว").expect("no conditional");
//! assert_eq!(steps.len(), 3);
//! let navigate = parse_command(&steps[1]).to_json();
//! assert_eq!(navigate, r#"{"intent":"navigate","url":"https://google.com"}"#);
//! ```
//!
//! ## Devices: pair a browser and serve the worker channel
//!
//! ```
//! use jevgate::device::{ChannelOptions, PairRequest, ToolCall};
//! # let dir = tempfile::tempdir().unwrap();
//! # let gw = jevgate::Gateway::open(jevgate::GatewayOptions::new(dir.path(), Default::default()))?;
//! let request = PairRequest::from_json(
//!     r#"{"installationId": "ext-1", "name": "Work laptop",
//!         "browser": {"name": "Chrome", "version": "131"}}"#,
//! )?;
//! let pairing = gw.pair("alice", &request)?; // pairing.token goes to the worker, once
//! let channel = gw.serve_channel(ChannelOptions::new("127.0.0.1:0"))?; // loopback
//! // A worker connects to channel.url() with pairing.token (see device::DeviceWorker);
//! // until one does, a tool call is refused without being attempted.
//! let call = ToolCall::new("alice", "conversation-1", "browser_get_text", serde_json::json!({}));
//! assert_eq!(gw.call_tool(&call).error_code(), Some("DEVICE_OFFLINE"));
//! # let _ = (pairing.token, channel.url());
//! gw.close();
//! # Ok::<(), jevgate::Error>(())
//! ```
//!
//! ## The local browser (needs Chromium)
//!
//! ```no_run
//! use jevgate::browser::{BrowserBackend, LaunchOptions, LocalBrowser, SnapshotArgs};
//! let browser = LocalBrowser::launch(LaunchOptions::default())?;
//! let tab = browser.open_tab()?;
//! tab.navigate("https://example.com")?;
//! let snapshot = tab.snapshot(SnapshotArgs::default())?; // text in the untrusted envelope
//! println!("{}", jevgate::untrusted::unwrap_text(&snapshot.text).unwrap_or_default());
//! browser.close();
//! # Ok::<(), jevgate::Error>(())
//! ```
#![deny(missing_docs)]
#![deny(unsafe_code)]
// A crate-private type (the store, say) in a public signature is an error, not a warning.
#![deny(private_interfaces, private_bounds)]

mod args;
pub mod browser;
mod cancel;
mod caps;
pub mod clock;
#[cfg(feature = "computer")]
mod computer;
pub mod config;
pub mod device;
mod error;
#[cfg(feature = "capi")]
pub mod ffi;
mod gateway;
pub mod grammar;
mod ids;
pub mod jev;
pub mod lease;
pub mod observation;
mod reasons;
mod store;
pub mod task;
/// Internals that only tests, fuzz targets and benches reach into; not part of the API.
#[doc(hidden)]
pub mod unstable;
pub mod untrusted;

pub use cancel::{CancelRegistration, CancelToken};
pub use config::{Config, ConfigSnapshot};
pub use error::{Error, ErrorFamily, ErrorKind, ErrorRow, Result, RetryInfo, ERROR_TABLE};
pub use gateway::{Gateway, GatewayOptions};
