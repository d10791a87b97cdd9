//! `parse_command` (R-GRM-PARSE, R-GRM-FILLER, R-GRM-URL): the fast paths that turn one typed
//! or spoken command into an [`Intent`] without a model call.
//!
//! This module owns the command words of Thai and English. It never looks at a page, never
//! asks the user back and never guesses: anything it cannot read as exactly one fast path is
//! [`Intent::Decide`]. It allocates only for the text an intent carries.

use super::address::typed_address;
use super::filler::{strip_fillers_mode, strip_leading_fillers, Mode};
use super::intent::{CalcKey, HistoryDirection, Intent, Key, ScrollDirection};
use super::number::{read_count, read_number, Reading};
use super::text::{at_end, eat, eat_any, eat_table, has_space, offset_in, opt, skip_space, trim};
use super::MAX_COUNT;

/// Reads one command (R-GRM-PARSE). Fast paths give a concrete [`Intent`]; everything else,
/// including ambiguous numbers and any other language, is [`Intent::Decide`].
///
/// Filler words are ignored for matching only (R-GRM-FILLER); the text a `Type` carries is the
/// user's text verbatim.
///
/// ```
/// use jevgate::grammar::{parse_command, Intent, Key, ScrollDirection};
/// assert_eq!(parse_command("เลื่อนลงครับ"), Intent::Scroll { direction: ScrollDirection::Down });
/// assert_eq!(parse_command("เอาล่ะ กด enter."), Intent::Key { key: Key::Enter, count: 1 });
/// assert_eq!(
///     parse_command("ค้นหาเที่ยวบิน เชียงใหม่ โอซาก้า"),
///     Intent::Search { text: "เที่ยวบิน เชียงใหม่ โอซาก้า".into() }
/// );
/// assert_eq!(parse_command("เข้า google"), Intent::Navigate { url: "https://google.com".into() });
/// assert_eq!(parse_command("ร้อยห้า"), Intent::Decide { text_offer: None });
/// ```
pub fn parse_command(text: &str) -> Intent {
    let raw = trim(text);
    let s = strip_fillers_mode(raw, Mode::Command);
    if s.is_empty() {
        return decide(raw);
    }
    // Order matters only where readings overlap: tab phrases (เปิด tab ใหม่) before navigate
    // (เปิด youtube); text verbs first, as no other reading starts with them.
    shortcut(s)
        .or_else(|| search(raw, s))
        .or_else(|| type_text(raw, s))
        .or_else(|| tab_window(s))
        .or_else(|| navigate(s))
        .or_else(|| scroll(s))
        .or_else(|| history(s))
        .or_else(|| key(s))
        .or_else(|| erase(s))
        .or_else(|| calc_key(s))
        .or_else(|| digits(s))
        .unwrap_or_else(|| decide(raw))
}

/// `Decide`, offering the text the command quoted, if it quoted exactly one piece.
fn decide(raw: &str) -> Intent {
    Intent::Decide {
        text_offer: quoted(raw),
    }
}

const QUOTES: &[(char, char)] = &[
    ('"', '"'),
    ('“', '”'),
    ('「', '」'),
    ('『', '』'),
    ('«', '»'),
];

fn quoted(raw: &str) -> Option<String> {
    let (start, open) = raw
        .char_indices()
        .find(|(_, c)| QUOTES.iter().any(|q| q.0 == *c))?;
    let close = QUOTES.iter().find(|q| q.0 == open)?.1;
    let inner_start = start + open.len_utf8();
    let rest = raw.get(inner_start..)?;
    let end = rest.find(close)?;
    let inner = trim(rest.get(..end)?);
    let after = rest.get(end + close.len_utf8()..)?;
    let another = after
        .chars()
        .any(|c| QUOTES.iter().any(|q| q.0 == c || q.1 == c));
    (!inner.is_empty() && !another).then(|| inner.to_string())
}

// ---------------------------------------------------------------- shortcuts, tabs, windows

