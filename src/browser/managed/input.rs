//! Input on one element: `browser_click`, `browser_type`, `browser_press_key` (keys and
//! chords), `browser_hover` and `browser_drag`; each a real input event sent by the backend,
//! answered with the fresh snapshot (and the armed dialog handled if one opened).
//!
//! It never logs typed text and never applies a ref of a page that changed since it was handed
//! out (the backend checks the generation).

use serde_json::{Map, Value};

use super::args::{bad, Args};
use super::target::Target;
use super::ManagedBrowser;
use crate::browser::backend::{ChordArgs, ClickArgs, DragArgs, HoverArgs, TypeArgs};
use crate::browser::StaleCause;
use crate::observation::Observation;
use crate::{Error, Result};

impl ManagedBrowser {
    /// `browser_click`.
    pub(super) fn click(&self, a: &Args<'_>) -> Result<Value> {
        let t = a.target("target")?;
        let (generation, reference) = self.locate(&t)?;
        let action = self.backend.page_click(ClickArgs {
            operation_id: self.op(),
            generation,
            reference,
        })?;
        self.after_action(action, Map::new())
    }

    /// `browser_type`.
    pub(super) fn type_text(&self, a: &Args<'_>) -> Result<Value> {
        let t = a.target("target")?;
        let text = a.str("text")?;
        let submit = a.opt_bool("submit")?.unwrap_or(false);
        let (generation, reference) = self.locate(&t)?;
        let action = self.backend.page_type(TypeArgs {
            operation_id: self.op(),
            generation,
            reference,
            text: text.to_string(),
            submit,
        })?;
        self.after_action(action, Map::new())
    }

    /// `browser_press_key`: one key or a chord on the focused element.
    pub(super) fn press_key(&self, a: &Args<'_>) -> Result<Value> {
        let key = a.str("key")?;
        if crate::browser::keys::parse_chord(key).is_none() {
            return Err(bad(a.tool, "`key` must be a key or a chord such as Control+A (modifiers Control, Shift, Alt, Meta, then one named key or printable ASCII character)"));
        }
        let action = self.backend.page_chord(ChordArgs {
            operation_id: self.op(),
            generation: self.current_generation()?,
            keys: key.to_string(),
        })?;
        self.after_action(action, Map::new())
    }

    /// `browser_hover`.
    pub(super) fn hover(&self, a: &Args<'_>) -> Result<Value> {
        let t = a.target("target")?;
        let (generation, reference) = self.locate(&t)?;
        let action = self.backend.page_hover(HoverArgs {
            operation_id: self.op(),
            generation,
            reference,
        })?;
        self.after_action(action, Map::new())
    }

    /// `browser_drag`: both targets of one generation.
    pub(super) fn drag(&self, a: &Args<'_>) -> Result<Value> {
        let from = a.target("startTarget")?;
        let to = a.target("endTarget")?;
        let obs = match (&from, &to) {
            (Target::Ref(_), Target::Ref(_)) => Observation::default(),
            _ => self.observe()?,
        };
        let (generation, from_ref) = self.resolve(&from, &obs)?;
        let (to_generation, to_ref) = self.resolve(&to, &obs)?;
        if generation != to_generation {
            // A ref of the last snapshot beside a selector of a page that changed since.
            return Err(Error::StaleObservation {
                cause: StaleCause::GenerationChanged,
            });
        }
        let action = self.backend.page_drag(DragArgs {
            operation_id: self.op(),
            generation,
            from_ref,
            to_ref,
        })?;
        self.after_action(action, Map::new())
    }
}
