//! Byte-level JSON syntax for the response validator (R-VAL-FAST): whitespace, strings (borrowed,
//! escapes and UTF-8 checked), numbers (scanned once, converted exactly), literals and an
//! iterative skipper for values the validator does not read.
//!
//! This module owns JSON syntax only and knows nothing of answers. It must never allocate on the
//! accepted path (only an escaped string is decoded into a `String`, on request), never recurse
//! (nesting is tracked in a 128-bit stack, deeper input is malformed), and never panic: every
//! index is checked.

use std::borrow::Cow;

/// The input is not well-formed JSON at the cursor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Malformed;

pub(crate) type LResult<T> = Result<T, Malformed>;

/// Deepest nesting accepted: serde_json's default recursion limit of 128 admits 127 nested
/// containers.
const MAX_DEPTH: u32 = 127;

// Byte classes inside a string.
const PLAIN: u8 = 0;
const QUOTE: u8 = 1;
const BACKSLASH: u8 = 2;
const CONTROL: u8 = 3;
const HIGH: u8 = 4;

static STR_CLASS: [u8; 256] = {
    let mut t = [PLAIN; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = if i < 0x20 {
            CONTROL
        } else if i == b'"' as usize {
            QUOTE
        } else if i == b'\\' as usize {
            BACKSLASH
        } else if i >= 0x80 {
            HIGH
        } else {
            PLAIN
        };
        i += 1;
    }
    t
};

/// Byte equality tuned for short keys: overlapping word loads instead of a `memcmp` call.
#[inline(always)]
pub(crate) fn short_eq(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    let word8 = |s: &[u8], at: usize| {
        s.get(at..at + 8)
            .and_then(|w| <[u8; 8]>::try_from(w).ok())
            .map(u64::from_le_bytes)
    };
    let word4 = |s: &[u8], at: usize| {
        s.get(at..at + 4)
            .and_then(|w| <[u8; 4]>::try_from(w).ok())
            .map(u32::from_le_bytes)
    };
    match n {
        0 => true,
        1..=3 => a.iter().zip(b).all(|(x, y)| x == y),
        4..=8 => word4(a, 0) == word4(b, 0) && word4(a, n - 4) == word4(b, n - 4),
        9..=16 => word8(a, 0) == word8(b, 0) && word8(a, n - 8) == word8(b, n - 8),
        _ => a == b,
    }
}

/// Marks (high bit of each byte) the bytes of `w` that end a plain run inside a string: `"`,
/// `\\`, a control character or a non-ASCII byte. The lowest marked byte is exact.
#[inline(always)]
fn special_bytes(w: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero_byte = |x: u64| x.wrapping_sub(ONES) & !x;
    let quote = zero_byte(w ^ (ONES * b'"' as u64));
    let backslash = zero_byte(w ^ (ONES * b'\\' as u64));
    let control = w.wrapping_sub(ONES * 0x20);
    (quote | backslash | control | w) & HIGH
}

/// The body of a JSON string as it appears in the input (between the quotes).
///
/// Equality compares the decoded strings.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RawStr<'a> {
    /// Bytes between the quotes; valid UTF-8; escapes not decoded.
    pub raw: &'a [u8],
    /// Whether `raw` contains a backslash escape.
    pub escaped: bool,
}

impl PartialEq for RawStr<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.decode() == other.decode()
    }
}

impl<'a> RawStr<'a> {
    /// The decoded string: borrowed when there is no escape.
    pub fn decode(&self) -> Cow<'a, str> {
        if !self.escaped {
            // Checked during the scan; cannot fail.
            return Cow::Borrowed(std::str::from_utf8(self.raw).unwrap_or(""));
        }
        Cow::Owned(decode_escaped(self.raw))
    }

    /// Whether the decoded string equals `s`, without allocating when there is no escape.
    #[inline]
    pub fn eq_str(&self, s: &str) -> bool {
        if !self.escaped {
            short_eq(self.raw, s.as_bytes())
        } else {
            decode_escaped(self.raw) == s
        }
    }
}

