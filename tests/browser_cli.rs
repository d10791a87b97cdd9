//! `jevgate observe URL [--format json|snapshot] [--repeat N]` (issue 8 §6) against a real
//! headless Chromium and the fixture server.

mod support;

use std::process::{Command, Output};
use support::Server;

fn jevgate(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_jevgate"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn r_brw_obs_cli_prints_the_observation_json_of_the_settled_page() {
    let server = Server::start();
    let out = jevgate(&["observe", &server.url("/p/buttons")]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let obs: jevgate::observation::Observation = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(obs.title, "Buttons");
    assert!(obs.controls.iter().any(|c| c.name == "Press me"));
    assert!(!String::from_utf8_lossy(&out.stderr).contains("observe:"));
}

#[test]
fn r_brw_snap_cli_repeat_ends_stderr_with_the_timing_line() {
    let server = Server::start();
    let out = jevgate(&[
        "observe",
        &server.url("/p/form"),
        "--format",
        "snapshot",
        "--repeat",
        "3",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        stdout.starts_with("<untrusted-page-content>\n- heading \"Search form\""),
        "{stdout}"
    );
    let stderr = String::from_utf8(out.stderr).unwrap();
    let last = stderr.lines().last().unwrap();
    let fields: Vec<&str> = last.split(' ').collect();
    assert_eq!(fields[0], "observe:", "{last}");
    for (field, key) in fields[1..].iter().zip(["median_ms", "p90_ms", "chars"]) {
        let (k, v) = field.split_once('=').unwrap();
        assert_eq!(k, key);
        v.parse::<u64>().unwrap();
    }
    assert_eq!(
        fields[3],
        format!("chars={}", stdout.trim_end_matches('\n').chars().count())
    );
}

#[test]
fn r_brw_obs_cli_reports_an_open_dialog_never_hangs() {
    let server = Server::start();
    let started = std::time::Instant::now();
    let out = jevgate(&["observe", &server.url("/p/onload-alert")]);
    assert_eq!(out.status.code(), Some(0));
    let obs: jevgate::observation::Observation = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(obs.dialog.unwrap().message, "Blocking alert");
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
}

#[test]
fn r_brw_obs_cli_usage_errors_exit_2_and_refused_schemes_exit_1() {
    for args in [
        vec!["observe"],
        vec!["observe", "http://127.0.0.1:9/", "--format", "yaml"],
        vec!["observe", "http://127.0.0.1:9/", "--repeat", "0"],
        vec!["observe", "a", "b"],
    ] {
        assert_eq!(jevgate(&args).status.code(), Some(2), "{args:?}");
    }
    // A refused scheme is a negative verdict with one JSON error line.
    let out = jevgate(&["observe", "file:///etc/passwd"]);
    assert_eq!(out.status.code(), Some(1));
    let line: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(line["code"], "NAVIGATION_FAILED");
}