const MODIFIERS: &[&str] = &["command", "cmd", "⌘"];
const PRESS: &[&str] = &["กดปุ่ม", "กด", "press", "hit"];

/// `Cmd+T`, `⌘T`, `cmd + w`, `press cmd+n`, `Cmd+Q`.
fn shortcut(s: &str) -> Option<Intent> {
    let s = opt(s, PRESS);
    let rest = eat_any(s, MODIFIERS)?;
    let rest = skip_space(rest);
    let rest = rest.strip_prefix(['+', '-']).unwrap_or(rest);
    let rest = skip_space(rest);
    let mut chars = rest.chars();
    let letter = chars.next()?.to_ascii_lowercase();
    if !at_end(chars.as_str()) {
        return None;
    }
    match letter {
        't' => Some(Intent::NewTab),
        'n' => Some(Intent::NewWindow),
        'w' => Some(Intent::CloseTab),
        'q' => Some(Intent::QuitApp),
        _ => None,
    }
}

const TAB_WORDS: &[&str] = &["tab", "แท็บ", "แทบ", "แท็ป", "แท็ก", "แทก"];
const OPEN: &[&str] = &["เปิด", "open"];

/// new tab / เปิด tab ใหม่ / เปิดแท็บ Google ใหม่ / new window / close tab / ปิดแท็บ.
fn tab_window(s: &str) -> Option<Intent> {
    // English: [open] [a] new tab|window
    let en = opt(opt(s, OPEN), &["a"]);
    if let Some(rest) = eat(en, "new") {
        if let Some(r) = eat_any(rest, TAB_WORDS) {
            if at_end(r) {
                return Some(Intent::NewTab);
            }
        }
        if let Some(r) = eat(rest, "window") {
            if at_end(r) {
                return Some(Intent::NewWindow);
            }
        }
    }
    // Thai: [เปิด] tab-word [up to three words] ใหม่ ; [เปิด] หน้าต่าง|window ใหม่
    let th = opt(s, OPEN);
    if let Some(rest) = eat_any(th, TAB_WORDS) {
        if let Some(middle) = trim(rest).strip_suffix("ใหม่") {
            let middle = trim(middle);
            if middle
                .split(super::text::is_space)
                .filter(|w| !w.is_empty())
                .count()
                <= 3
                && middle.len() <= 60
            {
                return Some(Intent::NewTab);
            }
        }
    }
    if let Some(rest) = eat_any(th, &["หน้าต่าง", "window"]) {
        if eat(rest, "ใหม่").is_some_and(at_end) {
            return Some(Intent::NewWindow);
        }
    }
    // close [this|the|current] tab ; ปิด tab-word [นี้]
    if let Some(rest) = eat(s, "close") {
        let rest = opt(rest, &["this", "the", "current"]);
        if eat_any(rest, TAB_WORDS).is_some_and(at_end) {
            return Some(Intent::CloseTab);
        }
    }
    if let Some(rest) = eat(s, "ปิด") {
        if let Some(r) = eat_any(rest, TAB_WORDS) {
            if at_end(opt(opt(r, &["ปัจจุบัน", "นี้"]), &["นี้"])) {
                return Some(Intent::CloseTab);
            }
        }
    }
    None
}

// ---------------------------------------------------------------- scroll

const SCROLL_VERBS: &[&str] = &[
    "scroll",
    "เลื่อนหน้าจอ",
    "เลื่อนจอ",
    "เลื่อนหน้าเว็บ",
    "เลื่อนหน้า",
    "เลื่อน",
    "page",
];
const DIRECTIONS: &[(&str, ScrollDirection)] = &[
    ("ลงมา", ScrollDirection::Down),
    ("ลงไป", ScrollDirection::Down),
    ("ลง", ScrollDirection::Down),
    ("down", ScrollDirection::Down),
    ("ขึ้นมา", ScrollDirection::Up),
    ("ขึ้นไป", ScrollDirection::Up),
    ("ขึ้น", ScrollDirection::Up),
    ("up", ScrollDirection::Up),
];

