//! The questions of a request (R-JEV-REQ): an ordered map key → `noul | choice | score`, with
//! the per-question limits (1..=255 options, 2..=10 levels) and the lookup tables the validator
//! uses (keys sorted for binary search, the layout of each answer's numbers).
//!
//! This module owns the question model. It must never reorder questions or options (their order
//! is the caller's and the answers come back in it) and never quote criteria text in an error.

use super::content::Content;
use super::limits::{Limits, RequestError};
use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde::ser::{SerializeMap, SerializeStruct};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// Most options of a choice question.
pub const MAX_OPTIONS: usize = 255;
/// Fewest levels of a score question.
pub const MIN_LEVELS: usize = 2;
/// Most levels of a score question.
pub const MAX_LEVELS: usize = 10;

/// The three question types.
///
/// ```
/// use jevgate::jev::QuestionType;
/// assert_eq!(QuestionType::Choice.as_str(), "choice");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QuestionType {
    /// A yes/no question answered by a yes probability.
    Noul,
    /// One of 1..=255 named options, with a probability per option.
    Choice,
    /// One of 2..=10 ordered levels, with a probability per level.
    Score,
}

impl QuestionType {
    /// The wire name: `"noul"`, `"choice"` or `"score"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            QuestionType::Noul => "noul",
            QuestionType::Choice => "choice",
            QuestionType::Score => "score",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Criteria {
    None,
    /// Options in the caller's order, and their indices sorted by key.
    Options(Vec<(String, String)>, Vec<u8>),
    Levels(Vec<String>),
}

/// One question: its key, type, optional instructions and criteria.
///
/// ```
/// use jevgate::jev::{Question, QuestionType};
/// let q = Question::choice("next_step", "What next?",
///     [("explain", "Compare the options."), ("execute", "Execute the choice.")]).unwrap();
/// assert_eq!(q.question_type(), QuestionType::Choice);
/// assert_eq!(q.options().map(|(k, _)| k).collect::<Vec<_>>(), ["explain", "execute"]);
/// assert!(Question::score("s", "How clear?", ["only one level"]).is_err());
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Question {
    key: String,
    instructions: Option<Content>,
    criteria: Criteria,
    /// Where this answer's numbers start in the response's number buffer.
    pub(crate) numbers_at: u32,
    /// Position in the question set.
    pub(crate) index: u32,
    /// The key (and, for a choice, every option key) appears verbatim in JSON: no `"`, `\\`
    /// or control character, so raw input bytes can be compared with it.
    pub(crate) raw_safe: bool,
}

impl Question {
    /// A yes/no question.
    pub fn noul(key: impl Into<String>, instructions: impl Into<Content>) -> Question {
        Question {
            key: key.into(),
            instructions: Some(instructions.into()),
            criteria: Criteria::None,
            numbers_at: 0,
            index: 0,
            raw_safe: false,
        }
    }

    /// A choice among 1..=255 options given as `(option key, description)` in order.
    /// Fails on a count out of range or a repeated option key.
    pub fn choice<K, D>(
        key: impl Into<String>,
        instructions: impl Into<Content>,
        options: impl IntoIterator<Item = (K, D)>,
    ) -> Result<Question, RequestError>
    where
        K: Into<String>,
        D: Into<String>,
    {
        let options: Vec<(String, String)> = options
            .into_iter()
            .map(|(k, d)| (k.into(), d.into()))
            .collect();
        let key = key.into();
        let criteria = choice_criteria(options).map_err(|e| e.prefixed(&key))?;
        Ok(Question {
            key,
            instructions: Some(instructions.into()),
            criteria,
            numbers_at: 0,
            index: 0,
            raw_safe: false,
        })
    }

    /// A score over 2..=10 levels given in order (level 0 first).
    pub fn score<D: Into<String>>(
        key: impl Into<String>,
        instructions: impl Into<Content>,
        levels: impl IntoIterator<Item = D>,
    ) -> Result<Question, RequestError> {
        let levels: Vec<String> = levels.into_iter().map(Into::into).collect();
        let key = key.into();
        let criteria = score_criteria(levels).map_err(|e| e.prefixed(&key))?;
        Ok(Question {
            key,
            instructions: Some(instructions.into()),
            criteria,
            numbers_at: 0,
            index: 0,
            raw_safe: false,
        })
    }

