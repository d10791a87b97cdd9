//! What reaches the `log` facade from the provider HTTP path (R-LOG, issue 12 item 8): a
//! capturing logger is installed at `Trace` for every target (its own test binary, so no other
//! test's records mix in), evaluations and thinking calls run against the loopback provider
//! servers (plain and TLS; success, 401, 429, 3xx with a `Location` carrying a key, 5xx), with
//! sentinels in the API key, the state, the questions and the provider's response (headers and
//! body). No record — target and formatted message, alone or joined with the other records of its
//! thread, and with hex dumps decoded — may contain any sentinel.

mod support;

use jevgate::jev::{EvaluateCall, Limits, Question, Questions, ThinkRequest};
use jevgate::{Config, Gateway, GatewayOptions};
use serde_json::json;
use support::jev_server::{Behaviour, TestServer};
use support::log_capture;

const KEY: &str = "SKEYa41f09c3";
const STATE: &str = "SSTATEb72d";
const QUESTION: &str = "SQUESTc83e";
const RESPONSE: &str = "SRESPd94f";
const LOCATION: &str = "SLOCe05a";
const ALL: [&str; 5] = [KEY, STATE, QUESTION, RESPONSE, LOCATION];

/// Bytes of a hex-dump row (`7b22 6d6f ... {"mo...`): the leading groups of hex pairs, `--`
/// padding ignored. `None` when the message does not start like a dump row.
fn hex_row(message: &str) -> Option<Vec<u8>> {
    let mut bytes = Vec::new();
    for group in message.split(' ') {
        if group.is_empty() || group.len() % 2 != 0 {
            break;
        }
        let pairs: Vec<&str> = (0..group.len() / 2)
            .map(|i| &group[2 * i..2 * i + 2])
            .collect();
        if !pairs
            .iter()
            .all(|p| *p == "--" || p.chars().all(|c| c.is_ascii_hexdigit()))
        {
            break;
        }
        for p in pairs {
            if p != "--" {
                bytes.push(u8::from_str_radix(p, 16).ok()?);
            }
        }
    }
    (!bytes.is_empty()).then_some(bytes)
}

/// Every sentinel found in the captured records, with where.
fn leaks() -> Vec<String> {
    let records = log_capture::records();
    let mut found = Vec::new();
    let mut per_thread: std::collections::HashMap<&str, (String, Vec<u8>)> = Default::default();
    for r in records.iter() {
        let line = format!("{} {}", r.target, r.message);
        for s in ALL {
            if line.contains(s) {
                found.push(format!("{s} in [{} {}] {line}", r.level, r.thread));
            }
        }
        let (joined, dumped) = per_thread.entry(&r.thread).or_default();
        joined.push_str(&r.message);
        if let Some(bytes) = hex_row(&r.message) {
            dumped.extend(bytes);
        }
    }
    for (thread, (joined, dumped)) in per_thread {
        let dumped = String::from_utf8_lossy(&dumped);
        for s in ALL {
            if joined.contains(s) {
                found.push(format!("{s} across records of thread {thread}"));
            }
            if dumped.contains(s) {
                found.push(format!("{s} in hex dumps of thread {thread}"));
            }
            let hex: String = s.bytes().map(|b| format!("{b:02x}")).collect();
            if joined.replace(' ', "").contains(&hex) {
                found.push(format!("{s} hex-encoded in thread {thread}"));
            }
        }
    }
    found
}

fn key_env(name: &str) -> String {
    let var = format!("JEVGATE_LOGTEST_{name}_{}", std::process::id());
    std::env::set_var(&var, format!("sk-{KEY}"));
    var
}

fn open(jev: serde_json::Value, roots: Vec<Vec<u8>>) -> (Gateway, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let config = Config::from_json_str(&json!({"gateway": {"jev": jev}}).to_string()).unwrap();
    let gw =
        Gateway::open(GatewayOptions::new(dir.path(), config).with_jev_root_certificates(roots))
            .unwrap();
    (gw, dir)
}

fn call() -> EvaluateCall {
    let questions = Questions::new(
        [
            Question::noul(format!("q_{QUESTION}"), format!("Is it {QUESTION}?")),
            Question::choice(
                "next",
                format!("Which {QUESTION}?"),
                [("a", format!("opt {QUESTION}")), ("b", "other".to_string())],
            )
            .unwrap(),
        ],
        &Limits::default(),
    )
    .unwrap();
    EvaluateCall::new("agent", format!("state {STATE}"), questions)
}