/// scroll ลง, เลื่อนขึ้น, scroll down, page down, scroll ลงมา.
fn scroll(s: &str) -> Option<Intent> {
    let rest = eat_any(s, SCROLL_VERBS)?;
    let (rest, direction) = eat_table(rest, DIRECTIONS)?;
    let rest = opt(rest, &["อีกนิด", "นิดนึง", "นิดหนึ่ง", "a bit", "a little"]);
    at_end(rest).then_some(Intent::Scroll { direction })
}

// ---------------------------------------------------------------- history

const BACK_VERBS: &[&str] = &["ย้อนกลับ", "กลับ", "ย้อน"];
const PREVIOUS_PAGE_TH: &[&str] = &["หน้าก่อนหน้านี้", "หน้าก่อนหน้า", "หน้าที่แล้ว", "หน้าก่อน", "หน้าเมื่อกี้"];
const PREVIOUS_PAGE_EN: &[&str] = &["previous page", "last page", "prior page", "previous"];

/// กลับ, ย้อนกลับ(ไป)(หน้าก่อนหน้า), back, go back (to the previous page), ไปข้างหน้า, forward.
fn history(s: &str) -> Option<Intent> {
    const BACK: Option<Intent> = Some(Intent::History {
        direction: HistoryDirection::Back,
    });
    const FORWARD: Option<Intent> = Some(Intent::History {
        direction: HistoryDirection::Forward,
    });
    if let Some(rest) = eat_any(s, BACK_VERBS) {
        let rest = opt(opt(opt(rest, &["ไป"]), &["ที่"]), PREVIOUS_PAGE_TH);
        if at_end(rest) {
            return BACK;
        }
    }
    if let Some(rest) = eat_any(s, &["ไปหน้าก่อนหน้า", "หน้าก่อนหน้า", "หน้าที่แล้ว"])
    {
        if at_end(rest) {
            return BACK;
        }
    }
    let en = opt(s, &["go"]);
    if let Some(rest) = eat(en, "back") {
        let rest = opt(rest, &["to"]);
        let rest = opt(rest, &["the"]);
        let rest = opt(rest, PREVIOUS_PAGE_EN);
        let rest = opt(rest, &["a page", "one page"]);
        if at_end(rest) {
            return BACK;
        }
    }
    if let Some(rest) = eat_any(s, &["previous page", "prev page"]) {
        if at_end(rest) {
            return BACK;
        }
    }
    if let Some(rest) = eat_any(s, &["ไปข้างหน้า", "เดินหน้า", "ไปหน้าถัดไปในประวัติ"])
    {
        if at_end(rest) {
            return FORWARD;
        }
    }
    if let Some(rest) = eat(en, "forward") {
        if at_end(opt(rest, &["a page", "one page"])) {
            return FORWARD;
        }
    }
    None
}

// ---------------------------------------------------------------- keys

const KEY_NAMES: &[(&str, Key)] = &[
    ("enter", Key::Enter),
    ("return", Key::Enter),
    ("เอนเตอร์", Key::Enter),
    ("เอ็นเตอร์", Key::Enter),
    ("escape", Key::Escape),
    ("esc", Key::Escape),
    ("เอสเคป", Key::Escape),
    ("backspace", Key::Backspace),
    ("แบ็กสเปซ", Key::Backspace),
    ("แบ็คสเปซ", Key::Backspace),
    ("tab", Key::Tab),
    ("แท็บ", Key::Tab),
];
const ARROW_WORDS: &[&str] = &["ลูกศร", "arrow"];
const ARROW_DIRS: &[(&str, Key)] = &[
    ("up", Key::ArrowUp),
    ("down", Key::ArrowDown),
    ("left", Key::ArrowLeft),
    ("right", Key::ArrowRight),
    ("ขึ้น", Key::ArrowUp),
    ("บน", Key::ArrowUp),
    ("ลง", Key::ArrowDown),
    ("ล่าง", Key::ArrowDown),
    ("ซ้าย", Key::ArrowLeft),
    ("ขวา", Key::ArrowRight),
];
const ENGLISH_ARROWS: &[(&str, Key)] = &[
    ("arrowup", Key::ArrowUp),
    ("arrowdown", Key::ArrowDown),
    ("arrowleft", Key::ArrowLeft),
    ("arrowright", Key::ArrowRight),
    ("up", Key::ArrowUp),
    ("down", Key::ArrowDown),
    ("left", Key::ArrowLeft),
    ("right", Key::ArrowRight),
];