    /// The question's key in the questions map.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The question's type.
    pub fn question_type(&self) -> QuestionType {
        match self.criteria {
            Criteria::None => QuestionType::Noul,
            Criteria::Options(..) => QuestionType::Choice,
            Criteria::Levels(_) => QuestionType::Score,
        }
    }

    /// The instructions, when given.
    pub fn instructions(&self) -> Option<&Content> {
        self.instructions.as_ref()
    }

    /// A choice's options `(key, description)` in order; empty for other types.
    pub fn options(&self) -> impl ExactSizeIterator<Item = (&str, &str)> + '_ {
        let list: &[(String, String)] = match &self.criteria {
            Criteria::Options(list, _) => list,
            _ => &[],
        };
        list.iter().map(|(k, d)| (k.as_str(), d.as_str()))
    }

    /// A score's level descriptions in order; empty for other types.
    pub fn levels(&self) -> &[String] {
        match &self.criteria {
            Criteria::Levels(l) => l,
            _ => &[],
        }
    }

    /// Number of options (choice) or levels (score); 1 for a noul.
    pub fn arity(&self) -> usize {
        match &self.criteria {
            Criteria::None => 1,
            Criteria::Options(o, _) => o.len(),
            Criteria::Levels(l) => l.len(),
        }
    }

    /// The option key at `index` (choice only).
    pub(crate) fn option_key(&self, index: usize) -> &str {
        match &self.criteria {
            Criteria::Options(o, _) => o.get(index).map_or("", |(k, _)| k.as_str()),
            _ => "",
        }
    }

    /// The option key at `index` as bytes, when every key of this question is written verbatim
    /// in JSON (so it can be compared with raw input).
    #[inline(always)]
    pub(crate) fn option_key_bytes(&self, index: usize) -> Option<&[u8]> {
        match &self.criteria {
            Criteria::Options(o, _) if self.raw_safe => o.get(index).map(|(k, _)| k.as_bytes()),
            _ => None,
        }
    }

    /// Index of an option by key: tries `hint` first (options usually arrive in order), then a
    /// binary search. `raw` is the key as it appears in JSON (no escapes).
    #[inline]
    pub(crate) fn option_index(&self, raw: &[u8], hint: usize) -> Option<usize> {
        let Criteria::Options(list, sorted) = &self.criteria else {
            return None;
        };
        if let Some((k, _)) = list.get(hint) {
            if k.as_bytes() == raw {
                return Some(hint);
            }
        }
        sorted
            .binary_search_by(|&i| list[i as usize].0.as_bytes().cmp(raw))
            .ok()
            .map(|p| sorted[p] as usize)
    }

    /// How many numbers this answer occupies in the response buffer.
    pub(crate) fn numbers_len(&self) -> usize {
        match &self.criteria {
            Criteria::None => 1,
            // probabilities…, confidence, chosen index
            Criteria::Options(o, _) => o.len() + 2,
            // levels…, score, confidence, legend start, legend end
            Criteria::Levels(l) => l.len() + 4,
        }
    }
}

/// Whether `s` is written in JSON exactly as its bytes (nothing to escape).
fn verbatim(s: &str) -> bool {
    s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\')
}

fn choice_criteria(options: Vec<(String, String)>) -> Result<Criteria, RequestError> {
    if options.is_empty() || options.len() > MAX_OPTIONS {
        return Err(RequestError::new(
            "criteria",
            format!(
                "a choice must have 1 to {MAX_OPTIONS} options, not {}",
                options.len()
            ),
        ));
    }
    let mut sorted: Vec<u8> = (0..options.len() as u16).map(|i| i as u8).collect();
    sorted.sort_by(|&a, &b| options[a as usize].0.cmp(&options[b as usize].0));
    if let Some(w) = sorted
        .windows(2)
        .find(|w| options[w[0] as usize].0 == options[w[1] as usize].0)
    {
        return Err(RequestError::new(
            "criteria",
            format!("option {} repeats an earlier option key", w[1] as usize + 1),
        ));
    }
    Ok(Criteria::Options(options, sorted))
}

fn score_criteria(levels: Vec<String>) -> Result<Criteria, RequestError> {
    if !(MIN_LEVELS..=MAX_LEVELS).contains(&levels.len()) {
        return Err(RequestError::new(
            "criteria",
            format!(
                "a score must have {MIN_LEVELS} to {MAX_LEVELS} levels, not {}",
                levels.len()
            ),
        ));
    }
    Ok(Criteria::Levels(levels))
}

