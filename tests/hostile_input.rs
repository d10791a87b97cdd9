//! Hostile input at every entry point (issue 12: "a hostile-input suite per entry point";
//! R-GRM-PARSE, R-GRM-STEPS, R-GRM-URL, R-GRM-RESOLVE, R-VAL, R-JEV-REQ, R-CFG, the CLI).
//!
//! Malformed, oversized, deeply nested, hostile Unicode, NUL and invalid UTF-8 inputs go
//! through the library entry points, the C ABI and the command line. Each must return (no
//! panic, no abort, no exit 101), with a clear error carrying a code where the input is
//! refused, never echoing the input, and in time linear in the input (the ratio test for every
//! entry point is `tests/linear_time.rs`; here each call also has a generous absolute bound).

use jevgate::jev::{validate_response, Limits, Questions};
use serde_json::Value;
use std::io::Write;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

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

// ---------------------------------------------------------------- library entry points

#[path = "fuzz/check.rs"]
mod check;

/// Each hostile call returns within this (debug build, shared machine): far above what a
/// linear pass over at most 1 MB takes, far below what a quadratic one would.
const BOUND: Duration = Duration::from_secs(20);

fn timed(what: &str, f: impl FnOnce()) {
    let t = Instant::now();
    f();
    let took = t.elapsed();
    assert!(took < BOUND, "{what} took {took:?}");
}

fn hostile_texts() -> Vec<(&'static str, String)> {
    let mb = 1 << 20;
    vec![
        ("empty", String::new()),
        ("nul", "\0".into()),
        ("nuls", "\0".repeat(10_000)),
        ("nul inside", format!("scroll\0down {SENTINEL}")),
        ("bom", "\u{feff}scroll down".into()),
        ("rtl override", format!("เข้า \u{202e}moc.elgoog {SENTINEL}")),
        ("noncharacters", "\u{ffff}\u{fffe}\u{10ffff}".into()),
        (
            "replacement of lone surrogate",
            String::from_utf8_lossy(b"go to \xed\xa0\x80.com").into(),
        ),
        ("combining marks", format!("ก{}", "\u{0e48}".repeat(mb / 3))),
        ("zwj emoji", "👩‍👩‍👧‍👦".repeat(10_000)),
        (
            "zero width spaces",
            format!("1.\u{200b}a\u{200b}2.{}b", "\u{200b}".repeat(mb / 3)),
        ),
        (
            "issue shape",
            format!("a {}{}", "3. ".repeat(mb / 6), " ".repeat(mb / 2)),
        ),
        ("deep brackets", "[".repeat(100_000)),
        ("deep parens", "(".repeat(100_000)),
        ("quotes", "\"".repeat(100_001)),
        (
            "count overflow",
            format!("press enter x{}", "9".repeat(1000)),
        ),
        (
            "count u64 overflow",
            "backspace x18446744073709551616".into(),
        ),
        ("thai number words", "ร้อย".repeat(10_000)),
        ("thai digits", "๙".repeat(10_000)),
        ("long host", format!("https://{}com", "a.".repeat(mb / 2))),
        ("ip literal", "http://0x7f.0.0.1/".into()),
        ("credentials", format!("https://{SENTINEL}:pw@example.com/")),
        ("file url", "เข้า file:///etc/passwd".into()),
        ("many steps", "a, ".repeat(mb / 3)),
        ("many bullets", "- a\n".repeat(mb / 4)),
        ("long step", format!("1. {} 2. b", "x".repeat(mb))),
        ("many conditions", "if ".repeat(mb / 3)),
        ("control chars", (0u8..32).map(char::from).collect()),
    ]
}

#[test]
fn grammar_entry_points_hold_on_hostile_text() {
    for (name, text) in hostile_texts() {
        timed(name, || check::grammar(&text));
        // No refusal repeats what it refused.
        if let Err(e) = jevgate::grammar::check_model_address(&text) {
            assert!(!e.to_string().contains(SENTINEL), "{name}");
            assert!(
                !jevgate::Error::from(e).to_string().contains(SENTINEL),
                "{name}"
            );
        }
    }
}

