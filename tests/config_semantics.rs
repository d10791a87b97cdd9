//! What a valid configuration means: defaults, narrowing, features, secret names, doctor
//! (SPEC §2: R-CFG, R-CFG-SECRETS, R-CFG-KEYFILE).

use jevgate::config::{doctor, CheckStatus, ComputerUseBackend, CredentialRef, Feature};
use jevgate::Config;
use std::collections::HashMap;
use std::ffi::OsString;

fn cfg(json: &str) -> Config {
    Config::from_json_str(json).unwrap_or_else(|e| panic!("{e}"))
}

fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |k: &str| map.get(k).map(OsString::from)
}

#[test]
fn defaults_follow_the_spec_table() {
    let c = cfg("{}");
    let j = &c.gateway.jev;
    assert!(!j.enabled);
    assert_eq!(
        (
            j.timeout_ms,
            j.max_concurrent_requests,
            j.max_queue_size,
            j.max_input_bytes,
            j.max_questions
        ),
        (5000, 4, 16, 131_072, 64)
    );
    assert!(!j.images.enabled);
    assert_eq!(j.images.model, "jev-1.14.0");
    assert_eq!(j.images.max_image_bytes, 16 * 1024 * 1024);
    assert!(j.features.enabled(Feature::ComputerTasks));
    assert!(!j.features.enabled(Feature::ComputerSteps));
    assert!(!j.features.enabled(Feature::BrowserTasks));
    assert!(!j.features.enabled(Feature::BrowserSteps));
    let cu = &c.gateway.computer_use;
    assert!(!cu.enabled);
    assert_eq!(cu.model, "claude-haiku-4-5-20251001");
    assert_eq!(cu.timeout_ms, 20_000);
    assert_eq!(cu.min_confidence, 0.7);
    assert_eq!(cu.vision_model, "claude-sonnet-5");
}

#[test]
fn jev_is_an_explicit_opt_in() {
    let c = cfg(r#"{"gateway":{"jev":{"provider":"local"}}}"#);
    assert!(!c.jev_allowed("assistant"));
    assert!(
        !c.feature_enabled(Feature::ComputerTasks),
        "features need Jev enabled"
    );
}

#[test]
fn allowed_agent_ids_omitted_means_all_and_empty_means_none() {
    let all = cfg(r#"{"gateway":{"jev":{"enabled":true,"provider":"local"}}}"#);
    assert!(all.jev_allowed("anyone"));
    let none =
        cfg(r#"{"gateway":{"jev":{"enabled":true,"provider":"local","allowedAgentIds":[]}}}"#);
    assert!(!none.jev_allowed("anyone"));
    let some =
        cfg(r#"{"gateway":{"jev":{"enabled":true,"provider":"local","allowedAgentIds":["a"]}}}"#);
    assert!(some.jev_allowed("a"));
    assert!(!some.jev_allowed("b"));
}

#[test]
fn agent_settings_only_narrow_never_widen() {
    let c = cfg(
        r#"{"gateway":{"jev":{"enabled":true,"provider":"local","allowedAgentIds":["a","b"]}},
            "agents":[{"id":"a","jev":{"enabled":false}},{"id":"b","jev":{"enabled":true}},
                      {"id":"outsider","jev":{"enabled":true}}]}"#,
    );
    assert!(!c.jev_allowed("a"), "agent disable narrows");
    assert!(c.jev_allowed("b"));
    assert!(
        !c.jev_allowed("outsider"),
        "an agent cannot expand the global allowlist"
    );
    let off = cfg(
        r#"{"gateway":{"jev":{"enabled":false}},"agents":[{"id":"a","jev":{"enabled":true}}]}"#,
    );
    assert!(!off.jev_allowed("a"), "an agent cannot enable disabled Jev");
}

#[test]
fn computer_use_backend_precedence() {
    // Jev serves Computer Use when it is allowed and computerTasks is on (the default).
    let jev = cfg(
        r#"{"gateway":{"jev":{"enabled":true,"provider":"local"},"computerUse":{"enabled":true}}}"#,
    );
    assert_eq!(jev.computer_use_backend("a"), ComputerUseBackend::Jev);
    // computerTasks off: the model backend takes over when enabled.
    let model = cfg(
        r#"{"gateway":{"jev":{"enabled":true,"provider":"local","features":{"computerTasks":{"enabled":false}}},
            "computerUse":{"enabled":true}}}"#,
    );
    assert_eq!(model.computer_use_backend("a"), ComputerUseBackend::Model);
    // agents[].computerUse.enabled:false removes one agent from the model backend...
    let narrowed = cfg(
        r#"{"gateway":{"computerUse":{"enabled":true}},"agents":[{"id":"a","computerUse":{"enabled":false}}]}"#,
    );
    assert_eq!(
        narrowed.computer_use_backend("a"),
        ComputerUseBackend::Unavailable
    );
    assert_eq!(
        narrowed.computer_use_backend("b"),
        ComputerUseBackend::Model
    );
    // ...and never enables Computer Use on its own.
    let widen = cfg(r#"{"agents":[{"id":"a","computerUse":{"enabled":true}}]}"#);
    assert_eq!(
        widen.computer_use_backend("a"),
        ComputerUseBackend::Unavailable
    );
}

// R-CFG-SECRETS
#[test]
fn secret_env_names_lists_every_credential_variable_in_use() {
    let c = cfg(
        r#"{"gateway":{"jev":{"enabled":true,"provider":"typesafe","model":"m","apiKeyEnv":"PRIVATE_JEV_TOKEN",
            "thinking":{"baseUrl":"https://models.example/v1","model":"s","apiKeyEnv":"JEV_TEXT_API_KEY"},
            "browser":{"bindings":[{"id":"b","agentId":"a","principalId":"p","conversationId":"c",
              "endpoint":"https://browser.example/mcp","apiKeyEnv":"BROWSER_KEY",
              "scope":{"device_id":"d","grant_id":"g","tab_id":"t"}}]}}}}"#,
    );
    let names: Vec<String> = c.secret_env_names().into_iter().collect();
    assert_eq!(
        names,
        ["BROWSER_KEY", "JEV_TEXT_API_KEY", "PRIVATE_JEV_TOKEN"]
    );
    // TYPESAFE_API_KEY only when a direct connection uses it (no reference configured).
    let direct = cfg(r#"{"gateway":{"jev":{"enabled":true,"provider":"typesafe","model":"m"}}}"#);
    assert_eq!(
        direct.secret_env_names().into_iter().collect::<Vec<_>>(),
        ["TYPESAFE_API_KEY"]
    );
    let file = cfg(
        r#"{"gateway":{"jev":{"enabled":true,"provider":"typesafe","model":"m","apiKeyFile":"/k"}}}"#,
    );
    assert!(file.secret_env_names().is_empty());
    assert_eq!(
        file.jev_credential(),
        Some(CredentialRef::File("/k".into()))
    );
}

