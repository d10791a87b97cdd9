//! Linear time in the input (issue 12 item 4; STYLE "linear time in input"; R-GRM-STEPS,
//! R-GRM-PARSE, R-GRM-URL, R-GRM-RESOLVE, R-VAL, R-JEV-REQ, R-CFG).
//!
//! Every grammar, validator and configuration entry point is timed on adversarial inputs of
//! two sizes ten times apart (100 KB and 1 MB); the test fails when the time grows by more than
//! [`MAX_RATIO`] (linear gives ~10, quadratic ~100). A ratio, not a time, so it holds on a slow
//! or busy machine. Each size is run a few times interleaved and the minimum kept; the smaller
//! time is floored at [`FLOOR`] so timer noise on a sub-millisecond run cannot fail the test.
//!
//! The shapes are the ones that break naive scanners: repeated separators and list markers
//! (`"a " + "3. " × N` + trailing spaces took 53.6 s at 1 MB in `split_steps`), long runs of
//! whitespace (ASCII, U+3000, U+200B), Thai combining marks, many tokens, unclosed quotes,
//! repeated connectors and filler words, deep nesting where the format allows it.
//!
//! Times are the thread's CPU time (not wall time), so other work on the machine (or the other
//! tests of this file, running in parallel) does not inflate the large run. `JEVGATE_LINEAR_VERBOSE=1` prints every measurement;
//! `JEVGATE_LINEAR_TRAILING=1` also runs every text shape followed by as many trailing spaces
//! (the class of the `split_steps` defect; slower, so not by default).

use jevgate::grammar::{
    check_model_address, keypad_button, parse_command, resolve, split_parts, split_steps,
    strip_fillers, Adapter, Intent,
};
use jevgate::jev::{answer_schema, validate_response, Limits, Questions};
use jevgate::observation::{Control, Observation};
use std::hint::black_box;
use std::time::Duration;
#[cfg(not(unix))]
use std::time::Instant;

/// A 10× larger input may take at most this many times longer.
const MAX_RATIO: f64 = 25.0;
/// The smaller run counts as at least this long (timer and scheduler noise).
const FLOOR: Duration = Duration::from_micros(500);
const SMALL: usize = 100_000;
const LARGE: usize = 1_000_000;

/// CPU time of the calling thread: on a machine shared with other work, wall time of a long
/// run includes time the thread was not scheduled, which would inflate the large run's time.
#[cfg(unix)]
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_THREAD_CPUTIME_ID exists on Linux and
    // the BSDs.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

#[cfg(not(unix))]
fn thread_cpu() -> Duration {
    use std::sync::OnceLock;
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed()
}

fn time(input: &str, f: &dyn Fn(&str)) -> Duration {
    let t = thread_cpu();
    f(black_box(input));
    thread_cpu().saturating_sub(t)
}

/// Times `f` on `make(n)` and `make(10 n)` for n = SMALL / 10 then SMALL; the ratio of the
/// minima must stay ≤ MAX_RATIO. The first, cheaper pair fails a quadratic entry point fast,
/// before the 1 MB run would take minutes.
fn ratio_ok(name: &str, make: &dyn Fn(usize) -> String, f: &dyn Fn(&str)) -> Result<(), String> {
    for n in [SMALL / 10, SMALL] {
        pair_ok(name, &make(n), &make(n * (LARGE / SMALL)), f)?;
    }
    Ok(())
}

fn pair_ok(name: &str, small: &str, large: &str, f: &dyn Fn(&str)) -> Result<(), String> {
    let (mut ts, mut tl) = (Duration::MAX, Duration::MAX);
    for round in 0..3 {
        ts = ts.min(time(small, f));
        tl = tl.min(time(large, f));
        let r = tl.as_secs_f64() / ts.max(FLOOR).as_secs_f64();
        if std::env::var_os("JEVGATE_LINEAR_VERBOSE").is_some() {
            eprintln!(
                "{name}: {} bytes {ts:?}, {} bytes {tl:?}, ratio {r:.1}",
                small.len(),
                large.len()
            );
        }
        // A clearly linear first round needs no repeat (keeps the file fast in debug).
        if r <= MAX_RATIO / 2.0 || (round > 0 && r <= MAX_RATIO) {
            return Ok(());
        }
    }
    let r = tl.as_secs_f64() / ts.max(FLOOR).as_secs_f64();
    Err(format!(
        "{name}: {} bytes took {ts:?}, {} bytes took {tl:?}: ratio {r:.1} > {MAX_RATIO} (not linear)",
        small.len(),
        large.len()
    ))
}