/// The questions of one request, in the caller's order, with unique keys (R-JEV-REQ).
///
/// Built once and reused: validating a response against it allocates nothing for lookups.
///
/// ```
/// use jevgate::jev::{Questions, Limits};
/// let q = Questions::from_json(br#"{
///   "needs_decision": {"type": "noul", "instructions": "Does the user still need to decide?"},
///   "next_step": {"type": "choice", "instructions": "Next step?",
///                 "criteria": {"explain": "Compare.", "execute": "Execute."}},
///   "clarity": {"type": "score", "instructions": "How clear?",
///               "criteria": ["Unspecified", "Partially specified", "Fully specified"]}
/// }"#, &Limits::default()).unwrap();
/// assert_eq!(q.iter().map(|q| q.key()).collect::<Vec<_>>(), ["needs_decision", "next_step", "clarity"]);
/// assert_eq!(q.get("clarity").unwrap().levels().len(), 3);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Questions {
    list: Vec<Question>,
    /// Question indices sorted by key.
    by_key: Vec<u32>,
    numbers_len: usize,
}

impl Questions {
    /// Builds a question set: 1..=`limits.max_questions` questions with unique keys.
    ///
    /// ```
    /// use jevgate::jev::{Questions, Question, Limits};
    /// assert!(Questions::new([Question::noul("a", "A?"), Question::noul("a", "again?")],
    ///     &Limits::default()).is_err());
    /// ```
    pub fn new(
        questions: impl IntoIterator<Item = Question>,
        limits: &Limits,
    ) -> Result<Questions, RequestError> {
        let mut list: Vec<Question> = questions.into_iter().collect();
        let mut numbers_len = 0usize;
        for (i, q) in list.iter_mut().enumerate() {
            q.index = u32::try_from(i).unwrap_or(u32::MAX);
            q.raw_safe = verbatim(&q.key) && q.options().all(|(k, _)| verbatim(k));
            q.numbers_at = u32::try_from(numbers_len).unwrap_or(u32::MAX);
            numbers_len += q.numbers_len();
        }
        let mut by_key: Vec<u32> = (0..list.len() as u32).collect();
        by_key.sort_by(|&a, &b| list[a as usize].key.cmp(&list[b as usize].key));
        if let Some(w) = by_key
            .windows(2)
            .find(|w| list[w[0] as usize].key == list[w[1] as usize].key)
        {
            return Err(RequestError::new(
                "",
                format!(
                    "question {} repeats an earlier question key",
                    w[1] as usize + 1
                ),
            ));
        }
        let questions = Questions {
            list,
            by_key,
            numbers_len,
        };
        questions.check_count(limits)?;
        Ok(questions)
    }

    /// Parses the questions map (`{key: {type, instructions?, criteria?}}`) from JSON.
    /// Unknown members of a question are rejected; member order is kept.
    pub fn from_json(json: &[u8], limits: &Limits) -> Result<Questions, RequestError> {
        let mut de = serde_json::Deserializer::from_slice(json);
        let wire: QuestionsWire = serde_path_to_error::deserialize(&mut de)
            .map_err(|e| RequestError::from_path_error(&e))?;
        de.end()
            .map_err(|e| RequestError::from_serde(String::new(), &e))?;
        Questions::new(wire.0, limits)
    }

    pub(crate) fn check_count(&self, limits: &Limits) -> Result<(), RequestError> {
        let n = self.list.len();
        if n == 0 || n > limits.max_questions {
            return Err(RequestError::new(
                "",
                format!(
                    "must have 1 to {} questions (maxQuestions), not {n}",
                    limits.max_questions
                ),
            ));
        }
        Ok(())
    }

    /// Number of questions (never zero).
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// Always false: a question set has at least one question.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// The questions in order.
    pub fn iter(&self) -> std::slice::Iter<'_, Question> {
        self.list.iter()
    }

    /// The question with this key.
    pub fn get(&self, key: &str) -> Option<&Question> {
        self.index_of(key.as_bytes(), 0).map(|i| &self.list[i])
    }

    pub(crate) fn nth(&self, index: usize) -> Option<&Question> {
        self.list.get(index)
    }

    pub(crate) fn at(&self, index: usize) -> &Question {
        &self.list[index]
    }

    pub(crate) fn numbers_len(&self) -> usize {
        self.numbers_len
    }

    /// Index of the question with this key (as raw JSON bytes, no escapes): `hint` first, then
    /// a binary search.
    #[inline]
    pub(crate) fn index_of(&self, raw: &[u8], hint: usize) -> Option<usize> {
        if let Some(q) = self.list.get(hint) {
            if q.key.as_bytes() == raw {
                return Some(hint);
            }
        }
        self.by_key
            .binary_search_by(|&i| self.list[i as usize].key.as_bytes().cmp(raw))
            .ok()
            .map(|p| self.by_key[p] as usize)
    }
}

