//! The Jev request ledger shared by a fleet through PostgreSQL (issue 23 item 3,
//! R-JEV-LEDGER across processes): a caller's `requestId` is accepted once across every
//! process for five minutes of the database's clock, rows hold keyed hashes only, and an id
//! rejected before dispatch is released for the whole fleet; and the usage records of every
//! process are the fleet's (R-JEV-USAGE, issue 23 item 3).
//!
//! Needs the cargo feature `postgres` and `JEVGATE_PG_URL` (see `tests/fleet_leases.rs`);
//! skipped with the reason printed otherwise, failed under `JEVGATE_REQUIRE_PG=1`.

mod support;

use jevgate::jev::{EvaluateCall, Limits, Question, Questions};
use jevgate::{CancelToken, Config, Gateway};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use support::pg::{fresh_db, pg_url, psql};

fn config(url_file: &Path) -> Config {
    Config::from_json_str(&support::pg::pg_jev_json(url_file).to_string()).unwrap()
}

fn open(url_file: &Path) -> (Gateway, tempfile::TempDir) {
    support::pg::open_with(config(url_file))
}

fn call(agent: &str, request_id: &str) -> EvaluateCall {
    let questions = Questions::new(
        [Question::noul("greeting", "Is this a greeting?")],
        &Limits::default(),
    )
    .unwrap();
    EvaluateCall::new(agent, "Hello", questions).with_request_id(request_id)
}

fn verdict(gw: &Gateway, agent: &str, id: &str) -> &'static str {
    match gw.evaluate(&call(agent, id)) {
        Ok(_) => "ACCEPTED",
        Err(e) if e.code() == "JEV_REQUEST_CONFLICT" => "CONFLICT",
        Err(e) => panic!("unexpected {}: {e}", e.code()),
    }
}

/// The child: evaluates once with the shared id and prints the verdict. Does nothing unless a
/// parent set `JEVGATE_LEDGER_CHILD`.
#[test]
fn child_role() {
    let Some(file) = std::env::var_os("JEVGATE_LEDGER_CHILD") else {
        return;
    };
    let (gw, _dir) = open(&PathBuf::from(file));
    println!("VERDICT {}", verdict(&gw, "assistant", "shared-r1"));
    println!(
        "OWN {}",
        verdict(&gw, "assistant", &format!("own-{}", std::process::id()))
    );
}

