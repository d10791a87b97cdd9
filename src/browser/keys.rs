//! Native key events for `page_keypress`, `page_type` and `page_chord` (R-BRW-ACT: real key
//! events; issue 15 chords such as `Control+A`).
//!
//! This module owns the `Input.dispatchKeyEvent` parameters of each key and character and the
//! one parser of the chord syntax. It never sends anything itself and never logs the text it
//! is given.

use serde_json::{json, Value};

use crate::grammar::Key;

/// The keyDown and keyUp parameters of a named key. Enter carries `\r` so it submits forms;
/// keys without text use `rawKeyDown` as Chromium's own keyboard does.
pub(crate) fn key_events(key: Key) -> [Value; 2] {
    let (name, code, vk, text) = match key {
        Key::Enter => ("Enter", "Enter", 13, Some("\r")),
        Key::Tab => ("Tab", "Tab", 9, None),
        Key::Escape => ("Escape", "Escape", 27, None),
        Key::Backspace => ("Backspace", "Backspace", 8, None),
        Key::ArrowUp => ("ArrowUp", "ArrowUp", 38, None),
        Key::ArrowDown => ("ArrowDown", "ArrowDown", 40, None),
        Key::ArrowLeft => ("ArrowLeft", "ArrowLeft", 37, None),
        Key::ArrowRight => ("ArrowRight", "ArrowRight", 39, None),
    };
    let mut down = json!({
        "type": if text.is_some() { "keyDown" } else { "rawKeyDown" },
        "key": name, "code": code,
        "windowsVirtualKeyCode": vk, "nativeVirtualKeyCode": vk,
    });
    if let Some(t) = text {
        down["text"] = json!(t);
        down["unmodifiedText"] = json!(t);
    }
    let up = json!({
        "type": "keyUp", "key": name, "code": code,
        "windowsVirtualKeyCode": vk, "nativeVirtualKeyCode": vk,
    });
    [down, up]
}

/// The keyDown/keyUp pair typing one printable ASCII character, or `None` for characters
/// that go through `Input.insertText` (non-ASCII: Thai, CJK, emoji…).
pub(crate) fn char_events(c: char) -> Option<[Value; 2]> {
    if !(' '..='~').contains(&c) {
        return None;
    }
    let s = c.to_string();
    let (code, vk) = if c.is_ascii_alphabetic() {
        (
            format!("Key{}", c.to_ascii_uppercase()),
            c.to_ascii_uppercase() as u32,
        )
    } else if c.is_ascii_digit() {
        (format!("Digit{c}"), c as u32)
    } else if c == ' ' {
        ("Space".to_string(), 32)
    } else {
        (String::new(), 0)
    };
    let down = json!({
        "type": "keyDown", "key": s, "code": code, "text": s, "unmodifiedText": s,
        "windowsVirtualKeyCode": vk, "nativeVirtualKeyCode": vk,
    });
    let up = json!({
        "type": "keyUp", "key": s, "code": code,
        "windowsVirtualKeyCode": vk, "nativeVirtualKeyCode": vk,
    });
    Some([down, up])
}

/// A modifier of a chord: its CDP bit, key name, code and virtual key code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Modifier {
    bit: u32,
    key: &'static str,
    code: &'static str,
    vk: u32,
}

const ALT: Modifier = Modifier {
    bit: 1,
    key: "Alt",
    code: "AltLeft",
    vk: 18,
};
const CONTROL: Modifier = Modifier {
    bit: 2,
    key: "Control",
    code: "ControlLeft",
    vk: 17,
};
const META: Modifier = Modifier {
    bit: 4,
    key: "Meta",
    code: "MetaLeft",
    vk: 91,
};
const SHIFT: Modifier = Modifier {
    bit: 8,
    key: "Shift",
    code: "ShiftLeft",
    vk: 16,
};

/// A parsed chord: modifiers in the order given, then one key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Chord {
    modifiers: Vec<Modifier>,
    key: String,
    code: String,
    vk: u32,
    /// The text the key types without Control, Alt or Meta.
    text: Option<String>,
}

fn modifier(name: &str) -> Option<Modifier> {
    Some(match name.to_ascii_lowercase().as_str() {
        "control" | "ctrl" => CONTROL,
        "shift" => SHIFT,
        "alt" | "option" => ALT,
        "meta" | "cmd" | "command" | "super" => META,
        _ => return None,
    })
}

