//! Step lists (R-GRM-STEPS) and the parts of one step (R-GRM-PARTS).
//!
//! This module owns deciding whether a message is the user's own step list and cutting it
//! into steps. Every step and part it returns is a trimmed sub-slice of the input, never
//! rewritten. When in doubt it answers `None` (the one-command path): it never invents a
//! split the user did not write.

use super::number::{digit_value, read_count};
use super::text::{eat, eat_any, is_space, opt, strip_prefix_ci, trim};

/// At most this many steps make a step list (R-GRM-STEPS).
pub const MAX_STEPS: usize = 12;
/// A step longer than this many characters keeps the one-command path (R-GRM-STEPS).
pub const MAX_STEP_CHARS: usize = 300;

/// Splits the user's message into its steps (R-GRM-STEPS), or `None` for the one-command path.
///
/// A numbered or bulleted list yields exactly its items (text before the list is ignored).
/// Otherwise the message is split on commas, new lines and the Thai connectors แล้ว / จากนั้น
/// when preceded by a space, after dropping a leading `You are …` / `คุณกำลัง …` sentence, a
/// header line ending in `:` and an inline header (`ทำตามขั้นตอนนี้ทีละขั้น: a, b`). Pacing
/// notes (`start with step 1`, `เริ่มจากขั้นตอนที่ 1`) are dropped and quoted text is never
/// split. `None` for text after a list, mixed numbered and bulleted items, conditional wording
/// anywhere, a single step, more than [`MAX_STEPS`] steps or a step over [`MAX_STEP_CHARS`]
/// characters.
///
/// ```
/// use jevgate::grammar::split_steps;
/// assert_eq!(
///     split_steps("1. go to google 2. search cats").unwrap(),
///     vec!["go to google", "search cats"]
/// );
/// assert_eq!(
///     split_steps("เปิด tab ใหม่, เข้า google, ค้น cats, เข้า link แรก, scroll ลงมา").unwrap().len(),
///     5
/// );
/// assert_eq!(split_steps("ถ้าเจอปุ่ม login ให้กด, แล้วค้นหา แมว"), None);
/// assert_eq!(split_steps("scroll down"), None);
/// ```
pub fn split_steps(message: &str) -> Option<Vec<String>> {
    if has_conditional(message) {
        return None;
    }
    let mut steps: Vec<&str> = Vec::new();
    match list_items(message, &mut steps) {
        List::Items => {}
        List::Refused => return None,
        List::None => free_split(message, &mut steps),
    }
    steps.retain(|s| !s.is_empty() && !is_pacing(s));
    if steps.len() < 2 || steps.len() > MAX_STEPS {
        return None;
    }
    if steps
        .iter()
        .any(|s| s.chars().take(MAX_STEP_CHARS + 1).count() > MAX_STEP_CHARS)
    {
        return None;
    }
    Some(steps.into_iter().map(str::to_string).collect())
}

/// The parts of one step joined with แล้ว, จากนั้น or then (R-GRM-PARTS), in order. A step
/// without a connector is one part; quoted text is never split.
///
/// ```
/// use jevgate::grammar::split_parts;
/// assert_eq!(split_parts("เปิด Chrome แล้วกด Cmd+T"), vec!["เปิด Chrome", "กด Cmd+T"]);
/// assert_eq!(split_parts("type hello then press enter"), vec!["type hello", "press enter"]);
/// assert_eq!(split_parts("scroll down"), vec!["scroll down"]);
/// ```
pub fn split_parts(step: &str) -> Vec<String> {
    let mut parts = Vec::new();
    scan(step, Splitter::Parts, &mut parts);
    parts
        .into_iter()
        .map(|p| trim(p).trim_end_matches([',', '，']))
        .map(trim)
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect()
}

// ---------------------------------------------------------------- splitting with quotes

#[derive(Clone, Copy, PartialEq, Eq)]
enum Splitter {
    /// Commas, new lines, แล้ว / จากนั้น after a space.
    Steps,
    /// แล้ว / จากนั้น after a space, and the English word then.
    Parts,
}