/// Runs every check and fails with all the non-linear ones listed.
fn all_ok(results: impl IntoIterator<Item = Result<(), String>>) {
    let failures: Vec<String> = results.into_iter().filter_map(Result::err).collect();
    assert!(failures.is_empty(), "not linear:\n{}", failures.join("\n"));
}

/// Named generators of adversarial inputs of about n bytes.
type Shapes = Vec<(&'static str, Box<dyn Fn(usize) -> String>)>;

/// `prefix + unit × k + suffix`, with k chosen so the whole is about `n` bytes.
fn rep(prefix: &str, unit: &str, suffix: &str, n: usize) -> String {
    let k = n.saturating_sub(prefix.len() + suffix.len()) / unit.len().max(1);
    let mut s = String::with_capacity(n + unit.len());
    s.push_str(prefix);
    for _ in 0..k {
        s.push_str(unit);
    }
    s.push_str(suffix);
    s
}

/// `prefix + unit × k + tail × k` (half of the bytes each), e.g. markers then trailing spaces.
fn rep2(prefix: &str, unit: &str, tail: &str, n: usize) -> String {
    let half = rep("", unit, "", n / 2);
    let rest = rep("", tail, "", n / 2);
    format!("{prefix}{half}{rest}")
}

/// Adversarial command texts: (name, generator). Every text function runs on every shape.
fn text_shapes() -> Shapes {
    vec![
        // The issue's input: numbered markers then trailing whitespace.
        (
            "marker 3. then spaces",
            Box::new(|n| rep2("a ", "3. ", " ", n)),
        ),
        ("marker 3. repeated", Box::new(|n| rep("a ", "3. ", "", n))),
        (
            "inline list 1. 2. then spaces",
            Box::new(|n| rep2("1. a ", "2. ", " ", n)),
        ),
        ("numbered lines", Box::new(|n| rep("", "1. a\n", "", n))),
        (
            "numbered lines ascending",
            Box::new(|n| {
                let mut s = String::new();
                let mut i = 1u64;
                while s.len() < n {
                    s.push_str(&format!("{i}. step\n"));
                    i += 1;
                }
                s
            }),
        ),
        ("bullets", Box::new(|n| rep("", "- a\n", "", n))),
        (
            "bullet then text lines",
            Box::new(|n| rep("- a\n", "b\n", "", n)),
        ),
        ("commas", Box::new(|n| rep("a", ",", "b", n))),
        ("comma space", Box::new(|n| rep("", "a, ", "", n))),
        ("newlines", Box::new(|n| rep("a", "\n", "b", n))),
        ("crlf", Box::new(|n| rep("a", "\r\n", "b", n))),
        ("spaces", Box::new(|n| rep("a", " ", "b", n))),
        ("spaces only", Box::new(|n| rep("", " ", "", n))),
        (
            "ideographic spaces",
            Box::new(|n| rep("a", "\u{3000}", "b", n)),
        ),
        (
            "zero width spaces",
            Box::new(|n| rep("a", "\u{200b}", "b", n)),
        ),
        (
            "thai combining marks",
            Box::new(|n| rep("ก", "\u{0e48}", "", n)),
        ),
        (
            "thai marks after digits",
            Box::new(|n| rep("1.", "\u{0e49}", " a", n)),
        ),
        ("thai words", Box::new(|n| rep("", "เลื่อนลง", "", n))),
        ("thai digits", Box::new(|n| rep("", "๑", "", n))),
        ("thai number words", Box::new(|n| rep("", "ร้อย", "", n))),
        ("thai connectors", Box::new(|n| rep("a", " แล้ว", "", n))),
        ("english then", Box::new(|n| rep("a", " then", "", n))),
        ("fillers", Box::new(|n| rep("", "ครับ ", "", n))),
        (
            "english fillers",
            Box::new(|n| rep("", "please ", "scroll down", n)),
        ),
        ("unclosed quote", Box::new(|n| rep("type \"", "a, ", "", n))),
        ("many quotes", Box::new(|n| rep("", "\"a\" ", "", n))),
        ("colons", Box::new(|n| rep("", "a: ", "", n))),
        ("header lines", Box::new(|n| rep("", "a:\n", "b, c", n))),
        ("sentences", Box::new(|n| rep("", "a. ", "", n))),
        (
            "pacing sentences",
            Box::new(|n| rep("", "start with step 1. ", "", n)),
        ),
        ("you are", Box::new(|n| rep("you are", " a", "", n))),
        ("digits", Box::new(|n| rep("", "1", "", n))),
        ("digit groups", Box::new(|n| rep("", "1,", "", n))),
        (
            "count suffix",
            Box::new(|n| rep("press enter x", "9", "", n)),
        ),
        ("dots", Box::new(|n| rep("เข้า ", "a.", "com", n))),
        ("url", Box::new(|n| rep("https://", "a.", "com/", n))),
        (
            "url path",
            Box::new(|n| rep("https://a.com/", "%2e", "", n)),
        ),
        ("search words", Box::new(|n| rep("ค้นหา ", "แมว ", "", n))),
        ("type words", Box::new(|n| rep("พิมพ์ ", "a ", "", n))),
        ("word letters", Box::new(|n| rep("", "a", "", n))),
        ("ascii words", Box::new(|n| rep("", "in ", "", n))),
        ("emoji", Box::new(|n| rep("", "👍🏽", "", n))),
        ("nul", Box::new(|n| rep("", "\0", "", n))),
    ]
}

fn check_text_fn(fname: &str, f: &dyn Fn(&str)) {
    all_ok(
        text_shapes()
            .iter()
            .map(|(shape, make)| ratio_ok(&format!("{fname} on {shape}"), make.as_ref(), f)),
    );
    if std::env::var_os("JEVGATE_LINEAR_TRAILING").is_some() {
        all_ok(text_shapes().iter().map(|(shape, make)| {
            let trailing = |n: usize| format!("{}{}", make(n / 2), " ".repeat(n / 2));
            ratio_ok(&format!("{fname} on {shape} + spaces"), &trailing, f)
        }));
    }
}

#[test]
fn r_grm_steps_split_steps_is_linear() {
    check_text_fn("split_steps", &|s| {
        black_box(split_steps(s));
    });
}

#[test]
fn r_grm_parts_split_parts_is_linear() {
    check_text_fn("split_parts", &|s| {
        black_box(split_parts(s));
    });
}

#[test]
fn r_grm_parse_parse_command_is_linear() {
    check_text_fn("parse_command", &|s| {
        black_box(parse_command(s));
    });
}

#[test]
fn r_grm_filler_strip_fillers_is_linear() {
    check_text_fn("strip_fillers", &|s| {
        black_box(strip_fillers(s));
    });
}

#[test]
fn r_grm_url_check_model_address_is_linear() {
    check_text_fn("check_model_address", &|s| {
        let _ = black_box(check_model_address(s));
    });
}

#[test]
fn r_cfg_endpoint_url_parsing_is_linear() {
    check_text_fn("config::parse_endpoint", &|s| {
        if let Ok(u) = black_box(jevgate::config::parse_endpoint(s)) {
            black_box(jevgate::config::resolve_api_url(&u, "/v1", "/evaluate"));
        }
    });
}

/// An observation of about `n` bytes: many controls with the same and similar names.
fn page(n: usize, name: &dyn Fn(usize) -> String) -> Observation {
    let mut obs = Observation::default();
    let mut size = 0;
    let mut i = 0;
    while size < n {
        let mut c = Control::field(&format!("e{i}"), "textbox", &name(i), Some("แมว"));
        c.search_like = i % 3 == 0;
        size += c.reference.len() + c.name.len() + 16;
        obs.controls.push(c);
        i += 1;
    }
    obs.focus = Some(format!("e{}", i / 2));
    obs
}

#[test]
fn r_grm_resolve_resolve_is_linear_in_the_page() {
    let intents = [
        "ค้นหา แมว",
        "type hello",
        "backspace x5",
        "press enter",
        "กด 5",
        "123",
        "scroll down",
        "back",
        "เปิด tab ใหม่",
        "เข้า google",
        "ลบ",
        "คูณ",
        "something else entirely",
    ];
    let names: [(&str, &dyn Fn(usize) -> String); 3] = [
        ("same names", &|_| "Search".to_string()),
        ("numbered names", &|i| format!("{}", i % 10)),
        ("long names", &|_| "ค้นหา ".repeat(20)),
    ];
    for (shape, name) in names {
        // Size the page so the input grows 10× between the two runs.
        let make_page = |n: usize| page(n, name);
        let small = make_page(SMALL);
        let large = make_page(LARGE);
        for text in intents {
            let intent: Intent = parse_command(text);
            for adapter in [Adapter::Browser, Adapter::Computer] {
                let run = |obs: &Observation| {
                    let t = thread_cpu();
                    black_box(resolve(&intent, obs, adapter));
                    black_box(keypad_button(obs, '5'));
                    thread_cpu().saturating_sub(t)
                };
                let (mut ts, mut tl) = (Duration::MAX, Duration::MAX);
                for _ in 0..3 {
                    ts = ts.min(run(&small));
                    tl = tl.min(run(&large));
                    if tl.as_secs_f64() / ts.max(FLOOR).as_secs_f64() <= MAX_RATIO {
                        break;
                    }
                }
                let r = tl.as_secs_f64() / ts.max(FLOOR).as_secs_f64();
                assert!(
                    r <= MAX_RATIO,
                    "resolve({text}) on {shape}: {ts:?} vs {tl:?}, ratio {r:.1}"
                );
            }
        }
    }
}

// ---------------------------------------------------------------- validator and questions

const QUESTIONS: &str = r#"{"n":{"type":"noul","instructions":"yes?"},
 "c":{"type":"choice","instructions":"which?","criteria":{"a":"A","b":"B","c":"C"}},
 "s":{"type":"score","instructions":"how?","criteria":["low","mid","high"]}}"#;