// R-CFG-KEYFILE: doctor checks readability and size, never prints the key, makes no network call.
#[test]
fn doctor_checks_key_files_and_env_references() {
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("jev.key");
    std::fs::write(&key, "sk-very-secret\n").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let json = format!(
        r#"{{"gateway":{{"jev":{{"enabled":true,"provider":"typesafe","model":"m","apiKeyFile":"{}",
            "thinking":{{"baseUrl":"https://models.example/v1","model":"s","apiKeyEnv":"JEV_TEXT_API_KEY"}}}}}}}}"#,
        key.display()
    );
    let c = cfg(&json);
    let report = doctor(&c, &env_of(&[]));
    assert!(!report.ok, "thinking env is unset");
    let by_name = |n: &str| report.checks.iter().find(|c| c.name == n).unwrap().clone();
    assert_eq!(by_name("jev.credentials").status, CheckStatus::Ok);
    let t = by_name("thinking.credentials");
    assert_eq!(t.status, CheckStatus::Error);
    assert_eq!(t.code, Some("JEV_MISSING_CREDENTIALS"));
    assert!(t.detail.contains("JEV_TEXT_API_KEY"));
    let ok = doctor(&c, &env_of(&[("JEV_TEXT_API_KEY", "also-secret")]));
    assert!(ok.ok);
    let text = ok.to_json();
    assert!(
        !text.contains("sk-very-secret") && !text.contains("also-secret"),
        "{text}"
    );
    // Emptying the file (rotation gone wrong) is caught on the next check.
    std::fs::write(&key, "").unwrap();
    let empty = doctor(&c, &env_of(&[("JEV_TEXT_API_KEY", "x")]));
    assert!(!empty.ok);
}

#[cfg(unix)]
#[test]
fn doctor_warns_on_a_key_file_readable_by_others() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("jev.key");
    std::fs::write(&key, "k\n").unwrap();
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
    let c = cfg(&format!(
        r#"{{"gateway":{{"jev":{{"enabled":true,"provider":"typesafe","model":"m","apiKeyFile":"{}"}}}}}}"#,
        key.display()
    ));
    let report = doctor(&c, &env_of(&[]));
    assert!(report.ok, "a warning is not a failure");
    assert_eq!(report.checks[1].status, CheckStatus::Warn);
}

