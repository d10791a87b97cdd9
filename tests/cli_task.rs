//! `jevgate task run` and `jevgate task list` (issue 14 §6; R-TSK, R-TSK-RCPT, R-RUN): the real
//! binary runs a person's step list on a real headless Chromium over loopback fixture pages that
//! count every real click, and lists the data directory's tasks and receipts — including a
//! request a SIGKILLed process left running, reported `BROWSER_EXECUTION_INTERRUPTED`.

mod support;

use jevgate::task::{SpawnRequest, TaskOwner};
use jevgate::{Config, Gateway, GatewayOptions};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::{Command, Output, Stdio};
use std::time::Duration;
use support::Server;

const STEPS: &str = "1. ค้นหา cats\n2. open Cats result one\n3. กลับ\n4. scroll ลง";

fn jevgate(args: &[&str]) -> Output {
    jevgate_env(args, &[])
}

fn jevgate_env(args: &[&str], env: &[(&str, &std::path::Path)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_jevgate"));
    cmd.args(args).stdin(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8(out.stdout.clone()).unwrap(),
        String::from_utf8(out.stderr.clone()).unwrap(),
    )
}

// R-RUN, R-TSK-RCPT: a mixed Thai/English step list that completes prints one outcome line per
// settled command, then the summary, and exits 0; `task list` then shows the task, its
// operation ids and tools — and never the observations and results the receipts keep.
#[test]
fn r_run_task_run_completes_and_task_list_shows_its_receipts() {
    let server = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().to_str().unwrap();
    let url = server.url("/p/taskhome");
    let out = jevgate(&["task", "run", "--data-dir", data, "--url", &url, STEPS]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 6, "start + four steps + summary: {stdout}");
    assert!(
        lines[..5].iter().all(|l| l.starts_with("Done: ")),
        "{stdout}"
    );
    assert!(lines[2].contains("Cats result one"), "{stdout}");
    let summary = lines[5];
    assert!(
        summary.starts_with("task ")
            && summary.contains(": completed (VERIFIED), steps ALL_STEPS_DONE 4/4"),
        "{summary}"
    );
    assert_eq!(server.wait_count("search", 1), 1);
    assert_eq!(server.wait_count("cats-link", 1), 1);
    assert_eq!(server.count("dogs-link"), 0);
    let id = summary["task ".len()..].split(':').next().unwrap();

    // The plain listing: the task, its request, each operation id and tool.
    let out = jevgate(&["task", "list", "--data-dir", data]);
    let (listing, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{listing}\n{stderr}");
    assert!(
        listing.starts_with(&format!("task {id}  completed (VERIFIED)")),
        "{listing}"
    );
    assert!(
        listing.contains("request 1  done (COMPLETION_CANDIDATE)"),
        "{listing}"
    );
    // The JSON listing: the same task with its receipts, operation ids and tools.
    let out = jevgate(&["task", "list", "--data-dir", data, "--json"]);
    let (json, _) = text(&out);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(json.lines().count(), 1, "{json}");
    let task: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(task["id"], id);
    assert_eq!(task["state"], "completed");
    assert!(task.get("goal").is_none(), "the goal's text is not listed");
    let ops = task["receipts"][0]["operations"].as_array().unwrap();
    let tools: Vec<&str> = ops.iter().map(|o| o["tool"].as_str().unwrap()).collect();
    assert_eq!(
        tools,
        [
            "tab_navigate",
            "page_type",
            "page_click",
            "tab_history",
            "page_scroll"
        ]
    );
    for op in ops {
        let op_id = op["operationId"].as_str().unwrap();
        let tool = op["tool"].as_str().unwrap();
        assert!(
            listing
                .lines()
                .any(|l| l.contains(op_id) && l.contains(tool) && l.contains("done")),
            "{op_id} {tool} in {listing}"
        );
        assert!(op.get("result").is_none() && op.get("observation").is_none());
    }
    // The receipts do keep observations (page text) for the owner's `receipts()`; neither
    // listing prints them.
    let gw = Gateway::open(GatewayOptions::new(dir.path(), Config::default())).unwrap();
    let all = jevgate::unstable::all_tasks(&gw.tasks(), 10).unwrap();
    gw.close();
    let kept = serde_json::to_string(&all[0].1).unwrap();
    assert!(kept.contains("More results"), "observations are kept");
    for shown in [&listing, &json] {
        assert!(!shown.contains("More results") && !shown.contains("Cats purr"));
        assert!(!shown.contains("observation"), "{shown}");
    }
}

// R-RUN step mode: a step that cannot be done (scroll up at the top: SCROLL_LIMIT) stops the
// list with STEP_NOT_EXECUTED, nothing after it runs, and the exit code is 1. Without
// --data-dir the task's store is a temporary directory that is gone afterwards.
#[test]
fn r_run_task_run_exits_1_when_a_step_is_not_done() {
    let server = Server::start();
    let tmp = tempfile::tempdir().unwrap();
    let url = server.url("/p/crash");
    let out = jevgate_env(
        &["task", "run", "--url", &url, "1. scroll up\n2. press Alpha"],
        &[("TMPDIR", tmp.path())],
    );
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines[0].starts_with("Done: "), "the start: {stdout}");
    assert!(
        lines.iter().any(|l| l.starts_with("Not done: ")),
        "{stdout}"
    );
    let summary = lines.last().unwrap();
    assert!(
        summary.contains(": failed (") && summary.contains("steps STEP_NOT_EXECUTED 0/2"),
        "{summary}"
    );
    assert_eq!(
        server.wait_count("Alpha", 0),
        0,
        "the step after it never ran"
    );
    let left: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("jevgate-task-"))
        .collect();
    assert!(left.is_empty(), "the temporary data directory is removed");
}

