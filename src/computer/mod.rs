//! The Linux computer helper's core (issue 25, seed 003 "Computer helper contract"): observing
//! the front application of a desktop through AT-SPI and acting on it (AT-SPI actions, focus,
//! set text; XTest keys). Built with the cargo feature `computer`; used by `jevgate-computer`
//! (src/bin/jevgate-computer.rs) and reached by tests through `jevgate::unstable::computer`.
//!
//! It owns the observation model (model.rs, pure), the AT-SPI I/O (atspi.rs), keys (keys.rs),
//! the helper's state on disk — consent, access requests, receipts (state.rs) — and the helper
//! as a paired device's executor on the channel (helper.rs, contract version 1; the gateway's
//! side is `device/computer.rs`). It must never read a sensitive field's value, never log an
//! application's names or text, and never act on anything but a ref of the last observation or
//! a named key.

pub mod atspi;
pub mod helper;
pub mod keys;
pub mod model;
pub mod state;

pub use atspi::{Atspi, AtspiError, Session};
pub use helper::{ComputerHelper, HelperOptions};
pub use keys::{KeyError, Keyboard};
pub use model::{Control, Observation, RawNode};
