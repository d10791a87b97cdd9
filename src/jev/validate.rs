//! `validate_response` (R-VAL-KEYS, -NOUL, -CHOICE, -SCORE, -SUM, -USAGE, -FAST): one pass over
//! the provider's bytes, specialised to the answer shapes the questions expect.
//!
//! Answers are matched to questions by expected-next-key (compared straight against the input,
//! then binary search), options likewise, and an answer's member names are expected in the order
//! SPEC §3.2 writes them (any order is accepted); seen keys live in stack bitsets; sums, maxima and
//! Σ i·pᵢ accumulate as values stream in; no generic JSON value is built; failures travel as an
//! 8-byte code until the public error is made. The first error in document order is reported and
//! scanning stops there, so invalid input is never slower than valid input.
//!
//! This module must never alter a provider's number (each is stored exactly as parsed), never
//! log, never do I/O, never panic, and never put provider text into an error.

use super::lex::{Lexer, Malformed, RawStr};
use super::question::{Question, QuestionType, Questions};
use super::response::{Billing, Numbers, Response, Usage};
use super::sum::Dist;
use crate::reasons::{ValidationError, ValidationReason as R};
use std::borrow::Cow;

/// Field names an error can carry (index into [`FIELD_NAMES`]).
#[derive(Clone, Copy)]
#[repr(u8)]
enum Fld {
    None,
    Model,
    Answers,
    Usage,
    InputTokens,
    OutputTokens,
    Billing,
    ChargedCredits,
    RateVersion,
    RequestId,
    RequestedModel,
    Type,
    Noul,
    Choice,
    Probabilities,
    Confidence,
    Score,
    Levels,
    Legend,
}

const FIELD_NAMES: [Option<&str>; 19] = [
    None,
    Some("model"),
    Some("answers"),
    Some("usage"),
    Some("usage.input_tokens"),
    Some("usage.output_tokens"),
    Some("billing"),
    Some("billing.charged_credits"),
    Some("billing.rate_version"),
    Some("request_id"),
    Some("requested_model"),
    Some("type"),
    Some("noul"),
    Some("choice"),
    Some("probabilities"),
    Some("confidence"),
    Some("score"),
    Some("levels"),
    Some("legend"),
];

const NO_QUESTION: u32 = u32::MAX;

/// A failure while scanning: reason, field and question index in 8 bytes.
#[derive(Clone, Copy)]
struct Fail {
    reason: R,
    field: Fld,
    question: u32,
}

impl From<Malformed> for Fail {
    #[inline]
    fn from(_: Malformed) -> Fail {
        Fail {
            reason: R::MalformedJson,
            field: Fld::None,
            question: NO_QUESTION,
        }
    }
}

#[cold]
#[inline(never)]
fn fail(reason: R, question: u32, field: Fld) -> Fail {
    Fail {
        reason,
        field,
        question,
    }
}

#[cold]
#[inline(never)]
fn malformed() -> Fail {
    Fail::from(Malformed)
}

type VResult<T> = Result<T, Fail>;

/// Validates a provider response against every question and returns it, numbers unchanged.
///
/// `bytes` is the provider's JSON: `{model, answers, usage, billing?, request_id?,
/// requested_model?}`; other envelope members are skipped (syntax still checked). The returned
/// [`Response`] borrows strings from `bytes` and keys from `questions`, and lists answers in
/// question order.
///
/// ```
/// use jevgate::jev::{validate_response, Questions, Answer, Limits};
/// let questions = Questions::from_json(br#"{
///   "needs_decision": {"type": "noul"},
///   "next_step": {"type": "choice", "criteria": {"explain": "Compare.", "execute": "Execute."}},
///   "clarity": {"type": "score", "criteria": ["Unspecified", "Partially", "Fully"]}}"#,
///   &Limits::default()).unwrap();
/// let response = validate_response(&questions, br#"{"model": "jev-1.13.0", "answers": {
///   "needs_decision": {"type": "noul", "noul": 0.8},
///   "next_step": {"type": "choice", "choice": "explain",
///                 "probabilities": {"explain": 0.7, "execute": 0.29}, "confidence": 0.7},
///   "clarity": {"type": "score", "score": 1.5, "levels": [0.1, 0.3, 0.6],
///               "legend": ["Unspecified", "Partially", "Fully"], "confidence": 0.6}},
///   "usage": {"input_tokens": 120, "output_tokens": 8}}"#).unwrap();
/// assert_eq!(response.model(), "jev-1.13.0");
/// match response.answers().get("next_step").unwrap() {
///     Answer::Choice(c) => {
///         assert_eq!(c.choice(), "explain");
///         assert_eq!(c.probability("execute"), Some(0.29)); // 0.99 in total: rounding envelope
///     }
///     _ => unreachable!(),
/// }
/// ```
pub fn validate_response<'a>(
    questions: &'a Questions,
    bytes: &'a [u8],
) -> Result<Response<'a>, ValidationError> {
    let v = Validator {
        lx: Lexer::new(bytes),
        q: questions,
        numbers: Numbers::zeroed(questions.numbers_len()),
    };
    v.envelope().map_err(|f| {
        let key = (f.question != NO_QUESTION)
            .then(|| questions.nth(f.question as usize).map(Question::key))
            .flatten();
        ValidationError::at(f.reason, key, FIELD_NAMES[f.field as usize])
    })
}

