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

use super::content::Content;
use super::question::{QuestionType, Questions};
use std::collections::HashMap;

/// The model name the heuristic reports.
pub const LOCAL_MODEL: &str = "local-heuristic-1";

/// Softmax temperature: similarity in `[0, 1]` times this is the logit.
const SHARPNESS: f64 = 6.0;

type Grams = HashMap<String, u32>;

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

/// Character 2- and 3-grams of each token (lower-cased, padded), with counts.
fn grams(text: &str) -> Grams {
    let mut g = Grams::new();
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

/// Cosine similarity of two gram bags, in `[0, 1]`.
fn similarity(a: &Grams, b: &Grams) -> f64 {
    let norm = |g: &Grams| {
        g.values()
            .map(|&c| f64::from(c).powi(2))
            .sum::<f64>()
            .sqrt()
    };
    let (na, nb) = (norm(a), norm(b));
    if na == 0.0 || nb == 0.0 {
        return 0.0;
    }
    let (small, large) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    let dot: f64 = small
        .iter()
        .filter_map(|(k, &c)| large.get(k).map(|&d| f64::from(c) * f64::from(d)))
        .sum();
    (dot / (na * nb)).clamp(0.0, 1.0)
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
/// (`{model, answers, usage}`), to be validated like any provider's.
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
    use serde_json::{json, Map, Value};
    let mut state_text = String::new();
    push_text(&mut state_text, state);
    let state_grams = grams(&state_text);
    let mut answers = Map::new();
    for q in questions.iter() {
        let mut instr = String::new();
        if let Some(i) = q.instructions() {
            push_text(&mut instr, i);
        }
        let mut context = state_grams.clone();
        for (k, v) in grams(&instr) {
            *context.entry(k).or_insert(0) += v;
        }
        let answer = match q.question_type() {
            QuestionType::Noul => {
                let sim = similarity(&state_grams, &grams(&instr));
                // 0.05..=0.95, 0.5 near a similarity of 0.15
                let prob = 0.05 + 0.9 / (1.0 + (-(sim - 0.15) * 12.0).exp());
                json!({"type": "noul", "noul": (prob * 100.0).round() / 100.0})
            }
            QuestionType::Choice => {
                let sims: Vec<f64> = q
                    .options()
                    .map(|(k, d)| similarity(&context, &grams(&format!("{k} {d}"))))
                    .collect();
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
                let sims: Vec<f64> = q
                    .levels()
                    .iter()
                    .map(|l| similarity(&context, &grams(l)))
                    .collect();
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
    serde_json::to_vec(&body).unwrap_or_default()
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
}
