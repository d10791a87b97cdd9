//! The agent-facing tools (issue 21 build item 8, R-TSK, R-TSK-CTL, R-BRW-UNTRUSTED):
//! `agent_tool_definitions` in MCP and function-calling form are valid JSON Schema and agree
//! with the executor on what they accept; `Gateway::call_agent_tool` runs every tool; bad
//! arguments get a clear error that never echoes a value; another agent, principal or
//! conversation gets `ACCESS_DENIED` exactly as an unknown id does; and, driven as an attacker
//! would on a real headless Chromium, a page whose title, button and field label are prompt
//! injections reaches the agent only inside the untrusted envelope — in statuses, field
//! questions, receipts and recorded evidence — while commands and answers the agent sends are
//! recorded with origin `agent`.

mod support;

use jevgate::browser::{BrowserBackend, Command as BrowserCommand, Response};
use jevgate::device::ToolFormat;
use jevgate::task::{agent_tool_definitions, SpawnRequest, TaskOwner, AGENT_TOOLS};
use jevgate::untrusted::{UNTRUSTED_KEY, UNTRUSTED_NOTICE};
use jevgate::{Config, Gateway, GatewayOptions};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use support::pages::{INJECTED_BUTTON, INJECTED_FIELD};
use support::Server;

fn owner() -> TaskOwner {
    TaskOwner::new("assistant", "alice", "conv-1")
}

fn open(dir: &std::path::Path, config: &str) -> Gateway {
    Gateway::open(GatewayOptions::new(
        dir,
        Config::from_json_str(config).unwrap(),
    ))
    .unwrap()
}

/// A blank page that refuses every action.
struct Blank;
impl BrowserBackend for Blank {
    fn execute(&self, command: &BrowserCommand) -> jevgate::Result<Response> {
        match command {
            BrowserCommand::Observe(_) => Ok(Response::Observation(Default::default())),
            _ => Err(jevgate::Error::TabUnavailable),
        }
    }
}