#[test]
fn grammar_resolve_holds_on_hostile_pages() {
    for (name, text) in hostile_texts().into_iter().take(12) {
        // Controls with hostile refs, roles, names and values; duplicate refs; a focus that
        // names no control.
        let mut page = check::page_from(&text);
        let mut dup = jevgate::observation::Control::field("e1", &text, &text, Some(&text));
        dup.editable = true;
        page.controls.push(dup);
        page.focus = Some(text.clone());
        page.text = text.clone();
        for command in [
            "ค้นหา แมว",
            "type hi",
            "ลบ",
            "backspace x3",
            "5",
            "back",
            "กด enter",
        ] {
            let intent = jevgate::grammar::parse_command(command);
            for adapter in [
                jevgate::grammar::Adapter::Browser,
                jevgate::grammar::Adapter::Computer,
            ] {
                timed(name, || {
                    let _ = jevgate::grammar::resolve(&intent, &page, adapter);
                });
            }
        }
    }
}

fn valid_response() -> String {
    r#"{"model":"jev-1","answers":{"n":{"type":"noul","noul":0.8},"c":{"type":"choice","choice":"a","probabilities":{"a":0.5,"b":0.3,"c":0.2},"confidence":0.7},"s":{"type":"score","score":1.1,"levels":[0.2,0.5,0.3],"legend":["low","mid","high"],"confidence":0.6}},"usage":{"input_tokens":10,"output_tokens":2}}"#.to_string()
}

fn hostile_json() -> Vec<(&'static str, Vec<u8>)> {
    let good = valid_response();
    let mut not_utf8 = good.clone().into_bytes();
    let at = good.find("jev-1").unwrap();
    not_utf8.splice(at..at, [0xff, 0xfe]);
    let mb = 1 << 20;
    vec![
        ("empty", Vec::new()),
        ("not utf8 in a string", not_utf8),
        ("not utf8 alone", vec![0xff, 0xc3, 0x28]),
        (
            "raw nul in a string",
            good.replace("jev-1", "jev\0-1").into_bytes(),
        ),
        (
            "escaped nul",
            good.replace("jev-1", "jev\\u0000").into_bytes(),
        ),
        (
            "lone surrogate escape",
            good.replace("jev-1", "\\ud800").into_bytes(),
        ),
        ("bom", format!("\u{feff}{good}").into_bytes()),
        (
            "deep",
            format!("{}{}", "[".repeat(100_000), "]".repeat(100_000)).into_bytes(),
        ),
        (
            "deep member",
            good.replacen(
                '{',
                &format!("{{\"x\":{}1{},", "[".repeat(200), "]".repeat(200)),
                1,
            )
            .into_bytes(),
        ),
        (
            "infinite number",
            good.replace("0.8", "1e999999999").into_bytes(),
        ),
        ("nan", good.replace("0.8", "NaN").into_bytes()),
        ("negative zero", good.replace("0.8", "-0").into_bytes()),
        (
            "long number",
            good.replace("0.8", &format!("0.8{}", "0".repeat(mb)))
                .into_bytes(),
        ),
        (
            "huge token count",
            good.replace("10", "18446744073709551616").into_bytes(),
        ),
        (
            "duplicate model",
            good.replacen('{', "{\"model\":\"x\",", 1).into_bytes(),
        ),
        ("trailing garbage", format!("{good}{SENTINEL}").into_bytes()),
        (
            "whitespace",
            format!("{}{good}", " ".repeat(mb)).into_bytes(),
        ),
        (
            "unexpected answer key",
            good.replace("\"n\":", &format!("\"{SENTINEL}\":"))
                .into_bytes(),
        ),
        (
            "long model",
            good.replace("jev-1", &"m".repeat(mb)).into_bytes(),
        ),
        (
            "unterminated",
            format!("{{\"model\":\"{}", "a".repeat(mb)).into_bytes(),
        ),
    ]
}

