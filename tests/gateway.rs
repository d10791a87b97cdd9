//! Gateway façade: open, reload with generations (R-CFG-RELOAD), doctor, secret names
//! (R-CFG-SECRETS), close.

use jevgate::clock::ManualClock;
use jevgate::{Config, Gateway, GatewayOptions};
use std::sync::Arc;

fn cfg(json: &str) -> Config {
    Config::from_json_str(json).unwrap()
}

fn open(dir: &std::path::Path, json: &str) -> Gateway {
    Gateway::open(GatewayOptions::new(dir, cfg(json))).unwrap()
}

#[test]
fn reload_swaps_atomically_and_bumps_the_generation() {
    let dir = tempfile::tempdir().unwrap();
    let gw = open(
        dir.path(),
        r#"{"gateway":{"jev":{"enabled":true,"provider":"local"}}}"#,
    );
    let before = gw.config();
    assert_eq!(before.generation, 1);
    assert_eq!(gw.reload(cfg("{}")).unwrap(), 2);
    // Work that captured generation 1 keeps it.
    assert!(before.config.gateway.jev.enabled);
    assert_eq!(before.generation, 1);
    let after = gw.config();
    assert_eq!(after.generation, 2);
    assert!(!after.config.gateway.jev.enabled);
}

#[test]
fn an_invalid_reload_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let gw = open(
        dir.path(),
        r#"{"gateway":{"jev":{"enabled":true,"provider":"local"}}}"#,
    );
    let err = gw
        .reload_json(r#"{"gateway":{"jev":{"enabled":true,"provider":"local","maxQuestions":65}}}"#)
        .unwrap_err();
    assert_eq!(err.code(), "JEV_INVALID_CONFIGURATION");
    assert_eq!(err.path(), Some("gateway.jev.maxQuestions"));
    // A typed config built in Rust is validated too.
    let mut bad = cfg("{}");
    bad.gateway.jev.timeout_ms = 0;
    assert_eq!(
        gw.reload(bad).unwrap_err().path(),
        Some("gateway.jev.timeoutMs")
    );
    assert_eq!(gw.generation(), 1);
    assert!(gw.config().config.gateway.jev.enabled);
}

#[test]
fn open_refuses_an_invalid_typed_config_before_touching_the_directory() {
    let dir = tempfile::tempdir().unwrap();
    let mut bad = cfg("{}");
    bad.gateway.computer_use.min_confidence = f64::NAN;
    let err = Gateway::open(GatewayOptions::new(dir.path().join("d"), bad)).unwrap_err();
    assert_eq!(err.path(), Some("gateway.computerUse.minConfidence"));
    assert!(!dir.path().join("d").exists());
}