// Issue 21 item 8: every definition, in both forms, is a valid JSON Schema (checked against its
// meta-schema and compiled), and the schema and the executor agree on what they accept: each
// sample the schema refuses the executor refuses as INVALID_TOOL_ARGUMENTS, each it accepts
// gets past the arguments (to the gate, the owner check or a result).
#[test]
fn definitions_are_json_schema_and_agree_with_the_executor() {
    let mcp = agent_tool_definitions(ToolFormat::Mcp);
    let openai = agent_tool_definitions(ToolFormat::OpenAi);
    let mut schemas = std::collections::BTreeMap::new();
    for (i, name) in AGENT_TOOLS.iter().enumerate() {
        let m = &mcp[i];
        let o = &openai[i];
        assert_eq!(m["name"], *name);
        assert_eq!(
            (o["type"].as_str(), &o["function"]["name"]),
            (Some("function"), &m["name"])
        );
        assert_eq!(o["function"]["parameters"], m["inputSchema"]);
        assert_eq!(o["function"]["description"], m["description"]);
        assert!(m["description"].as_str().unwrap().len() > 40, "{name}");
        let schema = &m["inputSchema"];
        assert!(jsonschema::meta::is_valid(schema), "{name}: {schema}");
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["additionalProperties"], false, "{name}");
        schemas.insert(*name, jsonschema::validator_for(schema).unwrap());
    }
    // Browser tasks off (the default configuration): a spawn that passes its arguments stops
    // at the gate, so nothing runs.
    let dir = tempfile::tempdir().unwrap();
    let gw = open(dir.path(), "{}");
    let unknown = "00000000-0000-4000-8000-000000000000";
    let long = "x".repeat(4001);
    let samples: Vec<(&str, Value)> = vec![
        ("capabilities_list", json!({})),
        ("capabilities_list", json!({"scope": "browser"})),
        ("capabilities_list", json!({"scope": "computer"})),
        ("capabilities_list", json!({"other": 1})),
        ("task_spawn", json!({"goal": "press Go"})),
        (
            "task_spawn",
            json!({"goal": "", "keepOpen": true, "startUrl": "https://example.com/"}),
        ),
        (
            "task_spawn",
            json!({"goal": "x", "target": {"kind": "device", "deviceId": "dev_1"}}),
        ),
        (
            "task_spawn",
            json!({"goal": "x", "target": {"kind": "local"}}),
        ),
        ("task_spawn", json!({})),
        ("task_spawn", json!({"goal": 7})),
        ("task_spawn", json!({"goal": long})),
        ("task_spawn", json!({"goal": "x", "keepOpen": "yes"})),
        (
            "task_spawn",
            json!({"goal": "x", "target": {"kind": "cloud"}}),
        ),
        (
            "task_spawn",
            json!({"goal": "x", "target": {"kind": "local", "profile": "p"}}),
        ),
        ("task_status", json!({"taskId": unknown})),
        (
            "task_status",
            json!({"taskId": unknown, "browserEvidence": "recorded"}),
        ),
        (
            "task_status",
            json!({"taskId": unknown, "browserEvidence": "later"}),
        ),
        ("task_status", json!({})),
        ("task_wait", json!({"taskId": unknown, "timeoutMs": 0})),
        ("task_wait", json!({"taskId": unknown, "timeoutMs": -5})),
        (
            "task_wait",
            json!({"taskId": unknown, "timeoutMs": 600_001}),
        ),
        ("task_wait", json!({"taskId": unknown, "timeoutMs": 1.5})),
        (
            "task_command",
            json!({"taskId": unknown, "command": "press Go"}),
        ),
        ("task_command", json!({"taskId": unknown, "command": ""})),
        ("task_command", json!({"taskId": unknown})),
        (
            "task_update",
            json!({"taskId": unknown, "expectedRevision": 1, "goal": "g"}),
        ),
        (
            "task_update",
            json!({"taskId": unknown, "expectedRevision": 1, "goal": "g", "mode": "when_ready"}),
        ),
        (
            "task_update",
            json!({"taskId": unknown, "expectedRevision": 1, "goal": "g", "mode": "now"}),
        ),
        (
            "task_update",
            json!({"taskId": unknown, "expectedRevision": -1, "goal": "g"}),
        ),
        ("task_update", json!({"taskId": unknown, "goal": "g"})),
        (
            "task_update",
            json!({"taskId": unknown, "expectedRevision": 1, "mode": "verify_browser",
                "expectedRequestId": 2, "evidenceId": "ev_1", "instruction": "shows order 42"}),
        ),
        (
            "task_update",
            json!({"taskId": unknown, "expectedRevision": 1, "mode": "verify_browser",
                "expectedRequestId": 2, "evidenceId": "ev_1"}),
        ),
        (
            "task_update",
            json!({"taskId": unknown, "expectedRevision": 1, "mode": "verify_browser",
                "expectedRequestId": 2, "evidenceId": "ev_1", "instruction": "i", "goal": "g"}),
        ),
        (
            "task_update",
            json!({"taskId": unknown, "expectedRevision": 1, "goal": "g", "evidenceId": "ev_1"}),
        ),
        (
            "task_update",
            json!({"taskId": unknown, "expectedRevision": 1, "mode": "verify_browser",
                "expectedRequestId": -2, "evidenceId": "ev_1", "instruction": "i"}),
        ),
        (
            "task_update",
            json!({"taskId": unknown, "expectedRevision": 1, "mode": "verify_browser",
                "expectedRequestId": 2, "evidenceId": "e".repeat(65), "instruction": "i"}),
        ),
        (
            "task_answer",
            json!({"taskId": unknown, "field": "Address", "text": "12 Main St"}),
        ),
        (
            "task_answer",
            json!({"taskId": unknown, "field": "Address", "text": "x".repeat(2001)}),
        ),
        (
            "task_answer",
            json!({"taskId": unknown, "field": "", "text": "t"}),
        ),
        ("task_cancel", json!({"taskId": unknown})),
        ("task_cancel", json!({"taskId": 5})),
        ("task_receipts", json!({"taskId": unknown})),
        ("task_receipts", json!({"taskId": unknown, "extra": true})),
        (
            "jev_evaluate",
            json!({"state": "hi", "questions": {"g": {"type": "noul", "instructions": "Greeting?"}}}),
        ),
        ("jev_evaluate", json!({"state": "hi"})),
        ("jev_evaluate", json!({"state": "hi", "questions": []})),
        (
            "jev_evaluate",
            json!({"state": "hi", "questions": {}, "agentId": "root"}),
        ),
    ];
    for (tool, args) in &samples {
        let schema_ok = schemas[tool].is_valid(args);
        let outcome = gw.call_agent_tool(&owner(), tool, &args.to_string());
        let refused = matches!(&outcome, Err(e) if e.code() == "INVALID_TOOL_ARGUMENTS");
        assert_eq!(
            schema_ok, !refused,
            "{tool} {args:.80}: the schema says {schema_ok}, the executor {outcome:.200?}"
        );
        if let Err(e) = &outcome {
            let text = e.to_string();
            assert!(text.len() < 300 && !text.contains("xxxxxxxx"), "{text}");
        }
    }
    gw.close();
}

