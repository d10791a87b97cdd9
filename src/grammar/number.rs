//! Spoken and written numbers: ASCII digits, Thai digits (๐–๙), Thai number words
//! (ห้าสิบ, ร้อยเอ็ด, สองล้านห้าแสน) and English digit words (R-GRM-PARSE `Digits`).
//!
//! This module owns reading one number and telling a clear reading from an ambiguous one
//! (ห้า ห้าสิบ; ร้อยห้า is 105 or 150). It never guesses: an ambiguous or unknown reading is
//! reported as such and the caller hands the command to a decision.

use super::text::{is_space, trim, Head};

/// How a piece of text reads as a number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Reading {
    /// One clear number, as decimal digits (leading zeros of a digit-by-digit reading kept).
    Clear(String),
    /// A number, but not one clear number (shorthand ending in a digit after ร้อย, พัน, หมื่น,
    /// แสน or ล้าน; a digit sequence mixed with a compound number).
    Ambiguous,
    /// Not a number.
    NotNumber,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok {
    Digit(u8),
    Yi,
    Et,
    /// A multiplier below a million: 10, 100, 1000, 10^4, 10^5.
    Mult(u32),
    Million,
}

const THAI_WORDS: &[(&str, Tok)] = &[
    ("ศูนย์", Tok::Digit(0)),
    ("หนึ่ง", Tok::Digit(1)),
    ("เอ็ด", Tok::Et),
    ("สอง", Tok::Digit(2)),
    ("ยี่", Tok::Yi),
    ("สาม", Tok::Digit(3)),
    ("สี่", Tok::Digit(4)),
    ("ห้า", Tok::Digit(5)),
    ("หก", Tok::Digit(6)),
    ("เจ็ด", Tok::Digit(7)),
    ("แปด", Tok::Digit(8)),
    ("เก้า", Tok::Digit(9)),
    ("สิบ", Tok::Mult(10)),
    ("ร้อย", Tok::Mult(100)),
    ("พัน", Tok::Mult(1_000)),
    ("หมื่น", Tok::Mult(10_000)),
    ("แสน", Tok::Mult(100_000)),
    ("ล้าน", Tok::Million),
];

const ENGLISH_DIGITS: &[&str] = &[
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
];

/// Longest number word a Thai word token can hold; longer words are not numbers here.
const MAX_TOKENS: usize = 64;

/// The value of a digit character: ASCII `0`–`9` or Thai `๐`–`๙`.
pub(crate) fn digit_value(c: char) -> Option<u8> {
    match c {
        '0'..='9' => Some(c as u8 - b'0'),
        '๐'..='๙' => Some((c as u32 - '๐' as u32) as u8),
        _ => None,
    }
}

/// `s` is a non-empty run of ASCII or Thai digits.
pub(crate) fn is_digit_run(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| digit_value(c).is_some())
}

fn push_digits(out: &mut String, s: &str) {
    for c in s.chars() {
        if let Some(d) = digit_value(c) {
            out.push(char::from(b'0' + d));
        }
    }
}

/// Splits a Thai word (no spaces) into number words; `None` when some part is not one.
fn tokenize(word: &str, out: &mut [Tok; MAX_TOKENS]) -> Option<usize> {
    let mut rest = word;
    let mut n = 0;
    while !rest.is_empty() {
        let head = Head::of(rest)?;
        let (w, t) = THAI_WORDS
            .iter()
            .find(|(w, _)| head.may_start(w) && rest.starts_with(w))?;
        if n == MAX_TOKENS {
            return None;
        }
        out[n] = *t;
        n += 1;
        rest = rest.get(w.len()..)?;
    }
    (n > 0).then_some(n)
}