fn closing_quote(c: char) -> Option<char> {
    match c {
        '"' => Some('"'),
        '“' => Some('”'),
        '「' => Some('」'),
        '『' => Some('』'),
        '«' => Some('»'),
        _ => None,
    }
}

const THAI_CONNECTORS: &[&str] = &["จากนั้นก็", "จากนั้น", "แล้วก็", "แล้ว"];
const ENGLISH_CONNECTORS: &[&str] = &["and then", "then"];

/// If a connector starts at `rest` (which follows a space), its length.
fn connector_at(rest: &str, splitter: Splitter) -> Option<usize> {
    if let Some(c) = THAI_CONNECTORS.iter().find(|c| rest.starts_with(**c)) {
        return Some(c.len());
    }
    if splitter == Splitter::Parts {
        for c in ENGLISH_CONNECTORS {
            if let Some(after) = strip_prefix_ci(rest, c) {
                if !after.starts_with(|ch: char| ch.is_alphanumeric()) {
                    return Some(c.len());
                }
            }
        }
    }
    None
}

/// Pushes the pieces of `text` between separators (untrimmed, possibly empty).
fn scan<'a>(text: &'a str, splitter: Splitter, out: &mut Vec<&'a str>) {
    let mut start = 0usize;
    let mut quote: Option<char> = None;
    let mut prev: Option<char> = None;
    let mut skip_to = 0usize;
    for (i, c) in text.char_indices() {
        if i < skip_to {
            prev = Some(c);
            continue;
        }
        if let Some(close) = quote {
            if c == close {
                quote = None;
            }
            prev = Some(c);
            continue;
        }
        if let Some(close) = closing_quote(c) {
            quote = Some(close);
            prev = Some(c);
            continue;
        }
        let cut = match c {
            '\n' | '\r' if splitter == Splitter::Steps => Some(i + c.len_utf8()),
            ',' | '，' | '、' | '،' if splitter == Splitter::Steps => {
                let next = text.get(i + c.len_utf8()..).and_then(|r| r.chars().next());
                let between_digits = prev.is_some_and(|p| p.is_ascii_digit())
                    && next.is_some_and(|n| n.is_ascii_digit());
                (!between_digits).then_some(i + c.len_utf8())
            }
            _ if is_space(c) => {
                let after = i + c.len_utf8();
                text.get(after..)
                    .and_then(|rest| connector_at(rest, splitter))
                    .map(|len| after + len)
            }
            _ => None,
        };
        if let Some(next_start) = cut {
            out.push(text.get(start..i).unwrap_or(""));
            start = next_start;
            skip_to = next_start;
        }
        prev = Some(c);
    }
    out.push(text.get(start..).unwrap_or(""));
}

// ---------------------------------------------------------------- lists