#[test]
fn concurrent_reloads_get_distinct_consecutive_generations() {
    let dir = tempfile::tempdir().unwrap();
    let gw = open(dir.path(), "{}");
    let handles: Vec<_> = (0..8)
        .map(|_| {
            let gw = gw.clone();
            std::thread::spawn(move || {
                (0..25)
                    .map(|_| gw.reload(cfg("{}")).unwrap())
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let mut all: Vec<u64> = handles
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    all.sort();
    assert_eq!(all, (2..=201).collect::<Vec<_>>());
    assert_eq!(gw.generation(), 201);
}

#[test]
fn secret_env_names_stay_private_after_a_reload_removes_them() {
    let dir = tempfile::tempdir().unwrap();
    let gw = open(
        dir.path(),
        r#"{"gateway":{"jev":{"enabled":true,"provider":"typesafe","model":"m","apiKeyEnv":"OLD_JEV_KEY"}}}"#,
    );
    assert_eq!(gw.secret_env_names(), ["OLD_JEV_KEY"]);
    gw.reload_json(r#"{"gateway":{"jev":{"enabled":true,"provider":"typesafe","model":"m","apiKeyEnv":"NEW_JEV_KEY"}}}"#)
        .unwrap();
    assert_eq!(gw.secret_env_names(), ["NEW_JEV_KEY", "OLD_JEV_KEY"]);
}

#[test]
fn doctor_reports_config_credentials_and_store() {
    let dir = tempfile::tempdir().unwrap();
    let gw = open(
        dir.path(),
        r#"{"gateway":{"jev":{"enabled":true,"provider":"local"}}}"#,
    );
    let report = gw.doctor().unwrap();
    assert!(report.ok, "{report:?}");
    let names: Vec<&str> = report.checks.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        ["config", "jev.credentials", "store", "store.permissions"]
    );
    let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
    assert_eq!(json["checks"][2]["status"], "ok");
}

#[test]
fn close_releases_the_directory_and_refuses_later_calls() {
    let dir = tempfile::tempdir().unwrap();
    let gw = open(dir.path(), "{}");
    let err = Gateway::open(GatewayOptions::new(dir.path(), cfg("{}"))).unwrap_err();
    assert_eq!(err.code(), "STORE_LOCKED");
    let clone = gw.clone();
    gw.close();
    assert!(clone.is_closed());
    assert_eq!(
        clone.reload(cfg("{}")).unwrap_err().code(),
        "GATEWAY_CLOSED"
    );
    clone.close();
    let again = open(dir.path(), "{}");
    again.close();
}

#[test]
fn dropping_every_clone_releases_the_directory() {
    let dir = tempfile::tempdir().unwrap();
    {
        let gw = open(dir.path(), "{}");
        let _clone = gw.clone();
    }
    open(dir.path(), "{}").close();
}

#[test]
fn an_injected_clock_is_the_gateways_clock() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new();
    let gw = Gateway::open(
        GatewayOptions::new(dir.path(), cfg("{}")).with_clock(Arc::new(clock.clone())),
    )
    .unwrap();
    let t0 = gw.clock().now();
    clock.advance(std::time::Duration::from_secs(5));
    assert_eq!(gw.clock().now() - t0, std::time::Duration::from_secs(5));
}

// R-CFG-KEYFILE, issue 12 item 10e: doctor never makes a network call. Every endpoint of the
// configuration — the upstream baseUrl, the thinking helper's and a browser binding's — is a
// loopback listener; after doctor (with credentials unset and then set, through the gateway,
// the library function and the CLI) none of them has a connection waiting.
#[test]
fn doctor_never_makes_a_network_call() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let base = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
    let var = format!("JEVGATE_TEST_DOCTOR_{}", std::process::id());
    let json = format!(
        r#"{{"gateway":{{"jev":{{"enabled":true,"provider":"upstream","model":"m",
            "baseUrl":"{base}","apiKeyEnv":"{var}",
            "thinking":{{"baseUrl":"{base}/v1","model":"s","apiKeyEnv":"{var}"}},
            "browser":{{"bindings":[{{"id":"b","agentId":"a","principalId":"p","conversationId":"c",
              "endpoint":"{base}/mcp","apiKeyEnv":"{var}",
              "scope":{{"device_id":"d","grant_id":"g","tab_id":"t"}}}}]}}}}}}}}"#
    );
    let dir = tempfile::tempdir().unwrap();
    let gw = open(dir.path(), &json);
    assert!(!gw.doctor().unwrap().ok, "the variable is unset");
    std::env::set_var(&var, "k");
    let report = gw.doctor().unwrap();
    assert!(report.ok, "{}", report.to_json());
    let config = cfg(&json);
    jevgate::config::doctor(&config, &|n| std::env::var_os(n));
    let cli = std::process::Command::new(env!("CARGO_BIN_EXE_jevgate"))
        .args(["doctor", "--config", "-"])
        .env(&var, "k")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child.stdin.take().unwrap().write_all(json.as_bytes())?;
            child.wait_with_output()
        })
        .unwrap();
    assert!(
        cli.status.success(),
        "{}",
        String::from_utf8_lossy(&cli.stdout)
    );
    match listener.accept() {
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
        Ok((_, from)) => panic!("doctor connected to a configured endpoint (from {from})"),
        Err(e) => panic!("{e}"),
    }
}
