//! Fuzz targets run by the test command (issue 12, "fuzzing in the test command"; R-GRM-*,
//! R-VAL, R-JEV-REQ, R-CFG, R-DEV-CHAN, R-C).
//!
//! Stable Rust only: each target is a proptest-driven fuzzer. It first replays its committed
//! corpus (`tests/fuzz/corpus/<target>/`, one input per file), then generates inputs for a
//! bounded time — corpus entries mutated (bit flips, inserted dictionary tokens, deleted,
//! repeated and spliced ranges, truncation), raw bytes, dictionary token soups and JSON-shaped
//! documents built from the target's own keys — and checks each with the properties of
//! `tests/fuzz/check.rs` (no panic, a clear error with a code, well-formed outputs). A failure
//! is shrunk by proptest, written to `target/fuzz-failures/<target>/` and reported with its
//! bytes; add the file to the corpus once fixed. This is not coverage-guided (no nightly
//! toolchain for cargo-fuzz/libFuzzer here).
//!
//! Environment: `JEVGATE_FUZZ_SECS` — seconds of generation per target (default 3; `0` replays
//! the corpus only); `JEVGATE_FUZZ_SEED` — a decimal seed to repeat a run (each run prints its
//! seed). Longer: `JEVGATE_FUZZ_SECS=600 cargo test --release -p jevgate --test fuzz`.
//!
//! Channel frames: the pure parsers of `device::frames`, reached as `jevgate::unstable::frames`
//! (authenticate, result, oversized frames). CDP messages from the browser: a lying browser — a fake "Chromium" (a small Python
//! program started by `LocalBrowser::launch` on the DevTools pipe, fds 3/4) answers each
//! request with the next NUL-separated message of the input (`$ID` / `$SID` replaced by the
//! request's id and session; messages without `$ID` go out as events or junk before it), and
//! the whole local backend (launch, navigate, observe, snapshot, click, text) runs against it:
//! every call must end with a value or a coded error, no thread may panic.

#[path = "fuzz/check.rs"]
mod check;

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestError, TestRng, TestRunner};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Generated inputs are capped at this size (repeats grow them towards it: oversized input).
const MAX_INPUT: usize = 1 << 20;

fn fuzz_time() -> Duration {
    let secs = std::env::var("JEVGATE_FUZZ_SECS")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
        .unwrap_or(3.0);
    Duration::from_secs_f64(secs.min(1e7))
}

fn seed() -> u64 {
    std::env::var("JEVGATE_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(0)
        })
}

fn corpus_dir(target: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fuzz/corpus")
        .join(target)
}

fn corpus(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = corpus_dir(target);
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| {
            let path = e.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&path).unwrap())
        })
        .collect();
    files.sort();
    assert!(!files.is_empty(), "{}: empty corpus", dir.display());
    files
}

/// Tokens every target mixes in: JSON syntax, escapes, hostile Unicode, NUL, bad UTF-8.
const COMMON: &[&[u8]] = &[
    b"{",
    b"}",
    b"[",
    b"]",
    b"\"",
    b":",
    b",",
    b" ",
    b"\n",
    b"\r\n",
    b"\t",
    b"\\",
    b"\\u0000",
    b"\\ud800",
    b"\\udc00",
    b"\\ud83d\\ude00",
    b"\\\"",
    b"null",
    b"true",
    b"false",
    b"0",
    b"-0",
    b"1e999",
    b"-1e-999",
    b"0.01",
    b"0.5",
    b"1",
    b"2",
    b"18446744073709551616",
    b"1.0",
    b"99999999999999999999",
    b"NaN",
    b"\0",
    b"\xff",
    b"\xc3",
    b"\xe0\xb8",
    b"\xed\xa0\x80",
    "\u{feff}".as_bytes(),
    "\u{202e}".as_bytes(),
    "\u{200b}".as_bytes(),
    "\u{3000}".as_bytes(),
    "\u{0e48}".as_bytes(),
    "\u{0e31}\u{0e49}".as_bytes(),
    "ก".as_bytes(),
    "๑".as_bytes(),
    "👍🏽".as_bytes(),
    "\u{fffd}".as_bytes(),
    "\u{10ffff}".as_bytes(),
    "İ".as_bytes(),
];

