//! A validated provider response (R-VAL): the envelope, the answers in question order, and their
//! serialization back to the wire shape of SPEC §3.2.
//!
//! This module only presents what the validator accepted. It must never change a number: every
//! probability, confidence and score is the exact `f64` parsed from the provider's text, and
//! serializes (shortest round-trip form) back to that same `f64`.

use super::lex::Lexer;
use super::question::{Question, QuestionType, Questions};
use serde::ser::{SerializeMap, SerializeStruct};
use serde::{Serialize, Serializer};
use std::borrow::Cow;

/// Token usage reported by the provider (R-VAL-USAGE).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
pub struct Usage {
    /// `usage.input_tokens`.
    pub input_tokens: u64,
    /// `usage.output_tokens`.
    pub output_tokens: u64,
}

/// Optional billing, passed through as reported (never inferred from tokens) (R-VAL-USAGE).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Billing<'a> {
    /// `billing.charged_credits`, a finite number ≥ 0.
    pub charged_credits: f64,
    /// `billing.rate_version`, when reported.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_version: Option<Cow<'a, str>>,
}

/// Billing as the compatible upstream reported it; never inferred or multiplied by jevgate.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct EvalBilling {
    /// Credits charged.
    pub charged_credits: f64,
    /// The rate version, when sent (bounded and cleaned by the client's `provider_text`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_version: Option<String>,
}

/// A provider response that passed validation against every question.
///
/// Borrows strings from the response bytes (decoded only when they contain escapes) and keys
/// from the [`Questions`]. Serializes to the wire shape `{model, answers, usage, billing?,
/// request_id?, requested_model?}`.
///
/// ```
/// # use jevgate::jev::*;
/// let q = Questions::from_json(br#"{"greeting":{"type":"noul"}}"#, &Limits::default()).unwrap();
/// let bytes = br#"{"model":"jev-1.13.0","answers":{"greeting":{"type":"noul","noul":0.99}},
///   "usage":{"input_tokens":120,"output_tokens":8},"request_id":"r-1","provider_trace":"x"}"#;
/// let r = validate_response(&q, bytes).unwrap();
/// assert_eq!(r.usage(), Usage { input_tokens: 120, output_tokens: 8 });
/// assert_eq!(r.request_id(), Some("r-1"));
/// assert_eq!(serde_json::to_string(&r).unwrap(),
///   r#"{"model":"jev-1.13.0","answers":{"greeting":{"type":"noul","noul":0.99}},"usage":{"input_tokens":120,"output_tokens":8},"request_id":"r-1"}"#);
/// ```
#[derive(Debug, Clone)]
pub struct Response<'a> {
    pub(crate) questions: &'a Questions,
    pub(crate) model: Cow<'a, str>,
    pub(crate) usage: Usage,
    pub(crate) billing: Option<Billing<'a>>,
    pub(crate) request_id: Option<Cow<'a, str>>,
    pub(crate) requested_model: Option<Cow<'a, str>>,
    /// The response bytes (score legends are read from them on request).
    pub(crate) bytes: &'a [u8],
    /// Per question, at `numbers_at`: noul `[p]`; choice `[p…, confidence, chosen]`;
    /// score `[p…, score, confidence, legend start, legend end]`.
    pub(crate) numbers: Numbers,
}

/// Two responses are equal when they say the same thing: same envelope, same answers, numbers
/// bit for bit (their JSON text may differ).
impl PartialEq for Response<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.model == other.model
            && self.usage == other.usage
            && self.billing == other.billing
            && self.request_id == other.request_id
            && self.requested_model == other.requested_model
            && self.answers().iter().eq(other.answers().iter())
    }
}

/// Numbers of up to this many slots live inline: no heap allocation for a typical answer set.
const INLINE: usize = 32;

/// The response's number slots: inline when they fit, else on the heap.
#[derive(Debug, Clone)]
#[allow(clippy::large_enum_variant)] // reason: the inline variant is the point: no allocation per typical response
pub(crate) enum Numbers {
    Inline([f64; INLINE]),
    Heap(Vec<f64>),
}

impl Numbers {
    /// `n` zeroed slots.
    pub fn zeroed(n: usize) -> Numbers {
        if n <= INLINE {
            Numbers::Inline([0.0; INLINE])
        } else {
            Numbers::Heap(vec![0.0; n])
        }
    }

    #[inline(always)]
    pub fn as_slice(&self) -> &[f64] {
        match self {
            Numbers::Inline(a) => a,
            Numbers::Heap(v) => v,
        }
    }

    #[inline(always)]
    pub fn as_mut_slice(&mut self) -> &mut [f64] {
        match self {
            Numbers::Inline(a) => a,
            Numbers::Heap(v) => v,
        }
    }
}

impl<'a> Response<'a> {
    /// The model the provider reports (`model`), distinct from the requested catalog id.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// Token usage.
    pub fn usage(&self) -> Usage {
        self.usage
    }