enum List {
    /// A list was found; its items were pushed.
    Items,
    /// A list with text after it or mixed markers: the one-command path.
    Refused,
    /// No list.
    None,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Marker {
    Numbered(u32),
    Bullet,
}

const BULLETS: &[char] = &['-', '*', '•', '·', '–', '—', '▪', '●', '◦', '‣'];

/// The list marker a trimmed line starts with, and the item text after it (trimmed, as the
/// line is).
fn line_marker(line: &str) -> Option<(Marker, &str)> {
    let mut chars = line.char_indices();
    let (_, first) = chars.next()?;
    if BULLETS.contains(&first) {
        let rest = line.get(first.len_utf8()..)?;
        return rest
            .starts_with(is_space)
            .then(|| (Marker::Bullet, trim(rest)));
    }
    numbered_marker(line)
}

/// `12. text` or `12) text` (ASCII or Thai digits, at most three), and the item text after
/// it with leading separators skipped. Trailing separators are kept: trimming them here would
/// rescan the whole tail at every candidate marker (quadratic on `"3. " × N` + spaces).
fn numbered_marker(s: &str) -> Option<(Marker, &str)> {
    let mut n: u32 = 0;
    let mut digits = 0;
    for (i, c) in s.char_indices() {
        if let Some(d) = digit_value(c) {
            digits += 1;
            if digits > 3 {
                return None;
            }
            n = n * 10 + u32::from(d);
            continue;
        }
        if digits == 0 || !(c == '.' || c == ')') {
            return None;
        }
        let rest = s.get(i + 1..)?;
        return (rest.is_empty() || rest.starts_with(is_space))
            .then(|| (Marker::Numbered(n), rest.trim_start_matches(is_space)));
    }
    None
}

fn list_items<'a>(message: &'a str, out: &mut Vec<&'a str>) -> List {
    let mut kind: Option<Marker> = None;
    let mut items_start = out.len();
    for raw_line in message.split('\n') {
        let line = trim(raw_line);
        if line.is_empty() {
            continue;
        }
        match (line_marker(line), kind) {
            (Some((m, item)), None) => {
                kind = Some(m);
                items_start = out.len();
                out.push(item);
            }
            (Some((m, item)), Some(k)) => {
                let same = matches!(
                    (m, k),
                    (Marker::Numbered(_), Marker::Numbered(_)) | (Marker::Bullet, Marker::Bullet)
                );
                if !same {
                    return List::Refused;
                }
                out.push(item);
            }
            (None, None) => {}
            (None, Some(_)) => {
                if !is_pacing(line) {
                    // Text after a list.
                    return List::Refused;
                }
            }
        }
    }
    match kind {
        None => inline_list(message, out),
        Some(Marker::Numbered(first)) if out.len() - items_start == 1 => {
            // One numbered line may hold the whole list inline: 1. a 2. b 3. c
            let item = out.pop().unwrap_or("");
            let before = out.len();
            if inline_from(item, first + 1, out) {
                out.insert(before, inline_head(item, first + 1));
            } else {
                out.truncate(before);
                out.push(item);
            }
            List::Items
        }
        Some(_) => List::Items,
    }
}

/// Where the inline marker `n.` / `n)` is in `s`: (marker start, item start).
fn find_inline_marker(s: &str, n: u32) -> Option<(usize, usize)> {
    let mut prev_space = true;
    for (i, c) in s.char_indices() {
        if prev_space && c.is_ascii_digit() {
            if let Some(rest) = s.get(i..) {
                if let Some((Marker::Numbered(m), item)) = numbered_marker(rest) {
                    if m == n {
                        // `item` is a suffix of `s`.
                        return Some((i, s.len() - item.len()));
                    }
                }
            }
        }
        prev_space = is_space(c);
    }
    None
}

/// The first item of an inline list: `s` up to marker `next`.
fn inline_head(s: &str, next: u32) -> &str {
    match find_inline_marker(s, next) {
        Some((m, _)) => trim(s.get(..m).unwrap_or(s)),
        None => s,
    }
}

/// Pushes the items `next`, `next+1`, … found inline in `s`; false when `next` is absent.
fn inline_from<'a>(s: &'a str, next: u32, out: &mut Vec<&'a str>) -> bool {
    let Some((_, mut item_start)) = find_inline_marker(s, next) else {
        return false;
    };
    let mut n = next;
    loop {
        let rest = s.get(item_start..).unwrap_or("");
        if out.len() > MAX_STEPS + 1 {
            out.push(rest);
            return true;
        }
        match find_inline_marker(rest, n + 1) {
            Some((m, i)) => {
                out.push(trim(rest.get(..m).unwrap_or(rest)));
                item_start += i;
                n += 1;
            }
            None => {
                out.push(trim(rest));
                return true;
            }
        }
    }
}

/// `… 1. a 2. b` inside running text: the items from `1.` on.
fn inline_list<'a>(message: &'a str, out: &mut Vec<&'a str>) -> List {
    let Some((_, start)) = find_inline_marker(message, 1) else {
        return List::None;
    };
    let list = message.get(start..).unwrap_or("");
    let before = out.len();
    if find_inline_marker(list, 2).is_none() {
        return List::None;
    }
    out.push(inline_head(list, 2));
    if inline_from(list, 2, out) {
        List::Items
    } else {
        out.truncate(before);
        List::None
    }
}

// ---------------------------------------------------------------- free text

