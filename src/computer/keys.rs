//! Keys for the computer helper (issue 25): a named key pressed and released through the X
//! server's XTest extension (`x11rb`, pure Rust), delivered to whatever has the keyboard focus.
//!
//! It owns the mapping from a key name ("Return", "BackSpace", "a", "+") to a keysym and from
//! the keysym to a keycode of the server's keyboard map (Shift held when the keysym is on the
//! shifted level). It must never type more than one key per call, never leave a key or Shift
//! held down (every press is followed by its release, also after a failed press), and never log
//! which key it pressed (a sequence of keys is text the person typed).

use std::fmt;
use x11rb::connection::Connection;
use x11rb::protocol::xproto::{ConnectionExt as _, KEY_PRESS_EVENT, KEY_RELEASE_EVENT};
use x11rb::protocol::xtest::ConnectionExt as _;
use x11rb::rust_connection::RustConnection;

/// A key failure: a fixed code and a fixed detail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyError {
    /// `KEY_UNKNOWN`, `KEY_UNMAPPED` or `DISPLAY_UNAVAILABLE`.
    pub code: &'static str,
    /// A fixed word.
    pub detail: &'static str,
}

impl fmt::Display for KeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.detail)
    }
}

impl std::error::Error for KeyError {}

const NAMED: &[(&str, u32)] = &[
    ("Return", 0xff0d),
    ("Enter", 0xff0d),
    ("BackSpace", 0xff08),
    ("Backspace", 0xff08),
    ("Tab", 0xff09),
    ("Escape", 0xff1b),
    ("Delete", 0xffff),
    ("Home", 0xff50),
    ("Left", 0xff51),
    ("Up", 0xff52),
    ("Right", 0xff53),
    ("Down", 0xff54),
    ("End", 0xff57),
    ("space", 0x20),
    ("plus", 0x2b),
    ("minus", 0x2d),
    ("equal", 0x3d),
];
const SHIFT_L: u32 = 0xffe1;

/// The keysym of key `name`: a named key, else one printable Latin-1 character.
pub fn keysym(name: &str) -> Option<u32> {
    if let Some((_, k)) = NAMED.iter().find(|(n, _)| *n == name) {
        return Some(*k);
    }
    let mut chars = name.chars();
    let c = chars.next()?;
    if chars.next().is_some() {
        return None;
    }
    let code = u32::from(c);
    ((0x20..0x7f).contains(&code) || (0xa0..=0xff).contains(&code)).then_some(code)
}

/// An X connection for keys.
pub struct Keyboard {
    conn: RustConnection,
    root: u32,
}

impl Keyboard {
    /// Connects to `DISPLAY`.
    pub fn connect() -> Result<Keyboard, KeyError> {
        Keyboard::connect_display(None)
    }

    /// Connects to `display` (":1"), else to `DISPLAY`.
    pub fn connect_display(display: Option<&str>) -> Result<Keyboard, KeyError> {
        let unavailable = KeyError {
            code: "DISPLAY_UNAVAILABLE",
            detail: "no X display",
        };
        let (conn, screen) = RustConnection::connect(display).map_err(|_| unavailable.clone())?;
        let root = conn
            .setup()
            .roots
            .get(screen)
            .map(|s| s.root)
            .ok_or(unavailable)?;
        Ok(Keyboard { conn, root })
    }

    /// (keycode, needs Shift) of `sym` in the server's keyboard map.
    fn keycode(&self, sym: u32) -> Result<(u8, bool), KeyError> {
        let unmapped = KeyError {
            code: "KEY_UNMAPPED",
            detail: "no keycode for the key",
        };
        let setup = self.conn.setup();
        let (min, max) = (setup.min_keycode, setup.max_keycode);
        let map = self
            .conn
            .get_keyboard_mapping(min, max.saturating_sub(min).saturating_add(1))
            .ok()
            .and_then(|c| c.reply().ok())
            .ok_or(unmapped.clone())?;
        let per = usize::from(map.keysyms_per_keycode.max(1));
        for (i, syms) in map.keysyms.chunks(per).enumerate() {
            for (level, s) in syms.iter().enumerate().take(2) {
                if *s == sym {
                    let code = usize::from(min) + i;
                    return u8::try_from(code)
                        .map(|c| (c, level == 1))
                        .map_err(|_| unmapped.clone());
                }
            }
        }
        Err(unmapped)
    }

    fn fake(&self, kind: u8, code: u8) -> bool {
        self.conn
            .xtest_fake_input(kind, code, 0, self.root, 0, 0, 0)
            .is_ok()
    }

    /// Presses and releases key `name` (with Shift when its keysym is on the shifted level).
    pub fn key(&self, name: &str) -> Result<(), KeyError> {
        let sym = keysym(name).ok_or(KeyError {
            code: "KEY_UNKNOWN",
            detail: "unknown key name",
        })?;
        let (code, shifted) = self.keycode(sym)?;
        let shift = if shifted {
            Some(self.keycode(SHIFT_L)?.0)
        } else {
            None
        };
        if let Some(s) = shift {
            self.fake(KEY_PRESS_EVENT, s);
        }
        self.fake(KEY_PRESS_EVENT, code);
        self.fake(KEY_RELEASE_EVENT, code);
        if let Some(s) = shift {
            self.fake(KEY_RELEASE_EVENT, s);
        }
        // A round trip: the server has processed the events when it answers.
        self.conn
            .get_input_focus()
            .ok()
            .and_then(|c| c.reply().ok())
            .map(|_| ())
            .ok_or(KeyError {
                code: "DISPLAY_UNAVAILABLE",
                detail: "the X server went away",
            })
    }
}

#[cfg(test)]
mod tests {
    use super::keysym;

    #[test]
    fn key_names() {
        assert_eq!(keysym("Return"), Some(0xff0d));
        assert_eq!(keysym("5"), Some(0x35));
        assert_eq!(keysym("+"), Some(0x2b));
        assert_eq!(keysym("ห"), None);
        assert_eq!(keysym("ab"), None);
        assert_eq!(keysym(""), None);
    }
}