    /// Billing, when reported (a JSON `null` counts as absent).
    pub fn billing(&self) -> Option<&Billing<'a>> {
        self.billing.as_ref()
    }

    /// The provider's `request_id`, when reported.
    pub fn request_id(&self) -> Option<&str> {
        self.request_id.as_deref()
    }

    /// The provider's `requested_model`, when reported.
    pub fn requested_model(&self) -> Option<&str> {
        self.requested_model.as_deref()
    }

    /// The answers, in question order; serializes as the `answers` object.
    pub fn answers(&self) -> Answers<'_> {
        Answers { r: self }
    }
}

impl Serialize for Response<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let n = 3
            + usize::from(self.billing.is_some())
            + usize::from(self.request_id.is_some())
            + usize::from(self.requested_model.is_some());
        let mut st = s.serialize_struct("Response", n)?;
        st.serialize_field("model", &self.model)?;
        st.serialize_field("answers", &self.answers())?;
        st.serialize_field("usage", &self.usage)?;
        if let Some(b) = &self.billing {
            st.serialize_field("billing", b)?;
        }
        if let Some(id) = &self.request_id {
            st.serialize_field("request_id", id)?;
        }
        if let Some(m) = &self.requested_model {
            st.serialize_field("requested_model", m)?;
        }
        st.end()
    }
}

/// The answers of a [`Response`], one per question, in question order.
///
/// Serializes as the `answers` object (`{key: answer, …}`), which is what the C and Python
/// surfaces return.
#[derive(Debug, Clone, Copy)]
pub struct Answers<'r> {
    r: &'r Response<'r>,
}

impl<'r> Answers<'r> {
    /// Number of answers (= number of questions).
    pub fn len(&self) -> usize {
        self.r.questions.len()
    }

    /// Always false.
    pub fn is_empty(&self) -> bool {
        self.r.questions.is_empty()
    }

    /// `(question key, answer)` in question order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&'r str, Answer<'r>)> + 'r {
        let r = self.r;
        r.questions.iter().map(move |q| (q.key(), answer_of(r, q)))
    }

    /// The answer to the question with this key.
    pub fn get(&self, key: &str) -> Option<Answer<'r>> {
        self.r.questions.get(key).map(|q| answer_of(self.r, q))
    }
}

fn answer_of<'r>(r: &'r Response<'r>, q: &'r Question) -> Answer<'r> {
    let at = q.numbers_at as usize;
    let n = q.arity();
    let nums = r
        .numbers
        .as_slice()
        .get(at..at + q.numbers_len())
        .unwrap_or(&[]);
    let num = |i: usize| nums.get(i).copied().unwrap_or(f64::NAN);
    match q.question_type() {
        QuestionType::Noul => Answer::Noul { noul: num(0) },
        QuestionType::Choice => Answer::Choice(ChoiceAnswer {
            question: q,
            probabilities: nums.get(..n).unwrap_or(&[]),
            confidence: num(n),
            chosen: num(n + 1) as usize,
        }),
        QuestionType::Score => {
            let span = (num(n + 2) as usize)..(num(n + 3) as usize);
            Answer::Score(ScoreAnswer {
                score: num(n),
                levels: nums.get(..n).unwrap_or(&[]),
                legend: r.bytes.get(span).unwrap_or(b"[]"),
                confidence: num(n + 1),
            })
        }
    }
}

impl Serialize for Answers<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.len()))?;
        for (k, a) in self.iter() {
            m.serialize_entry(k, &a)?;
        }
        m.end()
    }
}

/// One validated answer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Answer<'r> {
    /// `{"type":"noul","noul":p}`.
    Noul {
        /// The yes probability, in [0, 1].
        noul: f64,
    },
    /// `{"type":"choice","choice":k,"probabilities":{…},"confidence":c}`.
    Choice(ChoiceAnswer<'r>),
    /// `{"type":"score","score":s,"levels":[…],"legend":[…],"confidence":c}`.
    Score(ScoreAnswer<'r>),
}

impl Serialize for Answer<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Answer::Noul { noul } => {
                let mut st = s.serialize_struct("Noul", 2)?;
                st.serialize_field("type", "noul")?;
                st.serialize_field("noul", noul)?;
                st.end()
            }
            Answer::Choice(c) => c.serialize(s),
            Answer::Score(sc) => sc.serialize(s),
        }
    }
}

/// A validated choice answer: the chosen option is a maximum of the distribution.
///
/// ```
/// # use jevgate::jev::*;
/// let q = Questions::from_json(br#"{"pick":{"type":"choice","criteria":{"a":"A","b":"B"}}}"#,
///     &Limits::default()).unwrap();
/// let r = validate_response(&q, br#"{"model":"m","usage":{"input_tokens":0,"output_tokens":0},
///     "answers":{"pick":{"type":"choice","choice":"b","probabilities":{"b":0.5,"a":0.5},"confidence":0.5}}}"#).unwrap();
/// let Some(Answer::Choice(c)) = r.answers().get("pick") else { unreachable!() };
/// assert_eq!(c.choice(), "b"); // a tie at the maximum is accepted
/// assert_eq!(c.probabilities().collect::<Vec<_>>(), [("a", 0.5), ("b", 0.5)]);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChoiceAnswer<'r> {
    question: &'r Question,
    probabilities: &'r [f64],
    confidence: f64,
    chosen: usize,
}

