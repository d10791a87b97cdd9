//! Pixel coordinates and the viewport: `browser_mouse_click_xy`, `browser_mouse_move_xy`,
//! `browser_mouse_drag_xy` (for canvas/WebGL surfaces the accessibility tree cannot express)
//! and `browser_resize`; each answered with the fresh snapshot.
//!
//! Coordinates are CSS pixels of the viewport, each from 0 to 100,000; a side of the viewport
//! is from `MIN_VIEWPORT` to `MAX_VIEWPORT`. It never sends an unchecked number.

use serde_json::{Map, Value};

use super::args::{bad, Args};
use super::ManagedBrowser;
use crate::browser::backend::{MouseClickArgs, MouseDragArgs, MouseMoveArgs, ResizeArgs};
use crate::Result;

/// The largest coordinate accepted (CSS pixels).
const MAX_COORDINATE: f64 = 100_000.0;

impl ManagedBrowser {
    /// `browser_mouse_click_xy`.
    pub(super) fn mouse_click_xy(&self, a: &Args<'_>) -> Result<Value> {
        let x = a
            .opt_num("x", MAX_COORDINATE)?
            .ok_or_else(|| bad(a.tool, "`x` is required"))?;
        let y = a
            .opt_num("y", MAX_COORDINATE)?
            .ok_or_else(|| bad(a.tool, "`y` is required"))?;
        let action = self.backend.mouse_click(MouseClickArgs {
            operation_id: self.op(),
            generation: self.current_generation()?,
            x,
            y,
        })?;
        self.after_action(action, Map::new())
    }

    /// `browser_mouse_move_xy`.
    pub(super) fn mouse_move_xy(&self, a: &Args<'_>) -> Result<Value> {
        let (x, y) = (a.num("x", MAX_COORDINATE)?, a.num("y", MAX_COORDINATE)?);
        let action = self.backend.mouse_move(MouseMoveArgs {
            operation_id: self.op(),
            generation: self.current_generation()?,
            x,
            y,
        })?;
        self.after_action(action, Map::new())
    }

    /// `browser_mouse_drag_xy`.
    pub(super) fn mouse_drag_xy(&self, a: &Args<'_>) -> Result<Value> {
        let from_x = a.num("startX", MAX_COORDINATE)?;
        let from_y = a.num("startY", MAX_COORDINATE)?;
        let to_x = a.num("endX", MAX_COORDINATE)?;
        let to_y = a.num("endY", MAX_COORDINATE)?;
        let action = self.backend.mouse_drag(MouseDragArgs {
            operation_id: self.op(),
            generation: self.current_generation()?,
            from_x,
            from_y,
            to_x,
            to_y,
        })?;
        self.after_action(action, Map::new())
    }

    /// `browser_resize`.
    pub(super) fn resize(&self, a: &Args<'_>) -> Result<Value> {
        let (width, height) = (a.side("width")?, a.side("height")?);
        let action = self.backend.page_resize(ResizeArgs {
            operation_id: self.op(),
            width,
            height,
        })?;
        self.after_action(action, Map::new())
    }
}
