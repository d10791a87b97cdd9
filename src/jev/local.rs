//! The `local` provider (SPEC §3.4): an offline, deterministic **heuristic** evaluator so that
//! examples, tests and the quickstart run with no network and no key.
//!
//! It is not a model and must never be presented as one: it measures lexical similarity between
//! the context (state + a question's instructions) and each option's text, using character
//! bigrams and trigrams of every whitespace-separated token — which works for Thai, written
//! without spaces between words, as well as for English — turns similarities into a softmax
//! distribution, and rounds it to hundredths (largest-remainder, so the hundredths sum to exactly
//! 1 and the answer passes the validator's rounded tolerance). The same input always gives the
//! same bytes. Its answers go through the validator like any provider's.
//!
//! It is linear in the request (issue 12 item 5): the state's grams and norm are computed once,
//! each question's context norm is derived from them (|s + i|² = |s|² + |i|² + 2 s·i) rather than
//! by merging bags, and every option costs only its own text. Under the gateway it also checks
//! the evaluation's deadline every few thousand units of work, so it never runs past
//! `timeoutMs`.

use super::content::Content;
use super::question::{QuestionType, Questions};
use std::collections::HashMap;

/// The model name the heuristic reports.
pub const LOCAL_MODEL: &str = "local-heuristic-1";

/// Softmax temperature: similarity in `[0, 1]` times this is the logit.
const SHARPNESS: f64 = 6.0;

/// Character n-grams keyed by their packed code points: a 2-gram is `c0 << 21 | c1`, a 3-gram
/// `1 << 63 | c0 << 42 | c1 << 21 | c2` (a `char` fits 21 bits), so counting allocates nothing.
type Grams = HashMap<u64, u32>;

/// Work units (characters tokenised, grams looked up) between two deadline checks: small enough
/// that an expired deadline is seen within a fraction of a millisecond of work.
const CHECK_EVERY: usize = 4096;

/// The deadline ran out (or the call was cancelled) while the heuristic worked.
#[derive(Debug)]
pub(crate) struct Expired;

/// Counts work and asks `expired` every [`CHECK_EVERY`] units.
struct Watch<'a> {
    since: usize,
    expired: &'a dyn Fn() -> bool,
}

impl Watch<'_> {
    fn spend(&mut self, units: usize) -> Result<(), Expired> {
        self.since = self.since.saturating_add(units);
        if self.since >= CHECK_EVERY {
            self.since = 0;
            if (self.expired)() {
                return Err(Expired);
            }
        }
        Ok(())
    }
}

fn push_text(out: &mut String, c: &Content) {
    match c {
        Content::Text(t) => out.push_str(t),
        Content::Object(m) => {
            for (k, v) in m {
                out.push_str(k);
                out.push(' ');
                push_value(out, v);
            }
        }
        Content::Array(a) => a.iter().for_each(|v| push_value(out, v)),
    }
    out.push(' ');
}

fn push_value(out: &mut String, v: &serde_json::Value) {
    match v {
        serde_json::Value::String(s) => out.push_str(s),
        serde_json::Value::Object(m) => {
            for (k, v) in m {
                out.push_str(k);
                out.push(' ');
                push_value(out, v);
            }
        }
        serde_json::Value::Array(a) => a.iter().for_each(|v| push_value(out, v)),
        other => out.push_str(&other.to_string()),
    }
    out.push(' ');
}

/// A bag of grams with its squared Euclidean norm (computed once).
struct Bag {
    grams: Grams,
    norm2: u64,
}

impl Bag {
    fn norm(&self) -> f64 {
        (self.norm2 as f64).sqrt()
    }
}

