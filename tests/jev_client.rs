//! The Jev client end to end on loopback (real sockets, no network): providers and wire
//! contracts (R-JEV-WIRE, R-CFG-PATH), status mapping (R-JEV-ERRMAP), limits, queue, deadline and
//! cancellation (R-JEV-LIMIT), ledger (R-JEV-LEDGER), access re-checks and reload
//! (R-JEV-ACCESS, R-CFG-RELOAD), key rotation (R-CFG-KEYFILE), usage records (R-JEV-USAGE),
//! callback and local providers (R-PRV), TLS with a test CA, the thinking helper (R-PRV-THINK).
//!
//! Logic never waits on sleeps: the ledger runs on a manual clock; real, short timeouts are used
//! only where a real socket must time out; `wait_until` polls an observable condition.

mod support;

use jevgate::clock::ManualClock;
use jevgate::jev::{EvalAnswer, EvaluateCall, Limits, Question, Questions, ThinkRequest};
use jevgate::CancelToken;
use jevgate::{Config, Error, Gateway, GatewayOptions};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::jev_server::{Behaviour, TestServer};

const SENTINEL: &str = "SENTINEL-7f3a9c";

struct Fixture {
    gw: Gateway,
    _dir: tempfile::TempDir,
}

impl std::ops::Deref for Fixture {
    type Target = Gateway;
    fn deref(&self) -> &Gateway {
        &self.gw
    }
}

fn open_with(
    config: serde_json::Value,
    f: impl FnOnce(GatewayOptions) -> GatewayOptions,
) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let config = Config::from_json_str(&config.to_string()).unwrap();
    let gw = Gateway::open(f(GatewayOptions::new(dir.path(), config))).unwrap();
    Fixture { gw, _dir: dir }
}

fn open(config: serde_json::Value) -> Fixture {
    open_with(config, |o| o)
}

/// A unique environment variable holding `key` (tests run in parallel threads).
fn key_env(name: &str, key: &str) -> String {
    let var = format!("JEVGATE_TEST_{name}_{}", std::process::id());
    std::env::set_var(&var, key);
    var
}

fn upstream(server: &TestServer, env: &str, extra: serde_json::Value) -> serde_json::Value {
    let mut jev = json!({
        "enabled": true, "provider": "upstream", "baseUrl": server.base(),
        "apiKeyEnv": env, "model": "catalog-prefix/jev-version",
    });
    for (k, v) in extra.as_object().unwrap() {
        jev[k] = v.clone();
    }
    json!({"gateway": {"jev": jev}})
}

fn questions() -> Questions {
    Questions::new(
        [
            Question::noul("greeting", "Is this a greeting?"),
            Question::choice(
                "next",
                "What next?",
                [("explain", "Compare the options"), ("execute", "Execute")],
            )
            .unwrap(),
            Question::score("clarity", "How clear?", ["Unclear", "Partly", "Clear"]).unwrap(),
        ],
        &Limits::default(),
    )
    .unwrap()
}

fn call(agent: &str) -> EvaluateCall {
    EvaluateCall::new(agent, "Hello", questions())
}

fn wait_until(what: &str, cond: impl Fn() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

// R-JEV-WIRE, R-CFG-PATH: the upstream body, path and bearer; the prefixed catalog model id
// reaches the upstream unchanged; requestedModel and model are kept apart; billing passes.
#[test]
fn r_jev_wire_upstream_body_path_and_prefixed_model_reach_the_server_unchanged() {
    let server = TestServer::start();
    let env = key_env("WIRE", "sk-upstream-1");
    let gw = open(upstream(&server, &env, json!({})));
    let e = gw
        .evaluate(&call("assistant").with_request_id("order-42"))
        .unwrap();
    assert_eq!(e.request_id, "order-42");
    assert_eq!(e.requested_model, "catalog-prefix/jev-version");
    assert_eq!(e.model, "jev-1.13.0");
    assert_eq!(e.billing.as_ref().unwrap().charged_credits, 0.25);
    assert!(matches!(e.answer("greeting"), Some(EvalAnswer::Noul { noul }) if *noul == 0.5));
    let seen = server.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].path, "/v1/jev/evaluate");
    assert_eq!(
        seen[0].authorization.as_deref(),
        Some("Bearer sk-upstream-1")
    );
    let body = seen[0].body.as_object().unwrap();
    let keys: Vec<&str> = body.keys().map(String::as_str).collect();
    assert_eq!(keys, ["model", "questions", "request_id", "state"]); // sorted by serde_json
    assert_eq!(body["model"], "catalog-prefix/jev-version");
    assert_eq!(body["state"], "Hello");
    // caller-scoped and hashed: not the caller's raw id
    let wire_id = body["request_id"].as_str().unwrap();
    assert!(wire_id.starts_with("jev-") && !wire_id.contains("order-42"));
    // the JSON shape of the seed's gateway response
    let v: serde_json::Value = serde_json::from_str(&e.to_json()).unwrap();
    assert_eq!(v["requestedModel"], "catalog-prefix/jev-version");
    assert_eq!(v["answers"]["next"]["choice"], "execute"); // the server picks the first key in sorted order
    assert_eq!(v["usage"]["input_tokens"], 120);
}

// R-JEV-WIRE: a direct TypeSafe request holds only model, state and questions, at /v1/systemone.
#[test]
fn r_jev_wire_typesafe_body_is_model_state_questions_only() {
    let server = TestServer::start();
    let env = key_env("TS", "ts-key");
    let gw = open(
        json!({"gateway": {"jev": {"enabled": true, "provider": "typesafe",
        "baseUrl": server.base(), "apiKeyEnv": env, "model": "jev-1.13.0"}}}),
    );
    gw.evaluate(&call("a").with_request_id("r1")).unwrap();
    let seen = server.seen();
    assert_eq!(seen[0].path, "/v1/systemone");
    let keys: Vec<&str> = seen[0]
        .body
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["model", "questions", "state"]); // sorted by serde_json
}

// R-CFG-PATH: a leading deployment path is kept.
#[test]
fn r_cfg_path_deployment_prefix_is_kept() {
    let server = TestServer::start();
    let env = key_env("PATH", "k");
    let mut cfg = upstream(&server, &env, json!({}));
    cfg["gateway"]["jev"]["baseUrl"] = json!(format!("{}/deploy", server.base()));
    let gw = open(cfg);
    gw.evaluate(&call("a")).unwrap();
    assert_eq!(server.seen()[0].path, "/deploy/v1/jev/evaluate");
}

// R-JEV-ERRMAP: every documented status; Retry-After kept as a typed field; provider error
// bodies never surface.
#[test]
fn r_jev_errmap_statuses_map_and_retry_after_is_kept() {
    let server = TestServer::start();
    let env = key_env("ERR", "k");
    let gw = open(upstream(&server, &env, json!({})));
    let body = format!("{{\"error\": \"{SENTINEL} echo of state\"}}");
    type Headers = Vec<(String, String)>;
    let cases: Vec<(u16, Headers, &str)> = vec![
        (400, vec![], "JEV_INVALID_REQUEST"),
        (401, vec![], "JEV_AUTHENTICATION_FAILED"),
        (402, vec![], "JEV_QUOTA_EXCEEDED"),
        (403, vec![], "JEV_ACCESS_DENIED"),
        (404, vec![], "JEV_UNSUPPORTED_MODEL"),
        (409, vec![], "JEV_REQUEST_CONFLICT"),
        (
            429,
            vec![
                ("Retry-After".into(), "7".into()),
                ("X-RateLimit-Reset".into(), "30".into()),
            ],
            "JEV_RATE_LIMITED",
        ),
        (500, vec![], "JEV_PROVIDER_FAILURE"),
        (503, vec![], "JEV_PROVIDER_FAILURE"),
    ];
    for (status, headers, code) in cases {
        server.script([Behaviour::Status(status, headers, body.clone())]);
        let err = gw.evaluate(&call("a")).unwrap_err();
        assert_eq!(err.code(), code, "HTTP {status}");
        assert!(!err.to_string().contains(SENTINEL));
        assert!(!format!("{err:?}").contains(SENTINEL));
        if status == 429 {
            assert_eq!(err.retry_after(), Some(Duration::from_secs(7)));
            assert!(err.retry_info().unwrap().reset_at.is_some());
        }
    }
    assert_eq!(server.hits(), 9, "no retries");
}

