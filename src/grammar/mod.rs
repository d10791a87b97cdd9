//! The step-command grammar (SPEC §7): what a person types or says (`scroll ลง`, `ค้นหา แมว`,
//! `1. go to google 2. search cats`, `ร้อยห้าสิบ`) turned into intents a task controller runs
//! without a model call, and the decision of when a model decision is needed instead.
//!
//! This module owns reading commands and step lists, and mapping an intent onto one observed
//! page. Every function here is pure: no I/O, no clock, no global state, and no panic on any
//! input. It never sends anything and never asks the user back: what it cannot read exactly
//! is handed to a decision ([`Intent::Decide`]).
//!
//! - [`parse_command`] — one command to an [`Intent`] (R-GRM-PARSE, R-GRM-FILLER, R-GRM-URL).
//! - [`resolve`] — an intent on an [`Observation`](crate::observation::Observation) to one
//!   primitive, a decision request or a final outcome code (R-GRM-RESOLVE).
//! - [`split_steps`] / [`split_parts`] — the user's own step list and the parts of one step
//!   (R-GRM-STEPS, R-GRM-PARTS).
//! - [`check_model_address`] — the strict check for addresses a model produced (R-GRM-URL).
//!
//! ```
//! use jevgate::grammar::{parse_command, resolve, split_steps, Adapter, Resolution};
//! use jevgate::observation::Observation;
//!
//! let steps = split_steps("เปิด tab ใหม่, เข้า google, ค้นหา แมว").unwrap();
//! let intents: Vec<String> = steps.iter().map(|s| parse_command(s).to_json()).collect();
//! assert_eq!(intents[1], r#"{"intent":"navigate","url":"https://google.com"}"#);
//!
//! let page = Observation::default();
//! let first = resolve(&parse_command(&steps[0]), &page, Adapter::Browser);
//! assert_eq!(first.outcome_code(), Some("NEW_TAB_OUT_OF_SCOPE"));
//! ```

mod address;
mod filler;
mod intent;
mod number;
mod parse;
mod resolve;
mod steps;
mod text;

pub use address::{check_model_address, AddressRefused};
pub use filler::strip_fillers;
pub use intent::{CalcKey, HistoryDirection, Intent, Key, KeypadKey, ScrollDirection};
pub use parse::parse_command;
pub(crate) use resolve::{address_to_focus, focused_field};
pub use resolve::{
    keypad_button, keypad_key, resolve, Adapter, DecisionRequest, Outcome, Primitive, Resolution,
};
pub use steps::{split_parts, split_steps, MAX_STEPS, MAX_STEP_CHARS};

/// The longest command text the C and Python surfaces accept (1 MiB).
pub const MAX_TEXT_BYTES: usize = 1 << 20;

/// The one size check of a command text for every surface: longer than [`MAX_TEXT_BYTES`] is
/// `INVALID_ARGUMENT` (argument `text`).
///
/// ```
/// assert!(jevgate::grammar::check_text("เลื่อนลง").is_ok());
/// let long = "a".repeat(jevgate::grammar::MAX_TEXT_BYTES + 1);
/// assert_eq!(jevgate::grammar::check_text(&long).unwrap_err().code(), "INVALID_ARGUMENT");
/// ```
pub fn check_text(text: &str) -> crate::Result<()> {
    if text.len() > MAX_TEXT_BYTES {
        return Err(crate::Error::InvalidArgument {
            name: "text",
            reason: format!("is longer than {MAX_TEXT_BYTES} bytes"),
        });
    }
    Ok(())
}

/// The largest count a key press or an erase takes (`backspace x80` presses 50 times).
pub const MAX_COUNT: u32 = 50;
