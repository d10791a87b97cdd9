//! `jevgate task run` and `jevgate task list` (issue 14 §6, R-TSK, R-TSK-RCPT): a person's
//! commands carried out on a local headless Chromium, and the tasks and receipts of a data
//! directory.
//!
//! `task run` prints each outcome line as it settles (`Done: …`, `Not done: … (CODE)`,
//! `Unknown: …`, `Ready: …`), then one summary line, and exits 0 only when the task completed
//! (every step done), 1 when it did not, 2 on a usage error. `task list` opens the data
//! directory as a gateway does — so a request a dead process left running is reported
//! `BROWSER_EXECUTION_INTERRUPTED` — and prints every task with its receipts: states, reasons,
//! outcome lines, operation ids, tools and statuses.
//!
//! This file never prints a command's text in an error (an argument can hold a password), and
//! never prints the results or observations a receipt keeps: those are for the owner's
//! programmatic `receipts()` only. It holds no task logic: everything goes through `gw.tasks()`.

use super::{read_input, Usage};
use crate::common::error_line;
use jevgate::task::{Receipt, SpawnRequest, TaskOwner, TaskProgress, TaskState, TaskStatus};
use jevgate::{Config, Gateway, GatewayOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

/// The principal and conversation of a task the CLI runs: the person at the terminal.
const PRINCIPAL: &str = "local";
const CONVERSATION: &str = "cli";

/// How many tasks `task list` shows when `--limit` is not given.
const DEFAULT_LIMIT: u32 = 100;

pub fn task(args: &[String]) -> Result<ExitCode, Usage> {
    match args.first().map(String::as_str) {
        Some("run") => run(&args[1..]),
        Some("list") => list(&args[1..]),
        Some(_) => Err(Usage("task takes `run` or `list`".into())),
        None => Err(Usage("task needs `run` or `list`".into())),
    }
}

/// The value of the flag at argument `index` (1-based positions in messages, never content).
fn value<'a>(
    it: &mut impl Iterator<Item = (usize, &'a String)>,
    flag: &str,
) -> Result<&'a String, Usage> {
    it.next()
        .map(|(_, v)| v)
        .ok_or_else(|| Usage(format!("{flag} needs a value")))
}

fn unknown_flag(index: usize) -> Usage {
    Usage(format!("task: argument {} is not a known flag", index + 1))
}

fn run(args: &[String]) -> Result<ExitCode, Usage> {
    let mut data_dir = None;
    let mut config = None;
    let mut url = None;
    let mut agent = "cli".to_string();
    let mut commands: Option<&String> = None;
    // Positions count from `task` (argument 1 is `run`).
    let mut it = args.iter().enumerate().map(|(i, a)| (i + 1, a));
    while let Some((i, arg)) = it.next() {
        match arg.as_str() {
            "--data-dir" => data_dir = Some(PathBuf::from(value(&mut it, "--data-dir")?)),
            "--config" => config = Some(value(&mut it, "--config")?.clone()),
            "--url" => url = Some(value(&mut it, "--url")?.clone()),
            "--agent" => agent = value(&mut it, "--agent")?.clone(),
            flag if flag.starts_with("--") => return Err(unknown_flag(i)),
            _ if commands.is_none() => commands = Some(arg),
            _ => {
                return Err(Usage(
                    "task run takes one COMMANDS argument (quote the step list)".into(),
                ))
            }
        }
    }
    let commands = commands.ok_or_else(|| Usage("task run needs COMMANDS".into()))?;
    if commands.trim().is_empty() {
        return Err(Usage("task run needs COMMANDS that are not blank".into()));
    }
    let config = match config {
        None => Config::from_json_str(crate::common::DEFAULT_CONFIG),
        Some(source) => Config::from_json_slice(&read_input(&source)?),
    };
    let config = match config {
        Ok(c) => c,
        Err(e) => {
            println!("{}", error_line(&e));
            return Ok(ExitCode::from(1));
        }
    };
    // A bad --agent is refused by spawn (INVALID_ARGUMENT naming `owner`): a usage error.
    let owner = TaskOwner::new(agent, PRINCIPAL, CONVERSATION);
    // Without --data-dir: a private directory of our own, removed when the task is over.
    let (dir, temporary) = match data_dir {
        Some(d) => (d, false),
        None => match crate::common::temp_data_dir("jevgate-task") {
            Ok(d) => (d, true),
            Err(e) => {
                println!("{}", error_line(&e));
                return Ok(ExitCode::from(1));
            }
        },
    };
    let result = run_in(&dir, config, &owner, commands, url);
    if temporary {
        let _ = std::fs::remove_dir_all(&dir);
    }
    result
}