impl<'a> IntoIterator for &'a Questions {
    type Item = &'a Question;
    type IntoIter = std::slice::Iter<'a, Question>;
    fn into_iter(self) -> Self::IntoIter {
        self.list.iter()
    }
}

// ---- serde: the wire shape of questions -------------------------------------------------------

impl Serialize for Question {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let n = 1
            + usize::from(self.instructions.is_some())
            + usize::from(!matches!(self.criteria, Criteria::None));
        let mut st = s.serialize_struct("Question", n)?;
        st.serialize_field("type", self.question_type().as_str())?;
        if let Some(i) = &self.instructions {
            st.serialize_field("instructions", i)?;
        }
        match &self.criteria {
            Criteria::None => {}
            Criteria::Options(..) => st.serialize_field("criteria", &OptionsSer(self))?,
            Criteria::Levels(l) => st.serialize_field("criteria", l)?,
        }
        st.end()
    }
}

struct OptionsSer<'a>(&'a Question);

impl Serialize for OptionsSer<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.arity()))?;
        for (k, d) in self.0.options() {
            m.serialize_entry(k, d)?;
        }
        m.end()
    }
}

/// Serialized as the questions map, in order.
impl Serialize for Questions {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.list.len()))?;
        for q in &self.list {
            m.serialize_entry(&q.key, q)?;
        }
        m.end()
    }
}

/// The questions map as parsed, before the set-level checks.
pub(crate) struct QuestionsWire(pub Vec<Question>);

impl<'de> Deserialize<'de> for QuestionsWire {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = QuestionsWire;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object of questions")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<QuestionsWire, A::Error> {
                let mut list = Vec::new();
                while let Some(key) = map.next_key::<String>()? {
                    let seed = QuestionSeed(key);
                    list.push(map.next_value_seed(seed)?);
                }
                Ok(QuestionsWire(list))
            }
        }
        d.deserialize_map(V)
    }
}

struct QuestionSeed(String);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct QuestionWire {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    instructions: Option<Content>,
    #[serde(default)]
    criteria: Option<CriteriaWire>,
}

/// Criteria as parsed: the count rules are checked here so errors point at `criteria`.
struct CriteriaWire(Criteria);

impl<'de> Deserialize<'de> for CriteriaWire {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = CriteriaWire;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object of option descriptions or an array of level descriptions")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<CriteriaWire, A::Error> {
                let mut list = Vec::new();
                while let Some(entry) = map.next_entry::<String, String>()? {
                    list.push(entry);
                }
                choice_criteria(list)
                    .map(CriteriaWire)
                    .map_err(|e| de::Error::custom(e.message()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<CriteriaWire, A::Error> {
                let mut list = Vec::new();
                while let Some(level) = seq.next_element::<String>()? {
                    list.push(level);
                }
                score_criteria(list)
                    .map(CriteriaWire)
                    .map_err(|e| de::Error::custom(e.message()))
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de> de::DeserializeSeed<'de> for QuestionSeed {
    type Value = Question;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Question, D::Error> {
        let w = QuestionWire::deserialize(d)?;
        let key = self.0;
        let criteria = match (w.kind.as_str(), w.criteria) {
            ("noul", None) => Criteria::None,
            ("noul", Some(_)) => {
                return Err(de::Error::custom("a noul question takes no criteria"));
            }
            ("choice", Some(CriteriaWire(c @ Criteria::Options(..)))) => c,
            ("score", Some(CriteriaWire(c @ Criteria::Levels(_)))) => c,
            ("choice", _) => {
                return Err(de::Error::custom(
                    "a choice question needs criteria: an object of option descriptions",
                ));
            }
            ("score", _) => {
                return Err(de::Error::custom(
                    "a score question needs criteria: an array of level descriptions",
                ));
            }
            _ => {
                return Err(de::Error::custom(
                    "type must be `noul`, `choice` or `score`",
                ));
            }
        };
        Ok(Question {
            key,
            instructions: w.instructions,
            criteria,
            numbers_at: 0,
            index: 0,
            raw_safe: false,
        })
    }
}