const ANSWERS: &str = r#""n":{"type":"noul","noul":0.8},
 "c":{"type":"choice","choice":"a","probabilities":{"a":0.5,"b":0.3,"c":0.2},"confidence":0.7},
 "s":{"type":"score","score":1.1,"levels":[0.2,0.5,0.3],"legend":["low","mid","high"],"confidence":0.6}"#;

fn envelope(model: &str, extra: &str, answers_ws: &str) -> String {
    format!(
        r#"{{"model":"{model}",{extra}"answers":{{{answers_ws}{ANSWERS}}},"usage":{{"input_tokens":1,"output_tokens":1}}}}"#
    )
}

fn response_shapes() -> Shapes {
    vec![
        ("long model", Box::new(|n| envelope(&"m".repeat(n), "", ""))),
        (
            "escaped model",
            Box::new(|n| envelope(&"\\u0041".repeat(n / 6), "", "")),
        ),
        (
            "thai model",
            Box::new(|n| envelope(&"ก\u{0e48}".repeat(n / 6), "", "")),
        ),
        (
            "whitespace",
            Box::new(|n| envelope("m", "", &" ".repeat(n))),
        ),
        (
            "many extra members",
            Box::new(|n| {
                let extra: String = (0..n / 12).map(|i| format!("\"x{i}\":1,")).collect();
                envelope("m", &extra, "")
            }),
        ),
        (
            "many same extra members",
            Box::new(|n| envelope("m", &"\"x\":[],".repeat(n / 7), "")),
        ),
        (
            "deep nesting",
            Box::new(|n| {
                let one = format!("{}{}", "[".repeat(100), "]".repeat(100));
                let extra = format!("\"x\":[{}],", vec![one; n / 200].join(","));
                envelope("m", &extra, "")
            }),
        ),
        (
            "long number",
            Box::new(|n| {
                let a = ANSWERS.replace("0.8}", &format!("0.8{}}}", "0".repeat(n)));
                format!(
                    r#"{{"model":"m","answers":{{{a}}},"usage":{{"input_tokens":1,"output_tokens":1}}}}"#
                )
            }),
        ),
        (
            "long legend",
            Box::new(|n| {
                let a =
                    ANSWERS.replace("\"low\",\"mid\"", &format!("\"{}\",\"mid\"", "l".repeat(n)));
                format!(
                    r#"{{"model":"m","answers":{{{a}}},"usage":{{"input_tokens":1,"output_tokens":1}}}}"#
                )
            }),
        ),
        (
            "many unexpected answers",
            Box::new(|n| {
                let extra: String = (0..n / 40)
                    .map(|i| format!("\"q{i}\":{{\"type\":\"noul\",\"noul\":0.5}},"))
                    .collect();
                format!(
                    r#"{{"model":"m","answers":{{{ANSWERS},{extra}"z":1}},"usage":{{"input_tokens":1,"output_tokens":1}}}}"#
                )
            }),
        ),
        (
            "unterminated string",
            Box::new(|n| format!("{{\"model\":\"{}", "a".repeat(n))),
        ),
    ]
}