// Issue 21 item 8, bad input: an unknown tool, arguments that are not JSON or not an object,
// an invalid owner, and a closed gateway each get a clear error naming what is wrong.
#[test]
fn bad_calls_get_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let gw = open(dir.path(), support::gateway::TASKS_CONFIG);
    let e = gw
        .call_agent_tool(&owner(), "browser_click", "{}")
        .unwrap_err();
    assert_eq!(e.code(), "UNKNOWN_TOOL");
    let e = gw
        .call_agent_tool(&owner(), "task_status", "{\"taskId\": sk-SECRET")
        .unwrap_err();
    assert_eq!(e.code(), "INVALID_ARGUMENT");
    assert!(
        e.to_string().contains("args_json") && !e.to_string().contains("SECRET"),
        "{e}"
    );
    let e = gw
        .call_agent_tool(&owner(), "task_status", "[1]")
        .unwrap_err();
    assert_eq!(e.code(), "INVALID_TOOL_ARGUMENTS");
    assert!(e.to_string().contains("task_status"), "{e}");
    // An empty string is no arguments (some function-calling APIs send it for none).
    let caps = gw
        .call_agent_tool(&owner(), "capabilities_list", "")
        .unwrap();
    assert_eq!(
        caps["browserTasks"],
        json!({"enabled": true, "stepLists": true})
    );
    assert_eq!(caps["targets"][0]["target"], json!({"kind": "local"}));
    let bad_owner = TaskOwner::new("", "alice", "conv-1");
    let e = gw
        .call_agent_tool(&bad_owner, "capabilities_list", "{}")
        .unwrap_err();
    assert_eq!(e.code(), "INVALID_ARGUMENT");
    // Fresh evidence of an unknown task: seed 003's evidence code, as for another owner's.
    let e = gw
        .call_agent_tool(
            &owner(),
            "task_status",
            r#"{"taskId":"nope","browserEvidence":"fresh"}"#,
        )
        .unwrap_err();
    assert_eq!(e.code(), "BROWSER_EVIDENCE_UNAVAILABLE");
    // Seed 003's snake_case spellings are understood (`task_id`, `browser_evidence`,
    // `start_url`, …); both spellings of one argument at once are refused.
    let e = gw
        .call_agent_tool(&owner(), "task_status", r#"{"task_id":"nope"}"#)
        .unwrap_err();
    assert_eq!(e.code(), "ACCESS_DENIED");
    let e = gw
        .call_agent_tool(
            &owner(),
            "task_status",
            r#"{"task_id":"nope","browser_evidence":"recorded"}"#,
        )
        .unwrap_err();
    assert_eq!(e.code(), "BROWSER_EVIDENCE_UNAVAILABLE");
    let e = gw
        .call_agent_tool(
            &owner(),
            "task_status",
            r#"{"task_id":"nope","taskId":"nope"}"#,
        )
        .unwrap_err();
    assert_eq!(e.code(), "INVALID_TOOL_ARGUMENTS");
    assert!(e.to_string().contains("given twice"), "{e}");
    let e = gw
        .call_agent_tool(
            &owner(),
            "task_spawn",
            r#"{"goal":"","keep_open":true,"start_url":"notaurl","target":{"kind":"device","device_id":"dev_1"}}"#,
        )
        .unwrap_err();
    assert_ne!(e.code(), "INVALID_TOOL_ARGUMENTS", "{e}");
    gw.close();
    let e = gw
        .call_agent_tool(&owner(), "capabilities_list", "{}")
        .unwrap_err();
    assert_eq!(e.code(), "GATEWAY_CLOSED");
}