// R-JEV-ERRMAP: a bad body is JEV_MALFORMED_RESPONSE; a chat completion is not an evaluation.
#[test]
fn r_jev_errmap_malformed_and_chat_completion_bodies_are_malformed_responses() {
    let server = TestServer::start();
    let env = key_env("MAL", "k");
    let gw = open(upstream(&server, &env, json!({})));
    server.script([Behaviour::Malformed]);
    let err = gw.evaluate(&call("a")).unwrap_err();
    assert_eq!(err.code(), "JEV_MALFORMED_RESPONSE");
    assert_eq!(err.validation_reason(), Some("MALFORMED_JSON"));
    server.script([Behaviour::ChatCompletion]);
    let err = gw.evaluate(&call("a")).unwrap_err();
    assert_eq!(err.code(), "JEV_MALFORMED_RESPONSE");
    assert_eq!(err.validation_reason(), Some("MISSING_FIELD"));
    // an answer set that fails validation (chosen option not the maximum)
    server.script([Behaviour::Raw(
        json!({"model": "m", "usage": {"input_tokens": 1, "output_tokens": 1}, "answers": {
            "greeting": {"type": "noul", "noul": 0.5},
            "next": {"type": "choice", "choice": "execute",
                     "probabilities": {"explain": 0.9, "execute": 0.1}, "confidence": 0.9},
            "clarity": {"type": "score", "score": 0.0, "levels": [1.0, 0.0, 0.0],
                        "legend": ["a", "b", "c"], "confidence": 0.8}}})
        .to_string(),
    )]);
    let err = gw.evaluate(&call("a")).unwrap_err();
    assert_eq!(err.validation_reason(), Some("CHOICE_NOT_MAX"));
}

// R-CFG-URL, R-JEV-ERRMAP: a redirect is never followed.
#[test]
fn r_cfg_url_redirect_is_not_followed() {
    let server = TestServer::start();
    let env = key_env("REDIR", "k");
    let gw = open(upstream(&server, &env, json!({})));
    server.script([Behaviour::Redirect]);
    let err = gw.evaluate(&call("a")).unwrap_err();
    assert_eq!(err.code(), "JEV_PROVIDER_FAILURE");
    assert!(err.to_string().contains("redirect"), "{err}");
    assert_eq!(server.hits(), 1, "the redirect target was requested");
}

// R-JEV-LIMIT: 4 in flight, 16 queued, the next one rejected at once with JEV_QUEUE_FULL;
// the provider never sees more than 4 at a time.
#[test]
fn r_jev_limit_four_active_sixteen_queued_seventeenth_rejected() {
    let server = TestServer::start();
    server.set_default(Behaviour::Gate);
    let env = key_env("LIMIT", "k");
    let gw = Arc::new(open(upstream(&server, &env, json!({"timeoutMs": 60000}))));
    let threads: Vec<_> = (0..20)
        .map(|_| {
            let gw = Arc::clone(&gw);
            std::thread::spawn(move || gw.evaluate(&call("a")))
        })
        .collect();
    wait_until("4 in flight and 16 waiting", || gw.jev_load() == (4, 16));
    wait_until("4 at the server", || server.hits() == 4);
    let started = Instant::now();
    let err = gw.evaluate(&call("a")).unwrap_err();
    assert_eq!(err.code(), "JEV_QUEUE_FULL");
    assert_eq!(err.http_status(), 429);
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "rejected immediately"
    );
    server.open_gate();
    for t in threads {
        t.join().unwrap().unwrap();
    }
    assert_eq!(server.hits(), 20);
    assert!(server.max_in_handler() <= 4);
    let page = gw.usage("a", 100, 0).unwrap();
    assert_eq!(page.total, 21);
    assert_eq!(
        page.records
            .iter()
            .filter(|r| r.outcome == "JEV_QUEUE_FULL")
            .count(),
        1
    );
}

// R-JEV-LIMIT: one deadline covers the queue wait; a queued call times out without being sent.
// The first call holds the only slot under a long deadline (its configuration generation);
// the queued one runs under a 300 ms one, reloaded in between (R-CFG-RELOAD). (With one
// timeoutMs for both, the first call's earlier deadline frees the slot before the second's.)
#[test]
fn r_jev_limit_deadline_includes_queue_wait() {
    let server = TestServer::start();
    server.set_default(Behaviour::Gate);
    let env = key_env("QWAIT", "k");
    let gw = Arc::new(open(upstream(
        &server,
        &env,
        json!({"timeoutMs": 60000, "maxConcurrentRequests": 1}),
    )));
    let token = CancelToken::new();
    let (g2, t) = (Arc::clone(&gw), token.clone());
    let first = std::thread::spawn(move || g2.evaluate_with_cancel(&call("a"), &t));
    wait_until("the first at the server", || server.hits() == 1);
    let short = upstream(
        &server,
        &env,
        json!({"timeoutMs": 300, "maxConcurrentRequests": 1}),
    );
    gw.reload(Config::from_json_str(&short.to_string()).unwrap())
        .unwrap();
    let started = Instant::now();
    let err = gw.evaluate(&call("a")).unwrap_err();
    let waited = started.elapsed();
    assert_eq!(err.code(), "JEV_TIMEOUT");
    assert!(waited >= Duration::from_millis(250), "{waited:?}");
    assert!(waited < Duration::from_secs(3), "{waited:?}");
    assert_eq!(server.hits(), 1, "the queued call was never sent");
    token.cancel();
    assert_eq!(first.join().unwrap().unwrap_err().code(), "JEV_CANCELLED");
    server.open_gate();
}