/// Field names the validator recognises in an answer.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Field {
    Type,
    Noul,
    Choice,
    Probabilities,
    Confidence,
    Score,
    Levels,
    Legend,
    Other,
}

#[inline(always)]
fn answer_field(name: &[u8]) -> Field {
    match name {
        b"type" => Field::Type,
        b"noul" => Field::Noul,
        b"choice" => Field::Choice,
        b"probabilities" => Field::Probabilities,
        b"confidence" => Field::Confidence,
        b"score" => Field::Score,
        b"levels" => Field::Levels,
        b"legend" => Field::Legend,
        _ => Field::Other,
    }
}

const fn field_name(f: Field) -> &'static [u8] {
    match f {
        Field::Type => b"type",
        Field::Noul => b"noul",
        Field::Choice => b"choice",
        Field::Probabilities => b"probabilities",
        Field::Confidence => b"confidence",
        Field::Score => b"score",
        Field::Levels => b"levels",
        Field::Legend => b"legend",
        Field::Other => b"",
    }
}

/// Member order of each answer type as SPEC §3.2 writes it (and providers send it).
const NOUL_ORDER: [Field; 2] = [Field::Type, Field::Noul];
const CHOICE_ORDER: [Field; 4] = [
    Field::Type,
    Field::Choice,
    Field::Probabilities,
    Field::Confidence,
];
const SCORE_ORDER: [Field; 5] = [
    Field::Type,
    Field::Score,
    Field::Levels,
    Field::Legend,
    Field::Confidence,
];

/// Runs `f` on the member name's decoded bytes (borrowed unless it has escapes).
#[inline(always)]
fn with_name<T>(k: &RawStr<'_>, f: impl FnOnce(&[u8]) -> T) -> T {
    if k.escaped {
        f(k.decode().as_bytes())
    } else {
        f(k.raw)
    }
}

/// Which questions (or options) have been seen: a stack bitset up to 256 entries.
enum Seen {
    Small([u64; 4]),
    Large(Vec<u64>),
}

impl Seen {
    #[inline]
    fn new(n: usize) -> Seen {
        if n <= 256 {
            Seen::Small([0; 4])
        } else {
            Seen::Large(vec![0; n.div_ceil(64)])
        }
    }

    /// Marks `i`; returns whether it was already marked.
    #[inline(always)]
    fn test_and_set(&mut self, i: usize) -> bool {
        let words: &mut [u64] = match self {
            Seen::Small(w) => w,
            Seen::Large(w) => w,
        };
        let (w, bit) = (i / 64, 1u64 << (i % 64));
        match words.get_mut(w) {
            Some(word) => {
                let was = *word & bit != 0;
                *word |= bit;
                was
            }
            None => true,
        }
    }

    fn first_unset(&self, n: usize) -> Option<usize> {
        let words: &[u64] = match self {
            Seen::Small(w) => w,
            Seen::Large(w) => w,
        };
        (0..n).find(|&i| {
            words
                .get(i / 64)
                .is_none_or(|w| w & (1u64 << (i % 64)) == 0)
        })
    }
}

struct Validator<'a> {
    lx: Lexer<'a>,
    q: &'a Questions,
    numbers: Numbers,
}