fn hex4(b: &[u8]) -> Option<u32> {
    let mut v = 0u32;
    for &c in b.get(..4)? {
        let d = (c as char).to_digit(16)?;
        v = v * 16 + d;
    }
    Some(v)
}

fn decode_escaped(raw: &[u8]) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        let c = raw[i];
        if c != b'\\' {
            // Copy a run of plain bytes (valid UTF-8, checked during the scan).
            let end = raw[i..]
                .iter()
                .position(|&b| b == b'\\')
                .map_or(raw.len(), |p| i + p);
            out.push_str(std::str::from_utf8(&raw[i..end]).unwrap_or(""));
            i = end;
            continue;
        }
        let e = raw.get(i + 1).copied().unwrap_or(b'"');
        i += 2;
        let ch = match e {
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let hi = hex4(&raw[i.min(raw.len())..]).unwrap_or(0xFFFD);
                i += 4;
                if (0xD800..0xDC00).contains(&hi) {
                    let lo = hex4(&raw[(i + 2).min(raw.len())..]).unwrap_or(0xDC00);
                    i += 6;
                    char::from_u32(0x10000 + ((hi - 0xD800) << 10) + (lo.wrapping_sub(0xDC00)))
                        .unwrap_or('\u{FFFD}')
                } else {
                    char::from_u32(hi).unwrap_or('\u{FFFD}')
                }
            }
            other => other as char,
        };
        out.push(ch);
    }
    out
}

/// What a number scan saw; the value is computed on demand by [`Number::to_f64`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Number<'a> {
    /// The number's text.
    pub text: &'a [u8],
    /// Digits of the integer and fraction parts as an integer (meaningful when `digits <= 19`).
    pub mantissa: u64,
    /// Count of integer plus fraction digits.
    pub digits: u32,
    /// Decimal exponent of the last digit: value = mantissa × 10^exp10.
    pub exp10: i64,
    /// A leading minus sign.
    pub negative: bool,
    /// Written without fraction or exponent.
    pub integer: bool,
    /// The exact decimal value is a multiple of 0.01 (R-VAL-SUM "rounded to hundredths").
    pub hundredths: bool,
}

static POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// `HUNDREDTHS[k]` is the double nearest k/100 (one correctly rounded division, done at build
/// time): the common "rounded to hundredths" probabilities need no division at run time.
static HUNDREDTHS: [f64; 101] = {
    let mut t = [0.0; 101];
    let mut k = 0;
    while k <= 100 {
        t[k] = k as f64 / 100.0;
        k += 1;
    }
    t
};

impl Number<'_> {
    /// The correctly rounded `f64` (the value `str::parse::<f64>` and serde_json with
    /// `float_roundtrip` produce). Overflow gives ±infinity.
    #[inline]
    pub fn to_f64(self) -> f64 {
        if self.digits <= 19 {
            if self.mantissa == 0 {
                return if self.negative { -0.0 } else { 0.0 };
            }
            // k/100 with 0 ≤ k ≤ 100: a table entry.
            if (-2..=0).contains(&self.exp10) && self.mantissa <= 100 {
                let k = self.mantissa * [1, 10, 100][(self.exp10 + 2) as usize];
                if k <= 100 {
                    let v = HUNDREDTHS[k as usize];
                    return if self.negative { -v } else { v };
                }
            }
            // Clinger's fast path: an exact mantissa and an exact power of ten make one correctly
            // rounded IEEE operation.
            if self.mantissa <= 1u64 << 53 && (-22..=22).contains(&self.exp10) {
                let m = self.mantissa as f64;
                let v = if self.exp10 < 0 {
                    m / POW10[(-self.exp10) as usize]
                } else {
                    m * POW10[self.exp10 as usize]
                };
                return if self.negative { -v } else { v };
            }
        }
        std::str::from_utf8(self.text)
            .ok()
            .and_then(|t| t.parse::<f64>().ok())
            .unwrap_or(f64::NAN)
    }

    /// The value as a `u64` when written as a nonnegative integer (no fraction, no exponent;
    /// `-0` is zero) that fits.
    pub fn to_u64(self) -> Option<u64> {
        if !self.integer {
            return None;
        }
        if self.mantissa == 0 && self.digits <= 19 {
            return Some(0);
        }
        if self.negative {
            return None;
        }
        if self.digits <= 19 {
            return Some(self.mantissa);
        }
        std::str::from_utf8(self.text).ok()?.parse::<u64>().ok()
    }
}

