//! The intents a command parses to and their JSON form (R-GRM-PARSE).
//!
//! This module owns the data shapes only: it never parses text and never looks at a page.
//! The JSON of every intent is fixed (hosts, the C ABI, Python and the CLI all print it), so
//! changing a name here is a breaking change.

use serde::{Deserialize, Serialize};

/// What a typed or spoken command asks for, as [`parse_command`](super::parse_command) reads it.
///
/// Serializes to exactly one of the fixed shapes, for example
/// `{"intent":"scroll","direction":"down"}` or `{"intent":"decide"}`:
///
/// ```
/// use jevgate::grammar::{parse_command, Intent};
/// assert_eq!(parse_command("scroll ลง").to_json(), r#"{"intent":"scroll","direction":"down"}"#);
/// assert_eq!(parse_command("backspace x3").to_json(), r#"{"intent":"key","key":"Backspace","count":3}"#);
/// assert_eq!(Intent::NewTab.to_json(), r#"{"intent":"new_tab"}"#);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "intent", rename_all = "snake_case")]
pub enum Intent {
    /// Scroll the page one step (`scroll ลง`, `page up`).
    Scroll {
        /// Which way.
        direction: ScrollDirection,
    },
    /// Press a key `count` times (`enter`, `กด tab`, `backspace x3`).
    Key {
        /// The key.
        key: Key,
        /// How many presses, 1 to [`MAX_COUNT`](super::MAX_COUNT).
        count: u32,
    },
    /// Go back or forward in the tab's history (`ย้อนกลับ`, `forward`).
    History {
        /// Which way.
        direction: HistoryDirection,
    },
    /// Type `text` into the search field and submit it (`ค้นหา แมว`, `search cats`).
    Search {
        /// The text to search for.
        text: String,
    },
    /// Type `text` verbatim without submitting (`พิมพ์ สวัสดีครับ`, `type hello`).
    Type {
        /// The text to type, exactly as the user gave it.
        text: String,
    },
    /// Open an address in the bound tab (`เข้า google`, `go to example.com`).
    Navigate {
        /// `https://<domain>` for a bare domain or well-known name, else the typed URL.
        url: String,
    },
    /// Open a new tab (`เปิด tab ใหม่`, `Cmd+T`).
    NewTab,
    /// Open a new window (`Cmd+N`, `new window`).
    NewWindow,
    /// Close the current tab (`Cmd+W`, `ปิดแท็บ`).
    CloseTab,
    /// Quit the front application (`Cmd+Q` only).
    QuitApp,
    /// Erase `count` characters at the end of the focused field (`ลบ`, `ลบๆๆ`, `delete 3`).
    Erase {
        /// How many characters, 1 to [`MAX_COUNT`](super::MAX_COUNT).
        count: u32,
        /// The command was the bare word `ลบ`, which also names the calculator's Subtract key.
        /// Not part of the JSON.
        #[serde(skip)]
        also_subtract: bool,
    },
    /// Press the digits of a number one by one (`ห้าสิบ`, `50`, `๕๐`).
    Digits {
        /// The decimal digits, most significant first (`"150"`).
        digits: String,
    },
    /// Press a calculator operator or Clear (`บวก`, `times`, `=`).
    CalcKey {
        /// Which key.
        key: CalcKey,
    },
    /// Press keypad keys in order: a command whose every word is a number or a calculator key,
    /// with at least one key (`ห้า บวก เจ็ด เท่ากับ`, `50+5=`); each number digit by digit.
    Keypad {
        /// The keys, in the order said.
        keys: Vec<KeypadKey>,
        /// A bare `ลบ` is among them: Subtract only while no Delete control could be meant.
        /// Not part of the JSON.
        #[serde(skip)]
        said_lop: bool,
    },
    /// No fast path: one decision over the observed controls decides (repeats, read requests,
    /// named sites, links, any other language, ambiguous numbers).
    Decide {
        /// Text the command quoted, offered as the text to enter should the decision choose a
        /// field.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text_offer: Option<String>,
    },
}