// Issue 21 item 8 and defect 10 through the tools: every task tool called by another agent,
// another principal or another conversation answers ACCESS_DENIED with the very error an
// unknown id gets — nothing about the task in it — and the task is untouched.
#[test]
fn another_owner_gets_access_denied_like_an_unknown_id() {
    let dir = tempfile::tempdir().unwrap();
    let gw = open(dir.path(), support::gateway::TASKS_CONFIG);
    let mut request = SpawnRequest::from_person("");
    request.keep_open = true;
    let id = gw
        .tasks()
        .spawn_with_backend(&owner(), request, Arc::new(Blank))
        .unwrap();
    let before = gw
        .tasks()
        .wait(&owner(), &id, Duration::from_secs(30))
        .unwrap();
    let strangers = [
        TaskOwner::new("intruder", "alice", "conv-1"),
        TaskOwner::new("assistant", "mallory", "conv-1"),
        TaskOwner::new("assistant", "alice", "conv-2"),
    ];
    let mut answers = std::collections::BTreeSet::new();
    for (who, task) in strangers.iter().map(|s| (s.clone(), id.clone())).chain([
        (owner(), "00000000-0000-4000-8000-000000000000".to_string()),
        (owner(), "nope".into()),
    ]) {
        for (tool, extra) in [
            ("task_status", json!({})),
            ("task_status", json!({"browserEvidence": "recorded"})),
            ("task_status", json!({"browserEvidence": "fresh"})),
            ("task_wait", json!({"timeoutMs": 0})),
            ("task_command", json!({"command": "scroll down"})),
            (
                "task_update",
                json!({"expectedRevision": before.revision, "goal": "scroll up"}),
            ),
            (
                "task_answer",
                json!({"field": "Address", "text": "12 Main St"}),
            ),
            ("task_cancel", json!({})),
            ("task_receipts", json!({})),
        ] {
            let mut args = extra;
            args["taskId"] = json!(task);
            let e = gw
                .call_agent_tool(&who, tool, &args.to_string())
                .expect_err(tool);
            answers.insert((e.code(), e.to_string()));
        }
    }
    // Two answers: ACCESS_DENIED for every verb, and seed 003's evidence code for an
    // evidence read — each the same for a stranger and an unknown id.
    assert_eq!(answers.len(), 2, "{answers:#?}");
    let codes: Vec<_> = answers.iter().map(|(c, _)| *c).collect();
    assert_eq!(codes, ["ACCESS_DENIED", "BROWSER_EVIDENCE_UNAVAILABLE"]);
    for (_, text) in &answers {
        assert!(!text.contains(&id), "{text}");
    }
    let after = gw.tasks().status(&owner(), &id).unwrap();
    assert_eq!(
        (after.state, after.revision, after.commands.len()),
        (before.state, before.revision, before.commands.len()),
        "nothing a stranger sent reached the task"
    );
    gw.close();
}

/// A callback "model" (deterministic, unlike the lexical `local` heuristic, which a long
/// injected control name sways): a control decision picks the option that names the word the
/// command ends with ("press Send" → Send); any other question is answered 0.9 (noul).
/// A task's decisions and impact questions go to [`support::desk::picks`] (goal runs too).
fn picks() -> jevgate::jev::JevCallback {
    let tasks = support::desk::picks();
    Arc::new(move |req: &[u8]| {
        let v: Value = serde_json::from_slice(req).unwrap();
        let qs = v["questions"].as_object().unwrap();
        if qs.contains_key("control") || qs.contains_key("routine") {
            return tasks(req);
        }
        let mut answers = serde_json::Map::new();
        for (key, q) in v["questions"].as_object().unwrap() {
            let answer = if key == "control" {
                let state = v["state"].as_str().unwrap_or("");
                let word = state.split_whitespace().last().unwrap_or("").to_string();
                let opts = q["criteria"].as_object().unwrap();
                let pick = opts
                    .iter()
                    .find(|(_, d)| d.as_str().unwrap_or("").contains(&word))
                    .map(|(k, _)| k.clone())
                    .unwrap_or_else(|| "none".into());
                let probs: serde_json::Map<String, Value> = opts
                    .keys()
                    .map(|k| (k.clone(), json!(if *k == pick { 1.0 } else { 0.0 })))
                    .collect();
                json!({"type": "choice", "choice": pick, "probabilities": probs, "confidence": 0.9})
            } else {
                json!({"type": "noul", "noul": 0.9})
            };
            answers.insert(key.clone(), answer);
        }
        Ok(
            json!({"model": "host", "usage": {"input_tokens": 1, "output_tokens": 1},
            "answers": answers})
            .to_string()
            .into_bytes(),
        )
    })
}

