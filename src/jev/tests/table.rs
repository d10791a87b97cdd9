//! Table-driven verdicts: every reason, every edge of the rounding envelope (R-VAL-*).

use super::support::*;
use crate::jev::{validate_response, Answer, ValidationReason as R};

/// `TYPICAL_OK` with `from` replaced by `to` (which must occur exactly once).
fn typical_with(from: &str, to: &str) -> String {
    assert_eq!(
        TYPICAL_OK.matches(from).count(),
        1,
        "{from} must occur once"
    );
    TYPICAL_OK.replacen(from, to, 1)
}

type Expect = Result<(), (R, Option<&'static str>)>;

fn check(cases: &[(&str, String, Expect)]) {
    let q = typical();
    for (name, doc, expect) in cases {
        let got = verdict(&q, doc);
        let want = expect.map_err(|(r, k)| (r, k.map(str::to_owned)));
        assert_eq!(got, want, "case {name}: {doc}");
    }
}

#[test]
fn r_val_keys_typical_document_is_accepted() {
    check(&[("typical", TYPICAL_OK.to_owned(), Ok(()))]);
}

#[test]
fn r_val_keys_missing_unexpected_and_type_mismatch() {
    let nd = Some("needs_decision");
    check(&[
        (
            "missing answer",
            typical_with(r#""needs_decision":{"type":"noul","noul":0.8},"#, ""),
            Err((R::MissingAnswer, nd)),
        ),
        (
            "unexpected answer (key never repeated)",
            typical_with(
                r#""answers":{"#,
                r#""answers":{"extra":{"type":"noul","noul":0.5},"#,
            ),
            Err((R::UnexpectedAnswer, None)),
        ),
        (
            "answer given twice",
            typical_with(
                r#""answers":{"#,
                r#""answers":{"needs_decision":{"type":"noul","noul":0.5},"#,
            ),
            Err((R::UnexpectedAnswer, nd)),
        ),
        (
            "type differs",
            typical_with(
                r#"{"type":"noul","noul":0.8}"#,
                r#"{"type":"score","noul":0.8}"#,
            ),
            Err((R::TypeMismatch, nd)),
        ),
        (
            "unknown type",
            typical_with(
                r#"{"type":"noul","noul":0.8}"#,
                r#"{"type":"bool","noul":0.8}"#,
            ),
            Err((R::TypeMismatch, nd)),
        ),
        (
            "type not a string",
            typical_with(r#"{"type":"noul","noul":0.8}"#, r#"{"type":1,"noul":0.8}"#),
            Err((R::TypeMismatch, nd)),
        ),
        (
            "a choice answer for a noul question, type last",
            typical_with(
                r#"{"type":"noul","noul":0.8}"#,
                r#"{"choice":"a","probabilities":{"a":1},"confidence":1,"type":"choice"}"#,
            ),
            Err((R::TypeMismatch, nd)),
        ),
        (
            "answer not an object",
            typical_with(r#"{"type":"noul","noul":0.8}"#, "0.8"),
            Err((R::TypeMismatch, nd)),
        ),
        ("answers empty", envelope("{}"), Err((R::MissingAnswer, nd))),
        (
            "answers not an object",
            envelope("[]"),
            Err((R::InvalidField, None)),
        ),
        (
            "answers in another order, members reordered",
            typical_with(r#""needs_decision":{"type":"noul","noul":0.8},"#, "").replacen(
                r#""confidence":0.65}},"usage""#,
                r#""confidence":0.65},"needs_decision":{"noul":0.8,"type":"noul"}},"usage""#,
                1,
            ),
            Ok(()),
        ),
        (
            "escaped answer key",
            typical_with(r#""needs_decision":"#, r#""needs\u005fdecision":"#),
            Ok(()),
        ),
    ]);
}

#[test]
fn r_val_noul_range() {
    let nd = Some("needs_decision");
    let with = |p: &str| typical_with(r#""noul":0.8"#, &format!(r#""noul":{p}"#));
    check(&[
        ("zero", with("0"), Ok(())),
        ("one", with("1"), Ok(())),
        ("minus zero", with("-0"), Ok(())),
        ("exponent", with("8e-1"), Ok(())),
        ("tiny underflow is zero", with("1e-400"), Ok(())),
        ("negative", with("-0.01"), Err((R::ProbabilityRange, nd))),
        (
            "above one",
            with("1.0000001"),
            Err((R::ProbabilityRange, nd)),
        ),
        (
            "overflow to infinity",
            with("1e400"),
            Err((R::ProbabilityRange, nd)),
        ),
        ("string", with(r#""0.8""#), Err((R::ProbabilityRange, nd))),
        ("null", with("null"), Err((R::ProbabilityRange, nd))),
        ("bool", with("true"), Err((R::ProbabilityRange, nd))),
        (
            "broken literal is malformed",
            with("tru"),
            Err((R::MalformedJson, None)),
        ),
        (
            "missing noul",
            typical_with(r#","noul":0.8"#, ""),
            Err((R::MissingField, nd)),
        ),
        (
            "missing type",
            typical_with(r#""type":"noul","#, ""),
            Err((R::MissingField, nd)),
        ),
        (
            "unknown member",
            typical_with(r#""noul":0.8"#, r#""noul":0.8,"why":"x""#),
            Err((R::UnexpectedField, nd)),
        ),
        (
            "member of another type",
            typical_with(r#""noul":0.8"#, r#""noul":0.8,"confidence":0.5"#),
            Err((R::TypeMismatch, nd)),
        ),
        (
            "repeated member",
            typical_with(r#""noul":0.8"#, r#""noul":0.8,"noul":0.9"#),
            Err((R::MalformedJson, None)),
        ),
    ]);
}

#[test]
fn r_val_choice_options_maximum_and_confidence() {
    let ns = Some("next_step");
    check(&[
        (
            "unknown option in probabilities",
            typical_with(r#""stop":0.03"#, r#""stop":0.03,"halt":0"#),
            Err((R::UnknownOption, ns)),
        ),
        (
            "unknown chosen option",
            typical_with(r#""choice":"explain""#, r#""choice":"explains""#),
            Err((R::UnknownOption, ns)),
        ),
        (
            "chosen option not a string",
            typical_with(r#""choice":"explain""#, r#""choice":0"#),
            Err((R::UnknownOption, ns)),
        ),
        (
            "missing option",
            typical_with(r#","stop":0.03"#, ""),
            Err((R::MissingOption, ns)),
        ),
        (
            "repeated option",
            typical_with(r#""stop":0.03"#, r#""stop":0.03,"stop":0.03"#),
            Err((R::MalformedJson, None)),
        ),
        (
            "probabilities not an object",
            typical_with(
                r#"{"explain":0.62,"execute":0.2,"ask":0.1,"wait":0.05,"stop":0.03}"#,
                "[0.62,0.2,0.1,0.05,0.03]",
            ),
            Err((R::InvalidField, ns)),
        ),
        (
            "not the maximum",
            typical_with(r#""choice":"explain""#, r#""choice":"execute""#),
            Err((R::ChoiceNotMax, ns)),
        ),
        (
            "option probability out of range",
            typical_with(r#""stop":0.03"#, r#""stop":-0.03"#),
            Err((R::ProbabilityRange, ns)),
        ),
        (
            "confidence out of range",
            typical_with(r#""confidence":0.62"#, r#""confidence":1.62"#),
            Err((R::ProbabilityRange, ns)),
        ),
        (
            "missing confidence",
            typical_with(r#","confidence":0.62"#, ""),
            Err((R::MissingField, ns)),
        ),
        (
            "missing choice",
            typical_with(r#""choice":"explain","#, ""),
            Err((R::MissingField, ns)),
        ),
        (
            "missing probabilities",
            typical_with(
                r#""probabilities":{"explain":0.62,"execute":0.2,"ask":0.1,"wait":0.05,"stop":0.03},"#,
                "",
            ),
            Err((R::MissingField, ns)),
        ),
        (
            "choice after probabilities, options shuffled",
            typical_with(
                r#""choice":"explain","probabilities":{"explain":0.62,"execute":0.2,"ask":0.1,"wait":0.05,"stop":0.03}"#,
                r#""probabilities":{"stop":0.03,"ask":0.1,"explain":0.62,"wait":0.05,"execute":0.2},"choice":"explain""#,
            ),
            Ok(()),
        ),
    ]);
}

#[test]
fn r_val_choice_ties_at_the_maximum_are_accepted() {
    for n in [2usize, 3, 10, 255] {
        let q = choice_questions(n);
        // two options share the maximum; choosing either is fine
        let mut ps = vec!["0".to_owned(); n];
        ps[0] = "0.5".into();
        ps[n - 1] = "0.5".into();
        let refs: Vec<&str> = ps.iter().map(String::as_str).collect();
        assert_eq!(verdict(&q, &choice_answers(&refs, 0)), Ok(()), "n={n}");
        assert_eq!(verdict(&q, &choice_answers(&refs, n - 1)), Ok(()), "n={n}");
        if n > 2 {
            assert_eq!(
                verdict(&q, &choice_answers(&refs, 1)).unwrap_err().0,
                R::ChoiceNotMax,
                "n={n}"
            );
        }
    }
}

/// `n` probabilities written as hundredths summing to `total_hundredths`.
fn hundredths(n: usize, total: i64) -> Vec<String> {
    let base = total / n as i64;
    let mut rest = total - base * n as i64;
    (0..n)
        .map(|_| {
            let k = base + i64::from(rest > 0);
            rest -= i64::from(rest > 0);
            format!("{}.{:02}", k / 100, k % 100)
        })
        .collect()
}

fn sum_verdict(n: usize, ps: &[String]) -> Result<(), R> {
    let q = choice_questions(n);
    let refs: Vec<&str> = ps.iter().map(String::as_str).collect();
    // choose the first maximum so only the sum matters
    let max_i = (0..n)
        .max_by(|&a, &b| {
            let pa: f64 = refs[a].parse().unwrap();
            let pb: f64 = refs[b].parse().unwrap();
            pa.partial_cmp(&pb).unwrap().then(b.cmp(&a))
        })
        .unwrap();
    verdict(&q, &choice_answers(&refs, max_i)).map_err(|e| e.0)
}

#[test]
fn r_val_sum_rounding_envelope_at_each_option_count() {
    // allowed deviation in hundredths: n=1 → 0, n=2,3 → 1, n≥4 → 2 (min(0.005·n, 0.02))
    for (n, allowed) in [(1usize, 0i64), (2, 1), (3, 1), (4, 2), (10, 2), (255, 2)] {
        if n > 100 {
            continue;
        }
        for dev in -3i64..=3 {
            let ps = hundredths(n, 100 + dev);
            let want = if n == 1 && dev > 0 {
                Err(R::ProbabilityRange) // a single option above 1.00
            } else if dev.abs() <= allowed {
                Ok(())
            } else {
                Err(R::DistributionSum)
            };
            assert_eq!(sum_verdict(n, &ps), want, "n={n} dev={dev} {ps:?}");
        }
    }
}

#[test]
fn r_val_sum_rounding_envelope_with_255_options() {
    // 255 options: mostly zeros; the mass in a few hundredths
    let n = 255;
    for (dev, ok) in [(-2i64, true), (2, true), (-3, false), (3, false), (0, true)] {
        let mut ps = vec!["0".to_owned(); n];
        let total = 100 + dev;
        ps[0] = format!("0.{:02}", total - 60);
        ps[1] = "0.30".into();
        ps[2] = "0.20".into();
        ps[3] = "0.10".into();
        let want = if ok { Ok(()) } else { Err(R::DistributionSum) };
        assert_eq!(sum_verdict(n, &ps), want, "dev={dev}");
    }
}

#[test]
fn r_val_sum_099_and_101_from_hundredths_despite_binary_floats() {
    // these sums are not exactly 0.99 / 1.01 in binary; they must still be accepted
    for ps in [
        &["0.33", "0.33", "0.33"][..],
        &["0.34", "0.34", "0.33"][..],
        &["0.7", "0.29"][..],
        &["0.1", "0.2", "0.7", "0.01"][..],
        &["0.57", "0.22", "0.11", "0.07", "0.01", "0.01"][..],
    ] {
        let ps: Vec<String> = ps.iter().map(|s| s.to_string()).collect();
        assert_eq!(sum_verdict(ps.len(), &ps), Ok(()), "{ps:?}");
    }
}

#[test]
fn r_val_sum_full_precision_tolerance_edges() {
    let cases: &[(&[&str], bool)] = &[
        (&["0.5", "0.5"], true),
        (&["0.6005", "0.4005"], true), // 1.001
        (&["0.5995", "0.3995"], true), // 0.999
        (&["0.6006", "0.4005"], false),
        (&["0.5994", "0.3995"], false),
        (&["0.333", "0.333", "0.333"], true), // 0.999 exactly at the edge
        (&["0.3334", "0.3333", "0.3333"], true),
        (&["0.495", "0.5"], false), // one non-hundredth → 0.001 applies
        (&["1"], true),
        (&["0.9995"], true),
        (&["0.998"], false),
    ];
    for (ps, ok) in cases {
        let ps: Vec<String> = ps.iter().map(|s| s.to_string()).collect();
        let n = ps.len();
        let want = if *ok { Ok(()) } else { Err(R::DistributionSum) };
        assert_eq!(sum_verdict(n, &ps), want, "{ps:?}");
    }
}

#[test]
fn r_val_score_levels_sum_and_score() {
    for n in [2usize, 3, 10] {
        let q = score_questions(n);
        // all mass on the top level
        let mut levels = vec!["0"; n];
        levels[n - 1] = "1";
        let top = format!("{}", n - 1);
        assert_eq!(verdict(&q, &score_answers(&levels, &top)), Ok(()), "n={n}");
        // wrong score
        let off = format!("{}.5", n - 2);
        assert_eq!(
            verdict(&q, &score_answers(&levels, &off)),
            Err((R::ScoreMismatch, Some("s".into()))),
            "n={n}"
        );
        // one level too few / too many
        assert_eq!(
            verdict(&q, &score_answers(&levels[1..], &top))
                .unwrap_err()
                .0,
            R::LevelCount
        );
        let mut more = levels.clone();
        more.push("0");
        assert_eq!(
            verdict(&q, &score_answers(&more, &top)).unwrap_err().0,
            R::LevelCount
        );
    }
    let q = score_questions(3);
    let ok = |levels: &[&str], s: &str| verdict(&q, &score_answers(levels, s)).map_err(|e| e.0);
    // rounded levels: score within ±0.015 (n = 3) of Σ i·p
    assert_eq!(ok(&["0.20", "0.30", "0.50"], "1.3"), Ok(()));
    assert_eq!(ok(&["0.20", "0.30", "0.50"], "1.31"), Ok(()));
    assert_eq!(ok(&["0.20", "0.30", "0.50"], "1.29"), Ok(()));
    assert_eq!(ok(&["0.20", "0.30", "0.50"], "1.32"), Err(R::ScoreMismatch));
    assert_eq!(ok(&["0.20", "0.30", "0.50"], "1.315"), Ok(()));
    assert_eq!(
        ok(&["0.20", "0.30", "0.50"], "1.3151"),
        Err(R::ScoreMismatch)
    );
    // full-precision levels: ±0.001
    assert_eq!(ok(&["0.2", "0.3", "0.5001"], "1.3002"), Ok(()));
    assert_eq!(ok(&["0.2", "0.3", "0.5001"], "1.3012"), Ok(()));
    assert_eq!(
        ok(&["0.2", "0.3", "0.5001"], "1.3013"),
        Err(R::ScoreMismatch)
    );
    // level sum checked like a choice's
    assert_eq!(
        ok(&["0.20", "0.30", "0.52"], "1.34"),
        Err(R::DistributionSum)
    );
    assert_eq!(ok(&["0.20", "0.30", "0.51"], "1.32"), Ok(()));
    // range and kinds
    assert_eq!(ok(&["-0.1", "0.6", "0.5"], "1.6"), Err(R::ProbabilityRange));
    assert_eq!(
        ok(&["0.2", "0.3", "0.5"], r#""1.3""#),
        Err(R::ScoreMismatch)
    );
    assert_eq!(ok(&["0.2", "0.3", "0.5"], "1e400"), Err(R::ScoreMismatch));
}

#[test]
fn r_val_score_legend_and_fields() {
    let cl = Some("clarity");
    let legend = r#""legend":["Unspecified","Partially specified","Fully specified"]"#;
    check(&[
        (
            "legend too short",
            typical_with(legend, r#""legend":["Unspecified","Partially specified"]"#),
            Err((R::LevelCount, cl)),
        ),
        (
            "legend too long",
            typical_with(legend, r#""legend":["a","b","c","d"]"#),
            Err((R::LevelCount, cl)),
        ),
        (
            "legend other words",
            typical_with(legend, r#""legend":["low","mid","high"]"#),
            Ok(()),
        ),
        (
            "legend entry not a string",
            typical_with(legend, r#""legend":["low",1,"high"]"#),
            Err((R::InvalidField, cl)),
        ),
        (
            "legend not an array",
            typical_with(legend, r#""legend":"low,mid,high""#),
            Err((R::LevelCount, cl)),
        ),
        (
            "levels not an array",
            typical_with(r#""levels":[0.1,0.25,0.65]"#, r#""levels":{"0":0.1}"#),
            Err((R::LevelCount, cl)),
        ),
        (
            "missing legend",
            typical_with(&format!(",{legend}"), ""),
            Err((R::MissingField, cl)),
        ),
        (
            "missing levels",
            typical_with(r#","levels":[0.1,0.25,0.65]"#, ""),
            Err((R::MissingField, cl)),
        ),
        (
            "missing score",
            typical_with(r#""score":1.55,"#, ""),
            Err((R::MissingField, cl)),
        ),
        (
            "probabilities in a score answer",
            typical_with(r#""score":1.55,"#, r#""score":1.55,"probabilities":{},"#),
            Err((R::TypeMismatch, cl)),
        ),
    ]);
}

#[test]
fn r_val_usage_and_billing() {
    let usage = r#""usage":{"input_tokens":120,"output_tokens":8}"#;
    let with_usage = |u: &str| typical_with(usage, u);
    check(&[
        (
            "fractional",
            with_usage(r#""usage":{"input_tokens":120.5,"output_tokens":8}"#),
            Err((R::UsageInvalid, None)),
        ),
        (
            "integral but written with a fraction",
            with_usage(r#""usage":{"input_tokens":120.0,"output_tokens":8}"#),
            Err((R::UsageInvalid, None)),
        ),
        (
            "exponent",
            with_usage(r#""usage":{"input_tokens":1e2,"output_tokens":8}"#),
            Err((R::UsageInvalid, None)),
        ),
        (
            "negative",
            with_usage(r#""usage":{"input_tokens":120,"output_tokens":-8}"#),
            Err((R::UsageInvalid, None)),
        ),
        (
            "string",
            with_usage(r#""usage":{"input_tokens":"120","output_tokens":8}"#),
            Err((R::UsageInvalid, None)),
        ),
        (
            "too large",
            with_usage(r#""usage":{"input_tokens":18446744073709551616,"output_tokens":8}"#),
            Err((R::UsageInvalid, None)),
        ),
        (
            "missing count",
            with_usage(r#""usage":{"input_tokens":120}"#),
            Err((R::MissingField, None)),
        ),
        (
            "extra usage members pass",
            with_usage(r#""usage":{"input_tokens":120,"output_tokens":8,"total_tokens":128}"#),
            Ok(()),
        ),
        (
            "usage not an object",
            with_usage(r#""usage":[120,8]"#),
            Err((R::UsageInvalid, None)),
        ),
        (
            "missing usage",
            typical_with(&format!(",{usage}"), ""),
            Err((R::MissingField, None)),
        ),
        (
            "billing passes",
            with_usage(&format!(
                r#"{usage},"billing":{{"charged_credits":0.25,"rate_version":"2026-01"}}"#
            )),
            Ok(()),
        ),
        (
            "billing null",
            with_usage(&format!(r#"{usage},"billing":null"#)),
            Ok(()),
        ),
        (
            "billing negative",
            with_usage(&format!(r#"{usage},"billing":{{"charged_credits":-1}}"#)),
            Err((R::UsageInvalid, None)),
        ),
        (
            "billing rate not a string",
            with_usage(&format!(
                r#"{usage},"billing":{{"charged_credits":1,"rate_version":2}}"#
            )),
            Err((R::UsageInvalid, None)),
        ),
        (
            "billing without credits",
            with_usage(&format!(r#"{usage},"billing":{{"rate_version":"v"}}"#)),
            Err((R::MissingField, None)),
        ),
    ]);
}

#[test]
fn r_val_envelope_and_malformed_json() {
    check(&[
        ("empty", String::new(), Err((R::MalformedJson, None))),
        ("array", "[]".into(), Err((R::MalformedJson, None))),
        (
            "truncated",
            TYPICAL_OK[..TYPICAL_OK.len() - 1].into(),
            Err((R::MalformedJson, None)),
        ),
        (
            "trailing bytes",
            format!("{TYPICAL_OK} x"),
            Err((R::MalformedJson, None)),
        ),
        ("trailing whitespace", format!(" {TYPICAL_OK}\n\t "), Ok(())),
        (
            "two documents",
            format!("{TYPICAL_OK}{TYPICAL_OK}"),
            Err((R::MalformedJson, None)),
        ),
        (
            "missing model",
            typical_with(r#""model":"jev-1.13.0","#, ""),
            Err((R::MissingField, None)),
        ),
        (
            "model not a string",
            typical_with(r#""model":"jev-1.13.0""#, r#""model":13"#),
            Err((R::InvalidField, None)),
        ),
        (
            "repeated model",
            typical_with(r#""model":"jev-1.13.0","#, r#""model":"a","model":"b","#),
            Err((R::MalformedJson, None)),
        ),
        (
            "missing answers",
            envelope("{}").replacen(r#""answers":{},"#, "", 1),
            Err((R::MissingField, None)),
        ),
        (
            "unknown envelope members are skipped",
            typical_with(
                r#""model":"jev-1.13.0","#,
                r#""model":"jev-1.13.0","route":{"region":["eu",1,null,true,{"x":-1.5e3}]},"request_id":"r","requested_model":"cat/jev","#,
            ),
            Ok(()),
        ),
        (
            "malformed inside a skipped member",
            typical_with(
                r#""model":"jev-1.13.0","#,
                r#""model":"jev-1.13.0","route":[1,],"#,
            ),
            Err((R::MalformedJson, None)),
        ),
        (
            "non-ASCII UTF-8 in a string",
            typical_with(r#""jev-1.13.0""#, "\"jev-\u{e9}\u{1F600}\""),
            Ok(()),
        ),
        (
            "lone surrogate",
            typical_with(r#""jev-1.13.0""#, r#""jev\ud800""#),
            Err((R::MalformedJson, None)),
        ),
        (
            "control character in a string",
            typical_with(r#""jev-1.13.0""#, "\"jev\u{1}\""),
            Err((R::MalformedJson, None)),
        ),
        (
            "leading zero",
            typical_with(r#""noul":0.8"#, r#""noul":00.8"#),
            Err((R::MalformedJson, None)),
        ),
    ]);
    // raw invalid UTF-8 bytes
    let q = typical();
    let mut bytes = TYPICAL_OK.as_bytes().to_vec();
    let at = TYPICAL_OK.find("jev-1").unwrap();
    bytes[at] = 0xff;
    assert_eq!(
        validate_response(&q, &bytes).unwrap_err().reason(),
        R::MalformedJson
    );
}

#[test]
fn r_val_error_never_quotes_provider_text() {
    let q = typical();
    let doc = typical_with(r#""answers":{"#, r#""answers":{"SECRET-key":1,"#);
    let err = validate_response(&q, doc.as_bytes()).unwrap_err();
    assert_eq!(err.reason(), R::UnexpectedAnswer);
    assert!(!err.to_string().contains("SECRET"));
    assert_eq!(err.code(), "JEV_MALFORMED_RESPONSE");
}

#[test]
fn r_val_numbers_come_back_unchanged_and_serialize_to_the_wire_shape() {
    let q = typical();
    let doc = typical_with(r#""noul":0.8"#, r#""noul":0.80000000000000004"#)
        .replace(r#""execute":0.2"#, r#""execute":2e-1"#);
    let r = validate_response(&q, doc.as_bytes()).unwrap();
    let answers = r.answers();
    assert_eq!(
        answers.get("needs_decision"),
        Some(Answer::Noul { noul: 0.8 })
    );
    let Some(Answer::Choice(c)) = answers.get("next_step") else {
        panic!("choice expected")
    };
    assert_eq!(c.choice(), "explain");
    assert_eq!(
        c.probability_values(),
        &[0.62, 0.2, 0.1, 0.05, 0.03][..],
        "exactly the parsed doubles"
    );
    assert_eq!(c.confidence(), 0.62);
    let Some(Answer::Score(s)) = answers.get("clarity") else {
        panic!("score expected")
    };
    assert_eq!(
        (s.score(), s.levels(), s.confidence()),
        (1.55, &[0.1, 0.25, 0.65][..], 0.65)
    );
    assert_eq!(s.legend().len(), 3);
    // serialization: the same document, numbers in shortest form
    let out: serde_json::Value = serde_json::to_value(&r).unwrap();
    let want: serde_json::Value = serde_json::from_str(TYPICAL_OK).unwrap();
    assert_eq!(out, want);
    let answers_only = serde_json::to_value(r.answers()).unwrap();
    assert_eq!(answers_only, want["answers"]);
}

#[test]
fn r_val_escaped_strings_are_decoded() {
    let q = typical();
    let doc = typical_with(r#""model":"jev-1.13.0""#, r#""model":"jev\u002d1.13.0\n""#)
        .replace(r#""choice":"explain""#, r#""choice":"expl\u0061in""#)
        .replace(
            r#""Unspecified","Partially"#,
            r#""Un\"spec\"ified","Partially"#,
        );
    let r = validate_response(&q, doc.as_bytes()).unwrap();
    assert_eq!(r.model(), "jev-1.13.0\n");
    let Some(Answer::Score(s)) = r.answers().get("clarity") else {
        panic!()
    };
    assert_eq!(s.legend().next().unwrap(), "Un\"spec\"ified");
}

#[test]
fn r_val_keys_many_questions_beyond_the_stack_bitset() {
    let n = 300;
    let qs: Vec<String> = (0..n)
        .map(|i| format!(r#""q{i}":{{"type":"noul"}}"#))
        .collect();
    let limits = crate::jev::Limits {
        max_questions: 1000,
        ..Default::default()
    };
    let q = crate::jev::Questions::from_json(format!("{{{}}}", qs.join(",")).as_bytes(), &limits)
        .unwrap();
    let mut answers: Vec<String> = (0..n)
        .rev()
        .map(|i| format!(r#""q{i}":{{"type":"noul","noul":0.5}}"#))
        .collect();
    assert_eq!(
        verdict(&q, &envelope(&format!("{{{}}}", answers.join(",")))),
        Ok(())
    );
    answers.remove(7);
    assert_eq!(
        verdict(&q, &envelope(&format!("{{{}}}", answers.join(",")))),
        Err((R::MissingAnswer, Some("q292".into())))
    );
}
