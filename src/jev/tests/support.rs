//! Shared helpers: building question sets and response documents.

use crate::jev::{validate_response, Limits, Questions, ValidationReason};

pub fn questions(json: &str) -> Questions {
    Questions::from_json(json.as_bytes(), &Limits::default()).expect("valid questions")
}

/// A choice question `c` with options `o0..o{n-1}`.
pub fn choice_questions(n: usize) -> Questions {
    let opts: Vec<String> = (0..n).map(|i| format!("\"o{i}\":\"option {i}\"")).collect();
    questions(&format!(
        r#"{{"c":{{"type":"choice","instructions":"pick","criteria":{{{}}}}}}}"#,
        opts.join(",")
    ))
}

/// A score question `s` with `n` levels.
pub fn score_questions(n: usize) -> Questions {
    let levels: Vec<String> = (0..n).map(|i| format!("\"level {i}\"")).collect();
    questions(&format!(
        r#"{{"s":{{"type":"score","instructions":"rate","criteria":[{}]}}}}"#,
        levels.join(",")
    ))
}

/// The response envelope around an answers object.
pub fn envelope(answers: &str) -> String {
    format!(
        r#"{{"model":"jev-1.13.0","answers":{answers},"usage":{{"input_tokens":120,"output_tokens":8}}}}"#
    )
}

/// A choice answer for `c` from probability texts; `choice` is the chosen index.
pub fn choice_answers(ps: &[&str], choice: usize) -> String {
    let probs: Vec<String> = ps
        .iter()
        .enumerate()
        .map(|(i, p)| format!("\"o{i}\":{p}"))
        .collect();
    envelope(&format!(
        r#"{{"c":{{"type":"choice","choice":"o{choice}","probabilities":{{{}}},"confidence":0.5}}}}"#,
        probs.join(",")
    ))
}

/// A score answer for `s` from level texts and a score text.
pub fn score_answers(levels: &[&str], score: &str) -> String {
    let legend: Vec<String> = (0..levels.len())
        .map(|i| format!("\"level {i}\""))
        .collect();
    envelope(&format!(
        r#"{{"s":{{"type":"score","score":{score},"levels":[{}],"legend":[{}],"confidence":0.5}}}}"#,
        levels.join(","),
        legend.join(",")
    ))
}

/// `Ok(())` or the reason and key of the rejection.
pub fn verdict(q: &Questions, doc: &str) -> Result<(), (ValidationReason, Option<String>)> {
    validate_response(q, doc.as_bytes())
        .map(|_| ())
        .map_err(|e| (e.reason(), e.key().map(str::to_owned)))
}

/// The typical question set of the benchmark: a noul, a 5-option choice, a 3-level score.
pub fn typical() -> Questions {
    questions(
        r#"{
        "needs_decision": {"type": "noul", "instructions": "Does the user still need to decide?"},
        "next_step": {"type": "choice", "instructions": "What is the next step?",
            "criteria": {"explain": "Compare", "execute": "Execute", "ask": "Ask",
                         "wait": "Wait", "stop": "Stop"}},
        "clarity": {"type": "score", "instructions": "How clear?",
            "criteria": ["Unspecified", "Partially specified", "Fully specified"]}
    }"#,
    )
}

pub const TYPICAL_OK: &str = r#"{"model":"jev-1.13.0","answers":{"needs_decision":{"type":"noul","noul":0.8},"next_step":{"type":"choice","choice":"explain","probabilities":{"explain":0.62,"execute":0.2,"ask":0.1,"wait":0.05,"stop":0.03},"confidence":0.62},"clarity":{"type":"score","score":1.55,"levels":[0.1,0.25,0.65],"legend":["Unspecified","Partially specified","Fully specified"],"confidence":0.65}},"usage":{"input_tokens":120,"output_tokens":8}}"#;
