//! SPEC §2 (R-CFG, R-CFG-ENV, R-CFG-URL, R-CFG-KEYFILE, R-PRV-THINK): every case of
//! `tests/data/config_cases.json` gives the expected verdict, JSON path and reason. The CLI and
//! Python tests read the same file.

use serde_json::Value;

fn cases() -> Vec<Value> {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/config_cases.json"
    ))
    .expect("cases file");
    let doc: Value = serde_json::from_str(&text).expect("cases JSON");
    doc["cases"].as_array().expect("cases array").clone()
}

fn document(case: &Value) -> String {
    match case.get("raw") {
        Some(Value::String(raw)) => raw.clone(),
        _ => case["config"].to_string(),
    }
}

#[test]
fn every_config_case_gets_its_verdict_path_and_reason() {
    let cases = cases();
    assert!(cases.len() >= 100, "the table covers every rule");
    let mut failures = Vec::new();
    for case in &cases {
        let name = case["name"].as_str().unwrap();
        let result = jevgate::Config::from_json_str(&document(case));
        match (case["ok"].as_bool().unwrap(), result) {
            (true, Ok(_)) => {}
            (true, Err(e)) => failures.push(format!("{name}: expected ok, got {e}")),
            (false, Ok(_)) => failures.push(format!("{name}: expected an error, got ok")),
            (false, Err(e)) => {
                let want_path = case["path"].as_str().unwrap();
                let want_reason = case["reason"].as_str().unwrap();
                if e.code() != "JEV_INVALID_CONFIGURATION"
                    || e.path() != Some(want_path)
                    || !e.to_string().contains(want_reason)
                {
                    failures.push(format!(
                        "{name}: expected {want_path} / {want_reason:?}, got {:?} / {e}",
                        e.path()
                    ));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn every_rule_has_a_valid_and_an_invalid_case() {
    let cases = cases();
    let mut rules: std::collections::BTreeMap<&str, (usize, usize)> = Default::default();
    for c in &cases {
        let e = rules.entry(c["rule"].as_str().unwrap()).or_default();
        if c["ok"].as_bool().unwrap() {
            e.0 += 1
        } else {
            e.1 += 1
        }
    }
    for (rule, (ok, bad)) in rules {
        assert!(ok > 0 && bad > 0, "{rule}: {ok} valid, {bad} invalid cases");
    }
}
