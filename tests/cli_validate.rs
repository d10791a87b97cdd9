//! `jevgate validate` (R-VAL): the shared validation cases through `--jsonl` in order, and the
//! single-document form.

use serde_json::Value;
use std::io::Write;
use std::process::{Command, Stdio};

fn cases() -> Vec<Value> {
    std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/validation_cases.jsonl"
    ))
    .unwrap()
    .lines()
    .map(|l| serde_json::from_str(l).unwrap())
    .collect()
}

#[test]
fn jsonl_gives_every_shared_case_its_verdict_and_reason_in_order() {
    let cases: Vec<Value> = cases()
        .into_iter()
        .filter(|c| c.get("response").is_some())
        .collect();
    let body: String = cases.iter().map(|c| format!("{c}\n")).collect();
    let mut child = Command::new(env!("CARGO_BIN_EXE_jevgate"))
        .args(["validate", "--jsonl"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let w = std::thread::spawn(move || stdin.write_all(body.as_bytes()).unwrap());
    let out = child.wait_with_output().unwrap();
    w.join().unwrap();
    assert_eq!(out.status.code(), Some(1), "some cases are invalid");
    let lines: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), cases.len());
    for (case, got) in cases.iter().zip(&lines) {
        let want = &case["expect"];
        let name = &case["name"];
        assert_eq!(got["ok"], want["ok"], "{name}");
        if want["ok"] == false {
            assert_eq!(got["code"], want["code"], "{name}");
            if let Some(reason) = want.get("reason") {
                assert_eq!(&got["reason"], reason, "{name}");
            }
        }
    }
}

#[test]
fn one_document_prints_the_answers_or_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let case = &cases()[0];
    let q = dir.path().join("q.json");
    std::fs::write(&q, case["questions"].to_string()).unwrap();
    let r = dir.path().join("r.json");
    std::fs::write(&r, case["response"].to_string()).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_jevgate"))
        .args([
            "validate",
            "--questions",
            q.to_str().unwrap(),
            r.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["ok"], true);
    assert_eq!(v["answers"]["n"]["noul"], 0.8);
    let mut child = Command::new(env!("CARGO_BIN_EXE_jevgate"))
        .args(["validate", "--questions", q.to_str().unwrap(), "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"{\"model\":")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "{\"ok\":false,\"code\":\"JEV_MALFORMED_RESPONSE\",\"reason\":\"MALFORMED_JSON\"}\n"
    );
    let usage = Command::new(env!("CARGO_BIN_EXE_jevgate"))
        .args(["validate"])
        .output()
        .unwrap();
    assert_eq!(usage.status.code(), Some(2));
}