const GRAMMAR: &[&[u8]] = &[
    b"1. ",
    b"2. ",
    b"3) ",
    b"12. ",
    b"- ",
    b"* ",
    "• ".as_bytes(),
    b", ",
    b"then ",
    b"and then ",
    b"if ",
    b"in case ",
    b"start with step 1",
    b"step by step",
    b"you are ",
    b": ",
    b"scroll ",
    b"down",
    b"up",
    b"back",
    b"forward",
    b"press ",
    b"enter",
    b"tab",
    b"x5",
    b"x999999999999",
    b"backspace ",
    b"type ",
    b"search ",
    b"go to ",
    b"open ",
    b"new tab",
    b"close tab",
    b"google",
    b"https://",
    b"http://",
    b"file:///etc/passwd",
    b"javascript:",
    b"localhost",
    b"127.0.0.1",
    b"0x7f.1",
    b"[::1]",
    b"user:pass@",
    b"example.com",
    b"xn--",
    b"%2e",
    b"/",
    b".",
    b"@",
    b"#",
    b"?",
    b"please ",
    b"now ",
    "แล้ว".as_bytes(),
    " แล้วก็ ".as_bytes(),
    "จากนั้น".as_bytes(),
    "ถ้า".as_bytes(),
    "หาก".as_bytes(),
    "เลื่อน".as_bytes(),
    "ลง".as_bytes(),
    "ขึ้น".as_bytes(),
    "กด".as_bytes(),
    "ค้นหา ".as_bytes(),
    "พิมพ์ ".as_bytes(),
    "เข้า ".as_bytes(),
    "เปิด".as_bytes(),
    "แท็บใหม่".as_bytes(),
    "ลบ".as_bytes(),
    "คูณ".as_bytes(),
    "ร้อย".as_bytes(),
    "ห้าสิบ".as_bytes(),
    "ครั้ง".as_bytes(),
    "ครับ".as_bytes(),
    "ค่ะ".as_bytes(),
    "เอาล่ะ".as_bytes(),
    "ทีละขั้น".as_bytes(),
    "ขั้นตอนที่ ๑".as_bytes(),
    "“".as_bytes(),
    "”".as_bytes(),
    "「".as_bytes(),
    "」".as_bytes(),
];

const VALIDATOR: &[&[u8]] = &[
    b"\"model\"",
    b"\"answers\"",
    b"\"usage\"",
    b"\"billing\"",
    b"\"request_id\"",
    b"\"requested_model\"",
    b"\"input_tokens\"",
    b"\"output_tokens\"",
    b"\"type\"",
    b"\"noul\"",
    b"\"choice\"",
    b"\"score\"",
    b"\"probabilities\"",
    b"\"confidence\"",
    b"\"levels\"",
    b"\"legend\"",
    b"\"instructions\"",
    b"\"criteria\"",
    b"\"questions\"",
    b"\"response\"",
    b"\"n\"",
    b"\"c\"",
    b"\"s\"",
    b"\"a\"",
    b"\"b\"",
    b"0.8",
    b"0.2",
    b"0.33",
    b"0.34",
    b"0.005",
    b"1.1",
    b"5e-1",
    b"0.50",
    b"\"rate_version\"",
    b"\"cost\"",
];

const CONFIG: &[&[u8]] = &[
    b"\"gateway\"",
    b"\"agents\"",
    b"\"jev\"",
    b"\"enabled\"",
    b"\"provider\"",
    b"\"local\"",
    b"\"typesafe\"",
    b"\"upstream\"",
    b"\"callback\"",
    b"\"allowedAgentIds\"",
    b"\"id\"",
    b"\"timeoutMs\"",
    b"\"maxConcurrentRequests\"",
    b"\"maxQueueSize\"",
    b"\"maxInputBytes\"",
    b"\"maxQuestions\"",
    b"\"images\"",
    b"\"model\"",
    b"\"maxImageBytes\"",
    b"\"baseUrl\"",
    b"\"apiKeyEnv\"",
    b"\"apiKeyFile\"",
    b"\"thinking\"",
    b"\"api\"",
    b"\"browser\"",
    b"\"bindings\"",
    b"\"agentId\"",
    b"\"principalId\"",
    b"\"conversationId\"",
    b"\"endpoint\"",
    b"\"connectorId\"",
    b"\"scope\"",
    b"\"device_id\"",
    b"\"grant_id\"",
    b"\"tab_id\"",
    b"\"fields\"",
    b"\"label\"",
    b"\"text\"",
    b"\"budget\"",
    b"\"maxSteps\"",
    b"\"maxEvaluations\"",
    b"\"computerUse\"",
    b"\"minConfidence\"",
    b"\"visionModel\"",
    b"\"features\"",
    b"\"https://api.example.com\"",
    b"\"OPENAI_API_KEY\"",
    b"\"/dev/null\"",
    b"120000",
    b"0.55",
    b"1048576",
    b"65536",
];