impl<'r> ChoiceAnswer<'r> {
    /// The chosen option's key.
    pub fn choice(&self) -> &'r str {
        self.question.option_key(self.chosen)
    }

    /// `(option key, probability)` in the question's option order.
    pub fn probabilities(&self) -> impl ExactSizeIterator<Item = (&'r str, f64)> + 'r {
        let q = self.question;
        self.probabilities
            .iter()
            .enumerate()
            .map(move |(i, &p)| (q.option_key(i), p))
    }

    /// Probabilities in the question's option order.
    pub fn probability_values(&self) -> &'r [f64] {
        self.probabilities
    }

    /// The probability of one option.
    pub fn probability(&self, option: &str) -> Option<f64> {
        let i = self.question.option_index(option.as_bytes(), 0)?;
        self.probabilities.get(i).copied()
    }

    /// The reported confidence, in [0, 1].
    pub fn confidence(&self) -> f64 {
        self.confidence
    }
}

impl Serialize for ChoiceAnswer<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        struct Probs<'a>(&'a ChoiceAnswer<'a>);
        impl Serialize for Probs<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut m = s.serialize_map(Some(self.0.probabilities.len()))?;
                for (k, p) in self.0.probabilities() {
                    m.serialize_entry(k, &p)?;
                }
                m.end()
            }
        }
        let mut st = s.serialize_struct("Choice", 4)?;
        st.serialize_field("type", "choice")?;
        st.serialize_field("choice", self.choice())?;
        st.serialize_field("probabilities", &Probs(self))?;
        st.serialize_field("confidence", &self.confidence)?;
        st.end()
    }
}

/// A validated score answer: `score` = Σ i·levels\[i\] within the distribution's tolerance.
///
/// ```
/// # use jevgate::jev::*;
/// let q = Questions::from_json(br#"{"s":{"type":"score","criteria":["low","high"]}}"#,
///     &Limits::default()).unwrap();
/// let r = validate_response(&q, br#"{"model":"m","usage":{"input_tokens":0,"output_tokens":0},
///     "answers":{"s":{"type":"score","score":0.75,"levels":[0.25,0.75],"legend":["lo","hi"],"confidence":0.75}}}"#).unwrap();
/// let Some(Answer::Score(s)) = r.answers().get("s") else { unreachable!() };
/// assert_eq!((s.score(), s.levels(), s.confidence()), (0.75, &[0.25, 0.75][..], 0.75));
/// assert_eq!(s.legend().collect::<Vec<_>>(), ["lo", "hi"]);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct ScoreAnswer<'r> {
    score: f64,
    levels: &'r [f64],
    /// The legend array's JSON text (validated).
    legend: &'r [u8],
    confidence: f64,
}

impl PartialEq for ScoreAnswer<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.score == other.score
            && self.levels == other.levels
            && self.confidence == other.confidence
            && self.legend().eq(other.legend())
    }
}

/// Reads the strings of a validated legend array.
struct LegendIter<'r> {
    lx: Lexer<'r>,
    left: usize,
}

impl<'r> Iterator for LegendIter<'r> {
    type Item = Cow<'r, str>;

    fn next(&mut self) -> Option<Cow<'r, str>> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        // `[` before the first string, `,` before the others
        if matches!(self.lx.peek_ws(), Some(b'[' | b',')) {
            self.lx.bump();
        }
        Some(self.lx.string().map_or(Cow::Borrowed(""), |s| s.decode()))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl ExactSizeIterator for LegendIter<'_> {}

impl<'r> ScoreAnswer<'r> {
    /// The probability-weighted score as reported.
    pub fn score(&self) -> f64 {
        self.score
    }

    /// Level probabilities, level 0 first.
    pub fn levels(&self) -> &'r [f64] {
        self.levels
    }

    /// The legend as reported (escapes decoded), one entry per level.
    pub fn legend(&self) -> impl ExactSizeIterator<Item = Cow<'r, str>> + 'r {
        LegendIter {
            lx: Lexer::new(self.legend),
            left: self.levels.len(),
        }
    }

    /// The reported confidence, in [0, 1].
    pub fn confidence(&self) -> f64 {
        self.confidence
    }
}

struct Legend<'a>(&'a ScoreAnswer<'a>);

impl Serialize for Legend<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.legend())
    }
}

impl Serialize for ScoreAnswer<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("Score", 5)?;
        st.serialize_field("type", "score")?;
        st.serialize_field("score", &self.score)?;
        st.serialize_field("levels", self.levels)?;
        st.serialize_field("legend", &Legend(self))?;
        st.serialize_field("confidence", &self.confidence)?;
        st.end()
    }
}