// R-JEV-LEDGER across processes: 8 processes evaluate with one requestId; exactly one is
// accepted, the other seven get JEV_REQUEST_CONFLICT (409); their own ids are all accepted.
#[test]
fn a_request_id_is_accepted_once_across_8_processes() {
    let Some(url) = pg_url() else { return };
    let db = fresh_db(&url);
    let children: Vec<_> = (0..8)
        .map(|_| {
            Command::new(std::env::current_exe().unwrap())
                .args(["--exact", "child_role", "--nocapture", "--test-threads=1"])
                .env("JEVGATE_LEDGER_CHILD", &db.url_file)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut verdicts = Vec::new();
    for mut child in children {
        let out = child.stdout.take().unwrap();
        for line in BufReader::new(out).lines() {
            let line = line.unwrap();
            for marker in ["VERDICT ", "OWN "] {
                if let Some(i) = line.find(marker) {
                    verdicts.push(format!("{marker}{}", line[i + marker.len()..].trim()));
                }
            }
        }
        assert!(child.wait().unwrap().success());
    }
    let count = |v: &str| verdicts.iter().filter(|x| *x == v).count();
    assert_eq!(count("VERDICT ACCEPTED"), 1, "{verdicts:?}");
    assert_eq!(count("VERDICT CONFLICT"), 7, "{verdicts:?}");
    assert_eq!(count("OWN ACCEPTED"), 8, "{verdicts:?}");
    // No row holds a raw id or caller scope: keyed hashes only.
    let raw = psql(
        &db.url,
        "SELECT count(*) FROM jevgate_request_ledger
         WHERE position('shared-r1'::bytea IN request) > 0
            OR position('assistant'::bytea IN scope) > 0",
    );
    assert_eq!(raw, "0");
    assert_eq!(
        psql(&db.url, "SELECT count(*) FROM jevgate_request_ledger"),
        "9"
    );
}

// R-JEV-LEDGER: scopes are per caller, and ids expire after five minutes of the database's
// clock (moved by the test offset), whatever the processes' clocks say.
#[test]
fn shared_ids_are_scoped_per_caller_and_expire_on_the_database_clock() {
    let Some(url) = pg_url() else { return };
    let db = fresh_db(&url);
    let (a, _da) = open(&db.url_file);
    let (b, _db) = open(&db.url_file);
    assert_eq!(verdict(&a, "assistant", "r1"), "ACCEPTED");
    assert_eq!(verdict(&b, "assistant", "r1"), "CONFLICT");
    assert_eq!(
        verdict(&b, "intern", "r1"),
        "ACCEPTED",
        "another caller's scope"
    );
    jevgate::unstable::advance_store_clock_ms(b.leases(), 299_000);
    assert_eq!(verdict(&b, "assistant", "r1"), "CONFLICT");
    jevgate::unstable::advance_store_clock_ms(b.leases(), 1_000);
    assert_eq!(
        verdict(&b, "assistant", "r1"),
        "ACCEPTED",
        "expired after 300 s"
    );
}

// R-JEV-LEDGER: an id rejected before anything was sent (here: cancelled) is released for the
// whole fleet, so the caller may use it again from any process.
#[test]
fn an_id_rejected_before_dispatch_is_released_for_the_fleet() {
    let Some(url) = pg_url() else { return };
    let db = fresh_db(&url);
    let (a, _da) = open(&db.url_file);
    let (b, _db) = open(&db.url_file);
    let cancel = CancelToken::new();
    cancel.cancel();
    let err = a
        .evaluate_with_cancel(&call("assistant", "r2"), &cancel)
        .unwrap_err();
    assert_eq!(err.code(), "JEV_CANCELLED");
    assert_eq!(verdict(&b, "assistant", "r2"), "ACCEPTED");
    assert_eq!(verdict(&a, "assistant", "r2"), "CONFLICT");
}

// R-JEV-USAGE across processes (issue 23 item 3): every process's usage records are in the
// shared store — each evaluation's record committed before it returns — so any process pages
// through the fleet's records of an agent, newest first.
#[test]
fn usage_records_are_shared_by_the_fleet() {
    let Some(url) = pg_url() else { return };
    let db = fresh_db(&url);
    let (a, _da) = open(&db.url_file);
    let (b, _db) = open(&db.url_file);
    assert_eq!(verdict(&a, "assistant", "u1"), "ACCEPTED");
    assert_eq!(verdict(&b, "assistant", "u2"), "ACCEPTED");
    assert_eq!(verdict(&b, "intern", "u3"), "ACCEPTED");
    for gw in [&a, &b] {
        let page = gw.usage("assistant", 10, 0).unwrap();
        assert_eq!(page.total, 2);
        assert_eq!(page.records.len(), 2);
        assert!(page
            .records
            .iter()
            .all(|r| r.agent_id == "assistant" && r.outcome == "OK"));
        assert_eq!(gw.usage("intern", 10, 0).unwrap().total, 1);
    }
    let newest_first = a.usage("assistant", 1, 0).unwrap();
    assert_eq!(newest_first.records.len(), 1);
    assert!(newest_first.records[0].at_ms >= a.usage("assistant", 1, 1).unwrap().records[0].at_ms);
    // Metadata only: no raw request id in the shared table.
    assert_eq!(
        psql(
            &db.url,
            "SELECT count(*) FROM jev_usage WHERE request_id_hash IN ('u1', 'u2', 'u3')"
        ),
        "0"
    );
    assert_eq!(psql(&db.url, "SELECT count(*) FROM jev_usage"), "3");
}

// R-JEV-USAGE across processes (issue 23 item 3): a usage record's request id is hashed under
// the fleet's secret, so the same request id hashes the same in every process (each has its
// own data directory and gateway secret): the attempt cancelled on A and the evaluation B
// accepted with that id carry one hash.
#[test]
fn one_request_id_hashes_the_same_in_every_process() {
    let Some(url) = pg_url() else { return };
    let db = fresh_db(&url);
    let (a, _da) = open(&db.url_file);
    let (b, _db) = open(&db.url_file);
    let cancel = CancelToken::new();
    cancel.cancel();
    let err = a
        .evaluate_with_cancel(&call("assistant", "h1"), &cancel)
        .unwrap_err();
    assert_eq!(err.code(), "JEV_CANCELLED");
    assert_eq!(verdict(&b, "assistant", "h1"), "ACCEPTED");
    assert_eq!(verdict(&a, "assistant", "h2"), "ACCEPTED");
    let rows = psql(&db.url, "SELECT count(*) FROM jev_usage");
    let hashes = psql(
        &db.url,
        "SELECT count(*) || ' ' || count(DISTINCT request_id_hash) FROM jev_usage
          WHERE request_id_hash IS NOT NULL",
    );
    // Three records (h1 cancelled on A, h1 on B, h2 on A), two hashes: h1's are one.
    assert_eq!(hashes, "3 2", "{rows}");
}