const FRAMES: &[&[u8]] = &[
    b"\"type\"",
    b"\"authenticate\"",
    b"\"authorization\"",
    b"\"Device \"",
    b"\"Device  x \"",
    b"\"protocol\"",
    b"2",
    b"\"result\"",
    b"\"id\"",
    b"\"success\"",
    b"\"errorCode\"",
    b"\"message\"",
    b"\"ping\"",
    b"\"pong\"",
    b"\"ready\"",
    b"\"deviceId\"",
    b"\"command\"",
    b"\"tool\"",
    b"\"args\"",
    b"\"deadlineMs\"",
    b"\"cancel\"",
    b"-1",
    b"1.5",
];

#[derive(Debug, Clone)]
enum Mutation {
    Flip(usize, u8),
    Insert(usize, usize),
    Delete(usize, usize),
    Repeat(usize, usize, u16),
    Splice(usize, usize, usize),
    Truncate(usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let at = any::<usize>();
    prop_oneof![
        (at, any::<u8>()).prop_map(|(i, b)| Mutation::Flip(i, b)),
        (at, any::<usize>()).prop_map(|(i, t)| Mutation::Insert(i, t)),
        (at, 0usize..64).prop_map(|(i, n)| Mutation::Delete(i, n)),
        (at, 1usize..16, 1u16..4096).prop_map(|(i, n, k)| Mutation::Repeat(i, n, k)),
        (at, any::<usize>(), any::<usize>()).prop_map(|(i, c, j)| Mutation::Splice(i, c, j)),
        at.prop_map(Mutation::Truncate),
    ]
}

fn apply(mut input: Vec<u8>, muts: &[Mutation], corpus: &[Vec<u8>], dict: &[&[u8]]) -> Vec<u8> {
    for m in muts {
        let len = input.len();
        let at = |i: usize| if len == 0 { 0 } else { i % (len + 1) };
        match *m {
            Mutation::Flip(i, b) if len > 0 => input[i % len] ^= b.max(1),
            Mutation::Flip(..) => {}
            Mutation::Insert(i, t) => {
                let tok = dict[t % dict.len()];
                let i = at(i);
                input.splice(i..i, tok.iter().copied());
            }
            Mutation::Delete(i, n) => {
                let i = at(i);
                let end = (i + n).min(len);
                input.drain(i..end);
            }
            Mutation::Repeat(i, n, k) => {
                let i = at(i);
                let end = (i + n).min(len);
                let piece = input[i..end].to_vec();
                let k = usize::from(k).min(MAX_INPUT.saturating_sub(len) / piece.len().max(1));
                let grown: Vec<u8> = piece
                    .iter()
                    .copied()
                    .cycle()
                    .take(piece.len() * k)
                    .collect();
                input.splice(end..end, grown);
            }
            Mutation::Splice(i, c, j) => {
                let other = &corpus[c % corpus.len()];
                let j = if other.is_empty() { 0 } else { j % other.len() };
                let i = at(i);
                input.truncate(i);
                input.extend_from_slice(&other[j..]);
            }
            Mutation::Truncate(i) => input.truncate(at(i)),
        }
        input.truncate(MAX_INPUT);
    }
    input
}

/// JSON documents built from the target's dictionary (keys and string values).
fn json_doc(dict: &'static [&'static [u8]]) -> impl Strategy<Value = Vec<u8>> {
    let words: Vec<String> = dict
        .iter()
        .map(|t| String::from_utf8_lossy(t).trim_matches('"').to_string())
        .collect();
    let key = proptest::sample::select(words.clone());
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::Bool),
        any::<i64>().prop_map(|n| serde_json::json!(n)),
        (0u32..=100).prop_map(|n| serde_json::json!(f64::from(n) / 100.0)),
        proptest::sample::select(words).prop_map(serde_json::Value::String),
        ".{0,12}".prop_map(serde_json::Value::String),
    ];
    let tree = leaf.prop_recursive(6, 64, 8, move |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..8).prop_map(serde_json::Value::Array),
            proptest::collection::vec((key.clone(), inner), 0..8)
                .prop_map(|kv| serde_json::Value::Object(kv.into_iter().collect())),
        ]
    });
    tree.prop_map(|v| serde_json::to_vec(&v).unwrap())
}

