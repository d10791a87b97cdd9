//! Hostile and concurrent input to the task API (R-TSK, issue 14 "Bad input"): malformed,
//! oversized and deeply nested JSON for the owner and the request, hostile command text, and
//! many threads spawning, commanding and reading at once. Each gets a clear error or a clear
//! state; nothing echoes the input; the input-size work stays linear.

use jevgate::browser::{BrowserBackend, Command, Response};
use jevgate::observation::Observation;
use jevgate::task::{SpawnRequest, TaskOwner, TaskState};
use jevgate::{Config, Gateway, GatewayOptions};
use std::sync::Arc;
use std::time::Duration;

/// A blank page: observes, refuses every action (nothing is ever sent).
struct Blank;

impl BrowserBackend for Blank {
    fn execute(&self, command: &Command) -> jevgate::Result<Response> {
        match command {
            Command::Observe(_) => Ok(Response::Observation(Observation {
                generation: 1,
                ..Observation::default()
            })),
            _ => Err(jevgate::Error::TargetNotFound {
                reason: "e1".into(),
            }),
        }
    }
}

/// Browser tasks on (off by default), with the callback provider and no callback registered:
/// any command that needs a decision meets a configuration failure.
const CONFIG: &str = r#"{"gateway":{"jev":{"enabled":true,"provider":"callback","features":{"browserTasks":{"enabled":true},"browserSteps":{"enabled":true}}}}}"#;

fn gateway(dir: &std::path::Path) -> Gateway {
    Gateway::open(GatewayOptions::new(
        dir,
        Config::from_json_str(CONFIG).unwrap(),
    ))
    .unwrap()
}

