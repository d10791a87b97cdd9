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

/// Runs `jevgate ARGS` with `stdin` and returns (exit code, stdout, stderr).
fn with_stdin(args: &[&str], stdin: Vec<u8>) -> (Option<i32>, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_jevgate"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    // The command may stop reading at its limit: a broken pipe here is expected.
    let writer = std::thread::spawn(move || {
        let _ = input.write_all(&stdin);
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Issue 20 item 8: more than 1 MiB on stdin, cut by the limit in the middle of a UTF-8
/// character, is refused for its size (the old code said "invalid data"); text after a line
/// break past the limit is never silently dropped; input that is not UTF-8 says so.
#[test]
fn issue20_oversized_stdin_names_the_size_limit_even_cut_mid_character() {
    const MAX: usize = 1 << 20;
    // 3-byte characters: no multiple of 3 is near 2^20 + 1..3, so every cut is mid-character.
    let thai = "ก".repeat(MAX / 3 + 2).into_bytes();
    for cmd in ["parse", "steps"] {
        let (code, out, err) = with_stdin(&[cmd], thai.clone());
        assert_eq!(code, Some(2), "{cmd}: {err}");
        assert!(out.is_empty(), "{cmd}: nothing is answered");
        assert!(
            err.contains(&format!("longer than {MAX} bytes")),
            "{cmd}: {err}"
        );
        assert!(!err.contains("invalid data"), "{cmd}: {err}");
    }
    // Exactly the limit, with its line ending: accepted.
    let mut exact = vec![b'a'; MAX];
    exact.extend_from_slice(b"\r\n");
    let (code, out, err) = with_stdin(&["parse"], exact);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.starts_with("{\"intent\""), "{out:.100}");
    // The limit, a line break, then more: too long, not the first line alone.
    let mut more = vec![b'a'; MAX];
    more.extend_from_slice(b"\nback");
    let (code, _, err) = with_stdin(&["parse"], more);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains(&format!("longer than {MAX} bytes")), "{err}");
    // Short and not UTF-8: named as such.
    let (code, _, err) = with_stdin(&["parse"], b"go \xff back".to_vec());
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("not valid UTF-8"), "{err}");
}