/// The key named at the start of `s` and what follows it.
fn key_name(s: &str) -> Option<(&str, Key)> {
    if let Some(found) = eat_table(s, KEY_NAMES) {
        return Some(found);
    }
    // ลูกศรลง, ลูกศร ซ้าย, arrow left
    if let Some(rest) = eat_any(s, ARROW_WORDS) {
        return eat_table(rest, ARROW_DIRS);
    }
    // up, down arrow, ArrowUp
    let (rest, key) = eat_table(s, ENGLISH_ARROWS)?;
    Some((opt(rest, &["arrow"]), key))
}

/// A repeat count after a key or `delete`: `x3`, `×3`, `3 times`, `3 ครั้ง`, `twice`.
/// `Some(1)` when nothing follows; `None` when something else follows.
fn count_suffix(rest: &str) -> Option<u32> {
    let rest = trim(rest);
    if rest.is_empty() {
        return Some(1);
    }
    if let Some(r) = eat_any(rest, &["twice", "สองที", "สองครั้ง"]) {
        return at_end(r).then_some(2);
    }
    let body = ["x", "X", "×", "*"]
        .iter()
        .find_map(|p| rest.strip_prefix(p))
        .unwrap_or(rest);
    let body = trim(body);
    let body = ["times", "time", "ครั้ง", "ที"]
        .iter()
        .find_map(|w| super::text::strip_suffix_ci(body, w))
        .unwrap_or(body);
    read_count(body)
}

fn capped(n: u32) -> Option<u32> {
    (n > 0).then_some(n.min(MAX_COUNT))
}

/// enter, return, tab, esc, กด tab, ลูกศรลง, arrow left, up, backspace x3.
fn key(s: &str) -> Option<Intent> {
    let s = opt(s, PRESS);
    let s = opt(s, &["the"]);
    let (rest, key) = key_name(s)?;
    let rest = opt(rest, &["key", "ปุ่ม"]);
    let count = capped(count_suffix(rest)?)?;
    Some(Intent::Key { key, count })
}

// ---------------------------------------------------------------- erase

const ERASE_UNITS: &[&str] = &[
    "ตัวอักษร",
    "ตัวอักษร",
    "ตัว",
    "ครั้ง",
    "ที",
    "characters",
    "character",
    "chars",
    "char",
    "letters",
    "letter",
];

/// ลบ, ลบๆๆ (1 + one per ๆ), ลบ 3 ตัว, delete, delete 3; at most [`MAX_COUNT`].
fn erase(s: &str) -> Option<Intent> {
    let s = opt(s, &["กด"]);
    if let Some(rest) = eat(s, "ลบ") {
        let mut marks = 0u32;
        let mut r = rest;
        while let Some(next) = skip_space(r).strip_prefix('ๆ') {
            marks = marks.saturating_add(1);
            r = next;
        }
        if at_end(r) {
            return Some(Intent::Erase {
                count: capped(marks.saturating_add(1))?,
                also_subtract: marks == 0,
            });
        }
        if marks == 0 {
            return erase_count(rest);
        }
        return None;
    }
    let rest = eat(s, "delete")?;
    erase_count(rest)
}

fn erase_count(rest: &str) -> Option<Intent> {
    let rest = trim(rest);
    let body = ["x", "X", "×"]
        .iter()
        .find_map(|p| rest.strip_prefix(p))
        .unwrap_or(rest);
    let mut body = trim(body);
    for unit in ERASE_UNITS {
        if let Some(b) = super::text::strip_suffix_ci(body, unit) {
            body = trim(b);
            break;
        }
    }
    let count = if body.is_empty() {
        if rest.is_empty() {
            1
        } else {
            return None;
        }
    } else {
        read_count(body)?
    };
    Some(Intent::Erase {
        count: capped(count)?,
        also_subtract: false,
    })
}

