//! `jevgate parse` and `jevgate steps` answer every case of the shared grammar table
//! (SPEC §7), in input order, with `--jsonl`; single-text and error paths too.

use serde_json::Value;
use std::io::Write;
use std::process::{Command, Stdio};

fn cases(f: &str) -> Vec<(String, Value)> {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/grammar_cases.jsonl"
    ))
    .unwrap();
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|c| c["fn"] == f)
        .map(|c| {
            (
                c["input"].as_str().unwrap().to_string(),
                c["expect"].clone(),
            )
        })
        .collect()
}

fn jsonl(args: &[&str], inputs: &[String]) -> (Vec<Value>, i32) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_jevgate"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let body: String = inputs
        .iter()
        .map(|i| format!("{}\n", Value::String(i.clone())))
        .collect();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(body.as_bytes()).unwrap());
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    let lines = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (lines, out.status.code().unwrap())
}

#[test]
fn parse_jsonl_answers_every_shared_case_in_order() {
    let cases = cases("parse");
    let inputs: Vec<String> = cases.iter().map(|c| c.0.clone()).collect();
    let (out, code) = jsonl(&["parse", "--jsonl"], &inputs);
    assert_eq!(code, 0);
    assert_eq!(out.len(), cases.len());
    for ((input, want), got) in cases.iter().zip(&out) {
        assert_eq!(got, want, "{input:?}");
    }
}

#[test]
fn steps_and_parts_jsonl_answer_every_shared_case() {
    for (f, flag, key) in [
        ("steps", None, "steps"),
        ("parts", Some("--parts"), "parts"),
    ] {
        let cases = cases(f);
        let inputs: Vec<String> = cases.iter().map(|c| c.0.clone()).collect();
        let mut args = vec!["steps", "--jsonl"];
        args.extend(flag);
        let (out, code) = jsonl(&args, &inputs);
        assert_eq!(code, 0);
        assert_eq!(out.len(), cases.len());
        for ((input, want), got) in cases.iter().zip(&out) {
            assert_eq!(&got[key], want, "{f} {input:?}");
        }
    }
}

#[test]
fn single_text_argument_and_intent_key_first() {
    let out = Command::new(env!("CARGO_BIN_EXE_jevgate"))
        .args(["parse", "scroll ลง"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "{\"intent\":\"scroll\",\"direction\":\"down\"}\n"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_jevgate"))
        .args(["steps", "เปิด tab ใหม่"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8(out.stdout).unwrap(), "{\"steps\":null}\n");
}

#[test]
fn bad_jsonl_lines_are_reported_in_place_and_exit_1() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_jevgate"))
        .args(["parse", "--jsonl"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"\"back\"\nnot json\n42\n\"forward\"\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let lines: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 4);
    assert_eq!(lines[0]["direction"], "back");
    assert_eq!(lines[1]["error"]["code"], "INVALID_ARGUMENT");
    assert_eq!(lines[2]["error"]["code"], "INVALID_ARGUMENT");
    assert_eq!(lines[3]["direction"], "forward");
}

#[test]
fn usage_errors() {
    for args in [
        &["parse", "--bogus"][..],
        &["parse", "--jsonl", "text"],
        &["parse", "a", "b"],
        &["steps", "--nope"],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_jevgate"))
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
    }
}