fn run_in(
    dir: &Path,
    config: Config,
    owner: &TaskOwner,
    commands: &str,
    url: Option<String>,
) -> Result<ExitCode, Usage> {
    let gw = match Gateway::open(GatewayOptions::new(dir, config)) {
        Ok(gw) => gw,
        Err(e) => {
            println!("{}", error_line(&e));
            return Ok(ExitCode::from(1));
        }
    };
    let mut request = SpawnRequest::from_person(commands);
    request.start_url = url;
    request.progress = Some(Arc::new(|p: &TaskProgress| {
        // Each outcome line as it settles: a script reading the pipe sees it at once.
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{}", p.line);
        let _ = out.flush();
    }));
    // The whole budget, and a margin for the browser's start and close.
    let timeout =
        Duration::from_millis(request.budget.timeout_ms).saturating_add(Duration::from_secs(60));
    let id = match gw.tasks().spawn(owner, request) {
        Ok(id) => id,
        Err(e) => {
            gw.close();
            // A bad start URL, an over-long or 13-step list: the message names the argument
            // and the rule, never its content.
            return if e.code() == "INVALID_ARGUMENT" {
                Err(Usage(e.to_string()))
            } else {
                println!("{}", error_line(&e));
                Ok(ExitCode::from(1))
            };
        }
    };
    let status = match gw.tasks().wait(owner, &id, timeout) {
        Ok(s) if s.state.is_busy() => {
            // Past every budget: stop before the next action; what was sent keeps its outcome.
            let _ = gw.tasks().cancel(owner, &id);
            gw.tasks().wait(owner, &id, Duration::from_secs(60))
        }
        Ok(s) if s.reason.as_deref() == Some(jevgate::task::COMPLETION_CANDIDATE) => {
            Ok(person_verifies(&gw, owner, s))
        }
        other => other,
    };
    gw.close();
    let status = match status {
        Ok(s) => s,
        Err(e) => {
            println!("{}", error_line(&e));
            return Ok(ExitCode::from(1));
        }
    };
    println!("{}", summary(&status));
    let all_done = (status.state == TaskState::Completed
        || status.reason.as_deref() == Some(jevgate::task::COMPLETION_CANDIDATE))
        && status
            .step_run
            .as_ref()
            .is_none_or(|r| r.stop_reason == "ALL_STEPS_DONE");
    Ok(if all_done {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The person who ran this one-shot command sees every step of their own list done: they are
/// the parent, and their list its own authorization (seed 003). The candidate is verified on
/// fresh evidence of its request through the ordinary verb (R-TSK-VER), which closes the
/// task; when that cannot be done the candidate is shown as it is (and the session closes with
/// the gateway).
fn person_verifies(gw: &Gateway, owner: &TaskOwner, candidate: TaskStatus) -> TaskStatus {
    let verified = gw
        .tasks()
        .evidence(owner, &candidate.id, true)
        .and_then(|e| {
            gw.tasks().verify(
                owner,
                &candidate.id,
                &jevgate::task::VerifyRequest {
                    expected_revision: candidate.revision,
                    expected_request_id: e.request,
                    evidence_id: e.evidence_id,
                    instruction: "jevgate task run: every step of the person's own list is done"
                        .into(),
                },
            )
        });
    verified.unwrap_or(candidate)
}

/// `task <id>: completed (VERIFIED), steps ALL_STEPS_DONE 4/4, 5 actions, 1 evaluation`
fn summary(s: &TaskStatus) -> String {
    let mut line = format!(
        "task {}: {} ({})",
        s.id,
        s.state.as_str(),
        s.reason.as_deref().unwrap_or("-")
    );
    if let Some(r) = &s.step_run {
        line.push_str(&format!(
            ", steps {} {}/{}",
            r.stop_reason,
            r.done_parts
                .iter()
                .filter_map(|p| p.split('.').next())
                .collect::<std::collections::BTreeSet<_>>()
                .len(),
            r.steps
        ));
    }
    line.push_str(&format!(
        ", {} action{}, {} evaluation{}",
        s.actions,
        if s.actions == 1 { "" } else { "s" },
        s.evaluations,
        if s.evaluations == 1 { "" } else { "s" }
    ));
    line
}

/// A new private directory under the system's temporary directory.
fn list(args: &[String]) -> Result<ExitCode, Usage> {
    let mut data_dir = None;
    let mut json = false;
    let mut limit = DEFAULT_LIMIT;
    let mut it = args.iter().enumerate().map(|(i, a)| (i + 1, a));
    while let Some((i, arg)) = it.next() {
        match arg.as_str() {
            "--data-dir" => data_dir = Some(PathBuf::from(value(&mut it, "--data-dir")?)),
            "--json" => json = true,
            "--limit" => {
                limit = value(&mut it, "--limit")?
                    .parse::<u32>()
                    .ok()
                    .filter(|n| (1..=10_000).contains(n))
                    .ok_or_else(|| Usage("--limit takes a number from 1 to 10000".into()))?
            }
            _ => return Err(unknown_flag(i)),
        }
    }
    let dir = data_dir.ok_or_else(|| Usage("task list needs --data-dir DIR".into()))?;
    // Listing never creates a data directory.
    if !dir.is_dir() {
        return Err(Usage("--data-dir is not an existing directory".into()));
    }
    // Opening recovers what a dead process left running (BROWSER_EXECUTION_INTERRUPTED).
    let gw = match Gateway::open(GatewayOptions::new(&dir, Config::default())) {
        Ok(gw) => gw,
        Err(e) => {
            println!("{}", error_line(&e));
            return Ok(ExitCode::from(1));
        }
    };
    // Every owner's tasks: the person at the terminal owns the directory (not an agent API).
    let all = jevgate::unstable::all_tasks(&gw.tasks(), limit);
    gw.close();
    let all = match all {
        Ok(a) => a,
        Err(e) => {
            println!("{}", error_line(&e));
            return Ok(ExitCode::from(1));
        }
    };
    let mut out = std::io::stdout().lock();
    for (status, receipts) in &all {
        let text = if json {
            task_json(status, receipts).to_string()
        } else {
            task_text(status, receipts)
        };
        let _ = writeln!(out, "{text}");
    }
    if !json && all.is_empty() {
        let _ = writeln!(out, "no tasks");
    }
    let _ = out.flush();
    Ok(ExitCode::SUCCESS)
}

/// One task as a JSON line: its status and receipts, without the goal's text and without the
/// results and observations the receipts keep.
fn task_json(s: &TaskStatus, receipts: &[Receipt]) -> serde_json::Value {
    let mut v = serde_json::to_value(s).unwrap_or_default();
    if let Some(o) = v.as_object_mut() {
        o.remove("goal");
    }
    let receipts: Vec<serde_json::Value> = receipts
        .iter()
        .map(|r| {
            serde_json::json!({
                "request": r.request,
                "state": r.state,
                "reason": r.reason,
                "outcome": r.outcome,
                "startedAt": r.started_at,
                "endedAt": r.ended_at,
                "operations": r.operations.iter().map(|o| serde_json::json!({
                    "operationId": o.operation_id,
                    "tool": o.tool,
                    "dispatchedAt": o.dispatched_at,
                    "status": o.status,
                    "errorCode": o.error_code,
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    if let Some(o) = v.as_object_mut() {
        o.insert("receipts".into(), serde_json::Value::Array(receipts));
    }
    v
}

/// One task as text for a person.
fn task_text(s: &TaskStatus, receipts: &[Receipt]) -> String {
    let mut t = format!(
        "task {}  {} ({})  created {}\n",
        s.id,
        s.state.as_str(),
        s.reason.as_deref().unwrap_or("-"),
        utc(s.created_at)
    );
    t.push_str(&format!(
        "  owner {}/{}/{}  target {}  {} actions, {} evaluations\n",
        s.owner.agent_id,
        s.owner.principal_id,
        s.owner.conversation_id,
        match &s.target {
            jevgate::task::TaskTarget::Local { .. } => "local".to_string(),
            jevgate::task::TaskTarget::Device { device_id } => format!("device {device_id}"),
            jevgate::task::TaskTarget::Computer { device_id } => format!("computer {device_id}"),
        },
        s.actions,
        s.evaluations
    ));
    if let Some(line) = &s.outcome {
        t.push_str(&format!("  {line}\n"));
    }
    for r in receipts {
        t.push_str(&format!(
            "  request {}  {} ({})  {}\n",
            r.request,
            r.state,
            r.reason.as_deref().unwrap_or("-"),
            r.outcome.as_deref().unwrap_or("")
        ));
        for o in &r.operations {
            t.push_str(&format!(
                "    {}  {:<12} {}{}  {}\n",
                o.operation_id,
                o.tool,
                o.status,
                o.error_code
                    .as_deref()
                    .map(|c| format!(" ({c})"))
                    .unwrap_or_default(),
                utc(o.dispatched_at)
            ));
        }
    }
    t.truncate(t.trim_end().len());
    t
}

/// Milliseconds since the Unix epoch as `YYYY-MM-DDTHH:MM:SSZ`.
fn utc(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil from days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn utc_formats_known_instants() {
        assert_eq!(super::utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(super::utc(951_782_400_000), "2000-02-29T00:00:00Z");
        assert_eq!(super::utc(1_700_000_000_123), "2023-11-14T22:13:20Z");
        assert_eq!(super::utc(-1000), "1969-12-31T23:59:59Z");
    }
}
