//! Why something failed: the small value types the error vocabulary ([`crate::Error`]) carries,
//! kept below every capability so `error` needs nothing above it.
//!
//! - [`ValidationReason`] and [`ValidationError`]: why a provider response was rejected
//!   (R-VAL), the fixed `validationReason` codes; re-exported as `jevgate::jev::…`.
//! - [`StaleCause`]: why an observation is stale (R-BRW-STALE); re-exported as
//!   `jevgate::browser::StaleCause`.
//!
//! This module owns these vocabularies only and uses nothing of the crate. It must never carry
//! text received from a provider or a page: an error names the question key (the host's own
//! text) and a field name written by jevgate, never an answer, an unexpected key or a number it
//! saw.

use serde::{Deserialize, Serialize};
use std::fmt;

/// The fixed `validationReason` of a rejected response.
///
/// Codes never change meaning; [`ValidationReason::as_str`] is what diagnostics, the C error
/// object and the Python exception's `.reason` carry.
///
/// ```
/// use jevgate::jev::ValidationReason;
/// assert_eq!(ValidationReason::DistributionSum.as_str(), "DISTRIBUTION_SUM");
/// assert_eq!(ValidationReason::from_code("CHOICE_NOT_MAX"), Some(ValidationReason::ChoiceNotMax));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ValidationReason {
    /// A question has no answer (R-VAL-KEYS).
    MissingAnswer,
    /// The answers object has a key that is not a question, or answers a question twice
    /// (R-VAL-KEYS).
    UnexpectedAnswer,
    /// An answer's `type` differs from its question's, is missing its string form, or the answer
    /// carries a field of another answer type; or the answer is not a JSON object (R-VAL-KEYS).
    TypeMismatch,
    /// A probability or confidence is not a finite number in `[0, 1]` (R-VAL-NOUL, -CHOICE,
    /// -SCORE).
    ProbabilityRange,
    /// A choice names, or gives a probability for, a key that is not one of the options
    /// (R-VAL-CHOICE).
    UnknownOption,
    /// A choice's probabilities lack an option (R-VAL-CHOICE).
    MissingOption,
    /// The chosen option's probability is below another option's; ties at the maximum are
    /// accepted (R-VAL-CHOICE).
    ChoiceNotMax,
    /// A distribution's sum is outside the tolerance of R-VAL-SUM.
    DistributionSum,
    /// A score's `levels` or `legend` does not have one entry per criteria level, or is not an
    /// array (R-VAL-SCORE).
    LevelCount,
    /// A score is not a number equal to Σ i·pᵢ within the distribution's tolerance
    /// (R-VAL-SCORE).
    ScoreMismatch,
    /// `usage.input_tokens`/`usage.output_tokens` is not a nonnegative integer written without a
    /// fraction or exponent, or `billing` is malformed (R-VAL-USAGE).
    UsageInvalid,
    /// The bytes are not one JSON object: a syntax error, invalid UTF-8, a lone surrogate escape,
    /// nesting deeper than serde_json's limit (127 containers), trailing bytes, or a member name repeated inside one object.
    MalformedJson,
    /// A required field is absent: `model`, `answers`, `usage`, a usage count,
    /// `billing.charged_credits`, or a field of an answer.
    MissingField,
    /// An answer object has a member that no answer type defines (added: no listed code fits).
    UnexpectedField,
    /// A known field holds a JSON value of the wrong kind and no more specific reason applies
    /// (`model` not a string, `answers` not an object, a legend entry not a string, …) (added: no
    /// listed code fits).
    InvalidField,
}

impl ValidationReason {
    /// Every reason, in documentation order.
    pub const ALL: [ValidationReason; 15] = [
        ValidationReason::MissingAnswer,
        ValidationReason::UnexpectedAnswer,
        ValidationReason::TypeMismatch,
        ValidationReason::ProbabilityRange,
        ValidationReason::UnknownOption,
        ValidationReason::MissingOption,
        ValidationReason::ChoiceNotMax,
        ValidationReason::DistributionSum,
        ValidationReason::LevelCount,
        ValidationReason::ScoreMismatch,
        ValidationReason::UsageInvalid,
        ValidationReason::MalformedJson,
        ValidationReason::MissingField,
        ValidationReason::UnexpectedField,
        ValidationReason::InvalidField,
    ];

    /// The stable code, e.g. `"MISSING_OPTION"`.
    ///
    /// ```
    /// assert_eq!(jevgate::jev::ValidationReason::UsageInvalid.as_str(), "USAGE_INVALID");
    /// ```
    pub const fn as_str(self) -> &'static str {
        match self {
            ValidationReason::MissingAnswer => "MISSING_ANSWER",
            ValidationReason::UnexpectedAnswer => "UNEXPECTED_ANSWER",
            ValidationReason::TypeMismatch => "TYPE_MISMATCH",
            ValidationReason::ProbabilityRange => "PROBABILITY_RANGE",
            ValidationReason::UnknownOption => "UNKNOWN_OPTION",
            ValidationReason::MissingOption => "MISSING_OPTION",
            ValidationReason::ChoiceNotMax => "CHOICE_NOT_MAX",
            ValidationReason::DistributionSum => "DISTRIBUTION_SUM",
            ValidationReason::LevelCount => "LEVEL_COUNT",
            ValidationReason::ScoreMismatch => "SCORE_MISMATCH",
            ValidationReason::UsageInvalid => "USAGE_INVALID",
            ValidationReason::MalformedJson => "MALFORMED_JSON",
            ValidationReason::MissingField => "MISSING_FIELD",
            ValidationReason::UnexpectedField => "UNEXPECTED_FIELD",
            ValidationReason::InvalidField => "INVALID_FIELD",
        }
    }

    /// The reason whose [`as_str`](ValidationReason::as_str) is `code`, if any.
    ///
    /// ```
    /// use jevgate::jev::ValidationReason;
    /// assert_eq!(ValidationReason::from_code("LEVEL_COUNT"), Some(ValidationReason::LevelCount));
    /// assert_eq!(ValidationReason::from_code("level_count"), None);
    /// ```
    pub fn from_code(code: &str) -> Option<ValidationReason> {
        ValidationReason::ALL
            .into_iter()
            .find(|r| r.as_str() == code)
    }
}