#[test]
fn validator_holds_on_hostile_responses_and_questions() {
    let good = valid_response();
    check::pair(check::QUESTIONS.as_bytes(), good.as_bytes());
    for (name, bytes) in hostile_json() {
        timed(name, || check::pair(check::QUESTIONS.as_bytes(), &bytes));
        timed(name, || check::pair(&bytes, good.as_bytes()));
        let q = Questions::from_json(check::QUESTIONS.as_bytes(), &Limits::default()).unwrap();
        if let Err(e) = validate_response(&q, &bytes) {
            assert!(
                !e.to_string().contains(SENTINEL),
                "{name}: provider text is never repeated"
            );
        }
    }
    // Every prefix of a valid response is refused with a reason, never a panic.
    let q = Questions::from_json(check::QUESTIONS.as_bytes(), &Limits::default()).unwrap();
    for end in 0..good.len() {
        assert!(
            validate_response(&q, &good.as_bytes()[..end]).is_err(),
            "prefix {end}"
        );
    }
}

#[test]
fn config_holds_on_hostile_documents() {
    let mut docs = hostile_json();
    docs.push((
        "deep config",
        format!("{{\"gateway\":{}", "{\"jev\":".repeat(50_000)).into_bytes(),
    ));
    docs.push((
        "many agents",
        format!("{{\"agents\":[{}{{}}]}}", "{\"id\":\"a\"},".repeat(1000)).into_bytes(),
    ));
    docs.push((
        "not utf8 value",
        b"{\"agents\":[{\"id\":\"\xff\"}]}".to_vec(),
    ));
    for (name, bytes) in docs {
        timed(name, || check::config(&bytes));
    }
}

#[test]
fn channel_frames_hold_on_hostile_and_oversized_frames() {
    let big = "z".repeat(20 << 20);
    let frames = vec![
        (
            "oversized result",
            format!(r#"{{"type":"result","id":"c1","success":true,"result":{{"text":"{big}"}}}}"#),
        ),
        (
            "oversized token",
            format!(r#"{{"type":"authenticate","authorization":"Device {big}","protocol":2}}"#),
        ),
        (
            "deep result",
            format!(
                r#"{{"type":"result","id":"c1","success":true,"result":{}1{}}}"#,
                "[".repeat(100_000),
                "]".repeat(100_000)
            ),
        ),
        (
            "protocol overflow",
            r#"{"type":"authenticate","authorization":"Device a","protocol":1e400}"#.to_string(),
        ),
        (
            "nul token",
            "{\"type\":\"authenticate\",\"authorization\":\"Device \\u0000\",\"protocol\":2}"
                .to_string(),
        ),
        (
            "type not string",
            r#"{"type":["result"],"id":"c1"}"#.to_string(),
        ),
        (
            "duplicate type",
            r#"{"type":"ping","type":"result"}"#.to_string(),
        ),
    ];
    for (name, frame) in frames {
        timed(name, || check::frames(frame.as_bytes()));
    }
    let huge = jevgate::unstable::frames::parse_worker_frame(&format!(
        r#"{{"type":"result","id":"c1","success":true,"result":"{big}"}}"#
    ));
    assert!(
        huge.is_ok(),
        "size is the transport's limit, not the parser's"
    );
}

#[cfg(feature = "capi")] // the C ABI is built with the `capi` feature
#[test]
fn c_abi_holds_on_nulls_and_hostile_strings() {
    check::c_abi_nulls();
    for (name, text) in hostile_texts() {
        timed(name, || check::c_abi(text.as_bytes()));
    }
    for (name, bytes) in hostile_json() {
        timed(name, || check::c_abi(&bytes));
    }
    for bytes in [
        &b"\xff"[..],
        b"scroll \xc3",
        b"\xed\xa0\x80",
        b"\xf4\x90\x80\x80",
        b"\xc0\x80",
    ] {
        check::c_abi(bytes);
    }
}
