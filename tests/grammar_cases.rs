//! The shared grammar case table (`tests/data/grammar_cases.jsonl`, format in
//! `tests/data/README.md`), checked against the Rust API. The Python and CLI tests read the
//! same file. Requirement ids: R-GRM-PARSE, R-GRM-FILLER, R-GRM-URL, R-GRM-STEPS, R-GRM-PARTS.

use jevgate::grammar::{check_model_address, parse_command, split_parts, split_steps};
use serde_json::{json, Value};

const CASES: &str = include_str!("data/grammar_cases.jsonl");

fn actual(function: &str, input: &str) -> Value {
    match function {
        "parse" => serde_json::from_str(&parse_command(input).to_json()).expect("intent JSON"),
        "steps" => json!(split_steps(input)),
        "parts" => json!(split_parts(input)),
        "model_address" => match check_model_address(input) {
            Ok(url) => json!(url),
            Err(e) => json!({ "error": e.code() }),
        },
        other => panic!("unknown fn {other:?}"),
    }
}

#[test]
fn every_case_of_the_shared_table_holds_r_grm() {
    let mut failures = Vec::new();
    let mut counts = std::collections::BTreeMap::<String, usize>::new();
    for (n, line) in CASES.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let case: Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("line {}: not JSON: {e}", n + 1));
        let function = case["fn"].as_str().expect("fn");
        let input = case["input"].as_str().expect("input");
        *counts.entry(function.to_string()).or_default() += 1;
        let got = actual(function, input);
        if got != case["expect"] {
            failures.push(format!(
                "line {}: {function}({input:?})\n   expected {}\n   got      {}",
                n + 1,
                case["expect"],
                got
            ));
        }
    }
    let total: usize = counts.values().sum();
    assert!(
        total >= 400,
        "the table must hold at least 400 cases, has {total}"
    );
    assert!(
        failures.is_empty(),
        "{} of {total} cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn the_case_table_only_uses_documented_functions() {
    for line in CASES.lines().filter(|l| !l.trim().is_empty()) {
        let case: Value = serde_json::from_str(line).expect("JSON");
        let keys: Vec<&String> = case.as_object().expect("object").keys().collect();
        assert!(
            keys.iter()
                .all(|k| ["fn", "input", "expect", "note"].contains(&k.as_str())),
            "unexpected keys in {line}"
        );
        assert!(
            ["parse", "steps", "parts", "model_address"].contains(&case["fn"].as_str().unwrap())
        );
    }
}