impl fmt::Display for ValidationReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A provider response that must not be acted on (`JEV_MALFORMED_RESPONSE`).
///
/// Carries one [`ValidationReason`], the key of the question concerned (when there is one) and
/// the name of the field concerned (written by jevgate). It never carries provider text: an
/// unexpected answer key is not repeated, and no number or answer is quoted (R-ERR-2).
///
/// ```
/// use jevgate::jev::{validate_response, Questions, ValidationReason};
/// let questions = Questions::from_json(
///     br#"{"greeting":{"type":"noul","instructions":"Is this a greeting?"}}"#,
///     &Default::default(),
/// ).unwrap();
/// let err = validate_response(&questions, br#"{"model":"m","answers":{"greeting":{"type":"noul","noul":1.5}},
///     "usage":{"input_tokens":1,"output_tokens":1}}"#).unwrap_err();
/// assert_eq!(err.code(), "JEV_MALFORMED_RESPONSE");
/// assert_eq!(err.reason(), ValidationReason::ProbabilityRange);
/// assert_eq!(err.key(), Some("greeting"));
/// assert_eq!(err.field(), Some("noul"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidationError {
    reason: ValidationReason,
    key: Option<String>,
    field: Option<&'static str>,
}

impl ValidationError {
    /// The error code shared by every validation failure.
    pub const CODE: &'static str = "JEV_MALFORMED_RESPONSE";

    pub(crate) fn at(
        reason: ValidationReason,
        key: Option<&str>,
        field: Option<&'static str>,
    ) -> ValidationError {
        ValidationError {
            reason,
            key: key.map(str::to_owned),
            field,
        }
    }

    /// Always `"JEV_MALFORMED_RESPONSE"`.
    ///
    /// ```
    /// # use jevgate::jev::*;
    /// # let q = Questions::from_json(br#"{"a":{"type":"noul"}}"#, &Default::default()).unwrap();
    /// assert_eq!(validate_response(&q, b"[]").unwrap_err().code(), "JEV_MALFORMED_RESPONSE");
    /// ```
    pub fn code(&self) -> &'static str {
        Self::CODE
    }

    /// The fixed reason.
    pub fn reason(&self) -> ValidationReason {
        self.reason
    }

    /// The key of the question concerned: `None` for envelope problems and for an answer key
    /// that is not a question (whose text comes from the provider and is never repeated).
    pub fn key(&self) -> Option<&str> {
        self.key.as_deref()
    }

    /// The field concerned, as jevgate names it (`"probabilities"`, `"usage.input_tokens"`),
    /// when one is.
    pub fn field(&self) -> Option<&'static str> {
        self.field
    }
}

impl fmt::Display for ValidationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "malformed response: {}", self.reason.as_str())?;
        match (&self.key, self.field) {
            (Some(k), Some(field)) => write!(f, " (answer `{k}`, field `{field}`)"),
            (Some(k), None) => write!(f, " (answer `{k}`)"),
            (None, Some(field)) => write!(f, " (field `{field}`)"),
            (None, None) => Ok(()),
        }
    }
}

impl std::error::Error for ValidationError {}

/// Why an observation is stale (R-BRW-STALE); carried by
/// [`Error::StaleObservation`](crate::Error::StaleObservation).
///
/// ```
/// use jevgate::browser::StaleCause;
/// assert_eq!(serde_json::to_string(&StaleCause::NavigationPending).unwrap(), r#""NAVIGATION_PENDING""#);
/// assert_eq!(StaleCause::GenerationChanged.to_string(), "GENERATION_CHANGED");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum StaleCause {
    /// A navigation started and its document is not ready yet: re-read with a short backoff.
    NavigationPending,
    /// The page changed since the observation (new document, or controls added, removed or
    /// renamed): its refs no longer hold.
    GenerationChanged,
    /// Another element covers the target's centre (an overlay, a banner): the page is not
    /// changing, so retrying the same action is pointless.
    TargetObscured,
}

impl StaleCause {
    /// The cause's code string.
    ///
    /// ```
    /// assert_eq!(jevgate::browser::StaleCause::TargetObscured.code(), "TARGET_OBSCURED");
    /// ```
    pub fn code(self) -> &'static str {
        match self {
            StaleCause::NavigationPending => "NAVIGATION_PENDING",
            StaleCause::GenerationChanged => "GENERATION_CHANGED",
            StaleCause::TargetObscured => "TARGET_OBSCURED",
        }
    }
}

impl std::fmt::Display for StaleCause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.code())
    }
}