fn free_split<'a>(message: &'a str, out: &mut Vec<&'a str>) {
    let mut text = trim(message);
    text = drop_context_sentence(text);
    text = drop_pacing_sentence(text);
    // Header lines ending in ':'.
    loop {
        let (line, rest) = match text.find('\n') {
            Some(i) => (text.get(..i).unwrap_or(""), text.get(i + 1..).unwrap_or("")),
            None => (text, ""),
        };
        let line = trim(line);
        if !line.is_empty() && (line.ends_with(':') || line.ends_with('：')) {
            text = trim(rest);
        } else {
            break;
        }
    }
    text = drop_inline_header(text);
    let before = out.len();
    scan(text, Splitter::Steps, out);
    for piece in out.iter_mut().skip(before) {
        *piece = strip_trailing_pacing(trim(piece));
    }
}

/// Where the sentence starting `s` ends: after `.`, `!`, `?` followed by a space, `。`, or a
/// new line. `None` when it runs to the end.
fn sentence_end(s: &str) -> Option<usize> {
    let mut prev_stop = false;
    for (i, c) in s.char_indices() {
        if c == '\n' || c == '。' || c == '！' || c == '？' {
            return Some(i + c.len_utf8());
        }
        if prev_stop && is_space(c) {
            return Some(i);
        }
        prev_stop = matches!(c, '.' | '!' | '?');
    }
    None
}

fn drop_context_sentence(text: &str) -> &str {
    let starts = eat(text, "you are").is_some() || text.starts_with("คุณกำลัง");
    if !starts {
        return text;
    }
    match sentence_end(text) {
        Some(end) => trim(text.get(end..).unwrap_or("")),
        None => "",
    }
}

fn drop_pacing_sentence(text: &str) -> &str {
    match sentence_end(text) {
        Some(end) if is_pacing(text.get(..end).unwrap_or("")) => {
            trim(text.get(end..).unwrap_or(""))
        }
        _ => text,
    }
}

/// `… search cats. Start with step 1.`: the pacing sentence at the end of a piece is dropped.
fn strip_trailing_pacing(piece: &str) -> &str {
    let mut search_from = 0;
    while let Some(end) = piece.get(search_from..).and_then(sentence_end) {
        let cut = search_from + end;
        let tail = piece.get(cut..).unwrap_or("");
        if is_pacing(tail) {
            return trim(piece.get(..cut).unwrap_or(piece));
        }
        if cut >= piece.len() {
            break;
        }
        search_from = cut;
    }
    piece
}

/// `ทำตามขั้นตอนนี้ทีละขั้น: a, b`: a colon followed by a space, before the first separator,
/// ends an inline header. URLs (`https://`) and times (`10:30`) have no space after the colon.
fn drop_inline_header(text: &str) -> &str {
    let mut quote: Option<char> = None;
    for (i, c) in text.char_indices() {
        if let Some(close) = quote {
            if c == close {
                quote = None;
            }
            continue;
        }
        if let Some(close) = closing_quote(c) {
            quote = Some(close);
            continue;
        }
        match c {
            ':' | '：' => {
                let after = i + c.len_utf8();
                let rest = text.get(after..).unwrap_or("");
                let head = trim(text.get(..i).unwrap_or(""));
                if rest.starts_with(is_space) && !head.is_empty() {
                    return trim(rest);
                }
            }
            ',' | '，' | '、' | '\n' => return text,
            _ if is_space(c) => {
                let after = text.get(i + c.len_utf8()..).unwrap_or("");
                if connector_at(after, Splitter::Steps).is_some() {
                    return text;
                }
            }
            _ => {}
        }
    }
    text
}

// ---------------------------------------------------------------- pacing and conditions

/// A pacing note: `start with step 1`, `เริ่มจากขั้นตอนที่ 1`, `step by step`, `ทีละขั้น`.
fn is_pacing(s: &str) -> bool {
    // Pacing notes are short; bounding the length keeps every caller linear.
    if s.len() > 120 {
        return false;
    }
    let s = trim(s).trim_end_matches(['.', '!', '?', '。', ':', ',']);
    let s = trim(s);
    for whole in [
        "step by step",
        "one step at a time",
        "ทีละขั้น",
        "ทีละขั้นตอน",
        "ทำทีละขั้น",
        "ทำทีละขั้นตอน",
    ] {
        if s.eq_ignore_ascii_case(whole) {
            return true;
        }
    }
    let Some(rest) = eat_any(s, &["start", "begin", "เริ่ม"]) else {
        return false;
    };
    let rest = opt(rest, &["with", "from", "at", "จาก", "ที่"]);
    let rest = opt(rest, &["the"]);
    if let Some(r) = eat_any(rest, &["first step", "ขั้นตอนแรก", "ขั้นแรก", "ข้อแรก"])
    {
        return trim(r).is_empty();
    }
    let Some(rest) = eat_any(rest, &["step", "ขั้นตอนที่", "ขั้นที่", "ข้อที่", "ข้อ", "ขั้นตอน"])
    else {
        return false;
    };
    read_count(rest) == Some(1)
}