fn named_key(name: &str) -> Option<(&'static str, &'static str, u32, Option<&'static str>)> {
    Some(match name.to_ascii_lowercase().as_str() {
        "enter" | "return" => ("Enter", "Enter", 13, Some("\r")),
        "tab" => ("Tab", "Tab", 9, None),
        "escape" | "esc" => ("Escape", "Escape", 27, None),
        "backspace" => ("Backspace", "Backspace", 8, None),
        "delete" | "del" => ("Delete", "Delete", 46, None),
        "arrowup" | "up" => ("ArrowUp", "ArrowUp", 38, None),
        "arrowdown" | "down" => ("ArrowDown", "ArrowDown", 40, None),
        "arrowleft" | "left" => ("ArrowLeft", "ArrowLeft", 37, None),
        "arrowright" | "right" => ("ArrowRight", "ArrowRight", 39, None),
        "home" => ("Home", "Home", 36, None),
        "end" => ("End", "End", 35, None),
        "pageup" => ("PageUp", "PageUp", 33, None),
        "pagedown" => ("PageDown", "PageDown", 34, None),
        "insert" => ("Insert", "Insert", 45, None),
        "space" => (" ", "Space", 32, Some(" ")),
        "f1" => ("F1", "F1", 112, None),
        "f2" => ("F2", "F2", 113, None),
        "f3" => ("F3", "F3", 114, None),
        "f4" => ("F4", "F4", 115, None),
        "f5" => ("F5", "F5", 116, None),
        "f6" => ("F6", "F6", 117, None),
        "f7" => ("F7", "F7", 118, None),
        "f8" => ("F8", "F8", 119, None),
        "f9" => ("F9", "F9", 120, None),
        "f10" => ("F10", "F10", 121, None),
        "f11" => ("F11", "F11", 122, None),
        "f12" => ("F12", "F12", 123, None),
        _ => return None,
    })
}

/// Parses `Control+A`, `Shift+Tab`, `Meta+L`, `Enter`, `a`, `Control++` (the `+` key): at
/// most four distinct modifiers, then one named key or one printable ASCII character. `None`
/// for anything else (the caller names the argument; the text is never echoed).
pub(crate) fn parse_chord(text: &str) -> Option<Chord> {
    let text = text.trim();
    if text.is_empty() || text.len() > 64 {
        return None;
    }
    let (mods_part, key_part) = if let Some(rest) = text.strip_suffix("++") {
        (Some(rest), "+")
    } else if text == "+" {
        (None, "+")
    } else {
        match text.rsplit_once('+') {
            Some((m, k)) => (Some(m), k),
            None => (None, text),
        }
    };
    let mut modifiers: Vec<Modifier> = Vec::new();
    if let Some(m) = mods_part {
        for name in m.split('+') {
            let md = modifier(name.trim())?;
            if modifiers.contains(&md) {
                return None;
            }
            modifiers.push(md);
        }
    }
    let shift = modifiers.contains(&SHIFT);
    let key_part = key_part.trim_matches(' ');
    let (key, code, vk, text) = if let Some((k, c, vk, t)) = named_key(key_part) {
        (k.to_string(), c.to_string(), vk, t.map(str::to_string))
    } else {
        let mut chars = key_part.chars();
        let (Some(c), None) = (chars.next(), chars.next()) else {
            return None;
        };
        if !(' '..='~').contains(&c) {
            return None;
        }
        let typed = if shift { c.to_ascii_uppercase() } else { c };
        let (code, vk) = if c.is_ascii_alphabetic() {
            (
                format!("Key{}", c.to_ascii_uppercase()),
                c.to_ascii_uppercase() as u32,
            )
        } else if c.is_ascii_digit() {
            (format!("Digit{c}"), c as u32)
        } else if c == ' ' {
            ("Space".to_string(), 32)
        } else {
            (String::new(), 0)
        };
        (typed.to_string(), code, vk, Some(typed.to_string()))
    };
    Some(Chord {
        modifiers,
        key,
        code,
        vk,
        text,
    })
}