/// A cursor over the response bytes.
pub(crate) struct Lexer<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Lexer<'a> {
    pub fn new(b: &'a [u8]) -> Lexer<'a> {
        Lexer { b, i: 0 }
    }

    /// Skips whitespace and returns the next byte (not consumed).
    #[inline(always)]
    pub fn peek_ws(&mut self) -> Option<u8> {
        while let Some(&c) = self.b.get(self.i) {
            if c == b' ' || c == b'\n' || c == b'\r' || c == b'\t' {
                self.i += 1;
            } else {
                return Some(c);
            }
        }
        None
    }

    /// The whole input.
    pub fn bytes(&self) -> &'a [u8] {
        self.b
    }

    /// The cursor's byte offset.
    pub fn pos(&self) -> usize {
        self.i
    }

    /// Whether only whitespace remains.
    pub fn at_end(&mut self) -> bool {
        self.peek_ws().is_none()
    }

    /// Consumes one byte (after a successful peek).
    #[inline(always)]
    pub fn bump(&mut self) {
        self.i += 1;
    }

    /// Skips whitespace and consumes `c`.
    #[inline(always)]
    pub fn expect(&mut self, c: u8) -> LResult<()> {
        if self.peek_ws() == Some(c) {
            self.i += 1;
            Ok(())
        } else {
            Err(Malformed)
        }
    }

    /// After a member or element: consumes `,` (returns true) or `close` (returns false).
    #[inline(always)]
    pub fn comma_or(&mut self, close: u8) -> LResult<bool> {
        match self.peek_ws() {
            Some(b',') => {
                self.i += 1;
                Ok(true)
            }
            Some(c) if c == close => {
                self.i += 1;
                Ok(false)
            }
            _ => Err(Malformed),
        }
    }

    /// Just after `{`: consumes `}` and returns false, or returns true when a member follows.
    #[inline(always)]
    pub fn object_nonempty(&mut self) -> LResult<bool> {
        match self.peek_ws() {
            Some(b'}') => {
                self.i += 1;
                Ok(false)
            }
            Some(b'"') => Ok(true),
            _ => Err(Malformed),
        }
    }

    /// Consumes `"key":` when the next member name is exactly `key` written without escapes
    /// (the expected-next-key fast path); otherwise consumes nothing and returns false.
    #[inline(always)]
    pub fn try_key(&mut self, key: &[u8]) -> LResult<bool> {
        self.peek_ws();
        let i = self.i;
        let end = i + 1 + key.len();
        if self.b.get(i) == Some(&b'"')
            && self.b.get(end) == Some(&b'"')
            && self.b.get(i + 1..end).is_some_and(|s| short_eq(s, key))
        {
            self.i = end + 1;
            self.expect(b':')?;
            Ok(true)
        } else {
            Ok(false)
        }
    }

    /// Reads a member name and its colon: `"name" :`.
    #[inline(always)]
    pub fn key(&mut self) -> LResult<RawStr<'a>> {
        let k = self.string()?;
        self.expect(b':')?;
        Ok(k)
    }

    /// Reads a string (whitespace, then the opening quote).
    #[inline(always)]
    pub fn string(&mut self) -> LResult<RawStr<'a>> {
        if self.peek_ws() != Some(b'"') {
            return Err(Malformed);
        }
        self.i += 1;
        self.string_body()
    }

    /// Reads a string whose opening quote was consumed.
    #[inline]
    fn string_body(&mut self) -> LResult<RawStr<'a>> {
        let b = self.b;
        let start = self.i;
        let mut i = start;
        let mut escaped = false;
        let mut high = false;
        loop {
            // Eight bytes at a time until a byte that needs a look.
            while let Some(chunk) = b.get(i..i + 8) {
                let word = u64::from_le_bytes(chunk.try_into().unwrap_or([b'"'; 8]));
                let m = special_bytes(word);
                if m != 0 {
                    i += (m.trailing_zeros() / 8) as usize;
                    break;
                }
                i += 8;
            }
            let c = *b.get(i).ok_or(Malformed)?;
            match STR_CLASS[c as usize] {
                PLAIN => i += 1,
                QUOTE => break,
                BACKSLASH => {
                    escaped = true;
                    i = escape_end(b, i)?;
                }
                HIGH => {
                    high = true;
                    i += 1;
                }
                _ => return Err(Malformed),
            }
        }
        let raw = &b[start..i];
        if high && std::str::from_utf8(raw).is_err() {
            return Err(Malformed);
        }
        self.i = i + 1;
        Ok(RawStr { raw, escaped })
    }

    /// Reads a number (whitespace first). `Err` when the next token is not a number.
    #[inline]
    pub fn number(&mut self) -> LResult<Number<'a>> {
        self.peek_ws();
        let b = self.b;
        let start = self.i;
        let mut i = start;
        let negative = b.get(i) == Some(&b'-');
        if negative {
            i += 1;
        }
        let mut mantissa: u64 = 0;
        let mut digits: u32 = 0;
        // Zeros since the last nonzero digit, and whether any digit is nonzero.
        let mut trailing_zeros: i64 = 0;
        let mut nonzero = false;
        match b.get(i) {
            Some(b'0') => {
                i += 1;
                digits = 1;
                trailing_zeros = 1;
            }
            Some(c @ b'1'..=b'9') => {
                let _ = c;
                while let Some(&c) = b.get(i) {
                    if !c.is_ascii_digit() {
                        break;
                    }
                    let d = (c - b'0') as u64;
                    mantissa = mantissa.wrapping_mul(10).wrapping_add(d);
                    digits = digits.saturating_add(1);
                    if d == 0 {
                        trailing_zeros += 1;
                    } else {
                        trailing_zeros = 0;
                        nonzero = true;
                    }
                    i += 1;
                }
            }
            _ => return Err(Malformed),
        }
        let mut frac_len: i64 = 0;
        let mut integer = true;
        if b.get(i) == Some(&b'.') {
            integer = false;
            i += 1;
            let frac_start = i;
            while let Some(&c) = b.get(i) {
                if !c.is_ascii_digit() {
                    break;
                }
                let d = (c - b'0') as u64;
                mantissa = mantissa.wrapping_mul(10).wrapping_add(d);
                digits = digits.saturating_add(1);
                if d == 0 {
                    trailing_zeros += 1;
                } else {
                    trailing_zeros = 0;
                    nonzero = true;
                }
                i += 1;
            }
            frac_len = (i - frac_start) as i64;
            if frac_len == 0 {
                return Err(Malformed);
            }
        }
        let mut exp: i64 = 0;
        if let Some(b'e' | b'E') = b.get(i) {
            integer = false;
            i += 1;
            let exp_negative = match b.get(i) {
                Some(b'-') => {
                    i += 1;
                    true
                }
                Some(b'+') => {
                    i += 1;
                    false
                }
                _ => false,
            };
            let exp_start = i;
            while let Some(&c) = b.get(i) {
                if !c.is_ascii_digit() {
                    break;
                }
                exp = exp.saturating_mul(10).saturating_add((c - b'0') as i64);
                i += 1;
            }
            if i == exp_start {
                return Err(Malformed);
            }
            if exp_negative {
                exp = -exp;
            }
        }
        self.i = i;
        let exp10 = exp.saturating_sub(frac_len);
        Ok(Number {
            text: &b[start..i],
            mantissa,
            digits,
            exp10,
            negative,
            integer,
            hundredths: !nonzero || exp10.saturating_add(trailing_zeros) >= -2,
        })
    }

    /// Consumes one complete JSON value of any kind, checking its syntax, without recursion.
    /// Nesting deeper than 127 containers is malformed (as serde_json by default).
    pub fn skip_value(&mut self) -> LResult<()> {
        self.skip_value_nested(0)
    }

    /// [`skip_value`](Lexer::skip_value) for a value already inside `outer` containers, so the
    /// document as a whole keeps to the limit.
    pub fn skip_value_nested(&mut self, outer: u32) -> LResult<()> {
        let max_depth = MAX_DEPTH.saturating_sub(outer);
        // Bit d of `stack` is 1 when the container at depth d+1 is an object.
        let mut stack: u128 = 0;
        let mut depth: u32 = 0;
        'value: loop {
            match self.peek_ws().ok_or(Malformed)? {
                b'{' => {
                    if depth >= max_depth {
                        return Err(Malformed);
                    }
                    self.i += 1;
                    if self.object_nonempty()? {
                        stack |= 1u128 << depth;
                        depth += 1;
                        self.key()?;
                        continue 'value;
                    }
                }
                b'[' => {
                    if depth >= max_depth {
                        return Err(Malformed);
                    }
                    self.i += 1;
                    if self.peek_ws() == Some(b']') {
                        self.i += 1;
                    } else {
                        stack &= !(1u128 << depth);
                        depth += 1;
                        continue 'value;
                    }
                }
                b'"' => {
                    self.i += 1;
                    self.string_body()?;
                }
                b't' => self.literal(b"true")?,
                b'f' => self.literal(b"false")?,
                b'n' => self.literal(b"null")?,
                _ => {
                    self.number()?;
                }
            }
            // After a complete value: close containers or move to the next member/element.
            loop {
                if depth == 0 {
                    return Ok(());
                }
                let in_object = stack & (1u128 << (depth - 1)) != 0;
                let close = if in_object { b'}' } else { b']' };
                if self.comma_or(close)? {
                    if in_object {
                        self.key()?;
                    }
                    continue 'value;
                }
                depth -= 1;
            }
        }
    }

    /// Consumes `null` when it is next (after whitespace) and reports whether it was.
    pub fn null(&mut self) -> LResult<bool> {
        if self.peek_ws() == Some(b'n') {
            self.literal(b"null")?;
            Ok(true)
        } else {
            Ok(false)
        }
    }

    fn literal(&mut self, word: &[u8]) -> LResult<()> {
        if self.b.get(self.i..self.i + word.len()) == Some(word) {
            self.i += word.len();
            Ok(())
        } else {
            Err(Malformed)
        }
    }
}

