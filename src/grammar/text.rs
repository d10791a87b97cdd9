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
pub(crate) fn skip_space(s: &str) -> &str {
    s.trim_start_matches(is_space)
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

fn ends_word_char(s: &str) -> bool {
    s.chars().next_back().is_some_and(|c| c.is_ascii_alphanumeric())
}

fn starts_word_char(s: &str) -> bool {
    s.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
}

/// Skips separators, then matches `word`; a word ending in an ASCII letter or digit must not
/// run into another one (`scroll` does not match `scrolling`). Returns what follows.
pub(crate) fn eat<'a>(s: &'a str, word: &str) -> Option<&'a str> {
    let rest = strip_prefix_ci(skip_space(s), word)?;
    if ends_word_char(word) && starts_word_char(rest) {
        None
    } else {
        Some(rest)
    }
}

/// [`eat`] of the first of `words` that matches (list longer words first).
pub(crate) fn eat_any<'a>(s: &'a str, words: &[&str]) -> Option<&'a str> {
    words.iter().find_map(|w| eat(s, w))
}

/// [`eat_any`] that also says which entry matched.
pub(crate) fn eat_table<'a, T: Copy>(s: &'a str, table: &[(&str, T)]) -> Option<(&'a str, T)> {
    table.iter().find_map(|&(w, v)| eat(s, w).map(|rest| (rest, v)))
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
