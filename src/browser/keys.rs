//! Native key events for `page_keypress` and `page_type` (R-BRW-ACT: real key events).
//!
//! This module owns the `Input.dispatchKeyEvent` parameters of each key and character. It
//! never sends anything itself and never logs the text it is given.

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

#[cfg(test)]
mod tests {
    use super::*;

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