impl<'a> Validator<'a> {
    /// The value at the cursor has the wrong JSON kind: check its syntax (a syntax error wins),
    /// then report `reason`.
    #[cold]
    #[inline(never)]
    fn wrong(&mut self, reason: R, question: u32, field: Fld) -> Fail {
        match self.lx.skip_value() {
            Ok(()) => fail(reason, question, field),
            Err(m) => m.into(),
        }
    }

    #[inline(always)]
    fn set_number(&mut self, at: usize, value: f64) {
        if let Some(slot) = self.numbers.as_mut_slice().get_mut(at) {
            *slot = value;
        }
    }

    fn envelope(mut self) -> VResult<Response<'a>> {
        if self.lx.peek_ws() != Some(b'{') {
            return Err(malformed());
        }
        self.lx.bump();
        let mut model: Option<Cow<'a, str>> = None;
        let mut answers = false;
        let mut usage: Option<Usage> = None;
        let mut billing: Option<Option<Billing<'a>>> = None;
        let mut request_id: Option<Option<Cow<'a, str>>> = None;
        let mut requested_model: Option<Option<Cow<'a, str>>> = None;
        if self.lx.object_nonempty()? {
            loop {
                let k = self.lx.key()?;
                match with_name(&k, |n| match n {
                    b"model" => 1,
                    b"answers" => 2,
                    b"usage" => 3,
                    b"billing" => 4,
                    b"request_id" => 5,
                    b"requested_model" => 6,
                    _ => 0,
                }) {
                    1 if model.is_none() => model = Some(self.string_field(Fld::Model)?),
                    2 if !answers => {
                        self.answers()?;
                        answers = true;
                    }
                    3 if usage.is_none() => usage = Some(self.usage()?),
                    4 if billing.is_none() => billing = Some(self.billing()?),
                    5 if request_id.is_none() => {
                        request_id = Some(self.opt_string_field(Fld::RequestId)?)
                    }
                    6 if requested_model.is_none() => {
                        requested_model = Some(self.opt_string_field(Fld::RequestedModel)?)
                    }
                    0 => self.lx.skip_value_nested(1)?,
                    // a known member repeated
                    _ => return Err(malformed()),
                }
                if !self.lx.comma_or(b'}')? {
                    break;
                }
            }
        }
        let Some(model) = model else {
            return Err(fail(R::MissingField, NO_QUESTION, Fld::Model));
        };
        if !answers {
            return Err(fail(R::MissingField, NO_QUESTION, Fld::Answers));
        }
        let Some(usage) = usage else {
            return Err(fail(R::MissingField, NO_QUESTION, Fld::Usage));
        };
        if !self.lx.at_end() {
            return Err(malformed());
        }
        Ok(Response {
            questions: self.q,
            model,
            usage,
            billing: billing.flatten(),
            request_id: request_id.flatten(),
            requested_model: requested_model.flatten(),
            bytes: self.lx.bytes(),
            numbers: self.numbers,
        })
    }

    fn string_field(&mut self, field: Fld) -> VResult<Cow<'a, str>> {
        if self.lx.peek_ws() == Some(b'"') {
            Ok(self.lx.string()?.decode())
        } else {
            Err(self.wrong(R::InvalidField, NO_QUESTION, field))
        }
    }

    fn opt_string_field(&mut self, field: Fld) -> VResult<Option<Cow<'a, str>>> {
        if self.lx.null()? {
            return Ok(None);
        }
        self.string_field(field).map(Some)
    }

    fn usage(&mut self) -> VResult<Usage> {
        if self.lx.peek_ws() != Some(b'{') {
            return Err(self.wrong(R::UsageInvalid, NO_QUESTION, Fld::Usage));
        }
        self.lx.bump();
        let mut input = None;
        let mut output = None;
        if self.lx.object_nonempty()? {
            loop {
                let k = self.lx.key()?;
                match with_name(&k, |n| match n {
                    b"input_tokens" => 1,
                    b"output_tokens" => 2,
                    _ => 0,
                }) {
                    1 if input.is_none() => input = Some(self.count(Fld::InputTokens)?),
                    2 if output.is_none() => output = Some(self.count(Fld::OutputTokens)?),
                    0 => self.lx.skip_value_nested(2)?,
                    _ => return Err(malformed()),
                }
                if !self.lx.comma_or(b'}')? {
                    break;
                }
            }
        }
        let Some(input_tokens) = input else {
            return Err(fail(R::MissingField, NO_QUESTION, Fld::InputTokens));
        };
        let Some(output_tokens) = output else {
            return Err(fail(R::MissingField, NO_QUESTION, Fld::OutputTokens));
        };
        Ok(Usage {
            input_tokens,
            output_tokens,
        })
    }

    fn count(&mut self, field: Fld) -> VResult<u64> {
        match self.lx.peek_ws() {
            Some(b'-' | b'0'..=b'9') => {
                let n = self.lx.number()?;
                n.to_u64()
                    .ok_or_else(|| fail(R::UsageInvalid, NO_QUESTION, field))
            }
            _ => Err(self.wrong(R::UsageInvalid, NO_QUESTION, field)),
        }
    }

    fn billing(&mut self) -> VResult<Option<Billing<'a>>> {
        if self.lx.null()? {
            return Ok(None);
        }
        if self.lx.peek_ws() != Some(b'{') {
            return Err(self.wrong(R::UsageInvalid, NO_QUESTION, Fld::Billing));
        }
        self.lx.bump();
        let mut credits: Option<f64> = None;
        let mut rate: Option<Option<Cow<'a, str>>> = None;
        if self.lx.object_nonempty()? {
            loop {
                let k = self.lx.key()?;
                match with_name(&k, |n| match n {
                    b"charged_credits" => 1,
                    b"rate_version" => 2,
                    _ => 0,
                }) {
                    1 if credits.is_none() => {
                        let f = Fld::ChargedCredits;
                        let c = match self.lx.peek_ws() {
                            Some(b'-' | b'0'..=b'9') => self.lx.number()?.to_f64(),
                            _ => return Err(self.wrong(R::UsageInvalid, NO_QUESTION, f)),
                        };
                        if !(c.is_finite() && c >= 0.0) {
                            return Err(fail(R::UsageInvalid, NO_QUESTION, f));
                        }
                        credits = Some(c);
                    }
                    2 if rate.is_none() => {
                        rate = Some(if self.lx.null()? {
                            None
                        } else if self.lx.peek_ws() == Some(b'"') {
                            Some(self.lx.string()?.decode())
                        } else {
                            return Err(self.wrong(R::UsageInvalid, NO_QUESTION, Fld::RateVersion));
                        });
                    }
                    0 => self.lx.skip_value_nested(2)?,
                    _ => return Err(malformed()),
                }
                if !self.lx.comma_or(b'}')? {
                    break;
                }
            }
        }
        let Some(charged_credits) = credits else {
            return Err(fail(R::MissingField, NO_QUESTION, Fld::ChargedCredits));
        };
        Ok(Some(Billing {
            charged_credits,
            rate_version: rate.flatten(),
        }))
    }

    fn answers(&mut self) -> VResult<()> {
        if self.lx.peek_ws() != Some(b'{') {
            return Err(self.wrong(R::InvalidField, NO_QUESTION, Fld::Answers));
        }
        self.lx.bump();
        let q = self.q;
        let n = q.len();
        let mut seen = Seen::new(n);
        let mut count = 0usize;
        let mut hint = 0usize;
        if self.lx.object_nonempty()? {
            loop {
                // expected next key straight from the input, else scan and look up
                let expected = q.nth(hint).filter(|e| e.raw_safe);
                let i = match expected {
                    Some(e) if self.lx.try_key(e.key().as_bytes())? => hint,
                    _ => {
                        let k = self.lx.key()?;
                        match with_name(&k, |name| q.index_of(name, hint)) {
                            Some(i) => i,
                            None => return Err(fail(R::UnexpectedAnswer, NO_QUESTION, Fld::None)),
                        }
                    }
                };
                if seen.test_and_set(i) {
                    return Err(fail(R::UnexpectedAnswer, i as u32, Fld::None));
                }
                count += 1;
                hint = i + 1;
                let question = q.at(i);
                self.answer(question)?;
                if !self.lx.comma_or(b'}')? {
                    break;
                }
            }
        }
        if count != n {
            let missing = seen.first_unset(n).unwrap_or(0);
            return Err(fail(R::MissingAnswer, missing as u32, Fld::None));
        }
        Ok(())
    }

    #[inline]
    fn answer(&mut self, question: &'a Question) -> VResult<()> {
        if self.lx.peek_ws() != Some(b'{') {
            return Err(self.wrong(R::TypeMismatch, question.index, Fld::None));
        }
        self.lx.bump();
        match question.question_type() {
            QuestionType::Noul => self.noul(question),
            QuestionType::Choice => self.choice(question),
            QuestionType::Score => self.score(question),
        }
    }

    /// The next member name of an answer: the one `order` expects next is compared straight
    /// against the input; anything else is scanned and classified.
    #[inline(always)]
    fn member(&mut self, order: &[Field], next: &mut usize) -> VResult<Field> {
        if let Some(&want) = order.get(*next) {
            if self.lx.try_key(field_name(want))? {
                *next += 1;
                return Ok(want);
            }
        }
        let k = self.lx.key()?;
        let f = with_name(&k, answer_field);
        if let Some(p) = order.iter().position(|&o| o == f) {
            *next = p + 1;
        }
        Ok(f)
    }

    /// `"type": "<expected>"`.
    #[inline]
    fn type_field(&mut self, question: &Question) -> VResult<()> {
        let expected = question.question_type().as_str();
        if self.lx.peek_ws() == Some(b'"') {
            if self.lx.string()?.eq_str(expected) {
                return Ok(());
            }
            return Err(fail(R::TypeMismatch, question.index, Fld::Type));
        }
        Err(self.wrong(R::TypeMismatch, question.index, Fld::Type))
    }

    /// A probability or confidence: a number in [0, 1]. Returns the exact value and whether its
    /// text is a multiple of 0.01.
    #[inline(always)]
    fn probability(&mut self, question: u32, field: Fld) -> VResult<(f64, bool)> {
        match self.lx.peek_ws() {
            Some(b'-' | b'0'..=b'9') => {
                let n = self.lx.number()?;
                let p = n.to_f64();
                if (0.0..=1.0).contains(&p) {
                    Ok((p, n.hundredths))
                } else {
                    Err(fail(R::ProbabilityRange, question, field))
                }
            }
            _ => Err(self.wrong(R::ProbabilityRange, question, field)),
        }
    }

    /// A member of an answer that its type does not define.
    #[cold]
    #[inline(never)]
    fn stray(&self, f: Field, question: &Question) -> Fail {
        let reason = if f == Field::Other {
            R::UnexpectedField
        } else {
            // a member of another answer type: the answer is of another type
            R::TypeMismatch
        };
        fail(reason, question.index, Fld::None)
    }

    fn noul(&mut self, question: &'a Question) -> VResult<()> {
        let qi = question.index;
        let at = question.numbers_at as usize;
        let (mut has_type, mut has_noul) = (false, false);
        let mut next = 0usize;
        if self.lx.object_nonempty()? {
            loop {
                match self.member(&NOUL_ORDER, &mut next)? {
                    Field::Type if !has_type => {
                        self.type_field(question)?;
                        has_type = true;
                    }
                    Field::Noul if !has_noul => {
                        let (p, _) = self.probability(qi, Fld::Noul)?;
                        self.set_number(at, p);
                        has_noul = true;
                    }
                    Field::Type | Field::Noul => return Err(malformed()),
                    f => return Err(self.stray(f, question)),
                }
                if !self.lx.comma_or(b'}')? {
                    break;
                }
            }
        }
        if !has_type {
            return Err(fail(R::MissingField, qi, Fld::Type));
        }
        if !has_noul {
            return Err(fail(R::MissingField, qi, Fld::Noul));
        }
        Ok(())
    }

    fn choice(&mut self, question: &'a Question) -> VResult<()> {
        let qi = question.index;
        let n = question.arity();
        let at = question.numbers_at as usize;
        let mut has_type = false;
        let mut chosen: Option<usize> = None;
        let mut max: Option<f64> = None;
        let mut has_confidence = false;
        let mut next = 0usize;
        if self.lx.object_nonempty()? {
            loop {
                match self.member(&CHOICE_ORDER, &mut next)? {
                    Field::Type if !has_type => {
                        self.type_field(question)?;
                        has_type = true;
                    }
                    Field::Choice if chosen.is_none() => {
                        if self.lx.peek_ws() != Some(b'"') {
                            return Err(self.wrong(R::UnknownOption, qi, Fld::Choice));
                        }
                        let s = self.lx.string()?;
                        let Some(i) = with_name(&s, |name| question.option_index(name, 0)) else {
                            return Err(fail(R::UnknownOption, qi, Fld::Choice));
                        };
                        chosen = Some(i);
                    }
                    Field::Probabilities if max.is_none() => {
                        max = Some(self.probabilities(question)?);
                    }
                    Field::Confidence if !has_confidence => {
                        let (c, _) = self.probability(qi, Fld::Confidence)?;
                        self.set_number(at + n, c);
                        has_confidence = true;
                    }
                    Field::Type | Field::Choice | Field::Probabilities | Field::Confidence => {
                        return Err(malformed());
                    }
                    f => return Err(self.stray(f, question)),
                }
                if !self.lx.comma_or(b'}')? {
                    break;
                }
            }
        }
        if !has_type {
            return Err(fail(R::MissingField, qi, Fld::Type));
        }
        let Some(chosen) = chosen else {
            return Err(fail(R::MissingField, qi, Fld::Choice));
        };
        let Some(max) = max else {
            return Err(fail(R::MissingField, qi, Fld::Probabilities));
        };
        if !has_confidence {
            return Err(fail(R::MissingField, qi, Fld::Confidence));
        }
        let p_chosen = self
            .numbers
            .as_slice()
            .get(at + chosen)
            .copied()
            .unwrap_or(f64::NAN);
        if p_chosen.is_nan() || p_chosen < max {
            return Err(fail(R::ChoiceNotMax, qi, Fld::Choice));
        }
        self.set_number(at + n + 1, chosen as f64);
        Ok(())
    }

    /// `{"option": p, …}`: every option once, nothing else; returns the maximum.
    fn probabilities(&mut self, question: &'a Question) -> VResult<f64> {
        let qi = question.index;
        if self.lx.peek_ws() != Some(b'{') {
            return Err(self.wrong(R::InvalidField, qi, Fld::Probabilities));
        }
        self.lx.bump();
        let n = question.arity();
        let at = question.numbers_at as usize;
        let mut seen = [0u64; 4];
        let mut count = 0usize;
        let mut hint = 0usize;
        let mut dist = Dist::new();
        if self.lx.object_nonempty()? {
            loop {
                let i = match question.option_key_bytes(hint) {
                    Some(expected) if self.lx.try_key(expected)? => hint,
                    _ => {
                        let k = self.lx.key()?;
                        match with_name(&k, |name| question.option_index(name, hint)) {
                            Some(i) => i,
                            None => return Err(fail(R::UnknownOption, qi, Fld::Probabilities)),
                        }
                    }
                };
                let (w, bit) = ((i / 64) & 3, 1u64 << (i % 64));
                if seen[w] & bit != 0 {
                    return Err(malformed());
                }
                seen[w] |= bit;
                let (p, hundredths) = self.probability(qi, Fld::Probabilities)?;
                self.set_number(at + i, p);
                dist.push(i, p, hundredths);
                count += 1;
                hint = i + 1;
                if !self.lx.comma_or(b'}')? {
                    break;
                }
            }
        }
        if count != n {
            return Err(fail(R::MissingOption, qi, Fld::Probabilities));
        }
        if !dist.sum_ok() {
            return Err(fail(R::DistributionSum, qi, Fld::Probabilities));
        }
        Ok(dist.max())
    }

    fn score(&mut self, question: &'a Question) -> VResult<()> {
        let qi = question.index;
        let n = question.arity();
        let at = question.numbers_at as usize;
        let mut has_type = false;
        let mut score: Option<(f64, bool)> = None;
        let mut levels: Option<Dist> = None;
        let mut has_legend = false;
        let mut has_confidence = false;
        let mut next = 0usize;
        if self.lx.object_nonempty()? {
            loop {
                match self.member(&SCORE_ORDER, &mut next)? {
                    Field::Type if !has_type => {
                        self.type_field(question)?;
                        has_type = true;
                    }
                    Field::Score if score.is_none() => {
                        let s = match self.lx.peek_ws() {
                            Some(b'-' | b'0'..=b'9') => {
                                let num = self.lx.number()?;
                                (num.to_f64(), num.hundredths)
                            }
                            _ => return Err(self.wrong(R::ScoreMismatch, qi, Fld::Score)),
                        };
                        if !s.0.is_finite() {
                            return Err(fail(R::ScoreMismatch, qi, Fld::Score));
                        }
                        self.set_number(at + n, s.0);
                        score = Some(s);
                    }
                    Field::Levels if levels.is_none() => levels = Some(self.levels(question)?),
                    Field::Legend if !has_legend => {
                        self.legend(question)?;
                        has_legend = true;
                    }
                    Field::Confidence if !has_confidence => {
                        let (c, _) = self.probability(qi, Fld::Confidence)?;
                        self.set_number(at + n + 1, c);
                        has_confidence = true;
                    }
                    Field::Type
                    | Field::Score
                    | Field::Levels
                    | Field::Legend
                    | Field::Confidence => return Err(malformed()),
                    f => return Err(self.stray(f, question)),
                }
                if !self.lx.comma_or(b'}')? {
                    break;
                }
            }
        }
        if !has_type {
            return Err(fail(R::MissingField, qi, Fld::Type));
        }
        let Some((s, s_hundredths)) = score else {
            return Err(fail(R::MissingField, qi, Fld::Score));
        };
        let Some(dist) = levels else {
            return Err(fail(R::MissingField, qi, Fld::Levels));
        };
        if !has_legend {
            return Err(fail(R::MissingField, qi, Fld::Legend));
        }
        if !has_confidence {
            return Err(fail(R::MissingField, qi, Fld::Confidence));
        }
        if !dist.score_ok(s, s_hundredths) {
            return Err(fail(R::ScoreMismatch, qi, Fld::Score));
        }
        Ok(())
    }

    /// `[p0, …, pn-1]`: exactly one probability per level.
    fn levels(&mut self, question: &'a Question) -> VResult<Dist> {
        let qi = question.index;
        if self.lx.peek_ws() != Some(b'[') {
            return Err(self.wrong(R::LevelCount, qi, Fld::Levels));
        }
        self.lx.bump();
        let n = question.arity();
        let at = question.numbers_at as usize;
        let mut dist = Dist::new();
        let mut i = 0usize;
        if self.lx.peek_ws() == Some(b']') {
            self.lx.bump();
        } else {
            loop {
                if i == n {
                    return Err(fail(R::LevelCount, qi, Fld::Levels));
                }
                let (p, hundredths) = self.probability(qi, Fld::Levels)?;
                self.set_number(at + i, p);
                dist.push(i, p, hundredths);
                i += 1;
                if !self.lx.comma_or(b']')? {
                    break;
                }
            }
        }
        if i != n {
            return Err(fail(R::LevelCount, qi, Fld::Levels));
        }
        if !dist.sum_ok() {
            return Err(fail(R::DistributionSum, qi, Fld::Levels));
        }
        Ok(dist)
    }

    /// `["…", …]`: one string per level. The array's span is kept (the strings are read again
    /// only when the answer's legend is asked for).
    fn legend(&mut self, question: &'a Question) -> VResult<()> {
        let qi = question.index;
        if self.lx.peek_ws() != Some(b'[') {
            return Err(self.wrong(R::LevelCount, qi, Fld::Legend));
        }
        let start = self.lx.pos();
        self.lx.bump();
        let n = question.arity();
        let at = question.numbers_at as usize + n + 2;
        let mut i = 0usize;
        if self.lx.peek_ws() == Some(b']') {
            self.lx.bump();
        } else {
            loop {
                if i == n {
                    return Err(fail(R::LevelCount, qi, Fld::Legend));
                }
                if self.lx.peek_ws() != Some(b'"') {
                    return Err(self.wrong(R::InvalidField, qi, Fld::Legend));
                }
                self.lx.string()?;
                i += 1;
                if !self.lx.comma_or(b']')? {
                    break;
                }
            }
        }
        if i != n {
            return Err(fail(R::LevelCount, qi, Fld::Legend));
        }
        let end = self.lx.pos();
        self.set_number(at, start as f64);
        self.set_number(at + 1, end as f64);
        Ok(())
    }
}