// ---------------------------------------------------------------- calculator keys, digits

const CALC_WORDS: &[(&str, CalcKey)] = &[
    ("เครื่องหมายบวก", CalcKey::Add),
    ("เครื่องหมายลบ", CalcKey::Subtract),
    ("เครื่องหมายคูณ", CalcKey::Multiply),
    ("เครื่องหมายหาร", CalcKey::Divide),
    ("เครื่องหมายเท่ากับ", CalcKey::Equals),
    ("บวก", CalcKey::Add),
    ("คูณ", CalcKey::Multiply),
    ("หาร", CalcKey::Divide),
    ("เท่ากับ", CalcKey::Equals),
    ("เคลียร์", CalcKey::Clear),
    ("plus", CalcKey::Add),
    ("add", CalcKey::Add),
    ("minus", CalcKey::Subtract),
    ("subtract", CalcKey::Subtract),
    ("times", CalcKey::Multiply),
    ("multiply", CalcKey::Multiply),
    ("divided by", CalcKey::Divide),
    ("divide", CalcKey::Divide),
    ("equals", CalcKey::Equals),
    ("equal", CalcKey::Equals),
    ("all clear", CalcKey::Clear),
    ("clear", CalcKey::Clear),
    ("+", CalcKey::Add),
    ("−", CalcKey::Subtract),
    ("-", CalcKey::Subtract),
    ("×", CalcKey::Multiply),
    ("*", CalcKey::Multiply),
    ("÷", CalcKey::Divide),
    ("/", CalcKey::Divide),
    ("=", CalcKey::Equals),
];

/// บวก/plus/+, ลบ-as-minus words, คูณ/times/×, หาร/divide/÷, เท่ากับ/equals/=, เคลียร์/clear.
fn calc_key(s: &str) -> Option<Intent> {
    let s = opt(s, PRESS);
    let s = opt(s, &["ปุ่ม", "the"]);
    let (rest, key) = eat_table(s, CALC_WORDS)?;
    let rest = opt(rest, &["key", "button"]);
    at_end(rest).then_some(Intent::CalcKey { key })
}

/// ห้า, 5, ๕, กดเลข 5, press 5, ห้า ศูนย์, ห้าสิบ, ร้อยห้าสิบ, ร้อยเอ็ด.
/// Ambiguous readings (ห้า ห้าสิบ, ร้อยห้า) are `Decide`.
fn digits(s: &str) -> Option<Intent> {
    let body = opt(
        s,
        &[
            "กดตัวเลข",
            "กดเลข",
            "ตัวเลข",
            "เลข",
            "กดปุ่ม",
            "กด",
            "press",
            "hit",
            "number",
        ],
    );
    match read_number(body) {
        Reading::Clear(digits) => Some(Intent::Digits { digits }),
        Reading::Ambiguous => Some(Intent::Decide { text_offer: None }),
        Reading::NotNumber => None,
    }
}

// ---------------------------------------------------------------- text: search and type

/// Search verbs: Thai ones may run straight into the text (ค้นหาเที่ยวบิน).
const SEARCH_VERBS: &[&str] = &["ค้นหาคำว่า", "ค้นหา", "ค้น", "search for", "search"];

/// ค้นหา X, ค้น X, search X; the text without trailing particles.
fn search(raw: &str, s: &str) -> Option<Intent> {
    let rest = eat_any(s, SEARCH_VERBS)?;
    let verb_end = offset_in(raw, rest)?;
    // Same start as `s`; trailing particles are stripped only when unmistakable.
    let payload_src = strip_fillers_mode(raw, Mode::Payload);
    let start = offset_in(raw, payload_src)?;
    let end = start + payload_src.len();
    let text = trim(raw.get(verb_end..end.max(verb_end))?);
    let text = text.strip_prefix([':', '：']).map(trim).unwrap_or(text);
    (!text.is_empty()).then(|| Intent::Search {
        text: text.to_string(),
    })
}

