//! R-PERF / R-VAL-FAST: the response validator against the parsing floor and its peers.
//!
//! Workloads (compact JSON): (a) typical — 1 noul, 1 choice of 5 options, 1 score of 3 levels;
//! (b) large — 64 questions including a 255-option choice and a 10-level score; (c) the same
//! documents made invalid at the last value that matters (the last level of the last score, so
//! the distribution sum fails). For each, in the same process and interleaved round by round:
//! jevgate `validate_response`; `serde_json::from_slice::<IgnoredAny>` (the parsing floor);
//! `serde_json::Value` plus a straightforward walk doing the same checks; and the `jsonschema`
//! crate validating the `answers` member against `answer_schema`, parse included. Ratios are
//! taken within a round (this machine's speed drifts between phases) and the median over the
//! rounds is reported.
//!
//! Honesty note: `jsonschema` turns on serde_json's `float_roundtrip` for this whole build. It
//! slows `Value` parsing (the value and jsonschema baselines) by about 5%, not `IgnoredAny`
//! (which never converts numbers) and not jevgate (its own exact float path).
//!
//! The run ends with one line:
//! `validator: typical=<MB/s> large=<MB/s> floor_ratio=… floor_ratio_large=… value_ratio=…
//! jsonschema_ratio=… allocs_per_valid_doc=<n>`.

use criterion::{criterion_group, Criterion, Throughput};
use jevgate::jev::{answer_schema, validate_response, Limits, Questions};
use serde_json::Value;
use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

// ---- allocation counting ------------------------------------------------------------------------

struct Counting;

static ALLOCS: AtomicUsize = AtomicUsize::new(0);

#[allow(unsafe_code)] // reason: a GlobalAlloc must be unsafe; it only forwards to System and counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

// ---- workloads ----------------------------------------------------------------------------------

struct Workload {
    name: &'static str,
    questions: Questions,
    valid: Vec<u8>,
    invalid: Vec<u8>,
}

fn typical() -> Workload {
    let questions = Questions::from_json(
        br#"{"needs_decision":{"type":"noul","instructions":"Does the user still need to decide?"},
        "next_step":{"type":"choice","instructions":"What is the next step?","criteria":{
          "explain":"Compare","execute":"Execute","ask":"Ask","wait":"Wait","stop":"Stop"}},
        "clarity":{"type":"score","instructions":"How clear?",
          "criteria":["Unspecified","Partially specified","Fully specified"]}}"#,
        &Limits::default(),
    )
    .expect("questions");
    let doc = |last: &str| {
        format!(
            r#"{{"model":"jev-1.13.0","requested_model":"catalog-prefix/jev-1.13.0","answers":{{"needs_decision":{{"type":"noul","noul":0.8}},"next_step":{{"type":"choice","choice":"explain","probabilities":{{"explain":0.62,"execute":0.2,"ask":0.1,"wait":0.05,"stop":0.03}},"confidence":0.62}},"clarity":{{"type":"score","score":1.55,"levels":[0.1,0.25,{last}],"legend":["Unspecified","Partially specified","Fully specified"],"confidence":0.65}}}},"usage":{{"input_tokens":120,"output_tokens":8}}}}"#
        )
        .into_bytes()
    };
    Workload {
        name: "typical",
        questions,
        valid: doc("0.65"),
        invalid: doc("0.75"),
    }
}

