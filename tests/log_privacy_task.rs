//! R-LOG for tasks: nothing a task carries — the person's commands, the text it types, page
//! text, control names, the kept observations and results — reaches a log record, at any level,
//! from any crate, nor an error message; not on success, not when a command fails, not when a
//! request is interrupted and recovered.
//!
//! Its own test binary, so that the capturing logger (`support::log_capture`) is the process's
//! logger. The page is
//! a real headless Chromium on a loopback fixture whose text and button names are sentinels; the
//! decisions go to a callback "model" (it must see the control names: that is its job).

mod support;

use jevgate::task::{SpawnRequest, TaskOwner, TaskState};
use jevgate::{Config, Gateway, GatewayOptions};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::sync::Arc;
use std::time::Duration;
use support::log_capture;

const PAGE_TEXT: &str = "PAGETEXT-SENTINEL-91ab";
const BUTTON: &str = "ButtonSentinel4c2e";
const TYPED: &str = "TYPEDSENTINEL-3f9d";
const COMMAND_WORD: &str = "zebracommand";

fn serve() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for mut conn in listener.incoming().flatten() {
            let mut reader = BufReader::new(conn.try_clone().unwrap());
            let mut line = String::new();
            loop {
                line.clear();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
            }
            let body = format!(
                "<!doctype html><title>{PAGE_TEXT}</title><p>{PAGE_TEXT}</p>\
                 <input type=search aria-label=Search><button>{BUTTON}</button>\
                 <div style='height:3000px'>{PAGE_TEXT}</div>"
            );
            let _ = write!(
                conn,
                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    base
}

#[test]
fn r_log_a_task_logs_no_command_typed_text_or_page_content() {
    log_capture::install(log_capture::everything);
    let base = serve();
    let dir = tempfile::tempdir().unwrap();
    let config = support::gateway::with_tasks(
        json!({"gateway": {"jev": {"enabled": true, "provider": "callback"}}}),
    );
    let gw = Gateway::open(GatewayOptions::new(
        dir.path(),
        Config::from_json_str(&config.to_string()).unwrap(),
    ))
    .unwrap();
    gw.set_jev_callback(Some(Arc::new(|req: &[u8]| {
        let v: Value = serde_json::from_slice(req).unwrap();
        let opts = v["questions"]["control"]["criteria"].as_object().unwrap();
        let key = opts
            .iter()
            .find(|(_, d)| d.as_str().unwrap_or("").contains(BUTTON))
            .map(|(k, _)| k.clone())
            .unwrap();
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
    })));
    let owner = TaskOwner::new("assistant", "alice", "conv-1");
    let mut request = SpawnRequest::from_person(format!(
        "1. search {TYPED}\n2. press the {COMMAND_WORD} {BUTTON}\n3. scroll down\n4. scroll up\n5. scroll up"
    ));
    request.start_url = Some(format!("{base}/"));
    let id = gw.tasks().spawn(&owner, request).unwrap();
    let s = gw
        .tasks()
        .wait(&owner, &id, Duration::from_secs(60))
        .unwrap();
    // The last step cannot be done (already at the top): a not-done path is logged too.
    assert_eq!(s.state, TaskState::Failed, "{s:#?}");
    assert_eq!(s.step_run.as_ref().unwrap().done_parts.len(), 4, "{s:#?}");
    // Errors carry no command text either.
    let e = gw
        .tasks()
        .command(&owner, &id, &format!("{TYPED} {COMMAND_WORD}"))
        .unwrap_err();
    assert!(!e.to_string().contains(TYPED));
    let receipts = gw.tasks().receipts(&owner, &id).unwrap();
    assert!(
        serde_json::to_string(&receipts)
            .unwrap()
            .contains(PAGE_TEXT),
        "the owner's receipts do keep the bounded observation"
    );
    gw.close();
    // Recovery after a reopen logs nothing private either.
    let gw = Gateway::open(GatewayOptions::new(dir.path(), Config::default())).unwrap();
    gw.close();

    let records = log_capture::records();
    assert!(!records.is_empty(), "the capture sees records");
    for log_capture::Captured {
        target,
        message: text,
        ..
    } in &records
    {
        for secret in [PAGE_TEXT, BUTTON, TYPED, COMMAND_WORD] {
            assert!(
                !text.contains(secret),
                "a {target} record carries {secret}: {text}"
            );
        }
    }
}