// Usage errors exit 2 and never echo the argument (a command or flag can hold a secret).
#[test]
fn task_usage_errors_exit_2_without_echoing_the_argument() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().to_str().unwrap();
    let secret = "hunter2-SECRET";
    let long = format!("type {secret} ").repeat(400);
    let bad_url = format!("javascript:{secret}");
    let missing = format!("/nonexistent/{secret}");
    let flag = format!("--{secret}");
    let cases: Vec<Vec<&str>> = vec![
        vec!["task"],
        vec!["task", secret],
        vec!["task", "run"],
        vec!["task", "run", "  "],
        vec!["task", "run", &flag, "scroll down"],
        vec!["task", "run", "scroll down", secret],
        vec!["task", "run", "--data-dir", data, &long],
        vec!["task", "run", "--data-dir", data, "--url", &bad_url, "x"],
        vec!["task", "run", "--url"],
        vec!["task", "list"],
        vec!["task", "list", "--data-dir", &missing],
        vec!["task", "list", "--data-dir", data, secret],
        vec!["task", "list", "--data-dir", data, "--limit", secret],
    ];
    for args in cases {
        let out = jevgate(&args);
        let (stdout, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stdout}{stderr}");
        assert!(stdout.is_empty(), "{args:?}: {stdout}");
        assert!(stderr.contains("usage: jevgate"), "{args:?}: {stderr}");
        assert!(!stderr.contains(secret), "{args:?} echoed: {stderr}");
    }
    // Nothing ran: the data directory holds no task.
    let out = jevgate(&["task", "list", "--data-dir", data]);
    assert_eq!(text(&out).0, "no tasks\n");
}

/// The child of the crash test: a task whose first dispatch blocks right after its checkpoint
/// committed (the start URL's navigation), until the parent SIGKILLs the process. Does nothing
/// unless the parent set the environment.
#[test]
fn child_task_blocked_after_checkpoint() {
    let (Some(dir), Some(url)) = (
        std::env::var_os("JEVGATE_CLI_TASK_CHILD_DIR"),
        std::env::var("JEVGATE_CLI_TASK_CHILD_URL").ok(),
    ) else {
        return;
    };
    let config = support::gateway::tasks_config();
    let gw = Gateway::open(GatewayOptions::new(dir, config)).unwrap();
    jevgate::unstable::set_checkpoint_hook(
        &gw.tasks(),
        Some(std::sync::Arc::new(|at: &'static str| {
            if at == "after_checkpoint" {
                use std::io::Write;
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "CHILD-BLOCKED");
                let _ = out.flush();
                loop {
                    std::thread::park();
                }
            }
        })),
    );
    let owner = TaskOwner::new("cli", "local", "cli");
    let mut request = SpawnRequest::from_person("press Alpha");
    request.start_url = Some(url);
    let id = gw.tasks().spawn(&owner, request).unwrap();
    let _ = gw.tasks().wait(&owner, &id, Duration::from_secs(600));
    unreachable!("the parent kills this process first");
}

