//! Hostile input never panics the configuration parser, and every rejection is a
//! `JEV_INVALID_CONFIGURATION` with a path (R-CFG, R-ERR-2).

use proptest::prelude::*;
use serde_json::{json, Value};

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        (-1e6f64..1e6).prop_map(|f| json!(f)),
        "[a-zA-Z_./:@?#\\- ]{0,24}".prop_map(Value::String),
        prop_oneof![
            Just("typesafe"),
            Just("upstream"),
            Just("local"),
            Just("callback"),
            Just("https://h.example/v1"),
            Just("http://127.0.0.1:1"),
            Just("HOME"),
            Just("/k"),
        ]
        .prop_map(|s| Value::String(s.into())),
    ];
    let keys = prop_oneof![
        Just("gateway"),
        Just("jev"),
        Just("enabled"),
        Just("provider"),
        Just("model"),
        Just("apiKeyEnv"),
        Just("apiKeyFile"),
        Just("baseUrl"),
        Just("timeoutMs"),
        Just("features"),
        Just("browserSteps"),
        Just("thinking"),
        Just("browser"),
        Just("bindings"),
        Just("agents"),
        Just("id"),
        Just("computerUse"),
        Just("scope"),
        Just("minConfidence"),
        Just("images"),
        Just("other"),
    ];
    leaf.prop_recursive(5, 64, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((keys.clone(), inner), 0..5).prop_map(|kv| {
                Value::Object(kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
            }),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        if let Err(e) = jevgate::Config::from_json_slice(&bytes) {
            prop_assert_eq!(e.code(), "JEV_INVALID_CONFIGURATION");
            prop_assert!(e.path().is_some());
        }
    }

    #[test]
    fn arbitrary_config_shaped_json_never_panics_and_rejections_name_a_path(doc in arb_json()) {
        let text = doc.to_string();
        match jevgate::Config::from_json_str(&text) {
            Ok(c) => prop_assert!(c.validate().is_ok()),
            Err(e) => {
                prop_assert_eq!(e.code(), "JEV_INVALID_CONFIGURATION");
                prop_assert!(e.path().is_some());
            }
        }
    }

    #[test]
    fn rejections_never_echo_string_values(secret in "[a-z]{6}SECRET[a-z]{6}", key in prop_oneof![
        Just("timeoutMs"), Just("enabled"), Just("features"), Just("images"), Just("maxQuestions"),
        Just("provider"), Just("allowedAgentIds"), Just("browser"),
    ]) {
        let doc = json!({"gateway": {"jev": {key: secret.clone()}}});
        let err = jevgate::Config::from_json_str(&doc.to_string()).unwrap_err();
        prop_assert!(!err.to_string().contains("SECRET"), "{}", err);
    }
}
