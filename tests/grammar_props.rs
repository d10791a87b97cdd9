//! Property tests of the grammar (R-GRM-PARSE, R-GRM-FILLER, R-GRM-STEPS, R-GRM-PARTS,
//! R-GRM-URL): no panic and bounded work on arbitrary Unicode up to 64 KiB; filler stripping
//! never changes the stored text; steps and parts are substrings of their input.

use std::time::{Duration, Instant};

use jevgate::grammar::{
    check_model_address, parse_command, split_parts, split_steps, strip_fillers, Intent,
};
use proptest::prelude::*;

/// Words, markers and punctuation the grammar reacts to, to reach its deep paths.
const VOCAB: &[&str] = &[
    "scroll",
    "ลง",
    "ขึ้น",
    "เลื่อน",
    "กด",
    "enter",
    "tab",
    "x3",
    "ๆ",
    "ลบ",
    "delete",
    "ค้นหา",
    "search",
    "พิมพ์",
    "type",
    "เข้า",
    "go to",
    "google",
    "example.com",
    "https://",
    "javascript:",
    "@",
    "1.",
    "2.",
    "3)",
    "-",
    "•",
    "\n",
    ",",
    "，",
    " แล้ว",
    " จากนั้น",
    "then",
    "\"",
    "“",
    "”",
    "「",
    ":",
    ": ",
    "You are",
    "คุณกำลัง",
    "ถ้า",
    "if",
    "start with step 1",
    "ห้า",
    "สิบ",
    "ร้อย",
    "พัน",
    "ล้าน",
    "เอ็ด",
    "ยี่",
    "๕",
    "0",
    "9",
    "เอ่อ",
    "ครับ",
    "นะ",
    "ok",
    ".",
    "!",
    "?",
    "⌘",
    "Cmd+T",
    "ใหม่",
    "แท็บ",
    "ย้อนกลับ",
    "back",
    "ลูกศร",
    "[",
    "]",
    "::1",
    "127.0.0.1",
    "\u{200b}",
    "\u{0e31}",
    "\u{0301}",
    "🙂",
    "\r",
    "\t",
    " ",
    "  ",
];

fn grammarish() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(VOCAB), 0..48).prop_map(|w| w.concat())
}

/// Arbitrary Unicode or grammar-shaped text, repeated up to 64 KiB.
fn big_text() -> impl Strategy<Value = String> {
    let unit = prop_oneof![any::<String>(), grammarish(), "\\PC{0,40}"];
    (unit, 1usize..4096).prop_map(|(u, times)| {
        let max = 64 * 1024;
        if u.is_empty() {
            return u;
        }
        let reps = times.min(max / u.len().max(1)).max(1);
        let mut s = u.repeat(reps);
        let mut cut = s.len().min(max);
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
        s
    })
}

fn is_sub_slice(whole: &str, part: &str) -> bool {
    let start = part.as_ptr() as usize;
    let base = whole.as_ptr() as usize;
    start >= base && start + part.len() <= base + whole.len()
}

/// Generous bound in unoptimised test builds; the release bench is ~1000× faster.
const BOUND: Duration = Duration::from_secs(2);

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn r_grm_parse_never_panics_and_work_is_bounded_on_64k_unicode(text in big_text()) {
        let t = Instant::now();
        let intent = parse_command(&text);
        let json: serde_json::Value = serde_json::from_str(&intent.to_json()).unwrap();
        prop_assert!(json["intent"].is_string());
        let _ = split_steps(&text);
        let _ = split_parts(&text);
        let _ = check_model_address(&text);
        prop_assert!(t.elapsed() < BOUND, "took {:?} on {} bytes", t.elapsed(), text.len());
    }

    #[test]
    fn r_grm_filler_stripping_never_changes_the_stored_text(text in prop_oneof![grammarish(), any::<String>()]) {
        let stored = text.clone();
        let matched = strip_fillers(&text);
        prop_assert!(is_sub_slice(&text, matched));
        let _ = parse_command(&text);
        prop_assert_eq!(&text, &stored);
        // Text an intent carries comes from the user's own words.
        match parse_command(&text) {
            Intent::Type { text: t } | Intent::Search { text: t } => prop_assert!(text.contains(&t)),
            Intent::Decide { text_offer: Some(t) } => prop_assert!(text.contains(&t)),
            _ => {}
        }
    }

    #[test]
    fn r_grm_steps_are_substrings_of_the_message(text in prop_oneof![grammarish(), any::<String>()]) {
        if let Some(steps) = split_steps(&text) {
            prop_assert!(steps.len() >= 2 && steps.len() <= jevgate::grammar::MAX_STEPS);
            for s in &steps {
                prop_assert!(!s.is_empty());
                prop_assert!(text.contains(s.as_str()), "{:?} not in {:?}", s, text);
                prop_assert!(s.chars().count() <= jevgate::grammar::MAX_STEP_CHARS);
            }
        }
    }

    #[test]
    fn r_grm_parts_are_substrings_of_the_step(text in prop_oneof![grammarish(), any::<String>()]) {
        for p in split_parts(&text) {
            prop_assert!(!p.is_empty());
            prop_assert!(text.contains(p.as_str()));
        }
    }

    #[test]
    fn r_grm_url_accepted_model_addresses_are_http_or_https(text in prop_oneof![grammarish(), "[a-z0-9.:/@\\[\\]-]{0,40}"]) {
        if let Ok(url) = check_model_address(&text) {
            let lower = url.to_ascii_lowercase();
            prop_assert!(lower.starts_with("https://") || lower.starts_with("http://"));
            prop_assert!(!url.contains('@'));
            prop_assert!(!lower.contains("localhost"));
        }
    }

    #[test]
    fn r_grm_parse_navigate_only_ever_opens_http_or_https(text in grammarish()) {
        if let Intent::Navigate { url } = parse_command(&text) {
            let lower = url.to_ascii_lowercase();
            prop_assert!(lower.starts_with("https://") || lower.starts_with("http://"), "{}", url);
            prop_assert!(!url.contains('@'));
        }
    }
}

#[test]
fn r_grm_parse_adversarial_64k_inputs_stay_fast() {
    let max = 64 * 1024;
    let shapes = [
        "ลบๆ",
        "1. a ",
        "a. ",
        "\"",
        "เอ่อ ",
        "ครับ",
        "ห้า",
        "สิบ",
        ", ",
        " แล้ว",
        "if ",
        "x",
        ":",
        "1.",
        "Start with step 1. ",
        "https://a.b/",
        "- a\n",
        "ๆ ",
    ];
    for shape in shapes {
        let text = shape.repeat(max / shape.len());
        let t = Instant::now();
        let _ = parse_command(&text);
        let _ = split_steps(&text);
        let _ = split_parts(&text);
        let _ = check_model_address(&text);
        assert!(t.elapsed() < BOUND, "{shape:?} took {:?}", t.elapsed());
    }
}
