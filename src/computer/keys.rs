//! Keys for the computer helper (issue 25): a named key pressed and released through the X
//! server's XTest extension (`x11rb`, pure Rust), delivered to whatever has the keyboard focus.
//!
//! It owns the mapping from a key name ("Return", "BackSpace", "a", "+") to a keysym and from
//! the keysym to a keycode of the server's keyboard map (Shift held when the keysym is on the
//! shifted level), and the one pointer click the focus fallback makes ([`Keyboard::click`]: the
//! helper asks for it only at an editable field's centre). It must never type more than one key
//! (or one chord: one key with its modifiers, [`Keyboard::chord`]; or, for
//! [`Keyboard::type_text`], one key per character of the text it was given) or click more than
//! once per call, never leave a key, Shift or a button held down (every press
//! is followed by its release, also after a failed press), never click off the screen, and never
//! log which key it pressed or where it clicked (a sequence of keys is text the person typed).

use std::fmt;
use x11rb::connection::Connection;
use x11rb::protocol::xproto::{
    AtomEnum, ConnectionExt as _, MapState, BUTTON_PRESS_EVENT, BUTTON_RELEASE_EVENT,
    KEY_PRESS_EVENT, KEY_RELEASE_EVENT, MOTION_NOTIFY_EVENT,
};
use x11rb::protocol::xtest::ConnectionExt as _;
use x11rb::rust_connection::RustConnection;

/// A key failure: a fixed code and a fixed detail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyError {
    /// `KEY_UNKNOWN`, `KEY_UNMAPPED`, `POINT_OFF_SCREEN`, `WINDOW_NOT_FOUND` or
    /// `DISPLAY_UNAVAILABLE`.
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
const CONTROL_L: u32 = 0xffe3;
const ALT_L: u32 = 0xffe9;
/// Most windows [`Keyboard::window_origin`] looks at.
const MAX_WINDOWS: usize = 2_000;

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

    /// A round trip: the server has processed the events sent before when it answers.
    fn sync(&self) -> Result<(), KeyError> {
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

    /// The place on the screen of the one viewable window of process `pid` (its `_NET_WM_PID`),
    /// searched among the root's children and theirs (a window manager's frame holds the
    /// application's window). `WINDOW_NOT_FOUND` when there is none or more than one: a click is
    /// never aimed at a guess.
    pub fn window_origin(&self, pid: u32) -> Result<(i32, i32), KeyError> {
        let not_found = KeyError {
            code: "WINDOW_NOT_FOUND",
            detail: "no single window of the application",
        };
        let atom = self
            .conn
            .intern_atom(true, b"_NET_WM_PID")
            .ok()
            .and_then(|c| c.reply().ok())
            .map(|r| r.atom)
            .filter(|a| *a != 0)
            .ok_or(not_found.clone())?;
        let children = |w: u32| -> Vec<u32> {
            self.conn
                .query_tree(w)
                .ok()
                .and_then(|c| c.reply().ok())
                .map(|r| r.children)
                .unwrap_or_default()
        };
        let viewable = |w: u32| {
            self.conn
                .get_window_attributes(w)
                .ok()
                .and_then(|c| c.reply().ok())
                .is_some_and(|a| a.map_state == MapState::VIEWABLE)
        };
        let owner = |w: u32| {
            self.conn
                .get_property(false, w, atom, AtomEnum::CARDINAL, 0, 1)
                .ok()
                .and_then(|c| c.reply().ok())
                .and_then(|r| r.value32().and_then(|mut v| v.next()))
        };
        let mut found = Vec::new();
        // Bounded: the root's children and their children, at most MAX_WINDOWS looked at.
        let mut looked = 0usize;
        for top in children(self.root) {
            for w in std::iter::once(top).chain(children(top)) {
                looked += 1;
                if looked > MAX_WINDOWS {
                    return Err(not_found);
                }
                if owner(w) == Some(pid) && viewable(w) {
                    found.push(w);
                }
            }
        }
        let [w] = found[..] else {
            return Err(not_found);
        };
        self.conn
            .translate_coordinates(w, self.root, 0, 0)
            .ok()
            .and_then(|c| c.reply().ok())
            .map(|r| (i32::from(r.dst_x), i32::from(r.dst_y)))
            .ok_or(not_found)
    }

    /// Moves the pointer to (`x`, `y`) on the screen and clicks the first button once (press and
    /// release). `POINT_OFF_SCREEN` for a point outside the screen (nothing is sent).
    pub fn click(&self, x: i32, y: i32) -> Result<(), KeyError> {
        let screen = self.conn.setup().roots.iter().find(|s| s.root == self.root);
        let (w, h) = screen.map_or((0, 0), |s| {
            (i32::from(s.width_in_pixels), i32::from(s.height_in_pixels))
        });
        let (Ok(px), Ok(py)) = (i16::try_from(x), i16::try_from(y)) else {
            return Err(off_screen());
        };
        if x < 0 || y < 0 || x >= w || y >= h {
            return Err(off_screen());
        }
        // Detail 0: an absolute motion on `root`.
        let moved = self
            .conn
            .xtest_fake_input(MOTION_NOTIFY_EVENT, 0, 0, self.root, px, py, 0)
            .is_ok();
        if moved {
            self.fake(BUTTON_PRESS_EVENT, 1);
        }
        // Released whatever happened to the press.
        self.fake(BUTTON_RELEASE_EVENT, 1);
        self.sync()?;
        if moved {
            Ok(())
        } else {
            Err(KeyError {
                code: "DISPLAY_UNAVAILABLE",
                detail: "the X server went away",
            })
        }
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
        self.sync()
    }
}