#[test]
fn r_val_validate_response_is_linear() {
    let q = Questions::from_json(QUESTIONS.as_bytes(), &Limits::default()).unwrap();
    // The baseline itself must be valid, so the shapes exercise the whole validator.
    assert!(validate_response(&q, envelope("m", "", "").as_bytes()).is_ok());
    all_ok(response_shapes().iter().map(|(shape, make)| {
        ratio_ok(
            &format!("validate_response on {shape}"),
            make.as_ref(),
            &|s| {
                let _ = black_box(validate_response(&q, s.as_bytes()));
            },
        )
    }));
}

#[test]
fn r_jev_req_questions_and_answer_schema_are_linear() {
    let shapes: Shapes = vec![
        (
            "long instructions",
            Box::new(|n| {
                format!(
                    r#"{{"a":{{"type":"noul","instructions":"{}"}}}}"#,
                    "i".repeat(n)
                )
            }),
        ),
        (
            "long option descriptions",
            Box::new(|n| {
                let opts: Vec<String> = (0..255)
                    .map(|i| format!("\"o{i}\":\"{}\"", "d".repeat(n / 255)))
                    .collect();
                format!(
                    r#"{{"a":{{"type":"choice","criteria":{{{}}}}}}}"#,
                    opts.join(",")
                )
            }),
        ),
        (
            "long option keys",
            Box::new(|n| {
                let opts: Vec<String> = (0..255)
                    .map(|i| format!("\"{}{i}\":\"d\"", "k".repeat(n / 255)))
                    .collect();
                format!(
                    r#"{{"a":{{"type":"choice","criteria":{{{}}}}}}}"#,
                    opts.join(",")
                )
            }),
        ),
        (
            "too many options",
            Box::new(|n| {
                let opts: Vec<String> = (0..n / 10).map(|i| format!("\"o{i}\":\"d\"")).collect();
                format!(
                    r#"{{"a":{{"type":"choice","criteria":{{{}}}}}}}"#,
                    opts.join(",")
                )
            }),
        ),
        (
            "too many questions",
            Box::new(|n| {
                let qs: Vec<String> = (0..n / 24)
                    .map(|i| format!("\"q{i}\":{{\"type\":\"noul\"}}"))
                    .collect();
                format!("{{{}}}", qs.join(","))
            }),
        ),
        (
            "repeated question keys",
            Box::new(|n| {
                let qs = vec![r#""q":{"type":"noul"}"#; n / 20];
                format!("{{{}}}", qs.join(","))
            }),
        ),
        (
            "object instructions",
            Box::new(|n| {
                let items = vec![r#"{"k":"v"}"#; n / 10];
                format!(
                    r#"{{"a":{{"type":"noul","instructions":[{}]}}}}"#,
                    items.join(",")
                )
            }),
        ),
        (
            "whitespace",
            Box::new(|n| format!("{{{}\"a\":{{\"type\":\"noul\"}}}}", " ".repeat(n))),
        ),
    ];
    all_ok(shapes.iter().flat_map(|(shape, make)| {
        [
            ratio_ok(
                &format!("Questions::from_json on {shape}"),
                make.as_ref(),
                &|s| {
                    if let Ok(q) = black_box(Questions::from_json(s.as_bytes(), &Limits::default()))
                    {
                        black_box(answer_schema(&q));
                    }
                },
            ),
            ratio_ok(
                &format!("answer_schema_json on {shape}"),
                make.as_ref(),
                &|s| {
                    let _ = black_box(jevgate::jev::answer_schema_json(s.as_bytes()));
                },
            ),
        ]
    }));
}

// ---------------------------------------------------------------- configuration

#[test]
fn r_cfg_config_parsing_is_linear() {
    let shapes: Shapes = vec![
        ("whitespace", Box::new(|n| format!("{{{}}}", " ".repeat(n)))),
        (
            "long agent id",
            Box::new(|n| format!(r#"{{"agents":[{{"id":"{}"}}]}}"#, "a".repeat(n))),
        ),
        (
            "many allowed agent ids",
            Box::new(|n| {
                let ids: Vec<String> = (0..n / 10).map(|i| format!("\"a{i}\"")).collect();
                format!(
                    r#"{{"gateway":{{"jev":{{"enabled":true,"provider":"local","allowedAgentIds":[{}]}}}}}}"#,
                    ids.join(",")
                )
            }),
        ),
        (
            "unknown key with long name",
            Box::new(|n| format!(r#"{{"gateway":{{"{}":1}}}}"#, "k".repeat(n))),
        ),
        (
            "escaped strings",
            Box::new(|n| format!(r#"{{"agents":[{{"id":"{}"}}]}}"#, "\\u0041".repeat(n / 6))),
        ),
    ];
    all_ok(shapes.iter().map(|(shape, make)| {
        ratio_ok(
            &format!("Config::from_json_str on {shape}"),
            make.as_ref(),
            &|s| {
                let _ = black_box(jevgate::Config::from_json_str(s));
            },
        )
    }));
}

/// Many agents or bindings with distinct ids: the duplicate-id checks of `src/config/rules.rs`
/// (`agents`, `bindings`) once compared every entry with every earlier one (ratio 60 at
/// 10× the size); they keep a set of the ids seen.
#[test]
fn r_cfg_many_agents_and_bindings_are_linear() {
    let shapes: Shapes = vec![
        (
            "many agents",
            Box::new(|n| {
                let agents: Vec<String> = (0..n / 16)
                    .map(|i| format!("{{\"id\":\"a{i}\"}}"))
                    .collect();
                format!(r#"{{"agents":[{}]}}"#, agents.join(","))
            }),
        ),
        (
            "many bindings",
            Box::new(|n| {
                let b: Vec<String> = (0..n / 160)
                    .map(|i| {
                        format!(
                            r#"{{"id":"b{i}","agentId":"a","principalId":"p","conversationId":"c","connectorId":"x","scope":{{"device_id":"d","grant_id":"g","tab_id":"t"}}}}"#
                        )
                    })
                    .collect();
                format!(
                    r#"{{"gateway":{{"jev":{{"browser":{{"bindings":[{}]}}}}}}}}"#,
                    b.join(",")
                )
            }),
        ),
    ];
    all_ok(shapes.iter().map(|(shape, make)| {
        ratio_ok(
            &format!("Config::from_json_str on {shape}"),
            make.as_ref(),
            &|s| {
                let _ = black_box(jevgate::Config::from_json_str(s));
            },
        )
    }));
}
