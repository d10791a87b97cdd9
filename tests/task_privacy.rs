//! Receipts keep no field values (issue 21 defect 7; R-TSK-RCPT, R-LOG): a real headless
//! Chromium types sentinels into a loopback form whose other field is prefilled with a
//! sentinel; then every byte of the SQLite file and its WAL, every column of every table, every
//! captured log record and the owner's `status()`, `list()` and `receipts()` are scanned. Typed
//! text may live only in the command's own column (`tasks.goal`, and `task_commands.text` where
//! that table exists); a prefilled value lives nowhere. The kept observations still name the
//! fields, with a length (`valueChars`) instead of the value.
//!
//! Its own test binary, so that the capturing logger (`support::log_capture`) is the process's
//! logger.

mod support;

use jevgate::task::{SpawnRequest, TaskOwner, TaskState};
use jevgate::{Config, Gateway, GatewayOptions};
use serde_json::{json, Value};
use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use support::{log_capture, pages::PREFILLED, Server};

const GOAL_TYPED: &str = "GOALTYPED-SENTINEL-8c41a9f0";
const COMMAND_TYPED: &str = "CMDTYPED-SENTINEL-2b7e55d3";
const WAIT: Duration = Duration::from_secs(90);
/// The tables whose pages may hold the person's own command text (its own columns).
const COMMAND_TABLES: [&str; 2] = ["tasks", "task_commands"];
/// The columns that are the command's own.
const COMMAND_COLUMNS: [(&str, &str); 2] = [("tasks", "goal"), ("task_commands", "text")];

fn owner() -> TaskOwner {
    TaskOwner::new("assistant", "alice", "conv-1")
}

/// A callback "model": a press goes to Save, text goes to the Comment field.
fn model() -> jevgate::jev::JevCallback {
    Arc::new(|req: &[u8]| {
        let v: Value = serde_json::from_slice(req).unwrap();
        let word = if v["state"].as_str().unwrap_or("").starts_with("press") {
            "Save"
        } else {
            "Comment"
        };
        let opts = v["questions"]["control"]["criteria"].as_object().unwrap();
        let key = opts
            .iter()
            .find(|(_, d)| d.as_str().unwrap_or("").contains(word))
            .map(|(k, _)| k.clone())
            .unwrap_or_else(|| "none".into());
        let probs: serde_json::Map<String, Value> = opts
            .keys()
            .map(|k| (k.clone(), json!(if *k == key { 1.0 } else { 0.0 })))
            .collect();
        Ok(
            json!({"model": "host", "usage": {"input_tokens": 1, "output_tokens": 1},
            "answers": {"control": {"type": "choice", "choice": key,
                "probabilities": probs, "confidence": 0.9}}})
            .to_string()
            .into_bytes(),
        )
    })
}

/// Both halves of `needle`: a value cut where a record spills onto an overflow page still shows
/// one of them whole.
fn halves(needle: &str) -> [&str; 2] {
    let mid = needle.len() / 2;
    [&needle[..needle.len() - mid], &needle[mid..]]
}

fn find_all(hay: &[u8], needle: &[u8]) -> Vec<usize> {
    hay.windows(needle.len())
        .enumerate()
        .filter(|(_, w)| *w == needle)
        .map(|(i, _)| i)
        .collect()
}