fn large() -> Workload {
    let mut qs = Vec::new();
    let mut answers = Vec::new();
    // q00: 255-option choice at full precision (ties at the maximum)
    let opts: Vec<String> = (0..255).map(|i| format!(r#""o{i:03}":"d""#)).collect();
    qs.push(format!(
        r#""q00":{{"type":"choice","instructions":"pick","criteria":{{{}}}}}"#,
        opts.join(",")
    ));
    let probs: Vec<String> = (0..255).map(|i| format!(r#""o{i:03}":0.00392"#)).collect();
    answers.push(format!(
        r#""q00":{{"type":"choice","choice":"o000","probabilities":{{{}}},"confidence":0.0039}}"#,
        probs.join(",")
    ));
    for i in 1..63 {
        match i % 3 {
            0 => {
                qs.push(format!(
                    r#""q{i:02}":{{"type":"noul","instructions":"yes?"}}"#
                ));
                answers.push(format!(r#""q{i:02}":{{"type":"noul","noul":0.37}}"#));
            }
            1 => {
                qs.push(format!(
                    r#""q{i:02}":{{"type":"choice","instructions":"pick","criteria":{{"al":"a","be":"b","ga":"c","de":"d","ep":"e"}}}}"#
                ));
                answers.push(format!(
                    r#""q{i:02}":{{"type":"choice","choice":"be","probabilities":{{"al":0.1,"be":0.52,"ga":0.18,"de":0.12,"ep":0.07}},"confidence":0.52}}"#
                ));
            }
            _ => {
                qs.push(format!(
                    r#""q{i:02}":{{"type":"score","instructions":"rate","criteria":["low","mid","high","top"]}}"#
                ));
                answers.push(format!(
                    r#""q{i:02}":{{"type":"score","score":1.9,"levels":[0.1,0.2,0.4,0.3],"legend":["low","mid","high","top"],"confidence":0.4}}"#
                ));
            }
        }
    }
    // q63: 10-level score, last
    let levels: Vec<String> = (0..10).map(|i| format!(r#""L{i}""#)).collect();
    qs.push(format!(
        r#""q63":{{"type":"score","instructions":"rate","criteria":[{}]}}"#,
        levels.join(",")
    ));
    let questions = Questions::from_json(
        format!("{{{}}}", qs.join(",")).as_bytes(),
        &Limits::default(),
    )
    .expect("questions");
    let doc = |last: &str| {
        let mut a = answers.clone();
        a.push(format!(
            r#""q63":{{"type":"score","score":4.5,"levels":[0.1,0.1,0.1,0.1,0.1,0.1,0.1,0.1,0.1,{last}],"legend":[{}],"confidence":0.1}}"#,
            levels.join(",")
        ));
        format!(
            r#"{{"model":"jev-1.13.0","answers":{{{}}},"usage":{{"input_tokens":9120,"output_tokens":640}}}}"#,
            a.join(",")
        )
        .into_bytes()
    };
    Workload {
        name: "large",
        questions,
        valid: doc("0.1"),
        invalid: doc("0.6"),
    }
}

// ---- the Value + walk baseline ------------------------------------------------------------------

/// A straightforward validator: parse into `serde_json::Value`, then walk doing the same checks.
fn value_walk(questions: &Questions, bytes: &[u8]) -> bool {
    let Ok(v) = serde_json::from_slice::<Value>(bytes) else {
        return false;
    };
    let Some(env) = v.as_object() else {
        return false;
    };
    if !env.get("model").is_some_and(Value::is_string) {
        return false;
    }
    let Some(usage) = env.get("usage").and_then(Value::as_object) else {
        return false;
    };
    if !["input_tokens", "output_tokens"]
        .iter()
        .all(|k| usage.get(*k).is_some_and(Value::is_u64))
    {
        return false;
    }
    let Some(answers) = env.get("answers").and_then(Value::as_object) else {
        return false;
    };
    if answers.len() != questions.len() {
        return false;
    }
    let prob = |v: &Value| v.as_f64().filter(|p| (0.0..=1.0).contains(p));
    let sum_ok = |ps: &[f64]| {
        let sum: f64 = ps.iter().sum();
        let rounded = ps
            .iter()
            .all(|p| ((p * 100.0).round() - p * 100.0).abs() < 1e-9);
        let tol = if rounded {
            (0.005 * ps.len() as f64).min(0.02)
        } else {
            0.001
        };
        ((sum - 1.0).abs() <= tol + 1e-12, tol)
    };
    for q in questions {
        let Some(a) = answers.get(q.key()).and_then(Value::as_object) else {
            return false;
        };
        let ty = q.question_type().as_str();
        if a.get("type").and_then(Value::as_str) != Some(ty) {
            return false;
        }
        match ty {
            "noul" => {
                if a.len() != 2 || a.get("noul").and_then(prob).is_none() {
                    return false;
                }
            }
            "choice" => {
                if a.len() != 4 || a.get("confidence").and_then(prob).is_none() {
                    return false;
                }
                let Some(ps) = a.get("probabilities").and_then(Value::as_object) else {
                    return false;
                };
                if ps.len() != q.arity() {
                    return false;
                }
                let mut values = Vec::with_capacity(ps.len());
                for (k, _) in q.options() {
                    match ps.get(k).and_then(prob) {
                        Some(p) => values.push(p),
                        None => return false,
                    }
                }
                if !sum_ok(&values).0 {
                    return false;
                }
                let Some(c) = a.get("choice").and_then(Value::as_str) else {
                    return false;
                };
                let Some(pc) = ps.get(c).and_then(Value::as_f64) else {
                    return false;
                };
                if values.iter().any(|&p| p > pc) {
                    return false;
                }
            }
            _ => {
                if a.len() != 5 || a.get("confidence").and_then(prob).is_none() {
                    return false;
                }
                let Some(levels) = a.get("levels").and_then(Value::as_array) else {
                    return false;
                };
                let Some(legend) = a.get("legend").and_then(Value::as_array) else {
                    return false;
                };
                if levels.len() != q.arity()
                    || legend.len() != q.arity()
                    || !legend.iter().all(Value::is_string)
                {
                    return false;
                }
                let mut values = Vec::with_capacity(levels.len());
                for l in levels {
                    match prob(l) {
                        Some(p) => values.push(p),
                        None => return false,
                    }
                }
                let (ok, tol) = sum_ok(&values);
                if !ok {
                    return false;
                }
                let Some(s) = a.get("score").and_then(Value::as_f64) else {
                    return false;
                };
                let w: f64 = values.iter().enumerate().map(|(i, p)| i as f64 * p).sum();
                if (s - w).abs() > tol + 1e-12 {
                    return false;
                }
            }
        }
    }
    true
}

// ---- measurement --------------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq)]
enum Imp {
    Jevgate,
    Floor,
    ValueWalk,
    JsonSchema,
}

struct Prepared {
    w: Workload,
    schema: jsonschema::Validator,
}

fn run_once(p: &Prepared, imp: Imp, bytes: &[u8]) -> bool {
    match imp {
        Imp::Jevgate => validate_response(&p.w.questions, bytes).is_ok(),
        Imp::Floor => serde_json::from_slice::<serde::de::IgnoredAny>(bytes).is_ok(),
        Imp::ValueWalk => value_walk(&p.w.questions, bytes),
        Imp::JsonSchema => match serde_json::from_slice::<Value>(bytes) {
            Ok(v) => v.get("answers").is_some_and(|a| p.schema.is_valid(a)),
            Err(_) => false,
        },
    }
}

/// Calls per batch so that one batch takes about `budget`.
fn calibrate(p: &Prepared, imp: Imp, bytes: &[u8], budget: Duration) -> u64 {
    let mut iters = 8u64;
    loop {
        let t = Instant::now();
        for _ in 0..iters {
            black_box(run_once(p, imp, black_box(bytes)));
        }
        let e = t.elapsed();
        if e >= budget / 4 {
            return ((iters as f64 * budget.as_secs_f64() / e.as_secs_f64()) as u64).max(1);
        }
        iters *= 2;
    }
}

/// Nanoseconds per call of one batch of `iters` calls.
fn batch(p: &Prepared, imp: Imp, bytes: &[u8], iters: u64) -> f64 {
    let t = Instant::now();
    for _ in 0..iters {
        black_box(run_once(p, imp, black_box(bytes)));
    }
    t.elapsed().as_nanos() as f64 / iters as f64
}

/// One round: short batches of every case, interleaved `passes` times; each case keeps its
/// fastest batch (other processes on a shared machine only ever add time).
fn round(
    p: &Prepared,
    cases: &[(Imp, bool)],
    iters: &[u64],
    passes: usize,
    rot: usize,
) -> Vec<f64> {
    let mut best = vec![f64::INFINITY; cases.len()];
    for pass in 0..passes {
        for k in 0..cases.len() {
            let c = (k + rot + pass) % cases.len();
            let (imp, valid) = cases[c];
            let bytes = if valid { &p.w.valid } else { &p.w.invalid };
            best[c] = best[c].min(batch(p, imp, bytes, iters[c]));
        }
    }
    best
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn prepare(w: Workload) -> Prepared {
    // every implementation agrees on the verdicts
    let schema = jsonschema::validator_for(&answer_schema(&w.questions)).expect("schema");
    let p = Prepared { w, schema };
    for imp in [Imp::Jevgate, Imp::Floor, Imp::ValueWalk, Imp::JsonSchema] {
        assert!(run_once(&p, imp, &p.w.valid), "{} valid doc", p.w.name);
    }
    assert!(!run_once(&p, Imp::Jevgate, &p.w.invalid));
    assert!(!run_once(&p, Imp::ValueWalk, &p.w.invalid));
    p
}

fn criterion_benches(c: &mut Criterion) {
    for w in [typical(), large()] {
        let p = prepare(w);
        let mut g = c.benchmark_group(format!("validator/{}", p.w.name));
        g.throughput(Throughput::Bytes(p.w.valid.len() as u64));
        g.bench_function("jevgate", |b| {
            b.iter(|| run_once(&p, Imp::Jevgate, black_box(&p.w.valid)))
        });
        g.bench_function("jevgate_invalid", |b| {
            b.iter(|| run_once(&p, Imp::Jevgate, black_box(&p.w.invalid)))
        });
        g.bench_function("serde_ignored_any", |b| {
            b.iter(|| run_once(&p, Imp::Floor, black_box(&p.w.valid)))
        });
        g.bench_function("serde_value_walk", |b| {
            b.iter(|| run_once(&p, Imp::ValueWalk, black_box(&p.w.valid)))
        });
        g.bench_function("jsonschema", |b| {
            b.iter(|| run_once(&p, Imp::JsonSchema, black_box(&p.w.valid)))
        });
        g.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_millis(1200))
        .sample_size(20);
    targets = criterion_benches
}

fn interleaved_summary() {
    let rounds: usize = std::env::var("JEVGATE_BENCH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(7)
        .max(5);
    let budget = Duration::from_millis(4);
    let passes = 8;
    let typical = prepare(typical());
    let large = prepare(large());
    // jevgate valid, floor, value+walk, jsonschema, jevgate invalid
    let cases = [
        (Imp::Jevgate, true),
        (Imp::Floor, true),
        (Imp::ValueWalk, true),
        (Imp::JsonSchema, true),
        (Imp::Jevgate, false),
    ];
    let iters_of = |p: &Prepared| -> Vec<u64> {
        cases
            .iter()
            .map(|&(imp, valid)| {
                calibrate(
                    p,
                    imp,
                    if valid { &p.w.valid } else { &p.w.invalid },
                    budget,
                )
            })
            .collect()
    };
    let (iters_t, iters_l) = (iters_of(&typical), iters_of(&large));
    let (mut t_ns, mut l_ns) = (Vec::new(), Vec::new());
    let (mut floor_t, mut floor_l) = (Vec::new(), Vec::new());
    let (mut value_t, mut schema_t) = (Vec::new(), Vec::new());
    let (mut value_l, mut schema_l) = (Vec::new(), Vec::new());
    let (mut inv_t, mut inv_l) = (Vec::new(), Vec::new());
    for r in 0..rounds {
        for (p, iters, ns, floor, value, schema, inv) in [
            (
                &typical,
                &iters_t,
                &mut t_ns,
                &mut floor_t,
                &mut value_t,
                &mut schema_t,
                &mut inv_t,
            ),
            (
                &large,
                &iters_l,
                &mut l_ns,
                &mut floor_l,
                &mut value_l,
                &mut schema_l,
                &mut inv_l,
            ),
        ] {
            let m = round(p, &cases, iters, passes, r);
            ns.push(m[0]);
            floor.push(m[0] / m[1]);
            value.push(m[2] / m[0]);
            schema.push(m[3] / m[0]);
            inv.push(m[4] / m[0]);
        }
    }
    // allocations of one valid validation (the returned Response's buffers included)
    let before = ALLOCS.load(Ordering::Relaxed);
    let r = validate_response(&typical.w.questions, &typical.w.valid).expect("valid");
    let allocs = ALLOCS.load(Ordering::Relaxed) - before;
    drop(r);
    let before = ALLOCS.load(Ordering::Relaxed);
    let r = validate_response(&large.w.questions, &large.w.valid).expect("valid");
    let allocs_large = ALLOCS.load(Ordering::Relaxed) - before;
    drop(r);

    let mbs = |bytes: usize, ns: f64| bytes as f64 / ns * 1e9 / 1e6;
    let t_med = median(t_ns.clone());
    let l_med = median(l_ns.clone());
    println!(
        "validator-detail: rounds={rounds} typical_bytes={} large_bytes={} typical_ns={:.0} large_ns={:.0} \
         value_ratio_large={:.2} jsonschema_ratio_large={:.2} invalid_over_valid_typical={:.2} \
         invalid_over_valid_large={:.2} allocs_large={allocs_large} \
         (the one allocation of a large document is the returned Response's number buffer; \
         up to 32 numbers live inline)",
        typical.w.valid.len(),
        large.w.valid.len(),
        t_med,
        l_med,
        median(value_l),
        median(schema_l),
        median(inv_t),
        median(inv_l),
    );
    println!(
        "validator: typical={:.0} large={:.0} floor_ratio={:.2} floor_ratio_large={:.2} value_ratio={:.2} jsonschema_ratio={:.2} allocs_per_valid_doc={allocs}",
        mbs(typical.w.valid.len(), t_med),
        mbs(large.w.valid.len(), l_med),
        median(floor_t),
        median(floor_l),
        median(value_t),
        median(schema_t),
    );
}

fn main() {
    // `cargo bench --bench validator -- --summary-only` skips the criterion groups.
    let summary_only = std::env::args().any(|a| a == "--summary-only");
    if !summary_only {
        benches();
        Criterion::default().configure_from_args().final_summary();
    }
    interleaved_summary();
}
