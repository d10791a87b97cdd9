//! R-VAL-FAST: the scanner's numbers are exactly the doubles serde_json and `str::parse` give.

use crate::jev::lex::Lexer;
use proptest::prelude::*;

fn scanned(text: &str) -> f64 {
    let mut lx = Lexer::new(text.as_bytes());
    let n = lx.number().expect("number syntax");
    assert!(lx.at_end(), "{text} fully consumed");
    n.to_f64()
}

fn assert_exact(text: &str) {
    let ours = scanned(text);
    let std: f64 = text.parse().expect("std parses");
    let serde: f64 = serde_json::from_str(text).unwrap_or(std);
    assert_eq!(
        ours.to_bits(),
        std.to_bits(),
        "{text}: ours {ours:e} std {std:e}"
    );
    if std.is_finite() {
        assert_eq!(
            ours.to_bits(),
            serde.to_bits(),
            "{text}: serde_json {serde:e}"
        );
    }
}

#[test]
fn r_val_fast_float_edges_are_exact() {
    for t in [
        "0",
        "-0",
        "0.0",
        "1",
        "0.1",
        "0.2",
        "0.3",
        "0.01",
        "0.99",
        "1.01",
        "0.333333333333333333",
        "0.1000000000000000055511151231257827",
        "9007199254740992",
        "9007199254740993",
        "9007199254740995",
        "18446744073709551615",
        "18446744073709551616",
        "1e22",
        "1e23",
        "1.7976931348623157e308",
        "1.7976931348623159e308",
        "2.2250738585072011e-308",
        "2.2250738585072014e-308",
        "4.9e-324",
        "2.4e-324",
        "1e-400",
        "1e400",
        "123456789e-30",
        "0.000000000000000000000000000001",
        "7.038531e-26",
        "8.98846567431158e307",
        "0.30000000000000004",
        "0.7999999999999999",
        "0.8000000000000002",
        "1E+2",
        "1e-0",
        "-1.5e-5",
        "100000000000000000000000000000000000001e-38",
    ] {
        assert_exact(t);
    }
}

fn number_text() -> impl Strategy<Value = String> {
    (
        any::<bool>(),
        "(0|[1-9][0-9]{0,24})",
        proptest::option::of("[0-9]{1,24}"),
        proptest::option::of((
            prop_oneof![Just("e"), Just("E")],
            prop_oneof![Just(""), Just("+"), Just("-")],
            0u32..400,
        )),
    )
        .prop_map(|(neg, int, frac, exp)| {
            let mut s = String::new();
            if neg {
                s.push('-');
            }
            s.push_str(&int);
            if let Some(f) = frac {
                s.push('.');
                s.push_str(&f);
            }
            if let Some((e, sign, v)) = exp {
                s.push_str(&format!("{e}{sign}{v}"));
            }
            s
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn r_val_fast_generated_numbers_parse_exactly(text in number_text()) {
        assert_exact(&text);
    }

    #[test]
    fn r_val_fast_printed_doubles_round_trip(bits in any::<u64>()) {
        let x = f64::from_bits(bits);
        prop_assume!(x.is_finite());
        let shortest = format!("{x}");
        let sci = format!("{x:e}");
        prop_assert_eq!(scanned(&shortest).to_bits(), x.to_bits());
        prop_assert_eq!(scanned(&sci).to_bits(), x.to_bits());
    }

    #[test]
    fn r_val_fast_probabilities_round_trip(p in 0.0f64..=1.0) {
        prop_assert_eq!(scanned(&format!("{p}")).to_bits(), p.to_bits());
        assert_exact(&format!("{p:.17}"));
        assert_exact(&format!("{p:.3}"));
    }
}