// R-JEV-LIMIT: cancel from another thread, while in flight and while queued.
#[test]
fn r_jev_limit_cancel_from_another_thread() {
    let server = TestServer::start();
    server.set_default(Behaviour::Gate);
    let env = key_env("CANCEL", "k");
    let gw = Arc::new(open(upstream(
        &server,
        &env,
        json!({"timeoutMs": 60000, "maxConcurrentRequests": 1}),
    )));
    let (t1, t2) = (CancelToken::new(), CancelToken::new());
    let (g1, c1) = (Arc::clone(&gw), t1.clone());
    let in_flight = std::thread::spawn(move || g1.evaluate_with_cancel(&call("a"), &c1));
    wait_until("in flight", || server.hits() == 1);
    let (g2, c2) = (Arc::clone(&gw), t2.clone());
    let queued = std::thread::spawn(move || g2.evaluate_with_cancel(&call("a"), &c2));
    wait_until("queued", || gw.jev_load().1 == 1);
    let started = Instant::now();
    t2.cancel();
    assert_eq!(queued.join().unwrap().unwrap_err().code(), "JEV_CANCELLED");
    t1.cancel();
    assert_eq!(
        in_flight.join().unwrap().unwrap_err().code(),
        "JEV_CANCELLED"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(server.hits(), 1);
    // the cancelled in-flight request's socket is shut down: its slot is freed without the
    // provider answering (issue 12 item 5)
    wait_until("slot released", || gw.jev_load() == (0, 0));
    server.open_gate();
}

/// A loopback provider that accepts connections and never answers (nor closes them). Returns
/// its base URL, the number of connections accepted, and the connections (to see them end).
fn silent_provider() -> (
    String,
    Arc<std::sync::atomic::AtomicUsize>,
    Arc<std::sync::Mutex<Vec<std::net::TcpStream>>>,
) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let accepted = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let conns = Arc::new(std::sync::Mutex::new(Vec::new()));
    let (a, c) = (Arc::clone(&accepted), Arc::clone(&conns));
    // detached: it ends with the test process
    std::thread::spawn(move || {
        for s in listener.incoming().flatten() {
            c.lock().unwrap().push(s);
            a.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    });
    (base, accepted, conns)
}

/// Whether connection `i` of a [`silent_provider`] has request bytes waiting to be read.
fn request_arrived(conns: &std::sync::Mutex<Vec<std::net::TcpStream>>, i: usize) -> bool {
    let conns = conns.lock().unwrap();
    let Some(conn) = conns.get(i) else {
        return false;
    };
    conn.set_read_timeout(Some(Duration::from_millis(10)))
        .unwrap();
    let mut byte = [0u8; 1];
    let arrived = matches!(conn.peek(&mut byte), Ok(n) if n > 0);
    conn.set_read_timeout(None).unwrap();
    arrived
}

/// Joins `t`, failing (instead of hanging) when it has not ended within `limit`.
fn join_within<T>(what: &str, t: std::thread::JoinHandle<T>, limit: Duration) -> T {
    let start = Instant::now();
    while !t.is_finished() {
        assert!(
            start.elapsed() < limit,
            "{what} did not end within {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    t.join().unwrap()
}

fn silent_config(base: &str, env: &str) -> serde_json::Value {
    json!({"gateway": {"jev": {
        "enabled": true, "provider": "upstream", "baseUrl": base, "apiKeyEnv": env,
        "model": "m", "timeoutMs": 60000, "maxConcurrentRequests": 1,
    }}})
}

// R-JEV-LIMIT, issue 12 item 5: cancelling an evaluation whose provider never answers shuts
// its socket down: the caller gets JEV_CANCELLED at once, the provider sees the connection end,
// and the concurrency slot is free for the next evaluation long before timeoutMs (60 s).
#[test]
fn r_jev_limit_cancel_aborts_the_provider_socket_and_frees_the_slot() {
    let (base, accepted, conns) = silent_provider();
    let env = key_env("ABORT", "k");
    let gw = Arc::new(open(silent_config(&base, &env)));
    let token = CancelToken::new();
    let (g, t) = (Arc::clone(&gw), token.clone());
    let first = std::thread::spawn(move || g.evaluate_with_cancel(&call("a"), &t));
    let n = || accepted.load(std::sync::atomic::Ordering::SeqCst);
    // At the provider means its request bytes have arrived (a cancel before the write would
    // leave nothing for the provider to read below).
    wait_until("the first at the provider", || {
        n() == 1 && gw.jev_load() == (1, 0) && request_arrived(&conns, 0)
    });
    let started = Instant::now();
    token.cancel();
    let err = join_within("the cancelled evaluation", first, Duration::from_secs(5)).unwrap_err();
    assert_eq!(err.code(), "JEV_CANCELLED");
    // the slot is freed (the old code held it until timeoutMs)
    wait_until("slot freed", || gw.jev_load() == (0, 0));
    assert!(started.elapsed() < Duration::from_secs(5));
    // the provider sees the connection end (FIN), not a connection left open
    {
        use std::io::Read;
        let conn = conns.lock().unwrap()[0].try_clone().unwrap();
        conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut buf = Vec::new();
        (&conn).read_to_end(&mut buf).unwrap();
        assert!(buf.starts_with(b"POST "), "the request was sent first");
    }
    // a second evaluation is admitted (maxConcurrentRequests = 1) and reaches the provider on a
    // new connection (the shut-down one was not pooled)
    let token2 = CancelToken::new();
    let (g, t) = (Arc::clone(&gw), token2.clone());
    let second = std::thread::spawn(move || g.evaluate_with_cancel(&call("a"), &t));
    wait_until("the second admitted and at the provider", || n() == 2);
    assert_eq!(gw.jev_load(), (1, 0));
    token2.cancel();
    let err = join_within("the second evaluation", second, Duration::from_secs(5)).unwrap_err();
    assert_eq!(err.code(), "JEV_CANCELLED");
    wait_until("slot freed again", || gw.jev_load() == (0, 0));
}

// Issue 12 item 5: closing the gateway with a provider call in flight ends that call (its
// socket is shut down) instead of waiting timeoutMs (60 s) for the I/O thread.
#[test]
fn close_aborts_an_in_flight_provider_call() {
    let (base, accepted, _conns) = silent_provider();
    let env = key_env("CLOSEABORT", "k");
    let gw = Arc::new(open(silent_config(&base, &env)));
    let g = Arc::clone(&gw);
    let eval = std::thread::spawn(move || g.evaluate(&call("a")));
    wait_until("the call at the provider", || {
        accepted.load(std::sync::atomic::Ordering::SeqCst) == 1 && gw.jev_load() == (1, 0)
    });
    let started = Instant::now();
    let g = Arc::clone(&gw);
    let closer = std::thread::spawn(move || g.close());
    join_within("close", closer, Duration::from_secs(5));
    let err = join_within("the in-flight evaluation", eval, Duration::from_secs(5)).unwrap_err();
    assert_eq!(err.code(), "GATEWAY_CLOSED");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
}

// R-JEV-LIMIT, R-JEV-ERRMAP: a provider slower than the deadline is JEV_TIMEOUT, and nothing
// is retried; a slow body counts against the same deadline.
#[test]
fn r_jev_limit_timeout_is_not_retried_and_slow_body_times_out() {
    let server = TestServer::start();
    let env = key_env("SLOW", "k");
    let gw = open(upstream(&server, &env, json!({"timeoutMs": 200})));
    server.script([Behaviour::Delay(Duration::from_millis(600))]);
    let err = gw.evaluate(&call("a")).unwrap_err();
    assert_eq!(err.code(), "JEV_TIMEOUT");
    wait_until("the delayed response written", || server.finished() == 1);
    assert_eq!(server.hits(), 1, "no retry after a timeout");
    server.script([Behaviour::SlowBody(Duration::from_millis(5))]);
    let started = Instant::now();
    let err = gw.evaluate(&call("a")).unwrap_err();
    assert_eq!(err.code(), "JEV_TIMEOUT");
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(server.hits(), 2);
}

// R-CFG-KEYFILE: the key file is read for each request; rotation needs no restart.
#[test]
fn r_cfg_keyfile_rotation_between_two_requests() {
    let server = TestServer::start();
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("jev.key");
    std::fs::write(&key, "first-key\n").unwrap();
    let gw = open(
        json!({"gateway": {"jev": {"enabled": true, "provider": "upstream",
        "baseUrl": server.base(), "apiKeyFile": key.to_str().unwrap(), "model": "m"}}}),
    );
    gw.evaluate(&call("a")).unwrap();
    std::fs::write(&key, "second-key\n").unwrap();
    gw.evaluate(&call("a")).unwrap();
    let auth: Vec<_> = server
        .seen()
        .into_iter()
        .map(|s| s.authorization.unwrap())
        .collect();
    assert_eq!(auth, ["Bearer first-key", "Bearer second-key"]);
    std::fs::write(&key, "").unwrap();
    let err = gw
        .evaluate(&call("a").with_request_id("after-empty"))
        .unwrap_err();
    assert_eq!(err.code(), "JEV_MISSING_CREDENTIALS");
    assert_eq!(server.hits(), 2);
    // nothing was sent: the id may be used again
    std::fs::write(&key, "third-key").unwrap();
    gw.evaluate(&call("a").with_request_id("after-empty"))
        .unwrap();
}

// R-JEV-ACCESS, R-CFG-RELOAD: revocation between dispatch and return discards the answer; the
// in-flight request keeps its generation's model.
#[test]
fn r_jev_access_revocation_in_flight_discards_the_answer() {
    let server = TestServer::start();
    server.set_default(Behaviour::Gate);
    let env = key_env("REVOKE", "k");
    let cfg = upstream(&server, &env, json!({"timeoutMs": 60000}));
    let gw = Arc::new(open(cfg.clone()));
    let g = Arc::clone(&gw);
    let pending = std::thread::spawn(move || g.evaluate(&call("assistant")));
    wait_until("in flight", || server.hits() == 1);
    let mut revoked = cfg.clone();
    revoked["gateway"]["jev"]["allowedAgentIds"] = json!(["someone-else"]);
    revoked["gateway"]["jev"]["model"] = json!("other/model");
    gw.reload(Config::from_json_str(&revoked.to_string()).unwrap())
        .unwrap();
    server.open_gate();
    let err = pending.join().unwrap().unwrap_err();
    assert_eq!(err.code(), "JEV_ACCESS_DENIED");
    assert_eq!(server.seen()[0].body["model"], "catalog-prefix/jev-version");
    let rec = &gw.usage("assistant", 1, 0).unwrap().records[0];
    assert_eq!(rec.outcome, "JEV_ACCESS_DENIED");
    assert_eq!(rec.generation, 1);
    // and before dispatch: denied without I/O
    let err = gw.evaluate(&call("assistant")).unwrap_err();
    assert_eq!(err.code(), "JEV_ACCESS_DENIED");
    assert_eq!(server.hits(), 1);
}

// R-JEV-ACCESS: enablement, allowlist and per-agent narrowing are checked before any I/O.
#[test]
fn r_jev_access_checks_enabled_allowlist_and_agent_flag() {
    let gw = open(
        json!({"gateway": {"jev": {"enabled": true, "provider": "local",
        "allowedAgentIds": ["assistant", "intern"]}},
        "agents": [{"id": "intern", "jev": {"enabled": false}}]}),
    );
    assert!(gw.evaluate(&call("assistant")).is_ok());
    for agent in ["intern", "stranger"] {
        assert_eq!(
            gw.evaluate(&call(agent)).unwrap_err().code(),
            "JEV_ACCESS_DENIED"
        );
    }
    let off = open(json!({}));
    assert_eq!(
        off.evaluate(&call("a")).unwrap_err().code(),
        "JEV_ACCESS_DENIED"
    );
}

// R-JEV-LEDGER: reuse in the same caller scope conflicts (never a cached answer); another
// caller's scope is independent; ids expire after five minutes on the gateway clock.
#[test]
fn r_jev_ledger_conflict_scope_and_expiry_with_the_manual_clock() {
    let clock = Arc::new(ManualClock::new());
    let gw = open_with(
        json!({"gateway": {"jev": {"enabled": true, "provider": "local"}}}),
        |o| o.with_clock(clock.clone()),
    );
    gw.evaluate(&call("a").with_request_id("r1")).unwrap();
    let err = gw.evaluate(&call("a").with_request_id("r1")).unwrap_err();
    assert_eq!(err.code(), "JEV_REQUEST_CONFLICT");
    assert_eq!(err.http_status(), 409);
    gw.evaluate(&call("b").with_request_id("r1")).unwrap();
    clock.advance(Duration::from_secs(299));
    assert_eq!(
        gw.evaluate(&call("a").with_request_id("r1"))
            .unwrap_err()
            .code(),
        "JEV_REQUEST_CONFLICT"
    );
    clock.advance(Duration::from_secs(1));
    gw.evaluate(&call("a").with_request_id("r1")).unwrap();
}

// R-JEV-LEDGER: 1024 ids per caller and 4096 in total; new ids are rejected, live ones kept.
#[test]
fn r_jev_ledger_per_caller_1024_and_total_4096_caps() {
    let clock = Arc::new(ManualClock::new());
    let gw = open_with(
        json!({"gateway": {"jev": {"enabled": true, "provider": "local"}}}),
        |o| o.with_clock(clock.clone()),
    );
    let q = Questions::new([Question::noul("g", "?")], &Limits::default()).unwrap();
    let one = |agent: &str, id: String| {
        gw.evaluate(&EvaluateCall::new(agent, "s", q.clone()).with_request_id(id))
    };
    for i in 0..1024 {
        one("a", format!("r{i}")).unwrap();
    }
    let err = one("a", "r1024".into()).unwrap_err();
    assert_eq!(err.code(), "JEV_RATE_LIMITED");
    assert_eq!(err.retry_after(), Some(Duration::from_secs(300)));
    clock.advance(Duration::from_secs(10));
    for agent in ["b", "c", "d"] {
        for i in 0..1024 {
            one(agent, format!("r{i}")).unwrap();
        }
    }
    let err = one("e", "x".into()).unwrap_err();
    assert_eq!(err.code(), "JEV_RATE_LIMITED");
    assert_eq!(err.retry_after(), Some(Duration::from_secs(290)));
    // live ids were not evicted
    assert_eq!(
        one("a", "r0".into()).unwrap_err().code(),
        "JEV_REQUEST_CONFLICT"
    );
    // calls without a requestId do not enter the ledger
    gw.evaluate(&EvaluateCall::new("e", "s", q.clone()))
        .unwrap();
    clock.advance(Duration::from_secs(290));
    one("e", "x".into()).unwrap();
}

// R-JEV-USAGE, R-LOG: usage records never contain a sentinel placed in state, questions, the
// key, or a provider error body — neither in the API nor anywhere in the store's files.
#[test]
fn r_jev_usage_records_never_contain_sentinels() {
    let server = TestServer::start();
    let env = key_env("SENT", &format!("key-{SENTINEL}"));
    let gw = open(upstream(&server, &env, json!({})));
    let q = Questions::new(
        [
            Question::noul(format!("k-{SENTINEL}"), format!("instr {SENTINEL}")),
            Question::choice("c", SENTINEL, [(format!("o-{SENTINEL}"), SENTINEL)]).unwrap(),
        ],
        &Limits::default(),
    )
    .unwrap();
    let mk = || {
        EvaluateCall::new("agent", format!("state {SENTINEL}"), q.clone())
            .with_session_id("s1")
            .with_task_id("t1")
    };
    gw.evaluate(&mk().with_request_id(format!("id-{SENTINEL}")))
        .unwrap();
    server.script([Behaviour::Status(500, vec![], format!("boom {SENTINEL}"))]);
    let err = gw.evaluate(&mk()).unwrap_err();
    assert!(!err.to_string().contains(SENTINEL));
    server.script([Behaviour::Malformed]);
    gw.evaluate(&mk()).unwrap_err();
    let page = gw.usage("agent", 100, 0).unwrap();
    assert_eq!(page.total, 3);
    let text = serde_json::to_string(&page).unwrap();
    assert!(!text.contains(SENTINEL), "{text}");
    assert_eq!(page.records[0].outcome, "JEV_MALFORMED_RESPONSE");
    assert_eq!(
        page.records[0].validation_reason.as_deref(),
        Some("MALFORMED_JSON")
    );
    assert_eq!(page.records[1].outcome, "JEV_PROVIDER_FAILURE");
    let ok = &page.records[2];
    assert_eq!(ok.outcome, "OK");
    assert_eq!(ok.session_id.as_deref(), Some("s1"));
    assert_eq!(
        ok.requested_model.as_deref(),
        Some("catalog-prefix/jev-version")
    );
    assert_eq!(ok.model.as_deref(), Some("jev-1.13.0"));
    assert_eq!(ok.usage.unwrap().input_tokens, 120);
    assert_eq!(ok.request_id_hash.as_ref().unwrap().len(), 32);
    let dir = gw.data_dir().to_path_buf();
    gw.close();
    for entry in std::fs::read_dir(dir).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        assert!(
            !bytes
                .windows(SENTINEL.len())
                .any(|w| w == SENTINEL.as_bytes()),
            "sentinel found in the store files"
        );
    }
}

// R-JEV-USAGE: paging bounds, newest first, total per agent, newest 10,000 kept.
#[test]
fn r_jev_usage_paging_bounds_and_retention() {
    let gw = open(json!({"gateway": {"jev": {"enabled": true, "provider": "local"}}}));
    assert_eq!(gw.usage("nobody", 50, 0).unwrap().total, 0);
    assert!(gw.usage("nobody", 50, 0).unwrap().records.is_empty());
    for bad in [0, 101] {
        assert_eq!(
            gw.usage("a", bad, 0).unwrap_err().code(),
            "INVALID_ARGUMENT"
        );
    }
    let q = Questions::new([Question::noul("g", "?")], &Limits::default()).unwrap();
    let eval = |i: usize| {
        let agent = if i < 5 { "old" } else { "a" };
        gw.evaluate(&EvaluateCall::new(agent, "s", q.clone()).with_task_id(format!("t{i}")))
            .unwrap();
    };
    // Every record is committed before its call returns; concurrent callers share commits, so
    // the middle of the run is spread over threads. The first and last ones run in order.
    (0..5).for_each(eval);
    std::thread::scope(|s| {
        for t in 0..8 {
            let eval = &eval;
            s.spawn(move || (5..10_001).filter(|i| i % 8 == t).for_each(eval));
        }
    });
    (10_001..10_005).for_each(eval);
    assert_eq!(gw.usage("old", 10, 0).unwrap().total, 0, "oldest trimmed");
    let page = gw.usage("a", 3, 1).unwrap();
    assert_eq!(page.total, 10_000);
    let tasks: Vec<_> = page
        .records
        .iter()
        .map(|r| r.task_id.clone().unwrap())
        .collect();
    assert_eq!(tasks, ["t10003", "t10002", "t10001"]);
}

// R-JEV-REQ: size and question limits from the captured configuration, before any I/O.
#[test]
fn r_jev_req_size_and_question_limits_apply_before_io() {
    let server = TestServer::start();
    let env = key_env("REQ", "k");
    let gw = open(upstream(
        &server,
        &env,
        json!({"maxInputBytes": 200, "maxQuestions": 2}),
    ));
    let err = gw
        .evaluate(&EvaluateCall::new("a", "x".repeat(300), questions()))
        .unwrap_err();
    assert_eq!(err.code(), "JEV_INVALID_REQUEST");
    let err = gw
        .evaluate_json(
            r#"{"agentId":"a","state":"s","requestId":"has space","questions":{"g":{"type":"noul"}}}"#,
            None,
        )
        .unwrap_err();
    assert_eq!(err.path(), Some("requestId"));
    assert_eq!(server.hits(), 0);
}

// R-JEV-LIMIT: maxQueueSize 0 rejects at once when the slot is busy.
#[test]
fn r_jev_limit_zero_queue_rejects_immediately() {
    let server = TestServer::start();
    server.set_default(Behaviour::Gate);
    let env = key_env("Q0", "k");
    let gw = Arc::new(open(upstream(
        &server,
        &env,
        json!({"maxConcurrentRequests": 1, "maxQueueSize": 0, "timeoutMs": 60000}),
    )));
    let g = Arc::clone(&gw);
    let t = std::thread::spawn(move || g.evaluate(&call("a").with_request_id("busy")));
    wait_until("in flight", || server.hits() == 1);
    let err = gw
        .evaluate(&call("a").with_request_id("second"))
        .unwrap_err();
    assert_eq!(err.code(), "JEV_QUEUE_FULL");
    server.open_gate();
    t.join().unwrap().unwrap();
    // the rejected id was never sent, so it is free again
    gw.evaluate(&call("a").with_request_id("second")).unwrap();
}

// R-PRV callback: the host's function receives the upstream-shaped request and its answer goes
// through the validator.
#[test]
fn r_prv_callback_goes_through_the_validator() {
    let gw = open(json!({"gateway": {"jev": {"enabled": true, "provider": "callback"}}}));
    assert_eq!(
        gw.evaluate(&call("a")).unwrap_err().code(),
        "JEV_INVALID_CONFIGURATION"
    );
    let got = Arc::new(parking_lot::Mutex::new(None));
    let g2 = Arc::clone(&got);
    gw.set_jev_callback(Some(Arc::new(move |req: &[u8]| {
        let v: serde_json::Value = serde_json::from_slice(req).unwrap();
        *g2.lock() = Some(v.clone());
        let body = json!({"model": "host-model", "answers": support::jev_server::answers_for(&v),
                          "usage": {"input_tokens": 1, "output_tokens": 2}});
        Ok(body.to_string().into_bytes())
    })));
    let e = gw.evaluate(&call("a")).unwrap();
    assert_eq!(e.model, "host-model");
    let req = got.lock().clone().unwrap();
    assert_eq!(req["state"], "Hello");
    assert!(req["request_id"].is_string());
    gw.set_jev_callback(Some(Arc::new(|_req: &[u8]| {
        Ok(br#"{"model":"m","answers":{},"usage":{"input_tokens":1,"output_tokens":1}}"#.to_vec())
    })));
    let err = gw.evaluate(&call("a")).unwrap_err();
    assert_eq!(err.validation_reason(), Some("MISSING_ANSWER"));
    gw.set_jev_callback(Some(Arc::new(|_req: &[u8]| {
        Err(Error::ProviderFailure {
            reason: "host model down".into(),
        })
    })));
    assert_eq!(
        gw.evaluate(&call("a")).unwrap_err().code(),
        "JEV_PROVIDER_FAILURE"
    );
}

// SPEC §3.4 local: deterministic, Thai-aware, always valid.
#[test]
fn r_prv_local_is_deterministic_and_thai_aware() {
    let gw = open(json!({"gateway": {"jev": {"enabled": true, "provider": "local"}}}));
    let q = Questions::new(
        [Question::choice(
            "next",
            "ขั้นตอนถัดไป",
            [("pay", "ชำระเงินด้วยบัตร"), ("search", "ค้นหาเที่ยวบินไปโอซาก้า")],
        )
        .unwrap()],
        &Limits::default(),
    )
    .unwrap();
    let c = EvaluateCall::new("a", "ค้นหาเที่ยวบิน เชียงใหม่ โอซาก้า", q);
    let a = gw.evaluate(&c).unwrap();
    let b = gw.evaluate(&c).unwrap();
    assert_eq!(a.answers, b.answers);
    assert!(
        matches!(a.answer("next"), Some(EvalAnswer::Choice { choice, .. }) if choice == "search")
    );
    assert_eq!(a.model, "local-heuristic-1");
}

// TLS with a test CA: trusted with the CA, refused without it.
#[test]
fn tls_with_a_test_ca() {
    let server = TestServer::start_tls();
    let env = key_env("TLS", "k");
    let ca = server.ca_der.clone().unwrap();
    let gw = open_with(upstream(&server, &env, json!({})), |o| {
        o.with_jev_root_certificates(vec![ca])
    });
    gw.evaluate(&call("a")).unwrap();
    let untrusting = open(upstream(&server, &env, json!({})));
    let err = untrusting.evaluate(&call("a")).unwrap_err();
    assert_eq!(err.code(), "JEV_PROVIDER_FAILURE");
    assert!(err.to_string().contains("TLS"), "{err}");
}

// R-PRV-THINK: both wire formats, only {text}, failures never become text.
#[test]
fn r_prv_think_wire_formats_and_failures() {
    let server = TestServer::start();
    let env = key_env("THINK", "think-key");
    let thinking = |api: &str| {
        json!({"gateway": {"jev": {"enabled": true, "provider": "local",
            "thinking": {"baseUrl": format!("{}/v1", server.base()), "model": "small",
                         "apiKeyEnv": env, "api": api}}}})
    };
    let req = ThinkRequest {
        agent_id: "a".into(),
        instructions: "Fill the origin field".into(),
        input: "เลือกต้นทางเป็นเชียงใหม่".into(),
        timeout_ms: None,
    };
    let gw = open(thinking("openai-chat"));
    server.script([Behaviour::Think(r#"{"text":"เชียงใหม่"}"#.into())]);
    assert_eq!(gw.think(&req).unwrap().text.as_deref(), Some("เชียงใหม่"));
    let seen = server.seen().pop().unwrap();
    assert_eq!(seen.path, "/v1/chat/completions");
    assert_eq!(seen.authorization.as_deref(), Some("Bearer think-key"));
    assert_eq!(seen.body["max_tokens"], 4096);
    server.script([Behaviour::Think(r#"{"text":null}"#.into())]);
    assert_eq!(gw.think(&req).unwrap().text, None);
    server.script([Behaviour::Think("Chiang Mai".into())]);
    assert_eq!(gw.think(&req).unwrap_err().code(), "JEV_MALFORMED_RESPONSE");
    server.script([Behaviour::Status(500, vec![], "oops".into())]);
    assert_eq!(gw.think(&req).unwrap_err().code(), "JEV_PROVIDER_FAILURE");
    let gw = open(thinking("anthropic-messages"));
    server.script([Behaviour::Think(r#"{"text":"x"}"#.into())]);
    assert_eq!(gw.think(&req).unwrap().text.as_deref(), Some("x"));
    let seen = server.seen().pop().unwrap();
    assert_eq!(seen.path, "/v1/messages");
    assert_eq!(seen.x_api_key.as_deref(), Some("think-key"));
    assert_eq!(seen.authorization, None);
}

// The JSON surface used by C, Python and the CLI.
#[test]
fn evaluate_json_round_trip() {
    let gw = open(json!({"gateway": {"jev": {"enabled": true, "provider": "local"}}}));
    let out = gw
        .evaluate_json(
            r#"{"agentId":"a","sessionId":"s","requestId":"r-1","state":"Hello",
                "questions":{"greeting":{"type":"noul","instructions":"Is this a greeting?"}}}"#,
            None,
        )
        .unwrap();
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["requestId"], "r-1");
    assert_eq!(v["answers"]["greeting"]["type"], "noul");
    let usage: serde_json::Value =
        serde_json::from_str(&gw.usage_json("a", 10, 0).unwrap()).unwrap();
    assert_eq!(usage["total"], 1);
    assert_eq!(usage["records"][0]["sessionId"], "s");
    assert_eq!(usage["records"][0]["outcome"], "OK");
    let err = gw
        .evaluate_json(
            r#"{"agentId":"a","state":"s","questions":{},"extra":1}"#,
            None,
        )
        .unwrap_err();
    assert_eq!(err.code(), "JEV_INVALID_REQUEST");
}

// Closing joins the client's threads and refuses further evaluations.
#[test]
fn close_joins_and_refuses() {
    let gw = open(json!({"gateway": {"jev": {"enabled": true, "provider": "local"}}}));
    gw.evaluate(&call("a")).unwrap();
    gw.close();
    assert_eq!(
        gw.evaluate(&call("a")).unwrap_err().code(),
        "GATEWAY_CLOSED"
    );
}

// R-JEV-ERRMAP, R-CLK (issue 12 item 6): a Retry-After far in the future — an HTTP date in
// year 9999, an absurd one, or a huge delta — is clamped, never a panic on the I/O thread;
// the error stays JEV_RATE_LIMITED with a bounded retry_after.
#[test]
fn r_jev_errmap_far_future_retry_after_is_clamped_not_a_panic() {
    let server = TestServer::start();
    let env = key_env("FARRETRY", "k");
    let gw = open(upstream(&server, &env, json!({})));
    let year = Duration::from_secs(86_400 * 366);
    for value in [
        "Fri, 31 Dec 9999 23:59:59 GMT",
        "Fri, 31 Dec 99999999999999999 23:59:59 GMT",
        "Fri, 31 Dec -99999999999999999 23:59:59 GMT",
        "18446744073709551615",
        "99999999999999999999999999",
    ] {
        server.script([Behaviour::Status(
            429,
            vec![
                ("Retry-After".into(), value.into()),
                ("X-RateLimit-Reset".into(), "99999999999".into()),
            ],
            String::new(),
        )]);
        let err = gw.evaluate(&call("a")).unwrap_err();
        assert_eq!(err.code(), "JEV_RATE_LIMITED", "Retry-After: {value}");
        if let Some(after) = err.retry_after() {
            assert!(after <= year, "Retry-After: {value} gave {after:?}");
        }
    }
}

/// An adversarial `local` request of about `size` bytes of JSON: half of it options (as many
/// choice questions of 255 options as fit, up to 64), half a state of distinct pseudo-random
/// words — the shape that made the old heuristic quadratic (options × state).
fn local_request(size: usize) -> EvaluateCall {
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut word = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (0..6)
            .map(|i| (b'a' + ((seed >> (i * 5)) % 26) as u8) as char)
            .collect::<String>()
    };
    let per_option = 22; // `"o12_123":"abcdef xyz",` ≈ 22 bytes
    let options = (size / 2 / per_option).min(64 * 255);
    let mut qs = serde_json::Map::new();
    let mut left = options;
    for q in 0..64 {
        if left == 0 {
            break;
        }
        let n = left.min(255);
        left -= n;
        let criteria: serde_json::Map<String, serde_json::Value> = (0..n)
            .map(|i| (format!("o{q}_{i}"), json!(format!("{} xyz", word()))))
            .collect();
        qs.insert(
            format!("q{q}"),
            json!({"type": "choice", "instructions": word(), "criteria": criteria}),
        );
    }
    let questions_json = serde_json::to_string(&qs).unwrap();
    let mut state = String::new();
    while state.len() + questions_json.len() + 200 < size {
        state.push_str(&word());
        state.push(' ');
    }
    let limits = Limits {
        max_questions: 64,
        max_input_bytes: 1_048_576,
    };
    let questions = Questions::from_json(questions_json.as_bytes(), &limits).unwrap();
    EvaluateCall::new("a", state, questions)
}

fn local_config(timeout_ms: u64) -> serde_json::Value {
    json!({"gateway": {"jev": {"enabled": true, "provider": "local", "timeoutMs": timeout_ms,
        "maxInputBytes": 1_048_576, "maxQuestions": 64}}})
}

// R-PRV local, issue 12 items 4–5: the heuristic is linear in the request. Timed through
// `evaluate` (request checks, heuristic, validator) at ~100 KB and ~1 MiB of the adversarial
// shape; the ratio of the two (not an absolute time) must stay near 10. The old heuristic (a
// merged bag per question, a context norm per option) was options × state: a ratio near 80.
#[test]
fn r_prv_local_is_linear_in_the_request() {
    let gw = open(local_config(120_000));
    let time = |call: &EvaluateCall| {
        (0..2)
            .map(|_| {
                let t = Instant::now();
                gw.evaluate(call).unwrap();
                t.elapsed()
            })
            .min()
            .unwrap()
    };
    let (small, large) = (local_request(100_000), local_request(1_000_000));
    let (ts, tl) = (time(&small), time(&large));
    let ratio = tl.as_secs_f64() / ts.as_secs_f64();
    eprintln!("local provider: 100 KB {ts:?}, 1 MB {tl:?}, ratio {ratio:.1}");
    assert!(ratio < 20.0, "100 KB {ts:?}, 1 MB {tl:?}: ratio {ratio:.1}");
}

/// A manual clock that moves `step` forward each time the thread that made it reads `now()`
/// (other threads — the reaper, the usage writer — read it without moving it).
#[derive(Debug)]
struct TickingClock {
    inner: ManualClock,
    thread: std::thread::ThreadId,
    step: Duration,
}

impl jevgate::clock::Clock for TickingClock {
    fn now(&self) -> jevgate::clock::Instant {
        if std::thread::current().id() == self.thread {
            self.inner.advance(self.step);
        }
        self.inner.now()
    }
    fn wall(&self) -> std::time::SystemTime {
        self.inner.wall()
    }
}

// R-JEV-LIMIT, R-CLK, issue 12 item 5: the `local` heuristic runs under the evaluation's deadline
// on the gateway clock. With a clock that moves 10 ms per read on the calling thread and
// `timeoutMs` 1000, a ~1 MiB request must end JEV_TIMEOUT (the heuristic reads the clock as it
// works); the same request on a still clock, and a small one on the ticking clock, are OK. The old
// heuristic never read the clock and returned OK, however long it ran.
#[test]
fn r_jev_limit_the_local_provider_reads_the_deadline_as_it_works() {
    let call = local_request(1_000_000);
    let ticking = Arc::new(TickingClock {
        inner: ManualClock::new(),
        thread: std::thread::current().id(),
        step: Duration::from_millis(10),
    });
    let gw = open_with(local_config(1000), |o| o.with_clock(ticking.clone()));
    let err = gw.evaluate(&call).unwrap_err();
    assert_eq!(err.code(), "JEV_TIMEOUT");
    assert_eq!(
        gw.usage("a", 1, 0).unwrap().records[0].outcome,
        "JEV_TIMEOUT"
    );
    gw.evaluate(&EvaluateCall::new("a", "Hello", questions()))
        .unwrap();
    drop(gw);
    let still = open_with(local_config(1000), |o| {
        o.with_clock(Arc::new(ManualClock::new()))
    });
    still.evaluate(&call).unwrap();
}

// R-CFG-KEYFILE, R-JEV-LIMIT, issue 12 item 5: a FIFO at the apiKeyFile path (no writer) makes
// evaluate and doctor answer at once with JEV_MISSING_CREDENTIALS "is not a regular file" —
// before, opening it blocked both forever. Run in a thread with a generous join timeout so a
// regression fails instead of hanging the suite; nothing reaches the provider.
#[cfg(unix)]
#[test]
fn r_cfg_keyfile_a_fifo_never_blocks_evaluate_or_doctor() {
    let server = TestServer::start();
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("jev.key");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let gw = Arc::new(open(json!({"gateway": {"jev": {"enabled": true,
        "provider": "upstream", "baseUrl": server.base(),
        "apiKeyFile": fifo.to_str().unwrap(), "model": "m", "timeoutMs": 1000}}})));
    let (tx, rx) = std::sync::mpsc::channel();
    let g = Arc::clone(&gw);
    std::thread::spawn(move || {
        let e = g.evaluate(&call("a")).unwrap_err();
        tx.send((e.code(), e.to_string())).unwrap();
        let report = g.doctor().unwrap();
        let c = report
            .checks
            .iter()
            .find(|c| c.name == "jev.credentials")
            .unwrap()
            .clone();
        tx.send((c.code.unwrap_or("none"), c.detail)).unwrap();
    });
    for what in ["evaluate", "doctor"] {
        let (code, msg) = rx
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("{what} blocked on a FIFO key file"));
        assert_eq!(code, "JEV_MISSING_CREDENTIALS", "{what}: {msg}");
        assert!(msg.contains("is not a regular file"), "{what}: {msg}");
    }
    assert_eq!(server.hits(), 0);
}

/// A valid answer set for [`questions`], with this envelope around it.
fn answers_body(model: &str, billing: serde_json::Value) -> String {
    json!({"model": model, "usage": {"input_tokens": 3, "output_tokens": 4},
        "billing": billing, "answers": {
        "greeting": {"type": "noul", "noul": 0.5},
        "next": {"type": "choice", "choice": "explain",
                 "probabilities": {"explain": 1.0, "execute": 0.0}, "confidence": 1.0},
        "clarity": {"type": "score", "score": 0.0, "levels": [1.0, 0.0, 0.0],
                    "legend": ["a", "b", "c"], "confidence": 1.0}}})
    .to_string()
}

/// Total size of the files in `dir` (the store and its -wal / -shm).
fn dir_bytes(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum()
}

// R-JEV-USAGE, R-LOG, issue 12 item 9: a provider's `model` and `rate_version` are bounded
// (≤ 128 bytes) and cleaned (no control or bidi characters) before they are returned or
// stored; a score legend label likewise (≤ 1024 bytes). Ten answers carrying 1 MB of each grew the store to ~120 MiB before; now the whole
// data directory stays under 1 MiB.
#[test]
fn r_jev_usage_provider_strings_are_bounded_and_clean() {
    let server = TestServer::start();
    let env = key_env("LONGMODEL", "k");
    let gw = open(upstream(&server, &env, json!({})));
    let hostile = format!("jev\u{1b}[2J\u{7}\r\n\u{202e}{}", "m".repeat(1_000_000));
    let mut body: serde_json::Value = serde_json::from_str(&answers_body(
        &hostile,
        json!({"charged_credits": 0.5, "rate_version": hostile}),
    ))
    .unwrap();
    // the score legend is provider text returned to the caller too
    body["answers"]["clarity"]["legend"] = json!([hostile, "b", "c"]);
    server.set_default(Behaviour::Raw(body.to_string()));
    let clean = |s: &str| {
        assert!(
            s.len() <= jevgate::jev::MAX_PROVIDER_TEXT_BYTES,
            "{}",
            s.len()
        );
        assert!(
            !s.chars().any(|c| c.is_control() || c == '\u{202e}'),
            "{s:?}"
        );
        assert!(s.starts_with("jev"));
    };
    for _ in 0..10 {
        let e = gw.evaluate(&call("a")).unwrap();
        clean(&e.model);
        clean(e.billing.as_ref().unwrap().rate_version.as_deref().unwrap());
        let Some(EvalAnswer::Score { legend, .. }) = e.answer("clarity") else {
            panic!("a score answer")
        };
        assert!(legend[0].len() <= jevgate::jev::MAX_LEGEND_TEXT_BYTES);
        assert!(!legend[0].chars().any(|c| c.is_control() || c == '\u{202e}'));
        assert!(e.to_json().len() < 4096);
    }
    let page = gw.usage("a", 100, 0).unwrap();
    assert_eq!(page.total, 10);
    for r in &page.records {
        clean(r.model.as_deref().unwrap());
        clean(r.billing.as_ref().unwrap().rate_version.as_deref().unwrap());
    }
    let dir = gw.data_dir().to_path_buf();
    gw.close();
    let size = dir_bytes(&dir);
    assert!(size < 1 << 20, "the data directory holds {size} bytes");
}

/// Reads the usage table through a second SQLite connection, as another process (or the next
/// start after a crash) would: only committed records are visible.
fn committed_usage(gw: &Gateway) -> Vec<(String, Option<i64>, Option<f64>)> {
    let conn = rusqlite::Connection::open_with_flags(
        gw.data_dir().join("jevgate.sqlite3"),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .unwrap();
    let mut stmt = conn
        .prepare("SELECT outcome, input_tokens, charged_credits FROM jev_usage ORDER BY seq")
        .unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap()
}

// R-JEV-USAGE, issue 12 item 10d: a record is committed before evaluate returns — a second
// connection sees it at once, without close or a read through the gateway (the old 50 ms
// batch was invisible there, and lost on a crash) — and a provider that answered and charged
// is recorded even when the evaluation failed: a body that fails validation, and an upstream
// answering another request id.
#[test]
fn r_jev_usage_is_durable_on_return_and_kept_for_failed_but_charged_answers() {
    let server = TestServer::start();
    let env = key_env("CHARGED", "k");
    let gw = open(upstream(&server, &env, json!({})));
    gw.evaluate(&call("a")).unwrap();
    assert_eq!(
        committed_usage(&gw),
        [("OK".to_string(), Some(120), Some(0.25))]
    );
    // CHOICE_NOT_MAX: the provider answered (and billed), the validator refused it
    let mut bad: serde_json::Value =
        serde_json::from_str(&answers_body("m", json!({"charged_credits": 1.5}))).unwrap();
    bad["answers"]["next"]["choice"] = json!("execute");
    server.script([Behaviour::Raw(bad.to_string())]);
    let err = gw.evaluate(&call("a")).unwrap_err();
    assert_eq!(err.validation_reason(), Some("CHOICE_NOT_MAX"));
    let mut other: serde_json::Value =
        serde_json::from_str(&answers_body("m", json!({"charged_credits": 2.0}))).unwrap();
    other["request_id"] = json!("jev-someone-else");
    server.script([Behaviour::Raw(other.to_string())]);
    assert_eq!(
        gw.evaluate(&call("a")).unwrap_err().code(),
        "JEV_PROVIDER_FAILURE"
    );
    assert_eq!(
        committed_usage(&gw)[1..],
        [
            ("JEV_MALFORMED_RESPONSE".to_string(), Some(3), Some(1.5)),
            ("JEV_PROVIDER_FAILURE".to_string(), Some(3), Some(2.0)),
        ]
    );
    let page = gw.usage("a", 10, 0).unwrap();
    assert_eq!(page.records[1].model.as_deref(), Some("m"));
    assert_eq!(
        page.records[1].validation_reason.as_deref(),
        Some("CHOICE_NOT_MAX")
    );
    // a body that is not JSON reports nothing: nothing is invented
    server.script([Behaviour::Malformed]);
    gw.evaluate(&call("a")).unwrap_err();
    assert_eq!(
        committed_usage(&gw)[3],
        ("JEV_MALFORMED_RESPONSE".to_string(), None, None)
    );
}

// R-JEV-USAGE, R-JEV-LIMIT, issue 12 item 10d: when the caller times out but the provider answers
// afterwards (and charges), the answer's usage completes the caller's JEV_TIMEOUT record — one
// record per evaluation, never a second one. The provider is a host callback held on a gate
// until the caller has timed out (an HTTP provider's own I/O bounds end with the deadline).
#[test]
fn r_jev_usage_a_late_answer_completes_the_timed_out_record() {
    let gw = open(
        json!({"gateway": {"jev": {"enabled": true, "provider": "callback",
        "timeoutMs": 100}}}),
    );
    let (release, gate) = std::sync::mpsc::channel::<()>();
    let gate = parking_lot::Mutex::new(gate);
    let body = answers_body("late-model", json!({"charged_credits": 0.75}));
    gw.set_jev_callback(Some(Arc::new(move |_req: &[u8]| {
        gate.lock().recv().unwrap();
        Ok(body.clone().into_bytes())
    })));
    assert_eq!(gw.evaluate(&call("a")).unwrap_err().code(), "JEV_TIMEOUT");
    assert_eq!(
        committed_usage(&gw),
        [("JEV_TIMEOUT".to_string(), None, None)]
    );
    release.send(()).unwrap();
    wait_until("the late answer recorded", || {
        committed_usage(&gw) == [("JEV_TIMEOUT".to_string(), Some(3), Some(0.75))]
    });
    let page = gw.usage("a", 10, 0).unwrap();
    assert_eq!(page.total, 1);
    assert_eq!(page.records[0].model.as_deref(), Some("late-model"));
}

// R-CLK, issue 12 item 6: a host clock moved by an absurd amount during a call (here by a
// callback provider) neither panics nor wraps: the record's latency saturates.
#[test]
fn r_clk_latency_saturates_when_the_clock_jumps_during_a_call() {
    let clock = ManualClock::new();
    let gw = open_with(
        json!({"gateway": {"jev": {"enabled": true, "provider": "callback"}}}),
        |o| o.with_clock(Arc::new(clock.clone())),
    );
    let body = answers_body("m", json!(null));
    gw.set_jev_callback(Some(Arc::new(move |_req: &[u8]| {
        // 2⁶² s: its milliseconds wrapped to 0 with the old `as u64`
        clock.advance(Duration::from_secs(1 << 62));
        Ok(body.clone().into_bytes())
    })));
    // the answer is there when the caller looks; the deadline is past by then
    let outcome = gw.evaluate(&call("a"));
    assert!(outcome.is_ok() || outcome.unwrap_err().code() == "JEV_TIMEOUT");
    let record = &gw.usage("a", 1, 0).unwrap().records[0];
    assert_eq!(record.latency_ms, i64::MAX as u64);
}