/// Checks the escape starting at `b[i] == b'\\'` and returns the index after it.
fn escape_end(b: &[u8], i: usize) -> LResult<usize> {
    match b.get(i + 1) {
        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => Ok(i + 2),
        Some(b'u') => {
            let unit = hex4(b.get(i + 2..).ok_or(Malformed)?).ok_or(Malformed)?;
            match unit {
                0xD800..=0xDBFF => {
                    // A high surrogate must be followed by an escaped low surrogate.
                    if b.get(i + 6) != Some(&b'\\') || b.get(i + 7) != Some(&b'u') {
                        return Err(Malformed);
                    }
                    let low = hex4(b.get(i + 8..).ok_or(Malformed)?).ok_or(Malformed)?;
                    if (0xDC00..=0xDFFF).contains(&low) {
                        Ok(i + 12)
                    } else {
                        Err(Malformed)
                    }
                }
                0xDC00..=0xDFFF => Err(Malformed),
                _ => Ok(i + 6),
            }
        }
        _ => Err(Malformed),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn num(s: &str) -> Number<'_> {
        let mut lx = Lexer::new(s.as_bytes());
        let n = lx.number().expect("number");
        assert!(lx.at_end(), "{s} not fully consumed");
        n
    }

    #[test]
    fn r_val_sum_hundredths_detection_is_exact_on_the_decimal_text() {
        for s in [
            "0", "-0", "1", "0.5", "0.50", "0.01", "0.99", "1.00", "5e-1", "1E-2", "0.1e-1", "0.0",
            "0.000", "100e-2", "0.10000", "10", "0e-999",
        ] {
            assert!(num(s).hundredths, "{s} is a multiple of 0.01");
        }
        for s in [
            "0.001",
            "0.005",
            "0.333",
            "1e-3",
            "0.1e-2",
            "0.0100000001",
            "1.0000000001",
        ] {
            assert!(!num(s).hundredths, "{s} is not a multiple of 0.01");
        }
    }

    #[test]
    fn r_val_fast_number_syntax_matches_json() {
        for bad in [
            "01", "-", "1.", ".5", "1e", "1e+", "+1", "--1", "0x1", "1.e3",
        ] {
            let mut lx = Lexer::new(bad.as_bytes());
            let ok = lx.number().is_ok() && lx.at_end();
            assert!(!ok, "{bad} must be rejected");
        }
    }

    #[test]
    fn r_val_usage_integers_only_without_fraction_or_exponent() {
        assert_eq!(num("42").to_u64(), Some(42));
        assert_eq!(num("-0").to_u64(), Some(0));
        assert_eq!(num("18446744073709551615").to_u64(), Some(u64::MAX));
        assert_eq!(num("18446744073709551616").to_u64(), None);
        assert_eq!(num("1.0").to_u64(), None);
        assert_eq!(num("1e3").to_u64(), None);
        assert_eq!(num("-1").to_u64(), None);
    }

    #[test]
    fn r_val_fast_skip_checks_syntax_and_depth() {
        let ok = [
            r#"{"a":[1,{"b":null}],"c":"x\u00e9\ud83d\ude00"}"#,
            "[]",
            "{}",
            "true",
            "-1.5e3",
        ];
        for s in ok {
            let mut lx = Lexer::new(s.as_bytes());
            assert!(lx.skip_value().is_ok() && lx.at_end(), "{s}");
        }
        let bad = [
            r#"{"a":}"#,
            "[1,]",
            r#"{"a" 1}"#,
            "[1 2]",
            r#""\ud800""#,
            r#""\udc00x""#,
            "tru",
            r#"{"a":1,}"#,
            "[",
            r#""\x""#,
            "\"a\u{1}\"",
        ];
        for s in bad {
            let mut lx = Lexer::new(s.as_bytes());
            assert!(!(lx.skip_value().is_ok() && lx.at_end()), "{s}");
        }
        let deep_ok = "[".repeat(127) + &"]".repeat(127); // serde_json's limit too
        assert!(Lexer::new(deep_ok.as_bytes()).skip_value().is_ok());
        assert!(serde_json::from_str::<serde_json::Value>(&deep_ok).is_ok());
        let deep_bad = "[".repeat(128) + &"]".repeat(128);
        assert!(serde_json::from_str::<serde_json::Value>(&deep_bad).is_err());
        assert!(Lexer::new(deep_bad.as_bytes()).skip_value().is_err());
    }

    #[test]
    fn r_val_fast_short_eq_matches_slice_equality() {
        let words: Vec<Vec<u8>> = (0..40)
            .map(|n| (0..n).map(|i| b'a' + (i % 26) as u8).collect())
            .collect();
        for a in &words {
            for b in &words {
                assert_eq!(short_eq(a, b), a == b);
                for flip in 0..a.len() {
                    let mut c = a.clone();
                    c[flip] ^= 1;
                    assert!(!short_eq(a, &c), "{a:?} flip {flip}");
                }
            }
        }
    }

    #[test]
    fn r_val_fast_escapes_decode() {
        let mut lx = Lexer::new(br#""a\"b\\c\/\n\u0041\ud83d\ude00""#);
        let s = lx.string().unwrap();
        assert!(s.escaped);
        assert_eq!(s.decode(), "a\"b\\c/\nA\u{1F600}");
        assert!(s.eq_str("a\"b\\c/\nA\u{1F600}"));
    }
}