/// The key events of a chord: each modifier down (in order), the key down and up with the
/// modifier bits held, the modifiers up (reverse order). A key with Control, Alt or Meta held
/// types no text (the page sees the shortcut, nothing is inserted).
pub(crate) fn chord_events(chord: &Chord) -> Vec<Value> {
    let mut out = Vec::with_capacity(chord.modifiers.len() * 2 + 2);
    let mut bits = 0u32;
    for m in &chord.modifiers {
        bits |= m.bit;
        out.push(json!({
            "type": "rawKeyDown", "key": m.key, "code": m.code, "modifiers": bits,
            "windowsVirtualKeyCode": m.vk, "nativeVirtualKeyCode": m.vk,
        }));
    }
    let shortcut = bits & (ALT.bit | CONTROL.bit | META.bit) != 0;
    let text = chord.text.as_deref().filter(|_| !shortcut);
    let mut down = json!({
        "type": if text.is_some() { "keyDown" } else { "rawKeyDown" },
        "key": chord.key, "code": chord.code, "modifiers": bits,
        "windowsVirtualKeyCode": chord.vk, "nativeVirtualKeyCode": chord.vk,
    });
    if let Some(t) = text {
        down["text"] = json!(t);
        down["unmodifiedText"] = json!(t);
    }
    // Chromium runs the editing command of a shortcut only when told on some platforms; the
    // common ones are named so `Control+A` selects everything wherever it runs.
    if bits & (CONTROL.bit | META.bit) != 0 && bits & ALT.bit == 0 {
        let command = match chord.key.to_ascii_lowercase().as_str() {
            "a" => Some("selectAll"),
            "c" => Some("copy"),
            "x" => Some("cut"),
            "v" => Some("paste"),
            "z" if bits & SHIFT.bit == 0 => Some("undo"),
            "z" => Some("redo"),
            _ => None,
        };
        if let Some(c) = command {
            down["commands"] = json!([c]);
        }
    }
    out.push(down);
    out.push(json!({
        "type": "keyUp", "key": chord.key, "code": chord.code, "modifiers": bits,
        "windowsVirtualKeyCode": chord.vk, "nativeVirtualKeyCode": chord.vk,
    }));
    for m in chord.modifiers.iter().rev() {
        bits &= !m.bit;
        out.push(json!({
            "type": "keyUp", "key": m.key, "code": m.code, "modifiers": bits,
            "windowsVirtualKeyCode": m.vk, "nativeVirtualKeyCode": m.vk,
        }));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chords_parse_and_carry_their_modifier_bits() {
        let c = parse_chord("Control+A").unwrap();
        let ev = chord_events(&c);
        assert_eq!(ev.len(), 4);
        assert_eq!(ev[0]["key"], "Control");
        assert_eq!(ev[1]["modifiers"], 2);
        assert_eq!(ev[1]["code"], "KeyA");
        assert!(ev[1].get("text").is_none(), "a shortcut types nothing");
        assert_eq!(ev[3]["modifiers"], 0);
        let st = chord_events(&parse_chord("shift+tab").unwrap());
        assert_eq!(st[1]["key"], "Tab");
        assert_eq!(st[1]["modifiers"], 8);
        assert_eq!(
            chord_events(&parse_chord("Shift+a").unwrap())[1]["text"],
            "A"
        );
        assert_eq!(parse_chord("Meta+L").unwrap().modifiers, vec![META]);
        assert_eq!(parse_chord("Control++").unwrap().key, "+");
        assert_eq!(parse_chord("Enter").unwrap().text.as_deref(), Some("\r"));
        assert_eq!(parse_chord("Ctrl+Alt+Delete").unwrap().modifiers.len(), 2);
        for bad in [
            "",
            "Control+",
            "Hyper+A",
            "Control+Control+A",
            "Control+ab",
            "ก",
            "Shift+ก",
            "F13",
        ] {
            assert!(parse_chord(bad).is_none(), "{bad:?}");
        }
    }

    #[test]
    fn enter_submits_and_tab_is_raw() {
        let [down, _] = key_events(Key::Enter);
        assert_eq!(down["text"], "\r");
        let [down, up] = key_events(Key::Tab);
        assert_eq!(down["type"], "rawKeyDown");
        assert_eq!(up["type"], "keyUp");
        assert!(char_events('ก').is_none());
        assert_eq!(char_events('a').unwrap()[0]["windowsVirtualKeyCode"], 65);
    }
}
