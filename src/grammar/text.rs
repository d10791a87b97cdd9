//! Small matching helpers over `&str` for the grammar: case-insensitive word matching,
//! whitespace skipping and sub-slice offsets.
//!
//! This module owns character-level matching only. It never allocates, never slices off a
//! character boundary (every cut goes through `str::get`) and knows no command words.

/// Whether `c` separates words (Unicode whitespace, including the zero-width space some Thai
/// input methods insert).
pub(crate) fn is_space(c: char) -> bool {
    c.is_whitespace() || c == '\u{200b}'
}

/// `s` without leading separators.
#[inline]
pub(crate) fn skip_space(s: &str) -> &str {
    // Fast path: a first byte that cannot start a separator (ASCII non-space, or a lead byte
    // outside the blocks that hold Unicode spaces, e.g. every Thai character's 0xE0).
    match s.as_bytes().first() {
        None => s,
        Some(&b) if b < 0x80 && !b.is_ascii_whitespace() => s,
        Some(&b) if b >= 0x80 && !matches!(b, 0xC2 | 0xE1 | 0xE2 | 0xE3) => s,
        Some(_) => s.trim_start_matches(is_space),
    }
}

/// `s` trimmed of separators on both sides.
pub(crate) fn trim(s: &str) -> &str {
    s.trim_matches(is_space)
}

/// `s` after `prefix`, compared ASCII-case-insensitively (other characters exactly).
pub(crate) fn strip_prefix_ci<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let head = s.get(..prefix.len())?;
    if head.eq_ignore_ascii_case(prefix) {
        s.get(prefix.len()..)
    } else {
        None
    }
}

/// `s` before `suffix`, compared ASCII-case-insensitively.
pub(crate) fn strip_suffix_ci<'a>(s: &'a str, suffix: &str) -> Option<&'a str> {
    let cut = s.len().checked_sub(suffix.len())?;
    let tail = s.get(cut..)?;
    if tail.eq_ignore_ascii_case(suffix) {
        s.get(..cut)
    } else {
        None
    }
}

// A multi-byte character has no ASCII byte, so checking one byte is exact.
fn ends_word_char(s: &str) -> bool {
    s.as_bytes().last().is_some_and(u8::is_ascii_alphanumeric)
}

fn starts_word_char(s: &str) -> bool {
    s.as_bytes().first().is_some_and(u8::is_ascii_alphanumeric)
}

/// [`eat`] on text that starts with no separator.
#[inline]
fn eat_here<'a>(s: &'a str, word: &str) -> Option<&'a str> {
    let (first_s, first_w) = (s.as_bytes().first()?, word.as_bytes().first()?);
    if !first_s.eq_ignore_ascii_case(first_w) {
        return None;
    }
    // Thai words all start with byte 0xE0: compare the whole first character before the rest.
    if *first_w >= 0x80 && s.as_bytes().get(..3) != word.as_bytes().get(..3) {
        return None;
    }
    let rest = strip_prefix_ci(s, word)?;
    if ends_word_char(word) && starts_word_char(rest) {
        None
    } else {
        Some(rest)
    }
}

/// Skips separators, then matches `word`; a word ending in an ASCII letter or digit must not
/// run into another one (`scroll` does not match `scrolling`). Returns what follows.
pub(crate) fn eat<'a>(s: &'a str, word: &str) -> Option<&'a str> {
    eat_here(skip_space(s), word)
}

/// [`eat`] of the first of `words` that matches (list longer words first; words are written
/// in lower case, which lets one byte compare skip most entries).
pub(crate) fn eat_any<'a>(s: &'a str, words: &[&str]) -> Option<&'a str> {
    let s = skip_space(s);
    let head = Head::of(s)?;
    words
        .iter()
        .filter(|w| head.may_start(w))
        .find_map(|w| eat_here(s, w))
}

/// [`eat_any`] that also says which entry matched.
pub(crate) fn eat_table<'a, T: Copy>(s: &'a str, table: &[(&str, T)]) -> Option<(&'a str, T)> {
    let s = skip_space(s);
    let head = Head::of(s)?;
    table
        .iter()
        .filter(|(w, _)| head.may_start(w))
        .find_map(|&(w, v)| eat_here(s, w).map(|rest| (rest, v)))
}

/// The first character of a text as bytes (ASCII lower-cased), to skip table words cheaply.
#[derive(Clone, Copy)]
pub(crate) struct Head {
    bytes: [u8; 4],
    len: usize,
}

impl Head {
    /// The head of `s`, `None` for empty text.
    #[inline]
    pub(crate) fn of(s: &str) -> Option<Head> {
        let b = s.as_bytes();
        let lead = *b.first()?;
        let len = match lead {
            0x00..=0x7F => 1,
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            _ => 4,
        };
        let mut bytes = [0u8; 4];
        bytes[0] = lead.to_ascii_lowercase();
        bytes[1..len].copy_from_slice(b.get(1..len)?);
        Some(Head { bytes, len })
    }

    /// Whether lower-case `word` may start the text (its first character is the head).
    #[inline]
    pub(crate) fn may_start(self, word: &str) -> bool {
        let w = word.as_bytes();
        w.len() >= self.len
            && w[0] == self.bytes[0]
            && (self.len < 2 || w[1] == self.bytes[1])
            && (self.len < 3 || w[2] == self.bytes[2])
            && (self.len < 4 || w[3] == self.bytes[3])
    }
}

/// Optional word: what follows it, or `s` unchanged.
pub(crate) fn opt<'a>(s: &'a str, words: &[&str]) -> &'a str {
    eat_any(s, words).unwrap_or(s)
}

/// Only separators are left.
pub(crate) fn at_end(s: &str) -> bool {
    skip_space(s).is_empty()
}

/// Byte offset of `part` inside `whole`, when `part` is a sub-slice of it.
pub(crate) fn offset_in(whole: &str, part: &str) -> Option<usize> {
    let start = (part.as_ptr() as usize).checked_sub(whole.as_ptr() as usize)?;
    (start + part.len() <= whole.len()).then_some(start)
}

/// Whether `s` contains a separator.
pub(crate) fn has_space(s: &str) -> bool {
    s.chars().any(is_space)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eat_respects_ascii_word_boundaries_and_case() {
        assert_eq!(eat("  Scroll down", "scroll"), Some(" down"));
        assert_eq!(eat("scrolling", "scroll"), None);
        assert_eq!(eat("scrollลง", "scroll"), Some("ลง"));
        assert_eq!(eat("เลื่อนลง", "เลื่อน"), Some("ลง"));
    }

    #[test]
    fn strip_prefix_never_cuts_inside_a_character() {
        assert_eq!(strip_prefix_ci("ก", "a"), None);
        assert_eq!(strip_suffix_ci("ก", "a"), None);
        assert_eq!(strip_suffix_ci("abcครับ", "ครับ"), Some("abc"));
    }

    #[test]
    fn offset_in_finds_sub_slices_only() {
        let whole = "abc def";
        assert_eq!(offset_in(whole, &whole[4..]), Some(4));
        assert_eq!(offset_in(whole, "elsewhere"), None);
    }
}