/// Reads a group below one million. `Err(true)` = ambiguous, `Err(false)` = not a number.
fn below_million(toks: &[Tok]) -> Result<u128, bool> {
    let mut value: u128 = 0;
    let mut last_place: u32 = u32::MAX;
    let mut pending: Option<u8> = None;
    let mut yi = false;
    let mut i = 0;
    while i < toks.len() {
        match toks[i] {
            Tok::Digit(d) => {
                if pending.is_some() || yi {
                    return Err(false);
                }
                pending = Some(d);
            }
            Tok::Yi => {
                if pending.is_some() || yi || toks.get(i + 1) != Some(&Tok::Mult(10)) {
                    return Err(false);
                }
                yi = true;
            }
            Tok::Et => {
                // เอ็ด is the unit 1 after สิบ or a higher place, and ends the group.
                if pending.is_some() || yi || last_place == u32::MAX || i + 1 != toks.len() {
                    return Err(false);
                }
                value += 1;
                last_place = 1;
            }
            Tok::Mult(m) => {
                if m >= last_place {
                    return Err(false);
                }
                let coef = if m == 10 {
                    match (pending, yi) {
                        (None, false) => 1,
                        (None, true) => 2,
                        (Some(d), false) if d >= 3 => u128::from(d),
                        _ => return Err(false),
                    }
                } else {
                    match pending {
                        None => 1,
                        Some(0) => return Err(false),
                        Some(d) => u128::from(d),
                    }
                };
                value += coef * u128::from(m);
                last_place = m;
                pending = None;
                yi = false;
            }
            Tok::Million => return Err(false),
        }
        i += 1;
    }
    if let Some(d) = pending {
        match last_place {
            u32::MAX => value = u128::from(d),
            10 if d >= 2 => value += u128::from(d),
            // สิบหนึ่ง is not how 11 is said (สิบเอ็ด): not a clear number.
            10 => return Err(false),
            // Shorthand: a digit right after ร้อย/พัน/หมื่น/แสน (ร้อยห้า = 105 or 150).
            _ if d != 0 => return Err(true),
            _ => return Err(false),
        }
    }
    Ok(value)
}

/// Reads a compound number with any number of ล้าน (millions).
fn compound(toks: &[Tok]) -> Result<u128, bool> {
    match toks.iter().rposition(|t| *t == Tok::Million) {
        None => below_million(toks),
        Some(i) => {
            let (left, right) = (&toks[..i], &toks[i + 1..]);
            let high = if left.is_empty() { 1 } else { compound(left)? };
            if high == 0 {
                return Err(false);
            }
            if let [Tok::Digit(d)] = right {
                // สองล้านห้า: a digit right after ล้าน is shorthand too.
                return Err(*d != 0);
            }
            let low = if right.is_empty() {
                0
            } else {
                below_million(right)?
            };
            high.checked_mul(1_000_000)
                .and_then(|v| v.checked_add(low))
                .ok_or(false)
        }
    }
}

/// Appends `v` in decimal (without the formatting machinery: this is on the hot path).
fn push_decimal(out: &mut String, mut v: u128) {
    let mut buf = [0u8; 40];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    for &b in &buf[i..] {
        out.push(char::from(b));
    }
}

/// How one space-free word reads.
enum Word {
    /// Digits said or written one by one; appended to the output.
    Digits,
    /// One compound number (ห้าสิบ); its value appended to the output.
    Compound,
    /// Shorthand that is not one clear number.
    Ambiguous,
    /// Not a number.
    NotNumber,
}

/// Reads one space-free word: digits, Thai number words or one English digit word.
fn read_word(word: &str, out: &mut String) -> Word {
    if is_digit_run(word) {
        push_digits(out, word);
        return Word::Digits;
    }
    if let Some(d) = ENGLISH_DIGITS
        .iter()
        .position(|w| w.eq_ignore_ascii_case(word))
    {
        out.push(char::from(b'0' + d as u8));
        return Word::Digits;
    }
    let mut toks = [Tok::Et; MAX_TOKENS];
    let Some(n) = tokenize(word, &mut toks) else {
        return Word::NotNumber;
    };
    let toks = &toks[..n];
    if toks.iter().all(|t| matches!(t, Tok::Digit(_))) {
        // Said digit by digit (ห้าศูนย์ = "50").
        for t in toks {
            if let Tok::Digit(d) = t {
                out.push(char::from(b'0' + d));
            }
        }
        return Word::Digits;
    }
    match compound(toks) {
        Ok(v) => {
            push_decimal(out, v);
            Word::Compound
        }
        Err(true) => Word::Ambiguous,
        Err(false) => Word::NotNumber,
    }
}