// R-TSK-RCPT: a process killed after a checkpoint committed and before its result was stored
// leaves the request `running`; `task list` (which opens the data directory as a gateway does)
// reports it BROWSER_EXECUTION_INTERRUPTED, with the operation id and tool, and nothing re-sent.
#[test]
fn r_tsk_rcpt_task_list_shows_browser_execution_interrupted_after_a_kill() {
    let server = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_task_blocked_after_checkpoint",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("JEVGATE_CLI_TASK_CHILD_DIR", dir.path())
        .env("JEVGATE_CLI_TASK_CHILD_URL", server.url("/p/crash"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // The marker may share a line with libtest's own `test … ...` prefix. Read on a thread, so
    // a child that never gets there fails the test instead of hanging it.
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if line.contains("CHILD-BLOCKED") {
                let _ = tx.send(());
            }
        }
    });
    let blocked = rx.recv_timeout(Duration::from_secs(120)).is_ok();
    // SIGKILL: no destructor, no close, the request stays `running` in the file.
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(blocked, "the child reached the checkpoint");

    let data = dir.path().to_str().unwrap();
    let out = jevgate(&["task", "list", "--data-dir", data]);
    let (listing, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{listing}\n{stderr}");
    assert!(
        listing.starts_with("task ")
            && listing
                .lines()
                .next()
                .unwrap()
                .contains("needs_reconciliation (BROWSER_EXECUTION_INTERRUPTED)"),
        "{listing}"
    );
    assert!(
        listing.contains("request 1  interrupted (BROWSER_EXECUTION_INTERRUPTED)"),
        "{listing}"
    );
    assert!(
        listing
            .lines()
            .any(|l| l.contains("tab_navigate") && l.contains("interrupted")),
        "{listing}"
    );
    let out = jevgate(&["task", "list", "--data-dir", data, "--json"]);
    let task: Value = serde_json::from_str(&text(&out).0).unwrap();
    let receipt = &task["receipts"][0];
    assert_eq!(receipt["state"], "interrupted", "{task:#}");
    assert_eq!(receipt["reason"], "BROWSER_EXECUTION_INTERRUPTED");
    let op = &receipt["operations"][0];
    assert_eq!(
        (op["tool"].as_str(), op["status"].as_str()),
        (Some("tab_navigate"), Some("interrupted"))
    );
    assert!(op["operationId"]
        .as_str()
        .is_some_and(|s| listing.contains(s)));
    assert_eq!(server.count("Alpha"), 0, "nothing after the kill ran");
}

// Issue 21 defect 6: `task run` obeys the gate of the configuration it is given. A `--config`
// (here on stdin) that leaves `features.browserTasks` off, or keeps the agent out of
// `allowedAgentIds`, ends with the gate's code as one JSON error line and exit 1 — before any
// Chromium starts or the page is requested; the built-in default turns tasks on (the other tests
// of this file run on it).
#[test]
fn issue21_d6_task_run_with_a_config_that_turns_tasks_off_is_refused() {
    // The start page: a listener nobody answers, so any request to it stays pending here.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let url = format!("http://{}/start", listener.local_addr().unwrap());
    for (config, code) in [
        (
            r#"{"gateway":{"jev":{"enabled":true,"provider":"local"}}}"#,
            "ORCHESTRATION_DISABLED",
        ),
        (
            r#"{"gateway":{"jev":{"enabled":true,"provider":"local","allowedAgentIds":["someone-else"],"features":{"browserTasks":{"enabled":true}}}}}"#,
            "EXECUTION_DENIED",
        ),
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_jevgate"))
            .args(["task", "run", "--config", "-", "--url", &url, "scroll down"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(config.as_bytes()).unwrap();
        drop(stdin);
        let out = child.wait_with_output().unwrap();
        let (stdout, stderr) = text(&out);
        assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
        let line: Value = serde_json::from_str(stdout.trim()).unwrap();
        assert_eq!(line["code"], code, "{stdout}");
        assert!(!stdout.contains("someone-else"), "{stdout}");
        assert!(
            matches!(listener.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
            "the start page was requested"
        );
    }
}
