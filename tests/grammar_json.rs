//! The intent JSON shapes are fixed (issue 5; R-GRM-PARSE): hosts, C, Python and the CLI print
//! exactly these. The observation JSON is camelCase exactly as SPEC §6 R-BRW-OBS writes it.

use jevgate::grammar::{CalcKey, HistoryDirection, Intent, Key, ScrollDirection};
use jevgate::observation::Observation;

#[test]
fn r_grm_parse_every_intent_serializes_to_its_fixed_shape() {
    let cases: Vec<(Intent, &str)> = vec![
        (
            Intent::Scroll {
                direction: ScrollDirection::Up,
            },
            r#"{"intent":"scroll","direction":"up"}"#,
        ),
        (
            Intent::Scroll {
                direction: ScrollDirection::Down,
            },
            r#"{"intent":"scroll","direction":"down"}"#,
        ),
        (
            Intent::Key {
                key: Key::Enter,
                count: 1,
            },
            r#"{"intent":"key","key":"Enter","count":1}"#,
        ),
        (
            Intent::Key {
                key: Key::Tab,
                count: 2,
            },
            r#"{"intent":"key","key":"Tab","count":2}"#,
        ),
        (
            Intent::Key {
                key: Key::Escape,
                count: 1,
            },
            r#"{"intent":"key","key":"Escape","count":1}"#,
        ),
        (
            Intent::Key {
                key: Key::Backspace,
                count: 3,
            },
            r#"{"intent":"key","key":"Backspace","count":3}"#,
        ),
        (
            Intent::Key {
                key: Key::ArrowUp,
                count: 1,
            },
            r#"{"intent":"key","key":"ArrowUp","count":1}"#,
        ),
        (
            Intent::Key {
                key: Key::ArrowDown,
                count: 1,
            },
            r#"{"intent":"key","key":"ArrowDown","count":1}"#,
        ),
        (
            Intent::Key {
                key: Key::ArrowLeft,
                count: 1,
            },
            r#"{"intent":"key","key":"ArrowLeft","count":1}"#,
        ),
        (
            Intent::Key {
                key: Key::ArrowRight,
                count: 1,
            },
            r#"{"intent":"key","key":"ArrowRight","count":1}"#,
        ),
        (
            Intent::History {
                direction: HistoryDirection::Back,
            },
            r#"{"intent":"history","direction":"back"}"#,
        ),
        (
            Intent::History {
                direction: HistoryDirection::Forward,
            },
            r#"{"intent":"history","direction":"forward"}"#,
        ),
        (
            Intent::Search {
                text: "แมว".into()
            },
            r#"{"intent":"search","text":"แมว"}"#,
        ),
        (
            Intent::Type {
                text: "a\"b".into(),
            },
            r#"{"intent":"type","text":"a\"b"}"#,
        ),
        (
            Intent::Navigate {
                url: "https://google.com".into(),
            },
            r#"{"intent":"navigate","url":"https://google.com"}"#,
        ),
        (Intent::NewTab, r#"{"intent":"new_tab"}"#),
        (Intent::NewWindow, r#"{"intent":"new_window"}"#),
        (Intent::CloseTab, r#"{"intent":"close_tab"}"#),
        (Intent::QuitApp, r#"{"intent":"quit_app"}"#),
        (
            Intent::Erase {
                count: 3,
                also_subtract: false,
            },
            r#"{"intent":"erase","count":3}"#,
        ),
        (
            Intent::Erase {
                count: 1,
                also_subtract: true,
            },
            r#"{"intent":"erase","count":1}"#,
        ),
        (
            Intent::Digits {
                digits: "150".into(),
            },
            r#"{"intent":"digits","digits":"150"}"#,
        ),
        (
            Intent::CalcKey { key: CalcKey::Add },
            r#"{"intent":"calc_key","key":"Add"}"#,
        ),
        (
            Intent::CalcKey {
                key: CalcKey::Subtract,
            },
            r#"{"intent":"calc_key","key":"Subtract"}"#,
        ),
        (
            Intent::CalcKey {
                key: CalcKey::Multiply,
            },
            r#"{"intent":"calc_key","key":"Multiply"}"#,
        ),
        (
            Intent::CalcKey {
                key: CalcKey::Divide,
            },
            r#"{"intent":"calc_key","key":"Divide"}"#,
        ),
        (
            Intent::CalcKey {
                key: CalcKey::Equals,
            },
            r#"{"intent":"calc_key","key":"Equals"}"#,
        ),
        (
            Intent::CalcKey {
                key: CalcKey::Clear,
            },
            r#"{"intent":"calc_key","key":"Clear"}"#,
        ),
        (
            Intent::Decide { text_offer: None },
            r#"{"intent":"decide"}"#,
        ),
        (
            Intent::Decide {
                text_offer: Some("hi".into()),
            },
            r#"{"intent":"decide","text_offer":"hi"}"#,
        ),
    ];
    for (intent, json) in cases {
        assert_eq!(intent.to_json(), json);
        assert_eq!(serde_json::to_string(&intent).unwrap(), json);
        let back: Intent = serde_json::from_str(json).unwrap();
        assert_eq!(back.to_json(), json, "round trip of {json}");
    }
}

#[test]
fn r_brw_obs_observation_json_is_camel_case_as_the_spec_writes_it() {
    let json = r#"{"generation":7,"url":"https://a.example/","title":"A","navigation":{"canGoBack":true,"canGoForward":false},"truncated":{"controls":true,"title":false,"url":false},"focus":"e2","scroll":{"atTop":false,"atBottom":true},"controls":[{"ref":"e1","role":"link","name":"Home","editable":false,"searchLike":false,"sensitive":false,"actions":["click"]},{"ref":"e2","role":"textbox","name":"Q","value":"x","editable":true,"searchLike":true,"sensitive":false,"actions":["type"]}],"text":"hello"}"#;
    let obs: Observation = serde_json::from_str(json).unwrap();
    assert_eq!(serde_json::to_string(&obs).unwrap(), json);
    assert!(obs.truncated.controls && obs.scroll.at_bottom);
    assert_eq!(obs.controls[1].value.as_deref(), Some("x"));
}
