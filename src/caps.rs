//! The product limits of R-DEV-CAPS, defined once.
//!
//! Both browser paths read these numbers: the local Chromium backend (`browser/`) cuts its own
//! text, script and screenshot results to them, and the gateway's device dispatch (`device/`)
//! starts from them in [`crate::device::DeviceLimits`]'s `Default` (which tests may shrink).
//! This module holds constants only; it must never hold logic or a second copy of a limit
//! defined elsewhere.

use std::time::Duration;

/// Actions in one `browser_batch`; more is refused before anything runs.
pub const BATCH_MAX_ACTIONS: usize = 10;
/// A batch stops after the action that takes its cumulative wall time past this.
pub const BATCH_TIME_BUDGET: Duration = Duration::from_secs(30);
/// A batch stops after the action that takes its cumulative result size past this many bytes.
pub const BATCH_BYTE_BUDGET: usize = 190_000;
/// The largest `max_chars` of read_page/get_text (and the most characters of one snapshot).
pub const TEXT_MAX_CHARS: usize = 30_000;
/// read_page/get_text's `max_chars` when omitted.
pub const TEXT_DEFAULT_CHARS: usize = 20_000;
/// browser_javascript's serialized return value, in characters.
pub const JAVASCRIPT_MAX_CHARS: usize = 20_000;
/// A screenshot's base64 length.
pub const SCREENSHOT_MAX_BASE64: usize = 150_000;
/// A single (non-batch) command.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(60);
/// A whole `browser_batch` call.
pub const BATCH_TIMEOUT: Duration = Duration::from_secs(90);
