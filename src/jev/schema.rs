//! `answer_schema` (R-VAL-SCHEMA): the JSON Schema (draft 2020-12) of a valid `answers` object
//! for a question set, for hosts that constrain their own model's decoding.
//!
//! The schema fixes structure, types, enums and ranges: every question answered, no other key,
//! each answer's `type`, the option enum of `choice`, one probability per option (and no other),
//! every probability and confidence in [0, 1], exactly n levels and n legend strings. It cannot
//! express what depends on several values together: that a distribution sums to 1 within the
//! rounding envelope (R-VAL-SUM), that the chosen option is a maximum (R-VAL-CHOICE), or that
//! the score equals Σ i·pᵢ (R-VAL-SCORE). [`validate_response`](super::validate_response) checks
//! those; an answer set that passes the schema may still be rejected by it.
//!
//! This module only describes; it must never be used in place of the validator.

use super::question::{Question, QuestionType, Questions};
use serde_json::{json, Map, Value};

/// The JSON Schema of a valid `answers` object for `questions` (sums, maxima and the score
/// identity are not expressible in JSON Schema and are not in it).
///
/// ```
/// use jevgate::jev::{answer_schema, Questions, Limits};
/// let q = Questions::from_json(br#"{"pick":{"type":"choice","criteria":{"a":"A","b":"B"}}}"#,
///     &Limits::default()).unwrap();
/// let schema = answer_schema(&q);
/// assert_eq!(schema["required"], serde_json::json!(["pick"]));
/// assert_eq!(schema["properties"]["pick"]["properties"]["choice"]["enum"], serde_json::json!(["a", "b"]));
/// ```
pub fn answer_schema(questions: &Questions) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::with_capacity(questions.len());
    for q in questions {
        properties.insert(q.key().to_owned(), question_schema(q));
        required.push(Value::String(q.key().to_owned()));
    }
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "description": "Answers object of a jevgate evaluation. Not expressible here, checked by \
            the validator: each distribution sums to 1 (±0.001, or ±min(0.005·n, 0.02) when every \
            probability is a multiple of 0.01), the chosen option is a maximum, and score = Σ i·levels[i].",
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

fn probability() -> Value {
    json!({"type": "number", "minimum": 0, "maximum": 1})
}

fn question_schema(q: &Question) -> Value {
    match q.question_type() {
        QuestionType::Noul => json!({
            "type": "object",
            "properties": {"type": {"const": "noul"}, "noul": probability()},
            "required": ["type", "noul"],
            "additionalProperties": false,
        }),
        QuestionType::Choice => {
            let keys: Vec<Value> = q.options().map(|(k, _)| Value::String(k.into())).collect();
            let mut props = Map::new();
            for (k, _) in q.options() {
                props.insert(k.to_owned(), probability());
            }
            json!({
                "type": "object",
                "properties": {
                    "type": {"const": "choice"},
                    "choice": {"enum": keys},
                    "probabilities": {
                        "type": "object",
                        "properties": props,
                        "required": keys,
                        "additionalProperties": false,
                    },
                    "confidence": probability(),
                },
                "required": ["type", "choice", "probabilities", "confidence"],
                "additionalProperties": false,
            })
        }
        QuestionType::Score => {
            let n = q.arity();
            json!({
                "type": "object",
                "properties": {
                    "type": {"const": "score"},
                    "score": {"type": "number"},
                    "levels": {"type": "array", "items": probability(), "minItems": n, "maxItems": n},
                    "legend": {"type": "array", "items": {"type": "string"}, "minItems": n, "maxItems": n},
                    "confidence": probability(),
                },
                "required": ["type", "score", "levels", "legend", "confidence"],
                "additionalProperties": false,
            })
        }
    }
}