/// Where `needle` is stored outside the command's own columns: every column of every table
/// (by SQL), and every page of the database file and every frame of its WAL (by bytes; a page
/// may hold it only when it belongs to a table in `allowed_tables`).
fn stored_leaks(dir: &Path, needle: &str, allowed_tables: &[&str]) -> Vec<String> {
    let db = dir.join("jevgate.sqlite3");
    let c = rusqlite::Connection::open_with_flags(&db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .unwrap();
    let mut leaks = Vec::new();
    let tables: Vec<String> = c
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    for table in &tables {
        let columns: Vec<String> = c
            .prepare(&format!("SELECT name FROM pragma_table_info('{table}')"))
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        for column in columns {
            if COMMAND_COLUMNS.contains(&(table.as_str(), column.as_str()))
                && !allowed_tables.is_empty()
            {
                continue;
            }
            let n: i64 = c
                .query_row(
                    &format!(
                        "SELECT count(*) FROM \"{table}\" WHERE instr(CAST(\"{column}\" AS TEXT), ?1) > 0"
                    ),
                    [needle],
                    |r| r.get(0),
                )
                .unwrap();
            if n > 0 {
                leaks.push(format!("column {table}.{column} ({n} rows)"));
            }
        }
    }
    let page_size: usize = c
        .query_row("PRAGMA page_size", [], |r| r.get::<_, i64>(0))
        .unwrap() as usize;
    let mut allowed = HashSet::new();
    for table in allowed_tables {
        let mut st = c
            .prepare("SELECT pageno FROM dbstat WHERE name = ?1")
            .expect("the bundled SQLite has the dbstat table");
        for p in st.query_map([table], |r| r.get::<_, i64>(0)).unwrap() {
            allowed.insert(p.unwrap() as u64);
        }
    }
    let db_bytes = std::fs::read(&db).unwrap();
    let wal_bytes = std::fs::read(dir.join("jevgate.sqlite3-wal")).unwrap_or_default();
    for part in halves(needle) {
        for at in find_all(&db_bytes, part.as_bytes()) {
            let page = (at / page_size) as u64 + 1;
            if !allowed.contains(&page) {
                leaks.push(format!("database file page {page}"));
            }
        }
        let frame = 24 + page_size;
        let mut start = 32;
        while start + frame <= wal_bytes.len() {
            let page = u32::from_be_bytes(wal_bytes[start..start + 4].try_into().unwrap()) as u64;
            let data = &wal_bytes[start + 24..start + frame];
            if !find_all(data, part.as_bytes()).is_empty() && !allowed.contains(&page) {
                leaks.push(format!("WAL frame of page {page}"));
            }
            start += frame;
        }
    }
    leaks.sort();
    leaks.dedup();
    leaks
}

// Issue 21 defect 7, R-TSK-RCPT: typed text and prefilled field values never reach a receipt,
// another column, a log record or the owner's status; the kept observation names the fields and
// keeps only their length.
#[test]
fn r_tsk_rcpt_receipts_keep_no_field_values_or_typed_text() {
    log_capture::install(log_capture::everything);
    let server = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let config = json!({"gateway": {"jev": {"enabled": true, "provider": "callback",
        "features": {"browserTasks": {"enabled": true}}}}});
    let gw = Gateway::open(GatewayOptions::new(
        dir.path(),
        Config::from_json_str(&config.to_string()).unwrap(),
    ))
    .unwrap();
    gw.set_jev_callback(Some(model()));
    let t = gw.tasks();
    let mut request = SpawnRequest::from_person(format!("type {GOAL_TYPED} into Comment"));
    request.start_url = Some(server.url("/p/profile"));
    request.keep_open = true;
    let id = t.spawn(&owner(), request).unwrap();
    let s = t.wait(&owner(), &id, WAIT).unwrap();
    assert_eq!(
        (s.state, s.reason.as_deref()),
        (TaskState::WaitingInput, Some("DONE")),
        "{s:#?}"
    );
    for command in [
        format!("type {COMMAND_TYPED} into Comment"),
        "press Save".to_string(),
    ] {
        t.command(&owner(), &id, &command).unwrap();
        let s = t.wait(&owner(), &id, WAIT).unwrap();
        assert_eq!(
            (s.state, s.reason.as_deref()),
            (TaskState::WaitingInput, Some("DONE")),
            "{s:#?}"
        );
    }
    assert_eq!(server.wait_count("save", 1), 1);

    // The owner's views: no sentinel outside the goal itself.
    let mut status = serde_json::to_value(t.status(&owner(), &id).unwrap()).unwrap();
    assert!(status["goal"].as_str().unwrap().contains(GOAL_TYPED));
    status.as_object_mut().unwrap().remove("goal");
    let mut listed = serde_json::to_value(t.list(&owner()).unwrap()).unwrap();
    listed[0].as_object_mut().unwrap().remove("goal");
    let receipts = serde_json::to_value(t.receipts(&owner(), &id).unwrap()).unwrap();
    for (what, v) in [
        ("status", &status),
        ("list", &listed),
        ("receipts", &receipts),
    ] {
        let text = v.to_string();
        for secret in [GOAL_TYPED, COMMAND_TYPED, PREFILLED] {
            assert!(!text.contains(secret), "{what} carries {secret}: {text}");
        }
    }
    // The kept observations still name the fields (role, ref, name) and keep a length.
    let observations: Vec<&Value> = receipts
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r["operations"].as_array().unwrap())
        .filter_map(|o| o.get("observation").filter(|v| !v.is_null()))
        .collect();
    assert_eq!(
        observations.len(),
        4,
        "navigate, type, type, press: {receipts:#}"
    );
    let last = observations.last().unwrap();
    let field = |name: &str| {
        last["controls"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no {name} in {last:#}"))
    };
    let nick = field("Nickname");
    assert_eq!(nick["role"], "textbox");
    assert!(nick["ref"].as_str().unwrap().starts_with('e'));
    assert!(nick.get("value").is_none(), "{nick}");
    assert_eq!(nick["valueChars"], PREFILLED.chars().count());
    let comment = field("Comment");
    assert!(comment.get("value").is_none(), "{comment}");
    assert!(comment["valueChars"].as_u64().unwrap() > COMMAND_TYPED.len() as u64);

    // The file and its WAL: typed text only in the command's own table, the prefilled value
    // nowhere.
    for secret in [GOAL_TYPED, COMMAND_TYPED] {
        let leaks = stored_leaks(dir.path(), secret, &COMMAND_TABLES);
        assert!(leaks.is_empty(), "{secret} stored in {leaks:?}");
    }
    let leaks = stored_leaks(dir.path(), PREFILLED, &[]);
    assert!(leaks.is_empty(), "{PREFILLED} stored in {leaks:?}");
    t.cancel(&owner(), &id).unwrap();
    gw.close();

    for log_capture::Captured {
        target, message, ..
    } in &log_capture::records()
    {
        for secret in [GOAL_TYPED, COMMAND_TYPED, PREFILLED] {
            assert!(
                !message.contains(secret),
                "a {target} record carries {secret}: {message}"
            );
        }
    }
}

// Issue 26 slice A, R-TSK-RCPT: a kept observation keeps the containers of its controls
// (the dialog or form a press happens in) but never the text the task typed, even when the
// page echoes it into the form's own text: the container text shows `[text]` there.
#[test]
fn r_tsk_rcpt_kept_container_text_carries_no_typed_text() {
    const TYPED: &str = "BOXTYPED-SENTINEL-6d2f91";
    let server = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let config = json!({"gateway": {"jev": {"enabled": true, "provider": "callback",
        "features": {"browserTasks": {"enabled": true}}}}});
    let gw = Gateway::open(GatewayOptions::new(
        dir.path(),
        Config::from_json_str(&config.to_string()).unwrap(),
    ))
    .unwrap();
    gw.set_jev_callback(Some(model()));
    let t = gw.tasks();
    let mut request = SpawnRequest::from_person(format!("type {TYPED} into Comment"));
    request.start_url = Some(server.url("/p/echoform"));
    request.keep_open = true;
    let id = t.spawn(&owner(), request).unwrap();
    let s = t.wait(&owner(), &id, WAIT).unwrap();
    assert_eq!(s.reason.as_deref(), Some("DONE"), "{s:#?}");
    t.command(&owner(), &id, "press Save").unwrap();
    let s = t.wait(&owner(), &id, WAIT).unwrap();
    assert_eq!(s.reason.as_deref(), Some("DONE"), "{s:#?}");
    assert_eq!(server.wait_count("save", 1), 1);

    let receipts = serde_json::to_value(t.receipts(&owner(), &id).unwrap()).unwrap();
    assert!(!receipts.to_string().contains(TYPED), "{receipts:#}");
    let last = receipts
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r["operations"].as_array().unwrap())
        .filter_map(|o| o.get("observation").filter(|v| !v.is_null()))
        .next_back()
        .expect("the press keeps its observation")
        .clone();
    let save = last["controls"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "Save")
        .cloned()
        .unwrap_or_else(|| panic!("no Save in {last:#}"));
    let form = last["containers"]
        .as_array()
        .unwrap_or_else(|| panic!("no containers in {last:#}"))
        .iter()
        .find(|k| k["id"] == save["container"])
        .cloned()
        .unwrap();
    assert_eq!(form["name"], "Feedback");
    let text = form["text"].as_str().unwrap();
    assert!(text.contains("You wrote: [text]"), "{text}");
    let leaks = stored_leaks(dir.path(), TYPED, &COMMAND_TABLES);
    assert!(leaks.is_empty(), "{TYPED} stored in {leaks:?}");
    t.cancel(&owner(), &id).unwrap();
    gw.close();
}
