//! Differential checks against serde_json and the JSON Schema (R-VAL-FAST, R-VAL-SCHEMA): the
//! validator never accepts what serde_json cannot parse, returns exactly what serde_json reads,
//! and every answer set it accepts also passes `answer_schema`.

use super::support::{typical, TYPICAL_OK};
use crate::jev::{answer_schema, validate_response, ValidationReason as R};
use proptest::prelude::*;
use serde_json::Value;

/// Bytes that make interesting damage in JSON.
fn interesting() -> impl Strategy<Value = u8> {
    prop_oneof![
        Just(b'"'),
        Just(b','),
        Just(b'}'),
        Just(b']'),
        Just(b'{'),
        Just(b'['),
        Just(b':'),
        Just(b'\\'),
        Just(b' '),
        Just(b'0'),
        Just(b'9'),
        Just(b'.'),
        Just(b'e'),
        Just(b'-'),
        Just(b'x'),
        Just(0xC3),
        Just(0x01),
    ]
}

#[derive(Debug, Clone)]
enum Edit {
    Replace(usize, u8),
    Insert(usize, u8),
    Delete(usize),
}

fn edit() -> impl Strategy<Value = Edit> {
    let n = TYPICAL_OK.len();
    prop_oneof![
        (0..n, interesting()).prop_map(|(i, b)| Edit::Replace(i, b)),
        (0..n, interesting()).prop_map(|(i, b)| Edit::Insert(i, b)),
        (0..n).prop_map(Edit::Delete),
    ]
}

fn apply(doc: &mut Vec<u8>, e: &Edit) {
    match *e {
        Edit::Replace(i, b) if i < doc.len() => doc[i] = b,
        Edit::Insert(i, b) if i <= doc.len() => doc.insert(i, b),
        Edit::Delete(i) if i < doc.len() => {
            doc.remove(i);
        }
        _ => {}
    }
}

/// `v` with every number as an `f64` number.
fn as_doubles(v: &Value) -> Value {
    match v {
        Value::Number(n) => n
            .as_f64()
            .and_then(serde_json::Number::from_f64)
            .map_or(Value::Null, Value::Number),
        Value::Array(a) => Value::Array(a.iter().map(as_doubles).collect()),
        Value::Object(o) => {
            Value::Object(o.iter().map(|(k, v)| (k.clone(), as_doubles(v))).collect())
        }
        other => other.clone(),
    }
}

proptest! {
    // JEV_DIFF_CASES=200000 for a long hunt
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("JEV_DIFF_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(2000)
    ))]

    #[test]
    fn r_val_fast_accepts_only_what_serde_json_parses_and_returns_it_unchanged(
        edits in prop::collection::vec(edit(), 1..4)
    ) {
        let q = typical();
        let mut doc = TYPICAL_OK.as_bytes().to_vec();
        for e in &edits {
            apply(&mut doc, e);
        }
        if let Ok(r) = validate_response(&q, &doc) {
            let parsed: Result<Value, _> = serde_json::from_slice(&doc);
            prop_assert!(parsed.is_ok(), "accepted what serde_json rejects: {}", String::from_utf8_lossy(&doc));
            let parsed = parsed.unwrap();
            let ours = serde_json::to_value(r.answers()).unwrap();
            // numbers compare as doubles: a provider's `0` comes back as the double 0.0
            prop_assert_eq!(as_doubles(&ours), as_doubles(&parsed["answers"]));
            prop_assert_eq!(r.model(), parsed["model"].as_str().unwrap());
        }
    }
}

#[test]
fn r_val_fast_depth_limit_matches_serde_json() {
    let q = typical();
    let nest = |n: usize| {
        TYPICAL_OK.replacen(
            r#""model":"#,
            &format!(r#""deep":{}{},"model":"#, "[".repeat(n), "]".repeat(n)),
            1,
        )
    };
    for n in [1, 100, 126, 127, 128, 129, 500] {
        let doc = nest(n);
        let serde_ok = serde_json::from_str::<Value>(&doc).is_ok();
        let ours = validate_response(&q, doc.as_bytes());
        assert_eq!(ours.is_ok(), serde_ok, "depth {n}");
        if let Err(e) = ours {
            assert_eq!(e.reason(), R::MalformedJson);
        }
    }
}

#[test]
fn r_val_schema_accepts_valid_answers_and_rejects_structural_errors() {
    let q = typical();
    let schema = jsonschema::validator_for(&answer_schema(&q)).expect("a valid schema");
    let doc: Value = serde_json::from_str(TYPICAL_OK).unwrap();
    assert!(schema.is_valid(&doc["answers"]));
    let broken = [
        (r#""stop":0.03"#, r#""stop":0.03,"halt":0"#),
        (r#","stop":0.03"#, ""),
        (r#""noul":0.8"#, r#""noul":1.8"#),
        (r#""choice":"explain""#, r#""choice":"explains""#),
        (r#""levels":[0.1,0.25,0.65]"#, r#""levels":[0.1,0.25]"#),
        (
            r#""type":"noul","noul":0.8"#,
            r#""type":"score","noul":0.8"#,
        ),
        (r#""confidence":0.62"#, r#""confidence":0.62,"why":"x""#),
        (
            r#"{"needs_decision""#,
            r#"{"extra":{"type":"noul","noul":0.5},"needs_decision""#,
        ),
    ];
    for (from, to) in broken {
        let text = TYPICAL_OK.replacen(from, to, 1);
        let v: Value = serde_json::from_str(&text).unwrap();
        assert!(!schema.is_valid(&v["answers"]), "{to}");
        assert!(validate_response(&q, text.as_bytes()).is_err(), "{to}");
    }
    // what a schema cannot say: a sum off by 0.1 passes the schema, not the validator
    let text = TYPICAL_OK.replacen(r#""stop":0.03"#, r#""stop":0.13"#, 1);
    let v: Value = serde_json::from_str(&text).unwrap();
    assert!(schema.is_valid(&v["answers"]));
    assert_eq!(
        validate_response(&q, text.as_bytes()).unwrap_err().reason(),
        R::DistributionSum
    );
}

#[test]
fn r_val_keys_questions_whose_keys_need_escaping() {
    let q = super::support::questions(
        r#"{"say \"hi\"":{"type":"choice","criteria":{"a\\b":"A","tab\there":"T"}},"é":{"type":"noul"}}"#,
    );
    let doc = super::support::envelope(
        r#"{"say \"hi\"":{"type":"choice","choice":"a\\b","probabilities":{"a\\b":0.6,"tab\there":0.4},"confidence":0.6},"\u00e9":{"type":"noul","noul":0.1}}"#,
    );
    let r = validate_response(&q, doc.as_bytes()).unwrap();
    let out = serde_json::to_value(r.answers()).unwrap();
    assert_eq!(out["say \"hi\""]["probabilities"]["tab\there"], 0.4);
    assert_eq!(out["é"]["noul"], 0.1);
}