#[test]
fn r_tsk_malformed_and_oversized_json_is_invalid_argument_without_echo() {
    let secret = "SECRET-IN-JSON-77";
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let huge = format!(
        r#"{{"agentId":"{}","principalId":"p","conversationId":"c"}}"#,
        "a".repeat(1 << 20)
    );
    for (json, name) in [
        ("", "owner"),
        ("{", "owner"),
        (deep.as_str(), "owner"),
        (r#"{"agentId":"a","principalId":"p"}"#, "owner"),
        (
            &format!(r#"{{"agentId":"a","principalId":"p","conversationId":"c","x":"{secret}"}}"#),
            "owner",
        ),
        (
            r#"{"agentId":"a\u0000","principalId":"p","conversationId":"c"}"#,
            "owner",
        ),
        (huge.as_str(), "owner"),
    ] {
        let e = TaskOwner::from_json(json).unwrap_err();
        assert_eq!(e.code(), "INVALID_ARGUMENT", "{json:.40}");
        assert!(e.to_string().contains(name));
        assert!(!e.to_string().contains(secret));
    }
    for json in [
        "[]".to_string(),
        deep.clone(),
        format!(r#"{{"goal":"x","extra":"{secret}"}}"#),
        r#"{"goal":"x","target":{"kind":"moon"}}"#.into(),
        r#"{"goal":"x","budget":{"maxSteps":-1,"maxEvaluations":1,"timeoutMs":1}}"#.into(),
        r#"{"goal":"x","budget":{"maxSteps":18446744073709551616,"maxEvaluations":1,"timeoutMs":1}}"#.into(),
    ] {
        let e = SpawnRequest::from_json(&json).unwrap_err();
        assert_eq!(e.code(), "INVALID_ARGUMENT");
        assert!(!e.to_string().contains(secret));
    }
    // Parsed but out of range: refused by spawn, before anything is stored.
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(dir.path());
    let owner = TaskOwner::new("a", "p", "c");
    for json in [
        r#"{"goal":"x","budget":{"maxSteps":0,"maxEvaluations":1,"timeoutMs":1}}"#,
        r#"{"goal":"x","budget":{"maxSteps":1,"maxEvaluations":1,"timeoutMs":18446744073709551615}}"#,
        r#"{"goal":"x","startUrl":"file:///etc/passwd"}"#,
        r#"{"goal":"x","target":{"kind":"device","deviceId":""}}"#,
    ] {
        let r = SpawnRequest::from_json(json).unwrap();
        assert_eq!(
            gw.tasks().spawn(&owner, r).unwrap_err().code(),
            "INVALID_ARGUMENT",
            "{json}"
        );
    }
    let huge_goal = SpawnRequest::from_person("x".repeat(1 << 20));
    assert_eq!(
        gw.tasks().spawn(&owner, huge_goal).unwrap_err().code(),
        "INVALID_ARGUMENT"
    );
    assert!(
        gw.tasks().list(&owner).unwrap().is_empty(),
        "nothing stored"
    );
    // A wait with an absurd timeout on a settled task returns at once (saturating).
    let id = gw
        .tasks()
        .spawn_with_backend(&owner, SpawnRequest::from_person(""), Arc::new(Blank))
        .unwrap();
    let s = gw.tasks().wait(&owner, &id, Duration::MAX).unwrap();
    assert_eq!(
        s.state,
        TaskState::WaitingInput,
        "an empty goal opens the session: {s:#?}"
    );
    gw.close();
}

// Linear time: the step-count check and the command checks on 1 MiB of hostile text finish
// (debug build) well within the time a quadratic scan would need many times over.
#[test]
fn r_tsk_hostile_command_text_is_refused_in_linear_time() {
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(dir.path());
    let owner = TaskOwner::new("a", "p", "c");
    let mut request = SpawnRequest::from_person("");
    request.keep_open = true;
    let id = gw
        .tasks()
        .spawn_with_backend(&owner, request, Arc::new(Blank))
        .unwrap();
    for text in [
        "1.\n".repeat(1 << 19),
        "-".repeat(1 << 20),
        "\u{202e}".repeat(1 << 18),
        "แล้ว ".repeat(1 << 17),
    ] {
        let e = gw.tasks().command(&owner, &id, &text).unwrap_err();
        assert_eq!(e.code(), "INVALID_ARGUMENT");
    }
    // Control and bidi characters in a short command are just a command with no fast path: it
    // needs a decision, and the callback provider has no callback — a configuration failure,
    // which stops the task (R-RUN) with a clear reason and nothing sent.
    gw.tasks()
        .command(&owner, &id, "\u{202e}scroll\u{0}down")
        .unwrap();
    let s = gw
        .tasks()
        .wait(&owner, &id, Duration::from_secs(30))
        .unwrap();
    assert_eq!(s.state, TaskState::Failed, "{s:#?}");
    assert!(s.reason.unwrap().starts_with("JEV_"));
    assert!(s.outcome.unwrap().starts_with("Not done: "));
    gw.close();
}

// Concurrency: 8 threads spawn, command, read and cancel at once across three owners; every
// task ends in a clear state, every owner sees only its own tasks, and close joins everything.
#[test]
fn r_tsk_concurrent_spawns_and_reads_keep_owners_apart() {
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(dir.path());
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let gw = gw.clone();
            std::thread::spawn(move || {
                // Two threads per principal, four spawns each: exactly the bound of 8 open
                // sessions per principal (R-TSK-CTL), never past it.
                let owner = TaskOwner::new("a", format!("p{}", t % 4), format!("c{}", t % 3));
                let mut ids = Vec::new();
                for i in 0..4 {
                    let mut r =
                        SpawnRequest::from_person(if i % 2 == 0 { "" } else { "scroll down" });
                    r.keep_open = i == 3;
                    let id = gw
                        .tasks()
                        .spawn_with_backend(&owner, r, Arc::new(Blank))
                        .unwrap();
                    let _ = gw.tasks().status(&owner, &id).unwrap();
                    ids.push(id);
                }
                // Empty goals opened sessions that hold their slots: cancel closes them (and
                // anything still queued never starts).
                let last = ids.last().unwrap().clone();
                let _ = gw.tasks().command(&owner, &last, "scroll up");
                for id in &ids {
                    gw.tasks().cancel(&owner, id).unwrap();
                }
                for id in &ids {
                    let s = gw
                        .tasks()
                        .wait(&owner, id, Duration::from_secs(60))
                        .unwrap();
                    assert!(!s.state.is_busy(), "{s:#?}");
                }
                (owner, ids)
            })
        })
        .collect();
    let results: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    for (owner, ids) in &results {
        let listed = gw.tasks().list(owner).unwrap();
        for id in ids {
            assert!(listed.iter().any(|t| &t.id == id));
        }
        assert!(listed.iter().all(|t| &t.owner == owner));
    }
    let listed: usize = (0..12)
        .map(|k| {
            gw.tasks()
                .list(&TaskOwner::new(
                    "a",
                    format!("p{}", k % 4),
                    format!("c{}", k % 3),
                ))
                .unwrap()
                .len()
        })
        .sum();
    assert_eq!(listed, 32);
    gw.close();
}