#[test]
fn doctor_on_direct_connection_reads_typesafe_api_key_and_upstream_identity_group() {
    let direct = cfg(r#"{"gateway":{"jev":{"enabled":true,"provider":"typesafe","model":"m"}}}"#);
    assert!(!doctor(&direct, &env_of(&[])).ok);
    assert!(doctor(&direct, &env_of(&[("TYPESAFE_API_KEY", "k")])).ok);
    let upstream = cfg(r#"{"gateway":{"jev":{"enabled":true,"provider":"upstream","model":"m"}}}"#);
    assert!(!doctor(&upstream, &env_of(&[])).ok, "no identity at all");
    assert!(
        !doctor(&upstream, &env_of(&[("ANTHROPIC_API_KEY", "k")])).ok,
        "incomplete group: no URL"
    );
    assert!(
        !doctor(
            &upstream,
            &env_of(&[("ANTHROPIC_BASE_URL", "https://proxy.example")])
        )
        .ok,
        "no credential"
    );
    assert!(
        !doctor(
            &upstream,
            &env_of(&[
                ("ANTHROPIC_BASE_URL", "http://proxy.example"),
                ("ANTHROPIC_API_KEY", "k")
            ])
        )
        .ok,
        "URL rules apply"
    );
    assert!(
        doctor(
            &upstream,
            &env_of(&[
                ("ANTHROPIC_BASE_URL", "https://proxy.example"),
                ("ANTHROPIC_AUTH_TOKEN", "t")
            ])
        )
        .ok
    );
    let disabled = cfg("{}");
    let r = doctor(&disabled, &env_of(&[]));
    assert!(r.ok);
    assert_eq!(r.checks[1].status, CheckStatus::Skipped);
}

// R-CFG, R-ERR-2, issue 12 item 10a: a secret used as an object KEY is never echoed by the
// error path; keys are shown only when identifier-like, otherwise as `<key>`. Checked at every
// depth where an unknown key is reported, and for a key that is hostile Unicode.
#[test]
fn a_secret_used_as_a_key_is_never_echoed() {
    for secret in [
        "sk-live-SENTINEL-7f3a9c",
        "SENTINEL 7f3a9c",
        "\u{202e}SENTINEL\u{0}",
        &format!("SENTINEL{}", "x".repeat(100)),
    ] {
        let k = serde_json::to_string(secret).unwrap();
        for doc in [
            format!(r#"{{{k}: 1}}"#),
            format!(r#"{{"gateway":{{"jev":{{{k}: "v"}}}}}}"#),
            format!(r#"{{"agents":[{{"id":"a",{k}: true}}]}}"#),
        ] {
            let err = Config::from_json_str(&doc).unwrap_err();
            let shown = format!("{err} {err:?} {}", err.path().unwrap_or(""));
            assert!(!shown.contains("SENTINEL"), "{shown}");
            assert!(err.path().unwrap().ends_with("<key>"), "{shown}");
            assert!(err.to_string().contains("unknown key"), "{shown}");
        }
    }
    // identifier-like keys (every key jevgate defines has this shape) are still named
    let err = Config::from_json_str(r#"{"gateway":{"jev":{"timeoutMS":1}}}"#).unwrap_err();
    assert_eq!(err.path(), Some("gateway.jev.timeoutMS"));
}

// R-CFG-KEYFILE, issue 12 item 10b: doctor never repeats an apiKeyEnv name that looks like a key
// (a key pasted where the variable's name belongs passes the name check), whether the variable
// is set or not; a conventional name is still named.
#[test]
fn doctor_does_not_name_a_secret_looking_variable() {
    for name in ["sk_live_SENTINEL7f3a9c", "AKIASENTINEL7F3A9C0000"] {
        let c = cfg(&format!(
            r#"{{"gateway":{{"jev":{{"enabled":true,"provider":"typesafe","model":"m","apiKeyEnv":"{name}",
            "thinking":{{"baseUrl":"https://models.example/v1","model":"s","apiKeyEnv":"{name}"}}}}}}}}"#
        ));
        for env in [env_of(&[]), env_of(&[(name, "value")])] {
            let text = doctor(&c, &env).to_json();
            assert!(!text.contains("SENTINEL"), "{text}");
        }
    }
    let c = cfg(
        r#"{"gateway":{"jev":{"enabled":true,"provider":"typesafe","model":"m","apiKeyEnv":"PRIVATE_JEV_TOKEN"}}}"#,
    );
    assert!(doctor(&c, &env_of(&[]))
        .to_json()
        .contains("PRIVATE_JEV_TOKEN"));
}