/// A modifier held for a chord ([`Keyboard::chord`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Modifier {
    /// The left Control key.
    Control,
    /// The left Shift key.
    Shift,
    /// The left Alt key.
    Alt,
}

impl Modifier {
    fn keysym(self) -> u32 {
        match self {
            Modifier::Control => CONTROL_L,
            Modifier::Shift => SHIFT_L,
            Modifier::Alt => ALT_L,
        }
    }
}

impl Keyboard {
    /// Whether every character of `text` is a key of the server's keyboard map (checked before
    /// anything is typed: text that cannot be typed whole types nothing). `KEY_UNKNOWN` for a
    /// character without a Latin-1 keysym (Thai), `KEY_UNMAPPED` for one the map lacks.
    pub fn can_type(&self, text: &str) -> Result<(), KeyError> {
        let mut buf = [0u8; 4];
        for c in text.chars() {
            let sym = keysym(c.encode_utf8(&mut buf)).ok_or(KeyError {
                code: "KEY_UNKNOWN",
                detail: "a character without a key",
            })?;
            self.keycode(sym)?;
        }
        Ok(())
    }

    /// Types `text` one key per character ([`Keyboard::key`]: each pressed and released, with
    /// Shift when its keysym needs it) into whatever has the keyboard focus. Check it with
    /// [`Keyboard::can_type`] first: a failure part-way leaves the characters before it typed.
    pub fn type_text(&self, text: &str) -> Result<(), KeyError> {
        let mut buf = [0u8; 4];
        for c in text.chars() {
            self.key(c.encode_utf8(&mut buf))?;
        }
        Ok(())
    }

    /// Presses key `name` (its unshifted keysym) with `modifiers` held, as one chord (Ctrl+T,
    /// Alt+F): the modifiers go down in order, the key goes down and up, the modifiers come up
    /// in reverse — every key pressed is released, also when a later press failed. Every
    /// keycode is looked up before anything is pressed, so an unmapped key presses nothing.
    pub fn chord(&self, modifiers: &[Modifier], name: &str) -> Result<(), KeyError> {
        let sym = keysym(name).ok_or(KeyError {
            code: "KEY_UNKNOWN",
            detail: "unknown key name",
        })?;
        let (code, _) = self.keycode(sym)?;
        let mut held = Vec::with_capacity(modifiers.len());
        for m in modifiers {
            held.push(self.keycode(m.keysym())?.0);
        }
        let mut pressed = Vec::with_capacity(held.len());
        let mut ok = true;
        for m in &held {
            if !self.fake(KEY_PRESS_EVENT, *m) {
                ok = false;
                break;
            }
            pressed.push(*m);
        }
        if ok {
            ok = self.fake(KEY_PRESS_EVENT, code);
            // Released whatever the press answered: never a key left held.
            ok &= self.fake(KEY_RELEASE_EVENT, code);
        }
        for m in pressed.iter().rev() {
            ok &= self.fake(KEY_RELEASE_EVENT, *m);
        }
        self.sync()?;
        if ok {
            Ok(())
        } else {
            Err(KeyError {
                code: "DISPLAY_UNAVAILABLE",
                detail: "the X server went away",
            })
        }
    }
}

fn off_screen() -> KeyError {
    KeyError {
        code: "POINT_OFF_SCREEN",
        detail: "the point is not on the screen",
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
