//! Provider-reported strings made safe to return and store (issue 12 item 9, R-LOG): the model
//! id, a rate version, score legend labels. Control and bidirectional-formatting characters
//! become U+FFFD and the text is bounded. Shared by the client and the usage records, below both.
//!
//! It only cleans and cuts: it must never decide whether a response is valid, and it reads no
//! more of a string than the bound needs.

/// Longest provider-reported string (`model`, `billing.rate_version`) jevgate returns or stores,
/// in UTF-8 bytes; longer text is cut at a character boundary and ends with `…`.
pub const MAX_PROVIDER_TEXT_BYTES: usize = 128;

/// Longest score legend label returned, in UTF-8 bytes (cleaned and cut like
/// [`MAX_PROVIDER_TEXT_BYTES`] strings): a label is criteria-like text, so it may be longer.
pub const MAX_LEGEND_TEXT_BYTES: usize = 1024;

/// A provider-reported string made safe to return and store (issue 12 item 9): control and
/// bidirectional-formatting characters become U+FFFD, and the text is bounded to
/// [`MAX_PROVIDER_TEXT_BYTES`]. Linear, and reads no more of `s` than it needs.
pub(crate) fn provider_text(s: &str) -> String {
    bounded_text(s, MAX_PROVIDER_TEXT_BYTES)
}

/// [`provider_text`] with another bound (`max` ≥ 3 bytes).
pub(crate) fn bounded_text(s: &str, max: usize) -> String {
    const MORE: char = '…';
    let clean = |c: char| {
        let bidi = matches!(c, '\u{200e}' | '\u{200f}' | '\u{061c}' | '\u{202a}'..='\u{202e}'
            | '\u{2066}'..='\u{2069}');
        if c.is_control() || bidi {
            char::REPLACEMENT_CHARACTER
        } else {
            c
        }
    };
    let mut out = String::new();
    for c in s.chars().map(clean) {
        if out.len() + c.len_utf8() > max {
            while out.len() + MORE.len_utf8() > max {
                out.pop();
            }
            out.push(MORE);
            break;
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    // Issue 12 item 9: provider strings are bounded and free of control/bidi characters.
    #[test]
    fn provider_text_is_bounded_and_clean() {
        assert_eq!(provider_text("jev-1.13.0"), "jev-1.13.0");
        assert_eq!(provider_text("a\u{1b}[31mb\n"), "a\u{fffd}[31mb\u{fffd}");
        assert_eq!(provider_text("x\u{202e}y"), "x\u{fffd}y");
        for long in ["é".repeat(1_000_000), "a".repeat(129), "\u{7}".repeat(500)] {
            let t = provider_text(&long);
            assert!(t.len() <= MAX_PROVIDER_TEXT_BYTES, "{}", t.len());
            assert!(t.ends_with('…') && !t.chars().any(char::is_control));
        }
        let exact = "a".repeat(MAX_PROVIDER_TEXT_BYTES);
        assert_eq!(provider_text(&exact), exact);
    }
}