/// Character 2- and 3-grams of each token (lower-cased, padded), with counts. Linear in `text`.
fn grams(text: &str, watch: &mut Watch<'_>) -> Result<Bag, Expired> {
    let mut g = Grams::new();
    let mut chars: Vec<u64> = Vec::new();
    for token in text
        .split(|c: char| c.is_whitespace() || (c.is_ascii_punctuation() && c != '\''))
        .filter(|t| !t.is_empty())
    {
        chars.clear();
        chars.push(u64::from('^'));
        chars.extend(token.chars().flat_map(char::to_lowercase).map(u64::from));
        chars.push(u64::from('$'));
        watch.spend(chars.len())?;
        for w in chars.windows(2) {
            *g.entry(w[0] << 21 | w[1]).or_insert(0) += 1;
        }
        for w in chars.windows(3) {
            *g.entry(1 << 63 | w[0] << 42 | w[1] << 21 | w[2])
                .or_insert(0) += 1;
        }
    }
    watch.spend(g.len())?;
    let norm2 = g
        .values()
        .fold(0u64, |n, &c| n.saturating_add(u64::from(c).pow(2)));
    Ok(Bag { grams: g, norm2 })
}

/// Σ a·b over the grams of `small` (looked up in `large`).
fn dot(small: &Grams, large: &Grams, watch: &mut Watch<'_>) -> Result<u64, Expired> {
    watch.spend(small.len())?;
    Ok(small.iter().fold(0u64, |acc, (k, &c)| {
        let d = large.get(k).copied().unwrap_or(0);
        acc.saturating_add(u64::from(c) * u64::from(d))
    }))
}

/// Cosine `dot / (na · nb)` clamped to `[0, 1]`, 0 for an empty side.
fn cosine(dot: u64, na: f64, nb: f64) -> f64 {
    if na == 0.0 || nb == 0.0 {
        return 0.0;
    }
    (dot as f64 / (na * nb)).clamp(0.0, 1.0)
}

/// The context of one question (state + instructions) as seen by its options: its norm is
/// derived from the state's without building the merged bag, so each question costs its own
/// text, not the state's again.
struct Context<'a> {
    state: &'a Grams,
    instr: &'a Grams,
    norm: f64,
}

impl Context<'_> {
    fn similarity(&self, text: &str, watch: &mut Watch<'_>) -> Result<f64, Expired> {
        let bag = grams(text, watch)?;
        watch.spend(bag.grams.len())?;
        let dot = bag.grams.iter().fold(0u64, |acc, (k, &c)| {
            let s = self.state.get(k).copied().unwrap_or(0);
            let i = self.instr.get(k).copied().unwrap_or(0);
            acc.saturating_add(u64::from(c) * (u64::from(s) + u64::from(i)))
        });
        Ok(cosine(dot, self.norm, bag.norm()))
    }
}

/// Softmax of `sims * SHARPNESS`, rounded to integer hundredths summing to exactly 100.
fn hundredths(sims: &[f64]) -> Vec<u32> {
    let max = sims.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let exps: Vec<f64> = sims.iter().map(|s| ((s - max) * SHARPNESS).exp()).collect();
    let total: f64 = exps.iter().sum();
    let raw: Vec<f64> = exps.iter().map(|e| e / total * 100.0).collect();
    let mut out: Vec<u32> = raw.iter().map(|r| r.floor() as u32).collect();
    let mut left = 100 - out.iter().sum::<u32>().min(100);
    // largest remainders first; ties to the earlier index (deterministic)
    let mut order: Vec<usize> = (0..raw.len()).collect();
    order.sort_by(|&i, &j| {
        let (ri, rj) = (raw[i] - raw[i].floor(), raw[j] - raw[j].floor());
        rj.total_cmp(&ri).then(i.cmp(&j))
    });
    for i in order.into_iter().cycle() {
        if left == 0 {
            break;
        }
        out[i] += 1;
        left -= 1;
    }
    out
}

fn p(h: u32) -> f64 {
    f64::from(h) / 100.0
}

fn argmax(h: &[u32]) -> usize {
    let mut best = 0;
    for (i, v) in h.iter().enumerate() {
        if *v > h[best] {
            best = i;
        }
    }
    best
}