const TYPE_VERBS: &[&str] = &["พิมพ์คำว่า", "พิมพ์ว่า", "พิมพ์", "type"];

/// พิมพ์ X, type X; X verbatim (trailing words and punctuation kept).
fn type_text(raw: &str, s: &str) -> Option<Intent> {
    let rest = eat_any(s, TYPE_VERBS)?;
    let verb_end = offset_in(raw, rest)?;
    let whole = strip_leading_fillers(raw);
    let end = offset_in(raw, whole)? + whole.len();
    let text = trim(raw.get(verb_end..end.max(verb_end))?);
    let text = text.strip_prefix([':', '：']).map(trim).unwrap_or(text);
    (!text.is_empty()).then(|| Intent::Type {
        text: text.to_string(),
    })
}

// ---------------------------------------------------------------- navigate

const NAV_VERBS: &[&str] = &[
    "เข้าไปที่",
    "เข้าไป",
    "เข้า",
    "ไปที่",
    "เปิด",
    "go to",
    "goto",
    "navigate to",
    "open",
    "visit",
];

/// Well-known names (a few, as the seed says; there is no site list).
const WELL_KNOWN: &[(&str, &str)] = &[
    ("google", "https://google.com"),
    ("กูเกิล", "https://google.com"),
    ("กูเกิ้ล", "https://google.com"),
    ("youtube", "https://youtube.com"),
    ("ยูทูบ", "https://youtube.com"),
    ("ยูทูป", "https://youtube.com"),
    ("facebook", "https://facebook.com"),
    ("เฟซบุ๊ก", "https://facebook.com"),
    ("เฟสบุ๊ค", "https://facebook.com"),
    ("gmail", "https://mail.google.com"),
    ("wikipedia", "https://wikipedia.org"),
    ("github", "https://github.com"),
];

/// เข้า google, เปิด youtube, go to example.com, or a bare address.
fn navigate(s: &str) -> Option<Intent> {
    let verb = eat_any(s, NAV_VERBS);
    let target = verb.map(trim).unwrap_or(s);
    if target.is_empty() || has_space(target) {
        return None;
    }
    // A well-known name needs a verb (เข้า google); a bare word alone is decided.
    let known = WELL_KNOWN
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(target));
    if let (Some(_), Some((_, url))) = (verb, known) {
        return Some(Intent::Navigate {
            url: (*url).to_string(),
        });
    }
    // Every address has a dot (a domain) or a colon (a scheme): skip the rest cheaply.
    if !target.bytes().any(|b| b == b'.' || b == b':') {
        return None;
    }
    typed_address(target).map(|url| Intent::Navigate { url })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `eat_any` / `eat_table` compare a lower-case first byte: every table word is lower case.
    #[test]
    fn every_command_word_is_written_in_lower_case() {
        let lists: &[&[&str]] = &[
            MODIFIERS,
            PRESS,
            TAB_WORDS,
            OPEN,
            SCROLL_VERBS,
            BACK_VERBS,
            PREVIOUS_PAGE_TH,
            PREVIOUS_PAGE_EN,
            ARROW_WORDS,
            ERASE_UNITS,
            SEARCH_VERBS,
            TYPE_VERBS,
            NAV_VERBS,
        ];
        let tables = [
            DIRECTIONS.iter().map(|e| e.0).collect::<Vec<_>>(),
            KEY_NAMES.iter().map(|e| e.0).collect(),
            ARROW_DIRS.iter().map(|e| e.0).collect(),
            ENGLISH_ARROWS.iter().map(|e| e.0).collect(),
            CALC_WORDS.iter().map(|e| e.0).collect(),
        ];
        for w in lists
            .iter()
            .flat_map(|l| l.iter())
            .chain(tables.iter().flatten())
        {
            assert_eq!(w.to_ascii_lowercase(), *w);
        }
    }
}