fn inputs(corpus: Vec<Vec<u8>>, dict: &'static [&'static [u8]]) -> impl Strategy<Value = Vec<u8>> {
    let all: Vec<&'static [u8]> = COMMON.iter().chain(dict).copied().collect();
    let all2 = all.clone();
    let seeds = corpus.clone();
    prop_oneof![
        4 => (0..corpus.len(), proptest::collection::vec(mutation(), 0..8))
            .prop_map(move |(i, m)| apply(seeds[i].clone(), &m, &corpus, &all)),
        1 => proptest::collection::vec(any::<u8>(), 0..256),
        2 => proptest::collection::vec(proptest::sample::select(all2), 0..48)
            .prop_map(|toks| toks.concat()),
        2 => json_doc(dict),
    ]
}

/// Replays the corpus of `target`, then fuzzes `check` for the configured time.
fn run_target(target: &str, dict: &'static [&'static [u8]], check: fn(&[u8])) {
    run_batches(target, dict, check, 16)
}

/// [`run_target`] with `per_batch` cases between two looks at the clock (small for a target
/// whose case starts a process).
fn run_batches(target: &str, dict: &'static [&'static [u8]], check: fn(&[u8]), per_batch: u32) {
    let files = corpus(target);
    for (name, bytes) in &files {
        if std::panic::catch_unwind(|| check(bytes)).is_err() {
            panic!("{target}: corpus file {name} fails");
        }
    }
    let budget = fuzz_time();
    if budget.is_zero() {
        return;
    }
    let seed = seed();
    eprintln!("fuzz {target}: {budget:?}, JEVGATE_FUZZ_SEED={seed}");
    let strategy = inputs(files.into_iter().map(|(_, b)| b).collect(), dict);
    let deadline = Instant::now() + budget;
    let mut batch = 0u64;
    let mut cases = 0u64;
    while Instant::now() < deadline {
        let mut key = [0u8; 32];
        key[..8].copy_from_slice(&seed.to_le_bytes());
        key[8..16].copy_from_slice(&batch.to_le_bytes());
        let config = Config {
            cases: per_batch,
            failure_persistence: None,
            max_shrink_time: 20_000,
            ..Config::default()
        };
        let mut runner =
            TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &key));
        let result = runner.run(&strategy, |input| {
            check(&input);
            Ok(())
        });
        if let Err(TestError::Fail(why, input)) = result {
            let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("target/fuzz-failures")
                .join(target);
            let _ = std::fs::create_dir_all(&dir);
            let file = dir.join(format!("seed{seed}-batch{batch}"));
            let _ = std::fs::write(&file, &input);
            let shown: String = String::from_utf8_lossy(&input).chars().take(400).collect();
            panic!(
                "{target}: {why}\ninput ({} bytes, saved to {}): {shown:?}",
                input.len(),
                file.display()
            );
        }
        batch += 1;
        cases += u64::from(per_batch);
    }
    eprintln!("fuzz {target}: {cases} cases, no failure");
}

#[test]
fn fuzz_grammar() {
    run_target("grammar", GRAMMAR, check::grammar_bytes);
}

#[test]
fn fuzz_validator() {
    run_target("validator", VALIDATOR, check::validator);
}

#[test]
fn fuzz_config() {
    run_target("config", CONFIG, check::config);
}

#[test]
fn fuzz_channel_frames() {
    run_target("frames", FRAMES, check::frames);
}

/// Counts panics on every thread of this binary (the CDP reader thread's included): a panic
/// on a thread nobody joins would otherwise go unseen.
static PANICS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

fn count_panics() {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            previous(info);
        }));
    });
}

/// The fake browser: answers request k with the script's messages up to and including the
/// next one that carries `$ID`; exits (closing the pipe) when the script is used up.
const FAKE_CHROMIUM: &str = r#"import json, os, sys
script = open(sys.argv[1], 'rb').read().split(b'\0')
i = 0
buf = b''
while True:
    try:
        chunk = os.read(3, 65536)
    except OSError:
        break
    if not chunk:
        break
    buf += chunk
    while b'\0' in buf:
        msg, buf = buf.split(b'\0', 1)
        try:
            req = json.loads(msg)
            rid, sid = str(req.get('id', 0)).encode(), str(req.get('sessionId', '')).encode()
        except Exception:
            rid, sid = b'0', b''
        while i < len(script):
            m = script[i]
            i += 1
            try:
                os.write(4, m.replace(b'$ID', rid).replace(b'$SID', sid) + b'\0')
            except OSError:
                sys.exit(0)
            if b'$ID' in m:
                break
        if i >= len(script):
            sys.exit(0)
