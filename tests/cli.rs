//! The `jevgate` command line: `check-config` verdicts and paths on every case of the shared
//! table (SPEC §2), `doctor`, usage errors.

use serde_json::Value;
use std::io::Write;
use std::process::{Command, Output, Stdio};

fn jevgate(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_jevgate"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The CLI stops reading past the size limit: a broken pipe on oversized input is expected.
    if let Err(e) = child.stdin.take().unwrap().write_all(stdin) {
        assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe);
    }
    child.wait_with_output().unwrap()
}

#[test]
fn check_config_gives_the_verdict_and_path_of_every_shared_case() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/config_cases.json"
    ))
    .unwrap();
    let doc: Value = serde_json::from_str(&text).unwrap();
    for case in doc["cases"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let input = match case.get("raw") {
            Some(Value::String(raw)) => raw.clone(),
            _ => case["config"].to_string(),
        };
        let out = jevgate(&["check-config", "-"], input.as_bytes());
        let stdout = String::from_utf8(out.stdout).unwrap();
        if case["ok"].as_bool().unwrap() {
            assert_eq!(out.status.code(), Some(0), "{name}: {stdout}");
            assert_eq!(stdout, "ok\n", "{name}");
        } else {
            assert_eq!(out.status.code(), Some(1), "{name}: {stdout}");
            assert_eq!(stdout.lines().count(), 1, "{name}: one JSON line");
            let line: Value = serde_json::from_str(&stdout).unwrap();
            assert_eq!(line["code"], "JEV_INVALID_CONFIGURATION", "{name}");
            assert_eq!(line["path"], case["path"], "{name}");
            assert!(
                line["message"]
                    .as_str()
                    .unwrap()
                    .contains(case["reason"].as_str().unwrap()),
                "{name}: {stdout}"
            );
        }
    }
}

#[test]
fn check_config_reads_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.json");
    std::fs::write(
        &path,
        r#"{"gateway":{"jev":{"enabled":true,"provider":"local"}}}"#,
    )
    .unwrap();
    let out = jevgate(&["check-config", path.to_str().unwrap()], b"");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(out.stdout, b"ok\n");
}

#[test]
fn check_config_never_echoes_a_misplaced_secret() {
    let out = jevgate(
        &["check-config", "-"],
        br#"{"gateway":{"jev":{"timeoutMs":"sk-live-SECRET"}}}"#,
    );
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(!stdout.contains("SECRET"), "{stdout}");
    assert!(stdout.contains("gateway.jev.timeoutMs"));
}

// Issue 12 item 10a: a secret pasted as an object key is shown as `<key>`, never echoed.
#[test]
fn check_config_never_echoes_a_secret_used_as_a_key() {
    let out = jevgate(
        &["check-config", "-"],
        br#"{"gateway":{"jev":{"sk-live-SECRET-1":true}}}"#,
    );
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(!stdout.contains("SECRET"), "{stdout}");
    let line: Value = serde_json::from_str(stdout.trim()).unwrap();
    assert_eq!(line["path"], "gateway.jev.<key>");
}

#[test]
fn malformed_and_oversized_input_are_verdicts_not_crashes() {
    for input in [&b"{"[..], b"", b"\xff\xfe", b"[1,2", b"{}{}", b"null"] {
        let out = jevgate(&["check-config", "-"], input);
        assert_eq!(out.status.code(), Some(1), "{input:?}");
        let line: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(line["code"], "JEV_INVALID_CONFIGURATION");
        assert_eq!(line["path"], "");
    }
    let mut big = b"{\"agents\":[".to_vec();
    big.extend(std::iter::repeat_n(b' ', 2 << 20));
    big.extend(b"]}");
    let out = jevgate(&["check-config", "-"], &big);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("larger than"));
    let deep = "[".repeat(100_000);
    let out = jevgate(&["check-config", "-"], deep.as_bytes());
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn usage_errors_exit_2() {
    for args in [
        &[][..],
        &["check-config"],
        &["check-config", "a", "b"],
        &["nope"],
        &["doctor"],
        &["doctor", "--config"],
        &["doctor", "--bogus", "x"],
    ] {
        let out = jevgate(args, b"");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("usage: jevgate"));
    }
    let out = jevgate(&["check-config", "/nonexistent/config.json"], b"");
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn doctor_prints_a_json_report_and_exits_by_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let ok = jevgate(
        &["doctor", "--config", "-"],
        br#"{"gateway":{"jev":{"enabled":true,"provider":"local"}}}"#,
    );
    assert_eq!(ok.status.code(), Some(0));
    let report: Value = serde_json::from_slice(&ok.stdout).unwrap();
    assert_eq!(report["ok"], true);
    let missing = Command::new(env!("CARGO_BIN_EXE_jevgate"))
        .args(["doctor", "--config", "-"])
        .env_remove("TYPESAFE_API_KEY")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut missing = missing;
    missing
        .stdin
        .take()
        .unwrap()
        .write_all(br#"{"gateway":{"jev":{"enabled":true,"provider":"typesafe","model":"m"}}}"#)
        .unwrap();
    let out = missing.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["checks"][1]["code"], "JEV_MISSING_CREDENTIALS");
    // With a data directory the store is checked too.
    let with_store = jevgate(
        &[
            "doctor",
            "--config",
            "-",
            "--data-dir",
            dir.path().to_str().unwrap(),
        ],
        b"{}",
    );
    assert_eq!(with_store.status.code(), Some(0));
    let report: Value = serde_json::from_slice(&with_store.stdout).unwrap();
    let names: Vec<&str> = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names[names.len() - 2..], ["store", "store.permissions"]);
}

// R-JEV (CLI): `jevgate evaluate` runs one evaluation (local provider: no network, no key) and
// reports errors as one JSON line with exit code 1.
#[test]
fn evaluate_prints_the_evaluation_or_one_error_line() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.json");
    std::fs::write(
        &config,
        r#"{"gateway":{"jev":{"enabled":true,"provider":"local","allowedAgentIds":["assistant"]}}}"#,
    )
    .unwrap();
    let request = br#"{"requestId":"r-1","state":"Hello there",
        "questions":{"greeting":{"type":"noul","instructions":"Is this a greeting?"}}}"#;
    let cfg = config.to_str().unwrap();
    let out = jevgate(
        &["evaluate", "--config", cfg, "--agent", "assistant", "-"],
        request,
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["requestId"], "r-1");
    assert_eq!(v["model"], "local-heuristic-1");
    assert_eq!(v["answers"]["greeting"]["type"], "noul");
    let out = jevgate(
        &["evaluate", "--config", cfg, "--agent", "intern", "-"],
        request,
    );
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["code"], "JEV_ACCESS_DENIED");
    let out = jevgate(&["evaluate", "--config", cfg], request);
    assert_eq!(out.status.code(), Some(2));
}