const CONDITION_WORDS: &[&str] = &[
    "if",
    "unless",
    "otherwise",
    "else",
    "when",
    "whenever",
    "until",
    "whether",
];
const THAI_CONDITIONS: &[&str] = &[
    "ถ้า",
    "ในกรณี",
    "กรณีที่",
    "มิฉะนั้น",
    "ไม่งั้น",
    "ไม่อย่างนั้น",
    "ไม่เช่นนั้น",
    "เว้นแต่",
    "จนกว่า",
    "แต่หาก",
    "หากว่า",
    "もし",
];

/// Conditional wording anywhere: if/unless/otherwise…, ถ้า/หาก/ในกรณี/มิฉะนั้น….
fn has_conditional(text: &str) -> bool {
    if THAI_CONDITIONS.iter().any(|w| text.contains(w)) {
        return true;
    }
    let mut prev_word = "";
    let mut prev_char: Option<char> = None;
    for (i, c) in text.char_indices() {
        // หาก at the start of a word (หาก is also the tail of ค้นหา + ก…).
        if c == 'ห'
            && prev_char.is_none_or(|p| !is_thai_letter(p))
            && text.get(i..).is_some_and(|r| r.starts_with("หาก"))
        {
            return true;
        }
        if c.is_ascii_alphabetic() && prev_char.is_none_or(|p| !p.is_ascii_alphanumeric()) {
            let rest = text.get(i..).unwrap_or("");
            let len = rest
                .find(|ch: char| !ch.is_ascii_alphanumeric())
                .unwrap_or(rest.len());
            let word = rest.get(..len).unwrap_or("");
            if CONDITION_WORDS.iter().any(|w| w.eq_ignore_ascii_case(word)) {
                return true;
            }
            if prev_word.eq_ignore_ascii_case("in") && word.eq_ignore_ascii_case("case") {
                return true;
            }
            prev_word = word;
        }
        prev_char = Some(c);
    }
    false
}

fn is_thai_letter(c: char) -> bool {
    ('\u{0E01}'..='\u{0E5B}').contains(&c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn r_grm_steps_pacing_notes_are_recognised() {
        assert!(is_pacing("start with step 1"));
        assert!(is_pacing("Start with step 1."));
        assert!(is_pacing("เริ่มจากขั้นตอนที่ 1"));
        assert!(is_pacing("เริ่มจากขั้นตอนที่ ๑"));
        assert!(!is_pacing("start the car"));
    }

    #[test]
    fn r_grm_steps_inline_markers_keep_items_trimmed_without_rescanning_the_tail() {
        let spaces = " ".repeat(1000);
        assert_eq!(
            split_steps(&format!("1. a   2. b{spaces}")).unwrap(),
            vec!["a", "b"]
        );
        assert_eq!(
            split_steps(&format!("do this: 1. a \u{3000} 2. b \u{200b}{spaces}")).unwrap(),
            vec!["a", "b"]
        );
        // The issue's shape (53.6 s at 1 MB before): no list starts at 3, so no split.
        let hostile = format!("a {}{spaces}", "3. ".repeat(10_000));
        assert_eq!(split_steps(&hostile), None);
    }

    #[test]
    fn r_grm_steps_conditionals_are_found_as_words_only() {
        assert!(has_conditional("If it loads, click"));
        assert!(has_conditional("หากเจอ ให้กด"));
        assert!(has_conditional("แต่ถ้าไม่เจอ"));
        assert!(!has_conditional("ค้นหากาแฟ, เลื่อนลง"));
        assert!(!has_conditional("gift ideas, difference"));
    }
}