"#;

fn cdp(input: &[u8]) {
    use jevgate::browser::{BrowserBackend, Command, LaunchOptions, LocalBrowser};
    use std::os::unix::fs::PermissionsExt;
    count_panics();
    let before = PANICS.load(std::sync::atomic::Ordering::SeqCst);
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script");
    std::fs::write(&script, input).unwrap();
    let fake = dir.path().join("chromium");
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\nexec python3 -c '{}' {}\n",
            FAKE_CHROMIUM.replace('\'', "'\"'\"'"),
            script.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let opts = LaunchOptions {
        executable: Some(fake),
        launch_timeout: Duration::from_secs(1),
        call_timeout: Duration::from_millis(100),
        navigation_timeout: Duration::from_millis(100),
        ..LaunchOptions::default()
    };
    let coded = |what: &str, r: Result<String, jevgate::Error>| {
        if let Err(e) = r {
            assert!(!e.code().is_empty(), "{what}: an error without a code");
        }
    };
    match LocalBrowser::launch(opts) {
        Err(e) => assert!(!e.code().is_empty()),
        Ok(browser) => {
            coded(
                "navigate",
                browser
                    .navigate("http://127.0.0.1:9/")
                    .map(|_| String::new()),
            );
            for command in [
                r#"{"tool":"observe","args":{}}"#,
                r#"{"tool":"snapshot","args":{}}"#,
                r#"{"tool":"page_click","args":{"operationId":"c1","generation":1,"ref":"e1"}}"#,
                r#"{"tool":"get_text","args":{}}"#,
                r#"{"tool":"find","args":{"query":"x"}}"#,
            ] {
                let command: Command = serde_json::from_str(command).unwrap();
                coded(
                    "execute",
                    browser
                        .execute(&command)
                        .map(|r| format!("{r:?}").len().to_string()),
                );
            }
            browser.close();
        }
    }
    assert_eq!(
        PANICS.load(std::sync::atomic::Ordering::SeqCst),
        before,
        "a thread panicked on the browser's messages"
    );
}

/// DevTools tokens for the lying browser: replies, errors and events in hostile shapes.
const CDP: &[&[u8]] = &[
    b"{\"id\":$ID,\"result\":{}}\0",
    b"{\"id\":$ID,\"result\":{\"targetId\":\"T\",\"sessionId\":\"S\"}}\0",
    b"{\"id\":$ID,\"error\":{\"code\":-32000,\"message\":\"x\"}}\0",
    b"{\"id\":$ID,\"result\":{\"result\":{\"type\":\"object\",\"value\":",
    b"{\"method\":\"Target.attachedToTarget\",\"sessionId\":\"S\",\"params\":{\"sessionId\":\"S2\",\"targetInfo\":{\"targetId\":\"T2\",\"type\":\"iframe\"}}}\0",
    b"{\"method\":\"Target.detachedFromTarget\",\"params\":{\"sessionId\":\"S\"}}\0",
    b"{\"method\":\"Page.javascriptDialogOpening\",\"sessionId\":\"$SID\",\"params\":{\"type\":\"prompt\",\"message\":\"m\"}}\0",
    b"{\"method\":\"Page.frameNavigated\",\"sessionId\":\"$SID\",\"params\":{\"frame\":{\"id\":\"F\",\"url\":\"x\"}}}\0",
    b"{\"method\":\"Target.targetCrashed\",\"params\":{\"targetId\":\"T\"}}\0",
    b"\"sessionId\":\"$SID\"",
    b"\"generation\":18446744073709551615",
    b"\"id\":-1",
    b"\"id\":1e400",
    b"\0",
];

#[test]
fn fuzz_cdp_messages_from_a_lying_browser() {
    run_batches("cdp", CDP, cdp, 2);
}

#[cfg(feature = "capi")] // the C ABI is built with the `capi` feature
#[test]
fn fuzz_c_strings() {
    run_target("c_strings", GRAMMAR, check::c_abi);
}
