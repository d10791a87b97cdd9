//! Spoken filler words (R-GRM-FILLER): which leading and trailing words are ignored when a
//! command is matched.
//!
//! This module only returns sub-slices of its input. It never changes, copies or stores the
//! command: the stored command, the text sent to a model and step lists stay verbatim.

use super::text::{is_space, skip_space, strip_prefix_ci, strip_suffix_ci, trim};

/// Leading fillers that may run straight into the command (`เอาล่ะกด enter`).
const LEAD_JOINED: &[&str] = &["เอาล่ะ", "โอเค"];
/// Leading fillers that must be followed by a separator (`อ่า` starts `อ่าน`, `ok` starts `okay`).
const LEAD_SEPARATED: &[&str] = &["เอ่อ", "อ่า", "ok"];
/// Trailing politeness particles.
const TRAIL_ALL: &[&str] = &["ครับ", "ค่ะ", "คะ", "หน่อย", "เจ้า", "จ้า", "นะ"];
/// Particles that are stripped even when joined to the payload text of a search (`แมวครับ`);
/// the others (`นะ` ends `ชนะ`, `เจ้า` and `จ้า` end `พระเจ้า`) need a space before them there.
const TRAIL_JOINED_IN_PAYLOAD: &[&str] = &["ครับ", "ค่ะ", "หน่อย"];
const TRAIL_PUNCT: &[char] = &['.', '!', '?', '。', '！', '？'];

/// How eagerly trailing particles are stripped.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// For matching command words: every particle, joined or not.
    Command,
    /// For the text a search carries: joined particles only when unmistakable.
    Payload,
}

fn is_sep(c: char) -> bool {
    is_space(c) || c == ',' || c == '，'
}

fn strip_leading(mut s: &str) -> &str {
    loop {
        let before = s.len();
        for w in LEAD_JOINED {
            if let Some(rest) = strip_prefix_ci(s, w) {
                s = rest.trim_start_matches(is_sep);
            }
        }
        for w in LEAD_SEPARATED {
            if let Some(rest) = strip_prefix_ci(s, w) {
                if rest.is_empty() || rest.starts_with(is_sep) || rest.starts_with(TRAIL_PUNCT) {
                    s = rest.trim_start_matches(|c| is_sep(c) || TRAIL_PUNCT.contains(&c));
                }
            }
        }
        if s.len() == before {
            return s;
        }
    }
}

fn strip_trailing(mut s: &str, mode: Mode) -> &str {
    loop {
        let before = s.len();
        s = s.trim_end_matches(|c| is_space(c) || TRAIL_PUNCT.contains(&c));
        for w in TRAIL_ALL {
            if let Some(rest) = strip_suffix_ci(s, w) {
                let spaced = rest.is_empty() || rest.ends_with(is_space);
                if mode == Mode::Command || spaced || TRAIL_JOINED_IN_PAYLOAD.contains(w) {
                    s = rest;
                }
            }
        }
        if s.len() == before {
            return s;
        }
    }
}

/// The part of `text` that is matched against the command words: without leading fillers,
/// trailing particles and a trailing `.`, `!` or `?`. A filler said alone is kept (the trimmed
/// input is returned). The result is always a sub-slice of `text`.
pub(crate) fn strip_fillers_mode(text: &str, mode: Mode) -> &str {
    let whole = trim(text);
    let s = strip_trailing(strip_leading(whole), mode);
    let s = trim(s);
    if s.is_empty() {
        whole
    } else {
        s
    }
}

/// The part of `text` a command is matched on (R-GRM-FILLER): a leading เอ่อ, อ่า, เอาล่ะ,
/// โอเค or ok, trailing particles (ครับ, ค่ะ, คะ, นะ, หน่อย, จ้า, เจ้า) and a trailing `.`, `!`
/// or `?` are left out. A filler said alone is kept.
///
/// The result is a sub-slice of `text`; `text` itself is never changed, so the stored command
/// and any text sent to a model stay verbatim.
///
/// ```
/// use jevgate::grammar::strip_fillers;
/// assert_eq!(strip_fillers("เลื่อนลงครับ"), "เลื่อนลง");
/// assert_eq!(strip_fillers("เอาล่ะ กด enter."), "กด enter");
/// assert_eq!(strip_fillers("ok"), "ok");
/// ```
pub fn strip_fillers(text: &str) -> &str {
    strip_fillers_mode(text, Mode::Command)
}

/// Leading fillers only (for verbatim payloads such as the text of `พิมพ์ X`).
pub(crate) fn strip_leading_fillers(text: &str) -> &str {
    let whole = trim(text);
    let s = skip_space(strip_leading(whole));
    if s.is_empty() {
        whole
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn r_grm_filler_strips_leading_and_trailing_words() {
        assert_eq!(strip_fillers("เอ่อ เลื่อนลง นะครับ"), "เลื่อนลง");
        assert_eq!(strip_fillers("ok, scroll down!"), "scroll down");
        assert_eq!(strip_fillers("OK scroll down"), "scroll down");
        assert_eq!(strip_fillers("โอเคเลื่อนขึ้น"), "เลื่อนขึ้น");
    }

    #[test]
    fn r_grm_filler_needs_a_separator_after_short_fillers() {
        assert_eq!(strip_fillers("อ่านหน้านี้"), "อ่านหน้านี้");
        assert_eq!(strip_fillers("okay"), "okay");
    }

    #[test]
    fn r_grm_filler_alone_is_kept() {
        assert_eq!(strip_fillers("ครับ"), "ครับ");
        assert_eq!(strip_fillers(" เอ่อ... "), "เอ่อ...");
    }

    #[test]
    fn r_grm_filler_payload_mode_keeps_word_endings() {
        assert_eq!(strip_fillers_mode("ชนะ", Mode::Payload), "ชนะ");
        assert_eq!(strip_fillers_mode("แมว นะ", Mode::Payload), "แมว");
        assert_eq!(strip_fillers_mode("แมวครับ", Mode::Payload), "แมว");
    }
}