/// Evaluates `questions` about `state` and returns provider-shaped response JSON
/// (`{model, answers, usage}`), to be validated like any provider's. Linear in the size of the
/// request; without a deadline (the gateway uses the bounded form with its `timeoutMs`).
///
/// ```
/// use jevgate::jev::{local_evaluate, validate_response, Limits, Questions, Content};
/// let q = Questions::from_json(r#"{"next":{"type":"choice","instructions":"ขั้นต่อไป",
///   "criteria":{"pay":"ชำระเงิน","search":"ค้นหาเที่ยวบิน"}}}"#.as_bytes(), &Limits::default()).unwrap();
/// let body = local_evaluate(&Content::from("ค้นหาเที่ยวบิน เชียงใหม่ โอซาก้า"), &q);
/// let r = validate_response(&q, &body).unwrap();
/// assert_eq!(serde_json::to_value(r.answers()).unwrap()["next"]["choice"], "search");
/// assert_eq!(body, local_evaluate(&Content::from("ค้นหาเที่ยวบิน เชียงใหม่ โอซาก้า"), &q));
/// ```
pub fn local_evaluate(state: &Content, questions: &Questions) -> Vec<u8> {
    local_evaluate_until(state, questions, &|| false).unwrap_or_default()
}

/// [`local_evaluate`] that asks `expired` every few thousand units of work and stops with
/// [`Expired`] as soon as it answers true: the evaluation's deadline covers the heuristic too.
pub(crate) fn local_evaluate_until(
    state: &Content,
    questions: &Questions,
    expired: &dyn Fn() -> bool,
) -> Result<Vec<u8>, Expired> {
    use serde_json::{json, Map, Value};
    let mut watch = Watch { since: 0, expired };
    let mut state_text = String::new();
    push_text(&mut state_text, state);
    let state_bag = grams(&state_text, &mut watch)?;
    let mut answers = Map::new();
    for q in questions.iter() {
        let mut instr_text = String::new();
        if let Some(i) = q.instructions() {
            push_text(&mut instr_text, i);
        }
        let instr = grams(&instr_text, &mut watch)?;
        let state_instr = dot(&instr.grams, &state_bag.grams, &mut watch)?;
        // |s + i|² = |s|² + |i|² + 2 s·i
        let context_norm2 = state_bag
            .norm2
            .saturating_add(instr.norm2)
            .saturating_add(state_instr.saturating_mul(2));
        let context = Context {
            state: &state_bag.grams,
            instr: &instr.grams,
            norm: (context_norm2 as f64).sqrt(),
        };
        let answer = match q.question_type() {
            QuestionType::Noul => {
                let sim = cosine(state_instr, state_bag.norm(), instr.norm());
                // 0.05..=0.95, 0.5 near a similarity of 0.15
                let prob = 0.05 + 0.9 / (1.0 + (-(sim - 0.15) * 12.0).exp());
                json!({"type": "noul", "noul": (prob * 100.0).round() / 100.0})
            }
            QuestionType::Choice => {
                let mut sims = Vec::new();
                for (k, d) in q.options() {
                    sims.push(context.similarity(&format!("{k} {d}"), &mut watch)?);
                }
                let h = hundredths(&sims);
                let best = argmax(&h);
                let probs: Map<String, Value> = q
                    .options()
                    .zip(&h)
                    .map(|((k, _), &v)| (k.to_owned(), json!(p(v))))
                    .collect();
                let chosen = q.options().nth(best).map_or("", |(k, _)| k);
                json!({"type": "choice", "choice": chosen, "probabilities": probs,
                       "confidence": p(h[best])})
            }
            QuestionType::Score => {
                let mut sims = Vec::new();
                for l in q.levels() {
                    sims.push(context.similarity(l, &mut watch)?);
                }
                let h = hundredths(&sims);
                let weighted: u32 = h.iter().enumerate().map(|(i, v)| i as u32 * v).sum();
                let levels: Vec<f64> = h.iter().map(|&v| p(v)).collect();
                json!({"type": "score", "score": f64::from(weighted) / 100.0, "levels": levels,
                       "legend": q.levels(), "confidence": p(h[argmax(&h)])})
            }
        };
        answers.insert(q.key().to_owned(), answer);
    }
    let input_tokens = (state_text.len() / 4) as u64;
    let body = json!({
        "model": LOCAL_MODEL,
        "answers": answers,
        "usage": {"input_tokens": input_tokens, "output_tokens": 0},
    });
    Ok(serde_json::to_vec(&body).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jev::{validate_response, Limits};

    #[test]
    fn hundredths_always_sum_to_one_hundred() {
        for sims in [
            vec![0.0; 3],
            vec![0.1, 0.2, 0.3],
            vec![1.0; 255],
            vec![0.0, 1.0],
            vec![0.33; 7],
        ] {
            assert_eq!(hundredths(&sims).iter().sum::<u32>(), 100, "{sims:?}");
        }
    }

    // SPEC §3.4: every heuristic answer passes the validator, for every question type.
    #[test]
    fn every_answer_passes_the_validator() {
        let mut criteria = serde_json::Map::new();
        for i in 0..255 {
            criteria.insert(format!("o{i}"), format!("option number {i}").into());
        }
        let q = serde_json::json!({
            "yes": {"type": "noul", "instructions": "Is this a greeting?"},
            "many": {"type": "choice", "instructions": "pick", "criteria": criteria},
            "one": {"type": "choice", "criteria": {"only": "x"}},
            "s": {"type": "score", "criteria": ["ไม่ชัดเจน", "ชัดเจนบางส่วน", "ชัดเจนมาก"]},
            "s10": {"type": "score", "criteria": ["0","1","2","3","4","5","6","7","8","9"]},
        });
        let qs = Questions::from_json(q.to_string().as_bytes(), &Limits::default()).unwrap();
        for state in [
            Content::from("Hello there"),
            Content::from(""),
            Content::from("สวัสดีครับ ชัดเจนมาก"),
            serde_json::from_str::<Content>(r#"{"page":"checkout","items":[1,"two"]}"#).unwrap(),
        ] {
            let body = local_evaluate(&state, &qs);
            validate_response(&qs, &body).unwrap();
        }
    }

    /// The heuristic as first written (quadratic: a merged bag per question, a norm per
    /// option), kept as the reference the linear form must match bit for bit.
    fn reference(state: &Content, questions: &Questions) -> Vec<(String, Vec<f64>)> {
        type G = HashMap<String, u32>;
        fn g(text: &str) -> G {
            let mut g = G::new();
            for token in text
                .split(|c: char| c.is_whitespace() || (c.is_ascii_punctuation() && c != '\''))
                .filter(|t| !t.is_empty())
            {
                let chars: Vec<char> = std::iter::once('^')
                    .chain(token.chars().flat_map(char::to_lowercase))
                    .chain(std::iter::once('$'))
                    .collect();
                for n in [2usize, 3] {
                    for w in chars.windows(n) {
                        *g.entry(w.iter().collect()).or_insert(0) += 1;
                    }
                }
            }
            g
        }
        fn sim(a: &G, b: &G) -> f64 {
            let norm = |g: &G| {
                g.values()
                    .map(|&c| f64::from(c).powi(2))
                    .sum::<f64>()
                    .sqrt()
            };
            let (na, nb) = (norm(a), norm(b));
            if na == 0.0 || nb == 0.0 {
                return 0.0;
            }
            let dot: f64 = a
                .iter()
                .filter_map(|(k, &c)| b.get(k).map(|&d| f64::from(c) * f64::from(d)))
                .sum();
            (dot / (na * nb)).clamp(0.0, 1.0)
        }
        let mut st = String::new();
        push_text(&mut st, state);
        let sg = g(&st);
        questions
            .iter()
            .map(|q| {
                let mut instr = String::new();
                if let Some(i) = q.instructions() {
                    push_text(&mut instr, i);
                }
                let mut ctx = sg.clone();
                for (k, v) in g(&instr) {
                    *ctx.entry(k).or_insert(0) += v;
                }
                let sims = match q.question_type() {
                    QuestionType::Noul => vec![sim(&sg, &g(&instr))],
                    QuestionType::Choice => q
                        .options()
                        .map(|(k, d)| sim(&ctx, &g(&format!("{k} {d}"))))
                        .collect(),
                    QuestionType::Score => q.levels().iter().map(|l| sim(&ctx, &g(l))).collect(),
                };
                (q.key().to_owned(), sims)
            })
            .collect()
    }

    // Issue 12 item 5: the linear form gives exactly the similarities of the quadratic one.
    #[test]
    fn linear_similarities_equal_the_reference() {
        let q = serde_json::json!({
            "yes": {"type": "noul", "instructions": "Is this a greeting? hello hello"},
            "next": {"type": "choice", "instructions": {"step": "ขั้นต่อไป pay"},
                     "criteria": {"pay": "ชำระเงิน pay now", "search": "ค้นหาเที่ยวบิน", "e": ""}},
            "s": {"type": "score", "criteria": ["Unclear", "Partly clear", "Clear clear"]},
        });
        let qs = Questions::from_json(q.to_string().as_bytes(), &Limits::default()).unwrap();
        for state in [
            Content::from("Hello there, hello! pay now: ชำระเงิน"),
            Content::from(""),
            serde_json::from_str::<Content>(r#"{"page":"checkout","items":[1,"two",{"x":null}]}"#)
                .unwrap(),
        ] {
            let mut st = String::new();
            push_text(&mut st, &state);
            let mut w = Watch {
                since: 0,
                expired: &|| false,
            };
            let sb = grams(&st, &mut w).unwrap();
            for (q, (key, want)) in qs.iter().zip(reference(&state, &qs)) {
                assert_eq!(q.key(), key);
                let mut it = String::new();
                if let Some(i) = q.instructions() {
                    push_text(&mut it, i);
                }
                let ib = grams(&it, &mut w).unwrap();
                let si = dot(&ib.grams, &sb.grams, &mut w).unwrap();
                let ctx = Context {
                    state: &sb.grams,
                    instr: &ib.grams,
                    norm: ((sb.norm2 + ib.norm2 + 2 * si) as f64).sqrt(),
                };
                let got: Vec<f64> = match q.question_type() {
                    QuestionType::Noul => vec![cosine(si, sb.norm(), ib.norm())],
                    QuestionType::Choice => q
                        .options()
                        .map(|(k, d)| ctx.similarity(&format!("{k} {d}"), &mut w).unwrap())
                        .collect(),
                    QuestionType::Score => q
                        .levels()
                        .iter()
                        .map(|l| ctx.similarity(l, &mut w).unwrap())
                        .collect(),
                };
                assert_eq!(got, want, "{key}");
            }
        }
    }

    // Issue 12 item 5: the heuristic asks the deadline as it works and stops when it expires.
    #[test]
    fn an_expired_deadline_stops_the_heuristic() {
        let q = Questions::from_json(
            br#"{"yes":{"type":"noul","instructions":"greeting"}}"#,
            &Limits::default(),
        )
        .unwrap();
        let state = Content::from("hello ".repeat(10_000));
        let asked = std::cell::Cell::new(0u32);
        let r = local_evaluate_until(&state, &q, &|| {
            asked.set(asked.get() + 1);
            true
        });
        assert!(r.is_err());
        assert_eq!(asked.get(), 1, "stopped at the first check");
        let asked = std::cell::Cell::new(0u32);
        let body = local_evaluate_until(&state, &q, &|| {
            asked.set(asked.get() + 1);
            false
        })
        .unwrap();
        assert!(asked.get() >= 10, "checked {} times", asked.get());
        assert_eq!(body, local_evaluate(&state, &q));
    }
}