/// Reads `text` as one number: digits (`50`, `๕๐`), Thai words (`ห้าสิบ`, `ร้อยเอ็ด`), or a
/// digit-by-digit sequence of words and digits separated by spaces (`ห้า ศูนย์`, `one two`).
pub(crate) fn read_number(text: &str) -> Reading {
    let text = trim(text);
    let mut out = String::new();
    let mut words = 0usize;
    let mut compound_seen = false;
    for word in text.split(is_space).filter(|w| !w.is_empty()) {
        words += 1;
        match read_word(word, &mut out) {
            Word::Digits => {}
            Word::Compound => compound_seen = true,
            Word::Ambiguous => return Reading::Ambiguous,
            Word::NotNumber => return Reading::NotNumber,
        }
    }
    if words == 0 {
        return Reading::NotNumber;
    }
    if compound_seen && words > 1 {
        // ห้า ห้าสิบ: not one clear number.
        return Reading::Ambiguous;
    }
    Reading::Clear(out)
}

/// Reads a count (`3`, `๓`, `สาม`, `three`): `None` unless it is one clear number; a number
/// too large for `u32` reads as `u32::MAX` (callers cap counts).
pub(crate) fn read_count(text: &str) -> Option<u32> {
    match read_number(text) {
        Reading::Clear(d) => {
            let significant = d.trim_start_matches('0');
            if significant.len() > 9 {
                Some(u32::MAX)
            } else if significant.is_empty() {
                Some(0)
            } else {
                significant.parse().ok()
            }
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clear(s: &str) -> Reading {
        Reading::Clear(s.to_string())
    }

    #[test]
    fn r_grm_parse_thai_compounds_read_as_one_number() {
        assert_eq!(read_number("ห้าสิบ"), clear("50"));
        assert_eq!(read_number("ร้อยห้าสิบ"), clear("150"));
        assert_eq!(read_number("ร้อยเอ็ด"), clear("101"));
        assert_eq!(read_number("ยี่สิบเอ็ด"), clear("21"));
        assert_eq!(read_number("สิบห้า"), clear("15"));
        assert_eq!(read_number("สองล้านห้าแสน"), clear("2500000"));
        assert_eq!(read_number("ล้านล้าน"), clear("1000000000000"));
        assert_eq!(read_number("พันห้าร้อย"), clear("1500"));
    }

    #[test]
    fn r_grm_parse_digit_by_digit_readings_keep_every_digit() {
        assert_eq!(read_number("ห้า ศูนย์"), clear("50"));
        assert_eq!(read_number("ศูนย์ห้า"), clear("05"));
        assert_eq!(read_number("๕๐"), clear("50"));
        assert_eq!(read_number("one two"), clear("12"));
    }

    #[test]
    fn r_grm_parse_shorthand_after_a_multiplier_is_ambiguous() {
        for s in [
            "ร้อยห้า",
            "พันห้า",
            "หมื่นสอง",
            "แสนสาม",
            "สองล้านห้า",
            "ห้า ห้าสิบ",
            "สองร้อยห้า",
        ] {
            assert_eq!(read_number(s), Reading::Ambiguous, "{s}");
        }
    }

    #[test]
    fn r_grm_parse_malformed_words_are_not_numbers() {
        for s in [
            "สองสิบ",
            "ห้าห้าสิบ",
            "เอ็ด",
            "สิบหนึ่ง",
            "ยี่",
            "ร้อยพัน",
            "แมว",
            "5ร้อย",
        ] {
            assert_eq!(read_number(s), Reading::NotNumber, "{s}");
        }
    }
}
