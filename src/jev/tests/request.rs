//! R-JEV-REQ: questions, limits and request checks.

use crate::jev::{Content, Limits, Question, QuestionType, Questions, Request};

fn q_err(json: &str) -> (String, String) {
    let e = Questions::from_json(json.as_bytes(), &Limits::default()).unwrap_err();
    assert_eq!(e.code(), "JEV_INVALID_REQUEST");
    (e.path().to_owned(), e.message().to_owned())
}

#[test]
fn r_jev_req_option_and_level_limits() {
    let opts = |n: usize| {
        let o: Vec<String> = (0..n).map(|i| format!("\"o{i}\":\"d\"")).collect();
        format!(
            r#"{{"c":{{"type":"choice","criteria":{{{}}}}}}}"#,
            o.join(",")
        )
    };
    for n in [1, 2, 255] {
        assert!(
            Questions::from_json(opts(n).as_bytes(), &Limits::default()).is_ok(),
            "{n}"
        );
    }
    for n in [0, 256] {
        assert_eq!(q_err(&opts(n)).0, "c.criteria", "{n}");
    }
    let levels = |n: usize| {
        let l: Vec<String> = (0..n).map(|i| format!("\"l{i}\"")).collect();
        format!(r#"{{"s":{{"type":"score","criteria":[{}]}}}}"#, l.join(","))
    };
    for n in [2, 10] {
        assert!(Questions::from_json(levels(n).as_bytes(), &Limits::default()).is_ok());
    }
    for n in [0, 1, 11] {
        assert_eq!(q_err(&levels(n)).0, "s.criteria", "{n}");
    }
}

#[test]
fn r_jev_req_question_count_limits() {
    let many = |n: usize| {
        let q: Vec<String> = (0..n)
            .map(|i| format!(r#""q{i}":{{"type":"noul"}}"#))
            .collect();
        format!("{{{}}}", q.join(","))
    };
    assert!(Questions::from_json(many(64).as_bytes(), &Limits::default()).is_ok());
    let (path, msg) = q_err(&many(65));
    assert_eq!(path, "");
    assert!(msg.contains("maxQuestions"), "{msg}");
    assert!(q_err("{}").1.contains("not 0"));
    let five = Limits {
        max_questions: 5,
        ..Limits::default()
    };
    assert!(Questions::from_json(many(6).as_bytes(), &five).is_err());
}

#[test]
fn r_jev_req_shapes_are_checked_without_quoting_text() {
    let cases = [
        (r#"{"a":{"type":"bool"}}"#, "a"),
        (r#"{"a":{"type":"noul","criteria":["x","y"]}}"#, "a"),
        (r#"{"a":{"type":"choice"}}"#, "a"),
        (r#"{"a":{"type":"choice","criteria":["x","y"]}}"#, "a"),
        (r#"{"a":{"type":"score","criteria":{"x":"y"}}}"#, "a"),
        (
            r#"{"a":{"type":"noul","instructionz":"x"}}"#,
            "a.instructionz",
        ),
        (
            r#"{"a":{"type":"choice","criteria":{"x":"TOPSECRET","x":"y"}}}"#,
            "a.criteria",
        ),
        (
            r#"{"a":{"type":"choice","criteria":{"x":1}}}"#,
            "a.criteria.x",
        ),
        (
            r#"{"a":{"type":"noul","instructions":42}}"#,
            "a.instructions",
        ),
        (
            r#"{"a":{"type":"score","criteria":["TOPSECRET",3]}}"#,
            "a.criteria[1]",
        ),
    ];
    for (json, path) in cases {
        let (p, msg) = q_err(json);
        assert_eq!(p, path, "{json}: {msg}");
        assert!(!msg.contains("TOPSECRET"), "{msg}");
    }
    assert_eq!(q_err(r#"{"a":{"type":"noul"},"a":{"type":"noul"}}"#).0, "");
    assert_eq!(q_err(r#"{"a":{"type":"noul"}} x"#).0, "");
    assert_eq!(q_err("[").0, "");
    let (_, msg) = q_err(r#"{"a":{"type":"score","criteria":"TOPSECRET"}}"#);
    assert!(!msg.contains("TOPSECRET"), "{msg}");
}

/// A secret pasted as a member name (or a question type) is never echoed: serde's
/// ``unknown field `…` `` names it in backticks, and the path carries it (issue 12 item 10).
#[test]
fn r_jev_req_unknown_member_names_are_not_echoed() {
    for json in [
        r#"{"a":{"type":"noul","sk-live-TOPSECRET":"x"}}"#,
        r#"{"a":{"type":"noul","TOPSECRET":"x"}}"#,
        r#"{"a":{"type":"sk-live-TOPSECRET"}}"#,
    ] {
        let (p, msg) = q_err(json);
        assert!(
            !msg.contains("TOPSECRET") && !p.contains("sk-live"),
            "{json}: {p}: {msg}"
        );
    }
    let (_, msg) = q_err(r#"{"a":{"type":"noul","TOPSECRET":"x"}}"#);
    assert!(msg.contains("expected one of"), "{msg}");
}

#[test]
fn r_jev_req_order_is_kept_and_round_trips() {
    let json = r#"{"z":{"type":"noul","instructions":"Z?"},"a":{"type":"choice","instructions":{"k":[1]},"criteria":{"y":"Y","b":"B"}},"m":{"type":"score","instructions":["x"],"criteria":["0","1"]}}"#;
    let q = Questions::from_json(json.as_bytes(), &Limits::default()).unwrap();
    assert_eq!(
        q.iter().map(|q| q.key()).collect::<Vec<_>>(),
        ["z", "a", "m"]
    );
    let a = q.get("a").unwrap();
    assert_eq!(a.question_type(), QuestionType::Choice);
    assert_eq!(a.options().map(|(k, _)| k).collect::<Vec<_>>(), ["y", "b"]);
    assert!(matches!(a.instructions(), Some(Content::Object(_))));
    assert_eq!(serde_json::to_string(&q).unwrap(), json);
}

#[test]
fn r_jev_req_builders_check_limits() {
    assert!(Question::choice("c", "?", Vec::<(String, String)>::new()).is_err());
    assert!(Question::choice("c", "?", [("a", "A"), ("a", "B")]).is_err());
    assert!(Question::score("s", "?", ["a"; 11]).is_err());
    let q = Questions::new(
        [
            Question::noul("n", "?"),
            Question::score("s", "?", ["lo", "hi"]).unwrap(),
        ],
        &Limits::default(),
    )
    .unwrap();
    assert_eq!(q.len(), 2);
    assert!(Questions::new([], &Limits::default()).is_err());
}

#[test]
fn r_jev_req_request_id_state_and_size() {
    let limits = Limits::default();
    let body = |extra: &str, state: &str| {
        format!(
            r#"{{{extra}"agentId":"assistant","state":{state},"questions":{{"g":{{"type":"noul","instructions":"?"}}}}}}"#
        )
    };
    for state in [r#""Hello""#, r#"{"page":"x"}"#, r#"[1,"a"]"#] {
        let r = Request::from_json(body("", state).as_bytes(), &limits).unwrap();
        assert_eq!(r.agent_id, "assistant");
    }
    for state in ["42", "null", "true"] {
        let e = Request::from_json(body("", state).as_bytes(), &limits).unwrap_err();
        assert_eq!(e.path(), "state", "{state}");
    }
    let id_ok = format!(r#""requestId":"{}","#, "x".repeat(256));
    assert!(Request::from_json(body(&id_ok, "\"s\"").as_bytes(), &limits).is_ok());
    for bad in [
        String::new(),
        "x".repeat(257),
        "a b".into(),
        "caf\u{e9}".into(),
        "tab\\t".into(),
    ] {
        let extra = format!(r#""requestId":"{bad}","#);
        let e = Request::from_json(body(&extra, "\"s\"").as_bytes(), &limits).unwrap_err();
        assert_eq!(e.path(), "requestId", "{bad:?}");
    }
    let e = Request::from_json(body(r#""agentId2":1,"#, "\"s\"").as_bytes(), &limits).unwrap_err();
    assert_eq!(e.code(), "JEV_INVALID_REQUEST");
    // maxInputBytes is measured on the UTF-8 JSON, before parsing
    let doc = body("", &format!("\"{}\"", "\u{e9}".repeat(100)));
    let exact = Limits {
        max_input_bytes: doc.len(),
        ..limits
    };
    assert!(Request::from_json(doc.as_bytes(), &exact).is_ok());
    let one_less = Limits {
        max_input_bytes: doc.len() - 1,
        ..limits
    };
    let e = Request::from_json(doc.as_bytes(), &one_less).unwrap_err();
    assert!(e.message().contains("maxInputBytes"));
    let not_json = Request::from_json(b"{oops", &one_less).unwrap_err();
    assert_eq!(not_json.path(), "");
    // a request built in code is measured on its compact JSON
    let r = Request::from_json(doc.as_bytes(), &exact).unwrap();
    let compact = serde_json::to_vec(&r).unwrap();
    let tight = Limits {
        max_input_bytes: compact.len(),
        ..limits
    };
    assert!(r.check(&tight).is_ok());
    let tighter = Limits {
        max_input_bytes: compact.len() - 1,
        ..limits
    };
    assert!(r.check(&tighter).is_err());
}
