//! Hostile input at every entry point (issue 12: "a hostile-input suite per entry point";
//! R-GRM-PARSE, R-GRM-STEPS, R-GRM-URL, R-GRM-RESOLVE, R-VAL, R-JEV-REQ, R-CFG, the CLI).
//!
//! Malformed, oversized, deeply nested, hostile Unicode, NUL and invalid UTF-8 inputs go
//! through the library entry points, the C ABI and the command line. Each must return (no
//! panic, no abort, no exit 101), with a clear error carrying a code where the input is
//! refused, never echoing the input, and in time linear in the input (the ratio test for every
//! entry point is `tests/linear_time.rs`; here each call also has a generous absolute bound).

use serde_json::Value;
use std::io::Write;
use std::process::{Command, Output, Stdio};

const SENTINEL: &str = "SENTINEL_hostile_7f3a";

// ---------------------------------------------------------------- the command line

fn jevgate_os(args: &[std::ffi::OsString], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_jevgate"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let body = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        // The CLI may stop reading early (usage errors): a broken pipe is expected then.
        if let Err(e) = input.write_all(&body) {
            assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe);
        }
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    out
}

fn jevgate(args: &[&str], stdin: &[u8]) -> Output {
    let args: Vec<std::ffi::OsString> = args.iter().map(Into::into).collect();
    jevgate_os(&args, stdin)
}

#[cfg(unix)]
fn not_utf8(prefix: &str) -> std::ffi::OsString {
    use std::os::unix::ffi::OsStringExt;
    let mut bytes = prefix.as_bytes().to_vec();
    bytes.extend_from_slice(SENTINEL.as_bytes());
    bytes.extend_from_slice(&[0xff, 0xfe, 0x80]);
    std::ffi::OsString::from_vec(bytes)
}

/// Issue 12 item 6: `std::env::args` panicked (exit 101) on an argument that is not UTF-8.
#[cfg(unix)]
#[test]
fn cli_an_argument_that_is_not_utf8_is_a_usage_error_not_a_panic() {
    let bad = not_utf8("");
    let cases: Vec<Vec<std::ffi::OsString>> = vec![
        vec![bad.clone()],
        vec!["parse".into(), bad.clone()],
        vec!["steps".into(), "--parts".into(), bad.clone()],
        vec!["check-config".into(), not_utf8("/tmp/")],
        vec!["validate".into(), "--questions".into(), bad.clone()],
        vec!["version".into(), bad.clone()],
    ];
    for args in cases {
        let out = jevgate_os(&args, b"");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains("is not valid UTF-8"), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert!(
            !stderr.contains(SENTINEL),
            "the argument is never echoed: {stderr}"
        );
    }
}

fn lines_of(out: &Output) -> Vec<Value> {
    String::from_utf8(out.stdout.clone())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The bad lines every `--jsonl` command must answer in place: not UTF-8, NUL, not JSON,
/// a lone surrogate escape, an unterminated string, deep nesting, and one far too long.
fn bad_lines() -> Vec<Vec<u8>> {
    let mut not_utf8 = format!("\"{SENTINEL}").into_bytes();
    not_utf8.extend_from_slice(&[0xff, 0xc3, b'"']);
    let mut too_long = b"\"".to_vec();
    too_long.extend(std::iter::repeat_n(b'a', 8 << 20));
    too_long.extend_from_slice(SENTINEL.as_bytes());
    too_long.push(b'"');
    vec![
        not_utf8,
        format!("\0{SENTINEL}\0").into_bytes(),
        format!("{{{SENTINEL}").into_bytes(),
        format!("\"\\ud800{SENTINEL}\"").into_bytes(),
        format!("\"{SENTINEL}").into_bytes(),
        format!("{}{SENTINEL}", "[".repeat(100_000)).into_bytes(),
        too_long,
    ]
}

/// Issue 12 item 10: one bad line ended `parse/steps --jsonl`; every line gets its answer,
/// the bad ones an error object with the line number and code (never the content), exit 1.
#[test]
fn cli_grammar_jsonl_answers_every_bad_line_and_goes_on() {
    let bad = bad_lines();
    let mut input = Vec::new();
    input.extend_from_slice(b"\"back\"\n");
    for line in &bad {
        input.extend_from_slice(line);
        input.extend_from_slice(b"\n");
        input.extend_from_slice(b"\"scroll down\"\r\n");
    }
    for args in [
        &["parse", "--jsonl"][..],
        &["steps", "--jsonl"],
        &["steps", "--jsonl", "--parts"],
    ] {
        let out = jevgate(args, &input);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(
            !stdout.contains(SENTINEL),
            "{args:?}: a bad line is never echoed"
        );
        let lines = lines_of(&out);
        assert_eq!(
            lines.len(),
            1 + 2 * bad.len(),
            "{args:?}: one answer per line"
        );
        assert!(lines[0].get("error").is_none(), "{args:?}");
        for (k, _) in bad.iter().enumerate() {
            let err = &lines[1 + 2 * k]["error"];
            assert_eq!(err["code"], "INVALID_ARGUMENT", "{args:?} bad line {k}");
            assert_eq!(err["line"], 2 + 2 * k as u64, "{args:?} bad line {k}");
            assert!(err["message"].as_str().is_some_and(|m| !m.is_empty()));
            assert!(
                lines[2 + 2 * k].get("error").is_none(),
                "{args:?}: the line after bad line {k} is answered normally"
            );
        }
    }
}

#[test]
fn cli_validate_jsonl_answers_every_bad_line_and_goes_on() {
    let good = r#"{"questions":{"n":{"type":"noul"}},"response":{"model":"m","answers":{"n":{"type":"noul","noul":0.5}},"usage":{"input_tokens":1,"output_tokens":1}}}"#;
    let bad = bad_lines();
    let mut input = Vec::new();
    input.extend_from_slice(good.as_bytes());
    input.push(b'\n');
    for line in &bad {
        input.extend_from_slice(line);
        input.push(b'\n');
        input.extend_from_slice(good.as_bytes());
        input.extend_from_slice(b"\r\n");
    }
    let out = jevgate(&["validate", "--jsonl"], &input);
    assert_eq!(out.status.code(), Some(1));
    assert!(!String::from_utf8_lossy(&out.stdout).contains(SENTINEL));
    let lines = lines_of(&out);
    assert_eq!(lines.len(), 1 + 2 * bad.len());
    assert_eq!(lines[0], serde_json::json!({"ok": true}));
    for (k, _) in bad.iter().enumerate() {
        let l = &lines[1 + 2 * k];
        assert_eq!(l["ok"], false, "bad line {k}");
        assert_eq!(l["code"], "INVALID_ARGUMENT", "bad line {k}");
        assert_eq!(l["line"], 2 + 2 * k as u64, "bad line {k}");
        assert_eq!(
            lines[2 + 2 * k],
            serde_json::json!({"ok": true}),
            "after bad line {k}"
        );
    }
}