impl Intent {
    /// The intent's fixed JSON form (one line, no spaces).
    ///
    /// ```
    /// use jevgate::grammar::parse_command;
    /// assert_eq!(parse_command("ร้อยห้าสิบ").to_json(), r#"{"intent":"digits","digits":"150"}"#);
    /// assert_eq!(parse_command("อีก").to_json(), r#"{"intent":"decide"}"#);
    /// ```
    pub fn to_json(&self) -> String {
        // Serializing these plain enums and strings cannot fail; keep a safe fallback anyway.
        serde_json::to_string(self).unwrap_or_else(|_| String::from(r#"{"intent":"decide"}"#))
    }

    /// Whether this is [`Intent::Decide`], i.e. a decision (model call) is needed.
    ///
    /// ```
    /// assert!(jevgate::grammar::parse_command("前のページに戻って").is_decide());
    /// assert!(!jevgate::grammar::parse_command("back").is_decide());
    /// ```
    pub fn is_decide(&self) -> bool {
        matches!(self, Intent::Decide { .. })
    }
}

/// Which way to scroll.
///
/// ```
/// use jevgate::grammar::ScrollDirection;
/// assert_eq!(serde_json::to_string(&ScrollDirection::Up).unwrap(), r#""up""#);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ScrollDirection {
    /// Towards the top.
    Up,
    /// Towards the bottom.
    Down,
}

/// Which way to move in history.
///
/// ```
/// use jevgate::grammar::HistoryDirection;
/// assert_eq!(serde_json::to_string(&HistoryDirection::Back).unwrap(), r#""back""#);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HistoryDirection {
    /// The previous page.
    Back,
    /// The next page.
    Forward,
}

/// A key the fast path can press (native key codes, so Enter submits and Tab moves focus).
///
/// ```
/// use jevgate::grammar::Key;
/// assert_eq!(serde_json::to_string(&Key::ArrowLeft).unwrap(), r#""ArrowLeft""#);
/// assert_eq!(Key::Escape.name(), "Escape");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Key {
    /// Enter / Return.
    Enter,
    /// Tab.
    Tab,
    /// Escape.
    Escape,
    /// Backspace.
    Backspace,
    /// Arrow up.
    ArrowUp,
    /// Arrow down.
    ArrowDown,
    /// Arrow left.
    ArrowLeft,
    /// Arrow right.
    ArrowRight,
}

impl Key {
    /// The key's name as in the JSON (`"Enter"`, `"ArrowUp"`, …).
    ///
    /// ```
    /// assert_eq!(jevgate::grammar::Key::ArrowDown.name(), "ArrowDown");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Key::Enter => "Enter",
            Key::Tab => "Tab",
            Key::Escape => "Escape",
            Key::Backspace => "Backspace",
            Key::ArrowUp => "ArrowUp",
            Key::ArrowDown => "ArrowDown",
            Key::ArrowLeft => "ArrowLeft",
            Key::ArrowRight => "ArrowRight",
        }
    }
}

/// One key of a keypad sequence ([`Intent::Keypad`]): a digit `0`–`9` or a calculator key.
/// Serializes as the digit (`"5"`) or the key's name (`"Add"`).
///
/// ```
/// use jevgate::grammar::{CalcKey, KeypadKey};
/// let keys = [KeypadKey::Digit('5'), KeypadKey::Key(CalcKey::Add)];
/// assert_eq!(serde_json::to_string(&keys).unwrap(), r#"["5","Add"]"#);
/// assert_eq!(KeypadKey::Key(CalcKey::Equals).labels(), CalcKey::Equals.labels());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum KeypadKey {
    /// A digit `'0'`–`'9'` (any other character matches no button).
    Digit(char),
    /// An operator or Clear.
    Key(CalcKey),
}

impl KeypadKey {
    /// The button labels that press this key, compared exactly (after trimming).
    pub fn labels(self) -> &'static [&'static str] {
        static DIGITS: [&str; 10] = ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9"];
        match self {
            KeypadKey::Digit(d) => d
                .to_digit(10)
                .and_then(|v| DIGITS.get(v as usize))
                .map_or(&[], std::slice::from_ref),
            KeypadKey::Key(k) => k.labels(),
        }
    }
}

/// A calculator key other than a digit.
///
/// ```
/// use jevgate::grammar::CalcKey;
/// assert_eq!(serde_json::to_string(&CalcKey::Equals).unwrap(), r#""Equals""#);
/// assert!(CalcKey::Add.labels().contains(&"+"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CalcKey {
    /// `+`
    Add,
    /// `−`
    Subtract,
    /// `×`
    Multiply,
    /// `÷`
    Divide,
    /// `=`
    Equals,
    /// Clear or All Clear.
    Clear,
}

impl CalcKey {
    /// The button labels that press this key on a keypad, compared exactly (after trimming).
    ///
    /// ```
    /// assert!(jevgate::grammar::CalcKey::Clear.labels().contains(&"All Clear"));
    /// ```
    pub fn labels(self) -> &'static [&'static str] {
        match self {
            CalcKey::Add => &["Add", "+", "Plus"],
            CalcKey::Subtract => &["Subtract", "−", "-", "Minus"],
            CalcKey::Multiply => &["Multiply", "×", "*", "Times"],
            CalcKey::Divide => &["Divide", "÷", "/"],
            CalcKey::Equals => &["Equals", "=", "Equal"],
            CalcKey::Clear => &["Clear", "All Clear", "AC", "C"],
        }
    }
}