/// Provider answers carrying the response sentinel in a header and in the body, for each
/// status class; the 3xx one also in a `Location` header, as a key.
fn hostile_answers() -> Vec<Behaviour> {
    let hdr = |extra: Vec<(String, String)>| {
        let mut h = vec![
            ("x-request-trace".to_string(), RESPONSE.to_string()),
            ("set-cookie".to_string(), format!("s={RESPONSE}")),
        ];
        h.extend(extra);
        h
    };
    let body = format!("{{\"error\": \"{RESPONSE} echo\"}}");
    vec![
        Behaviour::Status(401, hdr(vec![]), body.clone()),
        Behaviour::Status(
            429,
            hdr(vec![("retry-after".into(), "3".into())]),
            body.clone(),
        ),
        Behaviour::Status(
            302,
            hdr(vec![(
                "location".into(),
                format!("https://elsewhere.example/cb?api_key={LOCATION}"),
            )]),
            body.clone(),
        ),
        Behaviour::Status(
            307,
            hdr(vec![(
                "Location".into(),
                format!("/v1/{LOCATION}/jev/evaluate"),
            )]),
            String::new(),
        ),
        Behaviour::Status(500, hdr(vec![]), body.clone()),
        Behaviour::Status(503, hdr(vec![]), body),
        // 200 with a body that is not an evaluation but carries the sentinel
        Behaviour::Raw(format!("{{\"model\": \"{RESPONSE}\", \"answers\": 1}}")),
    ]
}

fn exercise(server: &TestServer, provider: &str, roots: Vec<Vec<u8>>) {
    let env = key_env(&format!("{provider}_{}", server.base().len()));
    let (gw, _dir) = open(
        json!({"enabled": true, "provider": provider, "baseUrl": server.base(),
               "apiKeyEnv": env, "model": "jev-1.13.0", "timeoutMs": 10000,
               "thinking": {"baseUrl": format!("{}/v1", server.base()), "model": "small",
                            "apiKeyEnv": env, "api": "openai-chat"}}),
        roots,
    );
    // success: the server echoes the questions (with their sentinel keys) in its answers
    let e = gw.evaluate(&call()).unwrap();
    assert!(e.answer(&format!("q_{QUESTION}")).is_some());
    for b in hostile_answers() {
        server.script([b]);
        let err = gw.evaluate(&call()).unwrap_err();
        for s in ALL {
            assert!(!err.to_string().contains(s), "{err}");
        }
    }
    // the thinking helper goes through the same transport
    let think = ThinkRequest {
        agent_id: "agent".into(),
        instructions: format!("Fill {STATE}"),
        input: format!("input {QUESTION}"),
        timeout_ms: None,
    };
    server.script([Behaviour::Think(format!("{{\"text\":\"{RESPONSE}\"}}"))]);
    assert_eq!(gw.think(&think).unwrap().text.as_deref(), Some(RESPONSE));
    server.script([Behaviour::Status(
        302,
        vec![(
            "location".into(),
            format!("https://x.example/?k={LOCATION}"),
        )],
        RESPONSE.into(),
    )]);
    gw.think(&think).unwrap_err();
    assert!(server.hits() >= 10);
}

// R-LOG: at Trace for all targets, nothing of the key, state, questions or provider answer
// reaches the log facade through the typesafe and upstream providers, plain or TLS.
#[test]
fn r_log_provider_path_logs_no_secret_at_trace() {
    log_capture::install(log_capture::everything);
    let plain = TestServer::start();
    exercise(&plain, "upstream", vec![]);
    exercise(&plain, "typesafe", vec![]);
    let tls = TestServer::start_tls();
    let ca = tls.ca_der.clone().unwrap();
    exercise(&tls, "upstream", vec![ca.clone()]);
    exercise(&tls, "typesafe", vec![ca]);
    let (records, targets) = {
        let r = log_capture::records();
        let mut t: Vec<String> = r
            .iter()
            .map(|c| format!("{} {}", c.level, c.target))
            .collect();
        t.sort();
        t.dedup();
        (r.len(), t)
    };
    // the logger is live: the TLS handshakes were recorded at trace
    assert!(
        targets.iter().any(|t| t.starts_with("TRACE rustls")),
        "{targets:?}"
    );
    eprintln!("{records} records from {targets:?}");
    let found = leaks();
    assert!(
        found.is_empty(),
        "{} of {records} records leak:\n{}",
        found.len(),
        found.join("\n")
    );
}

// The detector itself: a dump row split across records and a plain record are both found.
#[test]
fn the_leak_detector_finds_split_hex_rows() {
    let row = |b: &[u8]| {
        let mut s = String::new();
        for i in 0..16 {
            match b.get(i) {
                Some(v) => s.push_str(&format!("{v:02x}")),
                None => s.push_str("--"),
            }
            if i % 2 == 1 {
                s.push(' ');
            }
        }
        s
    };
    let bytes = format!("Bearer sk-{KEY} and more");
    let rows: Vec<String> = bytes.as_bytes().chunks(16).map(row).collect();
    let mut dumped = Vec::new();
    for r in &rows {
        assert!(!r.contains(KEY));
        dumped.extend(hex_row(r).unwrap());
    }
    assert!(String::from_utf8_lossy(&dumped).contains(KEY));
    assert!(hex_row("Resolved: [127.0.0.1:80]").is_none());
}