// R-CFG-SECRETS, issue 12 item 10c: an upstream using the gateway's identity group reads
// ANTHROPIC_BASE_URL, ANTHROPIC_AUTH_TOKEN, ANTHROPIC_API_KEY and CLAUDE_CODE_OAUTH_TOKEN; all
// four are secret names a host must strip from children. With an explicit baseUrl and key
// reference the group is not read, and only the reference is listed.
#[test]
fn secret_env_names_include_the_upstream_identity_group_when_it_is_read() {
    let identity = cfg(r#"{"gateway":{"jev":{"enabled":true,"provider":"upstream","model":"m"}}}"#);
    assert_eq!(
        identity.secret_env_names().into_iter().collect::<Vec<_>>(),
        [
            "ANTHROPIC_API_KEY",
            "ANTHROPIC_AUTH_TOKEN",
            "ANTHROPIC_BASE_URL",
            "CLAUDE_CODE_OAUTH_TOKEN"
        ]
    );
    let explicit = cfg(
        r#"{"gateway":{"jev":{"enabled":true,"provider":"upstream","model":"m",
            "baseUrl":"https://gw.example","apiKeyEnv":"PRIVATE_UPSTREAM_KEY"}}}"#,
    );
    assert_eq!(
        explicit.secret_env_names().into_iter().collect::<Vec<_>>(),
        ["PRIVATE_UPSTREAM_KEY"]
    );
}

// Issue 21 defect 6 (R-CFG features, R-JEV-ACCESS): the browser-task gate as a pure table of
// configuration × agent → grant or code. The feature switch is checked before access (a
// gateway with tasks off says so to everyone), access is Jev access exactly (the gate refuses
// an agent iff `jev_allowed` does), and browserSteps only chooses the path, never refuses.
#[test]
fn issue21_the_browser_task_gate_is_a_pure_table() {
    let tasks = r#""features":{"browserTasks":{"enabled":true}}"#;
    let steps = r#""features":{"browserTasks":{"enabled":true},"browserSteps":{"enabled":true}}"#;
    let rows: Vec<(String, &str, Result<bool, &str>)> = vec![
        ("{}".into(), "a", Err("ORCHESTRATION_DISABLED")),
        (
            r#"{"gateway":{"jev":{"enabled":true,"provider":"local"}}}"#.into(),
            "a",
            Err("ORCHESTRATION_DISABLED"),
        ),
        (
            format!(r#"{{"gateway":{{"jev":{{"enabled":false,{tasks}}}}}}}"#),
            "a",
            Err("ORCHESTRATION_DISABLED"),
        ),
        (
            // Tasks off wins over an access refusal: nothing about the agent is said.
            r#"{"gateway":{"jev":{"enabled":true,"provider":"local","allowedAgentIds":[]}}}"#
                .into(),
            "a",
            Err("ORCHESTRATION_DISABLED"),
        ),
        (
            format!(r#"{{"gateway":{{"jev":{{"enabled":true,"provider":"local",{tasks}}}}}}}"#),
            "a",
            Ok(false),
        ),
        (
            format!(r#"{{"gateway":{{"jev":{{"enabled":true,"provider":"local",{steps}}}}}}}"#),
            "a",
            Ok(true),
        ),
        (
            format!(
                r#"{{"gateway":{{"jev":{{"enabled":true,"provider":"local","allowedAgentIds":["b"],{steps}}}}}}}"#
            ),
            "a",
            Err("EXECUTION_DENIED"),
        ),
        (
            format!(
                r#"{{"gateway":{{"jev":{{"enabled":true,"provider":"local","allowedAgentIds":["b"],{steps}}}}}}}"#
            ),
            "b",
            Ok(true),
        ),
        (
            format!(
                r#"{{"gateway":{{"jev":{{"enabled":true,"provider":"local",{tasks}}}}},"agents":[{{"id":"a","jev":{{"enabled":false}}}}]}}"#
            ),
            "a",
            Err("EXECUTION_DENIED"),
        ),
        (
            format!(
                r#"{{"gateway":{{"jev":{{"enabled":true,"provider":"local",{tasks}}}}},"agents":[{{"id":"a","jev":{{"enabled":true}}}}]}}"#
            ),
            "a",
            Ok(false),
        ),
    ];
    for (json, agent, want) in rows {
        let c = cfg(&json);
        let got = c
            .browser_task_gate(agent)
            .map(|g| g.step_lists)
            .map_err(|e| e.code());
        assert_eq!(got, want, "{json} for {agent}");
        // Same configuration, same answer: the gate reads nothing but its arguments.
        assert_eq!(
            c.browser_task_gate(agent)
                .map(|g| g.step_lists)
                .map_err(|e| e.code()),
            got
        );
        if c.feature_enabled(Feature::BrowserTasks) {
            assert_eq!(got.is_ok(), c.jev_allowed(agent), "{json} for {agent}");
        }
        if let Err(code) = got {
            let e = c.browser_task_gate(agent).unwrap_err();
            assert_eq!(
                e.http_status(),
                if code == "EXECUTION_DENIED" { 403 } else { 409 }
            );
            assert!(!e.to_string().contains("\"b\""), "{e}");
        }
    }
}