/// Every string (and key) of `v` outside the untrusted envelope.
fn outside(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(a) => a.iter().for_each(|x| outside(x, out)),
        Value::Object(o) => {
            for (k, x) in o {
                if k != UNTRUSTED_KEY {
                    out.push(k.clone());
                    outside(x, out);
                }
            }
        }
        _ => {}
    }
}

const MARKS: [&str; 2] = ["IGNORE ALL PREVIOUS", "SYSTEM: ignore"];

/// The injected text is nowhere outside the envelope of `v`; returns whether it is inside.
fn injected_only_inside(what: &str, v: &Value) -> bool {
    let mut strings = Vec::new();
    outside(v, &mut strings);
    for s in &strings {
        for m in MARKS {
            assert!(
                !s.contains(m),
                "{what}: page text outside the envelope: {s:.120}"
            );
        }
    }
    let env = &v[UNTRUSTED_KEY];
    assert_eq!(env["notice"], UNTRUSTED_NOTICE, "{what}: {v:.300}");
    let inside = env["data"].to_string();
    MARKS.iter().any(|m| inside.contains(m))
}

// Issue 21 item 8 as an attacker drives it (R-BRW-UNTRUSTED, R-TSK-CTL): a hostile page's
// title, button name and field label are prompt injections. Through `call_agent_tool` alone an
// agent lists its targets, spawns a step list on a real Chromium that presses the button and
// stops on a field question about the injected label, answers it, sends a command, reads
// status (with recorded evidence), receipts and a Jev evaluation, continues with an update and
// cancels. The injected text reaches the agent in every page-derived place — and only ever
// inside the envelope; the button and Send were each pressed once; the agent's command, answer
// and update are recorded with origin `agent`.
#[test]
fn r_brw_untrusted_an_injected_page_reaches_the_agent_only_inside_the_envelope() {
    let server = Server::start();
    let dir = tempfile::tempdir().unwrap();
    let gw = open(
        dir.path(),
        r#"{"gateway":{"jev":{"enabled":true,"provider":"callback","features":{"browserTasks":{"enabled":true},"browserSteps":{"enabled":true}}}}}"#,
    );
    gw.set_jev_callback(Some(picks()));
    let me = owner();
    let call = |tool: &str, args: Value| -> Value {
        gw.call_agent_tool(&me, tool, &args.to_string())
            .unwrap_or_else(|e| panic!("{tool}: {e}"))
    };
    let mut seen_inside = Vec::new();
    let mut check = |what: &str, v: &Value| {
        if injected_only_inside(what, v) {
            seen_inside.push(what.to_string());
        }
    };

    let caps = call("capabilities_list", json!({"scope": "browser"}));
    assert_eq!(caps["browserTasks"]["enabled"], true, "{caps}");
    let target = caps["targets"][0]["target"].clone();

    // The agent's goal is a goal run (issue 26 item 1): Continue, checked for impact, then
    // done (a completion candidate the session keeps waiting on).
    let spawned = call(
        "task_spawn",
        json!({
            "goal": "press Continue",
            "startUrl": server.url("/p/injection"),
            "keepOpen": true,
            "target": target,
        }),
    );
    check("task_spawn", &spawned);
    let id = spawned["id"].as_str().unwrap().to_string();
    let pressed = call("task_wait", json!({"taskId": id, "timeoutMs": 90_000}));
    check("task_wait (goal)", &pressed);
    assert_eq!(pressed["state"], "waiting_input", "{pressed:#}");
    assert_eq!(
        server.wait_count("inj", 1),
        1,
        "Continue pressed once: {pressed:#}"
    );
    // The agent's next goal asks for the field's text: a question about the injected label.
    let revision = pressed["revision"].as_u64().unwrap();
    let updated = call(
        "task_update",
        json!({"taskId": id, "expectedRevision": revision, "mode": "when_ready",
            "goal": "fill in the Address"}),
    );
    check("task_update (field)", &updated);
    let asked = call("task_wait", json!({"taskId": id, "timeoutMs": 90_000}));
    check("task_wait (question)", &asked);
    assert_eq!(asked["state"], "waiting_input", "{asked:#}");
    let page = &asked[UNTRUSTED_KEY]["data"];
    let field = page["fieldRequest"]["field"]
        .as_str()
        .expect("a field question")
        .to_string();
    assert!(field.contains(INJECTED_FIELD), "{field}");
    assert!(
        page["actionLog"]
            .to_string()
            .contains("IGNORE ALL PREVIOUS"),
        "the action log names the pressed control: {page:#}"
    );

    let answered = call(
        "task_answer",
        json!({"taskId": id, "field": field, "text": "12 Main St"}),
    );
    check("task_answer", &answered);
    let done = call("task_wait", json!({"taskId": id, "timeoutMs": 90_000}));
    check("task_wait (answered)", &done);
    assert_eq!(done["state"], "waiting_input", "{done:#}");
    assert_eq!(server.count("inj"), 1, "Continue not pressed again");

    // Issue 26 item 1: under the person's control an agent's command is refused, nothing
    // recorded; once the person hands control to the agent (the host's own call), it runs —
    // its own authorization (no impact question under the default policy).
    let refused = gw
        .call_agent_tool(
            &me,
            "task_command",
            &json!({"taskId": id, "command": "press Send"}).to_string(),
        )
        .unwrap_err();
    assert_eq!(refused.code(), "EXECUTION_DENIED", "{refused}");
    hand_to_agent(&gw, &me, &id);
    let commanded = call(
        "task_command",
        json!({"taskId": id, "command": "press Send"}),
    );
    check("task_command", &commanded);
    let receipt = &commanded["commandReceipt"];
    assert_eq!(
        (receipt["origin"].as_str(), receipt["kind"].as_str()),
        (Some("agent"), Some("command"))
    );
    let after = call("task_wait", json!({"taskId": id, "timeoutMs": 90_000}));
    check("task_wait (command)", &after);
    assert_eq!(
        server.wait_count("sent:12 Main St", 1),
        1,
        "Send pressed once, with the answer: {after:#}"
    );

    let status = call("task_status", json!({"taskId": id}));
    check("task_status", &status);
    let recorded = call(
        "task_status",
        json!({"taskId": id, "browserEvidence": "recorded"}),
    );
    check("task_status recorded", &recorded);
    assert_eq!(
        recorded["browserEvidence"]["available"], true,
        "{recorded:#}"
    );
    assert!(recorded[UNTRUSTED_KEY]["data"]["evidence"].is_object());
    assert!(recorded["browserEvidence"]["evidenceId"]
        .as_str()
        .is_some_and(|e| e.starts_with("ev_")));
    let fresh = call(
        "task_status",
        json!({"taskId": id, "browserEvidence": "fresh"}),
    );
    check("task_status fresh", &fresh);
    assert_eq!(
        (
            fresh["browserEvidence"]["kind"].as_str(),
            fresh["browserEvidence"]["available"].as_bool()
        ),
        (Some("fresh"), Some(true)),
        "{fresh:#}"
    );
    assert!(fresh[UNTRUSTED_KEY]["data"]["evidence"].is_object());

    let receipts = call("task_receipts", json!({"taskId": id}));
    check("task_receipts", &receipts);
    assert!(
        receipts["receipts"][0]["operations"]
            .as_array()
            .unwrap()
            .iter()
            .any(|op| op["tool"] == "page_click"),
        "{receipts:.500}"
    );

    let revision = after["revision"].as_u64().unwrap();
    let updated = call(
        "task_update",
        json!({"taskId": id, "expectedRevision": revision, "mode": "when_ready", "goal": "scroll up"}),
    );
    check("task_update", &updated);
    assert_eq!(updated["revision"].as_u64(), Some(revision + 1));
    let stale = gw
        .call_agent_tool(
            &me,
            "task_update",
            &json!({"taskId": id, "expectedRevision": revision, "goal": "scroll up"}).to_string(),
        )
        .unwrap_err();
    assert_eq!(stale.code(), "REVISION_CONFLICT");
    check(
        "task_wait (update)",
        &call("task_wait", json!({"taskId": id, "timeoutMs": 90_000})),
    );

    let evaluation = call(
        "jev_evaluate",
        json!({"state": "Hello there", "questions": {"greeting": {"type": "noul", "instructions": "Is this a greeting?"}}}),
    );
    assert_eq!(
        evaluation["answers"]["greeting"]["type"], "noul",
        "{evaluation}"
    );

    let cancelled = call("task_cancel", json!({"taskId": id}));
    check("task_cancel", &cancelled);
    let closed = call("task_wait", json!({"taskId": id, "timeoutMs": 90_000}));
    check("task_wait (cancelled)", &closed);
    assert_eq!(closed["state"], "cancelled", "{closed:#}");

    // The agent's command, answer and update are recorded as the agent's.
    let origins: Vec<(String, String)> = closed["commands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["kind"].as_str().unwrap().into(),
                c["origin"].as_str().unwrap().into(),
            )
        })
        .collect();
    for kind in ["answer", "command", "update"] {
        assert!(
            origins.contains(&(kind.to_string(), "agent".to_string())),
            "{kind} by the agent: {origins:?}"
        );
    }
    // The one user-origin entry is the person's hand-over (the host's own control call).
    assert!(
        origins
            .iter()
            .all(|(k, o)| o == "agent" || (k == "agent" && o == "user")),
        "nothing the agent sent is recorded as the person's: {origins:?}"
    );
    // The page-derived text did reach the agent, inside the envelope: the test can fail.
    for must in [
        "task_wait (question)",
        "task_receipts",
        "task_status recorded",
    ] {
        assert!(
            seen_inside.iter().any(|s| s == must),
            "{must}: {seen_inside:?}"
        );
    }
    assert!(INJECTED_BUTTON.starts_with("IGNORE ALL PREVIOUS"));
    gw.close();
}

// R-TSK-CTL "Replans" through the tools, on a task the agent controls: three distinct agent
// updates after rounds that changed nothing, then REPLAN_LIMIT; an agent's own command (origin agent) does not start a new chain,
// so the limit holds; the person's command (the host's own API call) does.
#[test]
fn r_tsk_ctl_an_agents_command_does_not_restart_the_replan_chain() {
    let dir = tempfile::tempdir().unwrap();
    let gw = open(dir.path(), support::gateway::TASKS_CONFIG);
    let me = owner();
    let mut request = SpawnRequest::from_person("");
    request.keep_open = true;
    let id = gw
        .tasks()
        .spawn_with_backend(&me, request, Arc::new(Blank))
        .unwrap();
    let call = |tool: &str, args: Value| gw.call_agent_tool(&me, tool, &args.to_string());
    let settle = || {
        let s = call("task_wait", json!({"taskId": id, "timeoutMs": 30_000})).unwrap();
        assert_eq!(s["state"], "waiting_input", "{s:#}");
        s["revision"].as_u64().unwrap()
    };
    settle();
    // Under the agent's control (under the person's, a command that did nothing is handed to
    // the agent, which then gets one update: issue 26 item 4).
    hand_to_agent(&gw, &me, &id);
    gw.tasks().command(&me, &id, "press Nowhere-0").unwrap();
    let mut revision = settle();
    let update = |revision: u64, goal: &str| {
        call(
            "task_update",
            json!({"taskId": id, "expectedRevision": revision, "goal": goal}),
        )
    };
    for i in 1..=3 {
        update(revision, &format!("press Nowhere-{i}")).unwrap();
        revision = settle();
    }
    let e = update(revision, "press Nowhere-4").unwrap_err();
    assert_eq!(e.to_string(), "state conflict: REPLAN_LIMIT");
    let sent = call(
        "task_command",
        json!({"taskId": id, "command": "press Nowhere-5"}),
    )
    .unwrap();
    assert_eq!(sent["commandReceipt"]["origin"], "agent");
    revision = settle();
    let e = update(revision, "press Nowhere-6").unwrap_err();
    assert_eq!(
        e.to_string(),
        "state conflict: REPLAN_LIMIT",
        "the agent's command kept the chain"
    );
    gw.tasks().command(&me, &id, "press Nowhere-7").unwrap();
    revision = settle();
    update(revision, "press Nowhere-8").expect("the person's command started a new chain");
    settle();
    gw.close();
}

/// The person hands the task to the agent (R-TSK-CTL `agent`, the host's own call).
fn hand_to_agent(gw: &Gateway, me: &TaskOwner, id: &str) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(1);
    let revision = gw.tasks().status(me, id).unwrap().revision;
    let request = jevgate::task::ControlRequest::from_json(
        &json!({
            "id": format!("00000000-0000-4000-8000-{:012x}", N.fetch_add(1, Ordering::SeqCst)),
            "action": "agent",
            "expectedRevision": revision,
        })
        .to_string(),
    )
    .unwrap();
    gw.tasks().control(me, id, &request).unwrap();
}
