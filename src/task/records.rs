//! The task rows (R-TSK) and receipt rows (R-TSK-RCPT) in the gateway's SQLite file or the
//! fleet's PostgreSQL store (issue 23 item 3): every statement the task module runs, as
//! functions over a [`Db`] (a connection or a transaction of either engine), written once in
//! the portable subset `store/db.rs` describes; the few that cannot be (JSON paths, the
//! `INDEXED BY` hint) carry one body per engine.
//!
//! Owns the mapping between [`TaskStatus`]/[`Receipt`] and the `tasks`, `task_requests` and
//! `task_operations` tables (migration v6; PostgreSQL migration 3), and the startup recovery that
//! turns every request left `running` by a dead process into `BROWSER_EXECUTION_INTERRUPTED` —
//! on the shared store only the tasks whose owner process is dead ([`orphans`]). It never decides
//! anything about a run, never checks owners (the service does, on every call) and never logs.

use super::{
    ActionLogEntry, ControlReceipt, DispatchedMutation, OperationReceipt, Receipt, StepRun,
    TaskOwner, TaskState, TaskStatus, TaskTarget, STATUS_COMMANDS,
};
use crate::store::db::{dbp, Db, DbRow, Engine, Val};
use rusqlite::OptionalExtension;

/// The reason every request found running at startup gets.
pub(crate) const INTERRUPTED: &str = "BROWSER_EXECUTION_INTERRUPTED";

/// Inserts a new task.
pub(crate) fn insert_task(
    tx: &dyn Db,
    id: &str,
    owner: &TaskOwner,
    target: &TaskTarget,
    goal: &str,
    now: i64,
) -> rusqlite::Result<()> {
    let target = serde_json::to_string(target).unwrap_or_else(|_| "{}".into());
    tx.execute(
        "INSERT INTO tasks (id, agent_id, principal_id, conversation_id, target, goal, revision,
            controller, state, reason, outcome, actions, evaluations, action_log, step_run,
            created_ms, updated_ms)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, 1, 'user', 'queued', NULL, NULL, 0, 0, '[]', NULL, ?7, ?7)",
        dbp![
            id,
            owner.agent_id,
            owner.principal_id,
            owner.conversation_id,
            target,
            goal,
            now
        ],
    )?;
    own(
        tx,
        "UPDATE tasks SET owner_process = ?2 WHERE id = ?1",
        dbp![id],
    )
}

/// On the shared store: records the fleet process `tx` writes for as the owner of the row
/// `sql` names (its last parameter is the process id). Nothing on SQLite (one process).
fn own(tx: &dyn Db, sql: &str, params: &[Val]) -> rusqlite::Result<()> {
    if let Some(process) = tx.process() {
        let mut p = params.to_vec();
        p.push(Val::Text(process.to_string()));
        tx.execute(sql, &p)?;
    }
    Ok(())
}

/// What a run changes on its task row.
#[derive(Debug, Clone, Default)]
pub(crate) struct TaskUpdate {
    pub state: Option<TaskState>,
    pub reason: Option<Option<String>>,
    pub outcome: Option<String>,
    pub actions: Option<u32>,
    pub evaluations: Option<u32>,
    pub action_log: Option<Vec<ActionLogEntry>>,
    pub step_run: Option<Option<StepRun>>,
}

/// Applies `u` to task `id`.
pub(crate) fn update_task(tx: &dyn Db, id: &str, u: &TaskUpdate, now: i64) -> rusqlite::Result<()> {
    if let Some(s) = u.state {
        tx.execute(
            "UPDATE tasks SET state = ?2 WHERE id = ?1",
            dbp![id, s.as_str()],
        )?;
    }
    if let Some(r) = &u.reason {
        tx.execute("UPDATE tasks SET reason = ?2 WHERE id = ?1", dbp![id, r])?;
    }
    if let Some(o) = &u.outcome {
        tx.execute("UPDATE tasks SET outcome = ?2 WHERE id = ?1", dbp![id, o])?;
    }
    if let Some(a) = u.actions {
        tx.execute("UPDATE tasks SET actions = ?2 WHERE id = ?1", dbp![id, a])?;
    }
    if let Some(e) = u.evaluations {
        tx.execute(
            "UPDATE tasks SET evaluations = ?2 WHERE id = ?1",
            dbp![id, e],
        )?;
    }
    if let Some(log) = &u.action_log {
        let json = serde_json::to_string(log).unwrap_or_else(|_| "[]".into());
        tx.execute(
            "UPDATE tasks SET action_log = ?2 WHERE id = ?1",
            dbp![id, json],
        )?;
    }
    if let Some(run) = &u.step_run {
        let json = run.as_ref().and_then(|r| serde_json::to_string(r).ok());
        tx.execute(
            "UPDATE tasks SET step_run = ?2 WHERE id = ?1",
            dbp![id, json],
        )?;
    }
    tx.execute(
        "UPDATE tasks SET updated_ms = ?2 WHERE id = ?1",
        dbp![id, now],
    )
    .map(|_| ())
}

/// Opens request `seq` of task `id` (its receipt starts `running`).
/// On the shared store the request and its task are owned by the process `tx` writes for (the
/// one running it).
pub(crate) fn begin_request(tx: &dyn Db, id: &str, seq: u32, now: i64) -> rusqlite::Result<()> {
    tx.execute(
        "INSERT INTO task_requests (task_id, seq, state, reason, outcome, started_ms, ended_ms)
         VALUES (?1, ?2, 'running', NULL, NULL, ?3, NULL)",
        dbp![id, seq, now],
    )?;
    own(
        tx,
        "UPDATE task_requests SET owner_process = ?3 WHERE task_id = ?1 AND seq = ?2",
        dbp![id, seq],
    )?;
    own(
        tx,
        "UPDATE tasks SET owner_process = ?2 WHERE id = ?1",
        dbp![id],
    )
}

/// Settles request `seq`.
pub(crate) fn end_request(
    tx: &dyn Db,
    id: &str,
    seq: u32,
    state: &str,
    reason: &str,
    outcome: &str,
    now: i64,
) -> rusqlite::Result<()> {
    tx.execute(
        "UPDATE task_requests SET state = ?3, reason = ?4, outcome = ?5, ended_ms = ?6
         WHERE task_id = ?1 AND seq = ?2",
        dbp![id, seq, state, reason, outcome, now],
    )
    .map(|_| ())
}

/// The checkpoint (R-TSK-RCPT): `{operationId, tool, timestamp}` of an operation about to be
/// dispatched. Nothing else: no arguments, no field values, no lease token.
pub(crate) fn checkpoint(
    tx: &dyn Db,
    id: &str,
    seq: u32,
    operation_id: &str,
    tool: &str,
    now: i64,
) -> rusqlite::Result<()> {
    tx.execute(
        "INSERT INTO task_operations (operation_id, task_id, request_seq, tool, dispatched_ms,
            status, error_code, result, observation)
         VALUES (?1, ?2, ?3, ?4, ?5, 'dispatched', NULL, NULL, NULL)",
        dbp![operation_id, id, seq, tool, now],
    )
    .map(|_| ())
}

/// Records what became of a dispatched operation.
pub(crate) fn settle_operation(
    tx: &dyn Db,
    operation_id: &str,
    status: &str,
    error_code: Option<&str>,
    result: Option<&str>,
) -> rusqlite::Result<()> {
    tx.execute(
        "UPDATE task_operations SET status = ?2, error_code = ?3, result = ?4
         WHERE operation_id = ?1",
        dbp![operation_id, status, error_code, result],
    )
    .map(|_| ())
}

/// Keeps the bounded observation seen after an operation.
pub(crate) fn observe_operation(
    tx: &dyn Db,
    operation_id: &str,
    observation: &str,
) -> rusqlite::Result<()> {
    tx.execute(
        "UPDATE task_operations SET observation = ?2 WHERE operation_id = ?1",
        dbp![operation_id, observation],
    )
    .map(|_| ())
}

/// A session the last process left open and waiting for its next command, re-admitted by this
/// one (issue 21 item 3): what [`recover`] keeps open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Readmit {
    pub id: String,
    /// The spawn request's persisted part (budget, keepOpen, …).
    pub spawn: Option<String>,
    /// The private control state (pausedSteps, question, replans, changedNothing).
    pub control: Option<String>,
    pub last_seq: u32,
    /// Accepted commands that run after the restart, in the order they were accepted:
    /// `(command id, text, the agent's words, the agent's goal — an update)`.
    pub queue: Vec<(String, String, bool, bool)>,
}

/// Startup recovery (R-TSK-RCPT): every request still `running` was cut off by a dead process.
/// It becomes `interrupted` with [`INTERRUPTED`]; its operations without a stored result become
/// `interrupted` (their outcome is unknown, and they are never re-sent); every task that was not
/// settled ends — `needs_reconciliation` when one of its operations is unknown, else `failed` —
/// except the sessions re-admitted (issue 21 item 3): a session that was open and waiting for
/// its next command (`waiting_input`), on a target the gateway opens itself (not a host's own
/// backend), with no request running, no operation in doubt and no command running, stays
/// open; its accepted commands and revisions (kinds `command`, `update`, `revise`) stay
/// accepted and run after the restart, in order, on a fresh observation; any other accepted
/// entry is listed dropped. Returns how many requests were interrupted and the sessions kept.
#[cfg(test)]
pub(crate) fn recover(tx: &dyn Db, now: i64) -> rusqlite::Result<(usize, Vec<Readmit>)> {
    recover_in(tx, now, None)
}

/// Startup recovery (`recover`) limited to the tasks `scope` names (a JSON array of task ids) — on the shared
/// store, the tasks a dead process left (issue 23 item 3: the tasks of live processes are
/// theirs); `None`: every task (one process owns the SQLite file).
pub(crate) fn recover_in(
    tx: &dyn Db,
    now: i64,
    scope: Option<&str>,
) -> rusqlite::Result<(usize, Vec<Readmit>)> {
    let json_ids = |n: usize| match tx.engine() {
        Engine::Sqlite => format!("SELECT value FROM json_each(?{n})"),
        Engine::Postgres => format!("SELECT jsonb_array_elements_text(?{n}::jsonb)"),
    };
    // ` AND <col> IN (<the scope's ids>)` bound as parameter `n`, or nothing.
    let within = |col: &str, n: usize| match scope {
        None => String::new(),
        Some(_) => format!(" AND {col} IN ({})", json_ids(n)),
    };
    let with = |params: &[Val]| -> Vec<Val> {
        let mut p = params.to_vec();
        if let Some(s) = scope {
            p.push(Val::Text(s.to_string()));
        }
        p
    };
    let brought_false = match tx.engine() {
        Engine::Sqlite => "json_valid(t.spawn) AND json_extract(t.spawn, '$.brought') = 0",
        // The spawn column holds the JSON this module wrote (an object).
        Engine::Postgres => "t.spawn LIKE '{%' AND (t.spawn::jsonb ->> 'brought') = 'false'",
    };
    let sql = format!(
        "SELECT t.id, t.spawn, t.control,
                (SELECT COALESCE(MAX(seq), 0) FROM task_requests r WHERE r.task_id = t.id)
         FROM tasks t
         WHERE t.state = 'waiting_input'
           AND {brought_false}{}
           AND NOT EXISTS (SELECT 1 FROM task_requests r
                           WHERE r.task_id = t.id AND r.state = 'running')
           AND NOT EXISTS (SELECT 1 FROM task_operations o
                           WHERE o.task_id = t.id
                             AND o.status IN ('dispatched', 'interrupted', 'unknown'))
           AND NOT EXISTS (SELECT 1 FROM task_commands c
                           WHERE c.task_id = t.id AND c.state = 'running')
         ORDER BY t.id",
        within("t.id", 1)
    );
    let mut readmit = tx.query_map(&sql, &with(&[]), |r| {
        Ok(Readmit {
            id: r.get(0)?,
            spawn: r.get(1)?,
            control: r.get(2)?,
            last_seq: r.get(3)?,
            queue: Vec::new(),
        })
    })?;
    for r in &mut readmit {
        r.queue = tx.query_map(
            "SELECT id, text, origin = 'agent', kind = 'update' FROM task_commands
             WHERE task_id = ?1 AND state = 'accepted'
               AND kind IN ('command', 'update', 'revise') AND text IS NOT NULL
             ORDER BY seq",
            dbp![r.id],
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?)),
        )?;
    }
    // The kept ids, bound as one JSON array.
    let kept = serde_json::to_string(&readmit.iter().map(|r| &r.id).collect::<Vec<_>>())
        .unwrap_or_else(|_| "[]".into());
    // Every other accepted entry of a kept session (an answer's or a resume's continuation is
    // not its text) is listed dropped.
    tx.execute(
        &format!(
            "UPDATE task_commands SET state = 'dropped', reason = ?1, updated_ms = ?2
             WHERE state = 'accepted'
               AND task_id IN ({})
               AND NOT (kind IN ('command', 'update', 'revise') AND text IS NOT NULL)",
            json_ids(3)
        ),
        dbp![INTERRUPTED, now, kept],
    )?;
    let line = super::lines::interrupted_line();
    let requests = tx.execute(
        &format!(
            "UPDATE task_requests SET state = 'interrupted', reason = ?1, outcome = ?2,
                ended_ms = ?3
             WHERE state = 'running'{}",
            within("task_id", 4)
        ),
        &with(dbp![INTERRUPTED, line, now]),
    )?;
    tx.execute(
        &format!(
            "UPDATE task_operations SET status = 'interrupted'
             WHERE status = 'dispatched'{}",
            within("task_id", 1)
        ),
        &with(&[]),
    )?;
    // Commands (R-TSK-CTL): one that was running ends with its request — `unknown` when an
    // operation of that request is in doubt; one still waiting never runs after a stop, and is
    // listed dropped (never replayed).
    tx.execute(
        &format!(
            "UPDATE task_commands SET
                state = CASE WHEN EXISTS (SELECT 1 FROM task_operations o
                                          WHERE o.task_id = task_commands.task_id
                                            AND o.request_seq = task_commands.request_seq
                                            AND o.status IN ('interrupted', 'unknown'))
                             THEN 'unknown' ELSE 'not_done' END,
                reason = ?1, updated_ms = ?2
             WHERE state = 'running'{}",
            within("task_id", 3)
        ),
        &with(dbp![INTERRUPTED, now]),
    )?;
    tx.execute(
        &format!(
            "UPDATE task_commands SET state = 'dropped', reason = ?1, updated_ms = ?2
             WHERE state IN ('accepted', 'awaiting_confirmation')
               AND task_id NOT IN ({}){}",
            json_ids(3),
            within("task_id", 4)
        ),
        &with(dbp![INTERRUPTED, now, kept]),
    )?;
    // A task with an interrupted request: its last action may have run.
    tx.execute(
        &format!(
            "UPDATE tasks SET
                state = CASE WHEN EXISTS (SELECT 1 FROM task_operations o
                                          WHERE o.task_id = tasks.id
                                            AND o.status IN ('interrupted', 'unknown'))
                             THEN 'needs_reconciliation' ELSE 'failed' END,
                reason = ?1, outcome = ?2, updated_ms = ?3
             WHERE state IN ('queued', 'running', 'waiting_input')
               AND id NOT IN ({})
               AND EXISTS (SELECT 1 FROM task_requests r
                           WHERE r.task_id = tasks.id AND r.state = 'interrupted'){}",
            json_ids(4),
            within("id", 5)
        ),
        &with(dbp![INTERRUPTED, line, now, kept]),
    )?;
    // A task whose every request had settled (a session waiting, or one about to end): nothing
    // was in flight, so nothing is in doubt — its session just closed with the process.
    tx.execute(
        &format!(
            "UPDATE tasks SET
                state = CASE WHEN EXISTS (SELECT 1 FROM task_operations o
                                          WHERE o.task_id = tasks.id AND o.status = 'unknown')
                             THEN 'needs_reconciliation' ELSE 'failed' END,
                reason = ?1, outcome = ?2, updated_ms = ?3
             WHERE state IN ('queued', 'running', 'waiting_input')
               AND id NOT IN ({}){}",
            json_ids(4),
            within("id", 5)
        ),
        &with(dbp![
            INTERRUPTED,
            super::lines::closed_by_stop_line(),
            now,
            kept
        ]),
    )?;
    // The kept sessions are this process's now.
    for r in &readmit {
        own(
            tx,
            "UPDATE tasks SET owner_process = ?2 WHERE id = ?1",
            dbp![r.id],
        )?;
    }
    Ok((requests, readmit))
}

/// On the shared store: the open tasks whose owner process is dead — no liveness row fresher
/// than `alive_since_ms` on the database clock, or no owner at all — as a JSON array for
/// [`recover_in`] (`only`: that task, if it is one); this process's are never among them.
/// `None` on SQLite.
pub(crate) fn orphans(
    tx: &dyn Db,
    alive_since_ms: i64,
    only: Option<&str>,
) -> rusqlite::Result<Option<String>> {
    let Some(me) = tx.process() else {
        return Ok(None);
    };
    let ids: Vec<String> = tx.query_map(
        "SELECT id FROM tasks
         WHERE state IN ('queued', 'running', 'waiting_input')
           AND (CAST(?3 AS TEXT) IS NULL OR id = CAST(?3 AS TEXT))
           AND (owner_process IS NULL
                OR (owner_process <> ?2
                    AND owner_process NOT IN (SELECT process_id FROM jevgate_processes
                                              WHERE heartbeat_at >= ?1)))
         ORDER BY id
         FOR UPDATE",
        dbp![alive_since_ms, me, only],
        |r| r.get(0),
    )?;
    Ok(Some(
        serde_json::to_string(&ids).unwrap_or_else(|_| "[]".into()),
    ))
}

/// Where a retention pass stopped: the last closed task it looked at (its last change, its id).
pub(crate) type SweepCursor = (i64, String);

/// What one retention pass did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SweepPass {
    /// Tasks deleted (with their requests and operations).
    pub deleted: u32,
    /// Closed tasks looked at.
    pub scanned: u32,
    /// Where the next pass goes on; `None` when this one reached the newest candidate (the next
    /// starts from the oldest again).
    pub cursor: Option<SweepCursor>,
}

/// One retention pass (issue 21 defect 11): walks closed tasks (`completed`, `failed`,
/// `cancelled`) whose last change is before `cutoff_ms`, oldest first from `cursor`, looking at
/// most at `scan` of them, and deletes — with their requests and operations — those with no
/// operation in doubt (`dispatched`, `unknown`, `interrupted`), at most `batch`. An open task or
/// one in `needs_reconciliation` is never a candidate. Each step is an index lookup
/// (`tasks_closed_by_age`, migration v7, and the operations' `(task_id, request_seq)` index), so
/// a pass costs O((scan + deleted rows) · log n) whatever the table holds.
pub(crate) fn sweep_closed(
    tx: &dyn Db,
    cutoff_ms: i64,
    cursor: Option<SweepCursor>,
    scan: u32,
    batch: u32,
) -> rusqlite::Result<SweepPass> {
    let (from_ms, from_id) = cursor.unwrap_or((i64::MIN, String::new()));
    let candidates: Vec<SweepCursor> = {
        let indexed = match tx.engine() {
            Engine::Sqlite => "INDEXED BY tasks_closed_by_age",
            Engine::Postgres => "",
        };
        tx.query_map(
            &format!(
                "SELECT updated_ms, id FROM tasks {indexed}
                 WHERE state IN ('completed', 'failed', 'cancelled')
                   AND updated_ms < ?1 AND (updated_ms, id) > (?2, ?3)
                 ORDER BY updated_ms, id LIMIT ?4"
            ),
            dbp![cutoff_ms, from_ms, from_id, scan],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?
    };
    let mut pass = SweepPass {
        deleted: 0,
        scanned: 0,
        cursor: None,
    };
    let reached_end = candidates.len() < scan as usize;
    for (updated, id) in candidates {
        pass.scanned += 1;
        pass.cursor = Some((updated, id.clone()));
        let in_doubt: bool = tx.query_row(
            "SELECT EXISTS (SELECT 1 FROM task_operations WHERE task_id = ?1
                AND status IN ('dispatched', 'unknown', 'interrupted'))",
            dbp![id],
            |r| r.get(0),
        )?;
        if in_doubt {
            continue;
        }
        tx.execute("DELETE FROM task_operations WHERE task_id = ?1", dbp![id])?;
        tx.execute("DELETE FROM task_requests WHERE task_id = ?1", dbp![id])?;
        // The commands' own words go with the task (R-TSK-CTL: texts follow retention).
        tx.execute("DELETE FROM task_commands WHERE task_id = ?1", dbp![id])?;
        tx.execute("DELETE FROM tasks WHERE id = ?1", dbp![id])?;
        pass.deleted += 1;
        if pass.deleted >= batch {
            return Ok(pass);
        }
    }
    if reached_end {
        pass.cursor = None;
    }
    Ok(pass)
}

const TASK_COLUMNS: &str = "id, agent_id, principal_id, conversation_id, target, goal, revision,
    controller, state, reason, outcome, actions, evaluations, action_log, step_run, created_ms,
    updated_ms";

fn task_from_row(r: &DbRow) -> rusqlite::Result<TaskStatus> {
    let target: String = r.get(4)?;
    let log: String = r.get(13)?;
    let step_run: Option<String> = r.get(14)?;
    Ok(TaskStatus {
        id: r.get(0)?,
        owner: TaskOwner {
            agent_id: r.get(1)?,
            principal_id: r.get(2)?,
            conversation_id: r.get(3)?,
        },
        target: serde_json::from_str(&target).unwrap_or_default(),
        goal: r.get(5)?,
        revision: r.get(6)?,
        controller: r.get(7)?,
        state: TaskState::parse(&r.get::<String>(8)?),
        reason: r.get(9)?,
        outcome: r.get(10)?,
        actions: r.get(11)?,
        evaluations: r.get(12)?,
        action_log: serde_json::from_str(&log).unwrap_or_default(),
        step_run: step_run.and_then(|s| serde_json::from_str(&s).ok()),
        last_dispatched_mutation: None,
        queued_commands: 0,
        commands: Vec::new(),
        verification: None,
        computer_connection: None,
        field_request: None,
        confirmation_request: None,
        needs_agent: None,
        replaced_by_task_id: None,
        applied_revision: r.get(6)?,
        pending_revisions: Vec::new(),
        created_at: r.get(15)?,
        updated_at: r.get(16)?,
    })
}

fn last_mutation(c: &dyn Db, id: &str) -> rusqlite::Result<Option<DispatchedMutation>> {
    c.query_row(
        "SELECT operation_id, tool, dispatched_ms, status FROM task_operations
         WHERE task_id = ?1 ORDER BY request_seq DESC, rowid DESC LIMIT 1",
        dbp![id],
        |r| {
            Ok(DispatchedMutation {
                operation_id: r.get(0)?,
                tool: r.get(1)?,
                dispatched_at: r.get(2)?,
                status: r.get(3)?,
            })
        },
    )
    .optional()
}

/// Whether task `id` has an operation whose outcome is unknown (dispatched without a stored
/// result, or settled unknown or interrupted): such a task can only end
/// `needs_reconciliation`.
pub(crate) fn in_doubt(c: &dyn Db, id: &str) -> rusqlite::Result<bool> {
    c.query_row(
        "SELECT EXISTS (SELECT 1 FROM task_operations WHERE task_id = ?1
            AND status IN ('dispatched', 'unknown', 'interrupted'))",
        dbp![id],
        |r| r.get(0),
    )
}

/// The receipt's last operation whose outcome is in doubt, if any (what reconciliation asks
/// about: only this one).
pub(crate) fn last_in_doubt(c: &dyn Db, id: &str) -> rusqlite::Result<Option<String>> {
    c.query_row(
        "SELECT operation_id FROM task_operations
         WHERE task_id = ?1 AND status IN ('dispatched', 'unknown', 'interrupted')
         ORDER BY request_seq DESC, rowid DESC LIMIT 1",
        dbp![id],
        |r| r.get(0),
    )
    .optional()
}

/// Resolves in-doubt operation `operation` of task `id`: it happened (`done`) or not
/// (`not_executed`), by `by`. `false` when it was not in doubt (nothing changes). When nothing
/// of the task is in doubt any more, the task leaves `needs_reconciliation` (`failed`, reason
/// `RECONCILED`: the session is over; its owner may continue it with an update).
pub(crate) fn resolve_operation(
    tx: &dyn Db,
    id: &str,
    operation: &str,
    happened: bool,
    by: &str,
    now: i64,
) -> rusqlite::Result<bool> {
    let changed = tx.execute(
        "UPDATE task_operations SET status = ?3, resolved_by = ?4, resolved_ms = ?5
         WHERE task_id = ?1 AND operation_id = ?2
           AND status IN ('dispatched', 'unknown', 'interrupted')",
        dbp![
            id,
            operation,
            if happened { "done" } else { "not_executed" },
            by,
            now
        ],
    )?;
    if changed == 0 {
        return Ok(false);
    }
    if !in_doubt(tx, id)? {
        tx.execute(
            "UPDATE tasks SET state = 'failed', reason = 'RECONCILED', updated_ms = ?2
             WHERE id = ?1 AND state = 'needs_reconciliation'",
            dbp![id, now],
        )?;
    }
    Ok(true)
}

/// Settles request `seq` if it is still running: `unknown` when one of its operations is in
/// doubt, else `state`. The path of a run that could not settle its own receipt (a panic).
pub(crate) fn abandon_request(
    tx: &dyn Db,
    id: &str,
    seq: u32,
    state: &str,
    reason: &str,
    outcome: &str,
    now: i64,
) -> rusqlite::Result<()> {
    tx.execute(
        "UPDATE task_requests SET
            state = CASE WHEN EXISTS (SELECT 1 FROM task_operations o
                                      WHERE o.task_id = ?1 AND o.request_seq = ?2
                                        AND o.status IN ('dispatched', 'unknown', 'interrupted'))
                         THEN 'unknown' ELSE ?3 END,
            reason = ?4, outcome = ?5, ended_ms = ?6
         WHERE task_id = ?1 AND seq = ?2 AND state = 'running'",
        dbp![id, seq, state, reason, outcome, now],
    )
    .map(|_| ())
}

/// Records the spawn settings kept with a task (budget, start URL, keepOpen: JSON).
pub(crate) fn set_spawn(tx: &dyn Db, id: &str, spawn: &str) -> rusqlite::Result<()> {
    tx.execute("UPDATE tasks SET spawn = ?2 WHERE id = ?1", dbp![id, spawn])
        .map(|_| ())
}

/// A command the task accepted (R-TSK-CTL), with its control receipt `accepted`.
pub(crate) struct NewCommand<'a> {
    pub task_id: &'a str,
    pub id: &'a str,
    pub origin: &'a str,
    pub kind: &'a str,
    pub text: Option<&'a str>,
    pub expected_revision: Option<u32>,
}

/// Accepts a command: bumps the task's revision (every accepted user command does) and inserts
/// the command at the end of the task's order. Returns its receipt.
pub(crate) fn accept_command(
    tx: &dyn Db,
    cmd: &NewCommand<'_>,
    summary: String,
    now: i64,
) -> rusqlite::Result<ControlReceipt> {
    insert_command(tx, cmd, summary, true, now)
}

fn insert_command(
    tx: &dyn Db,
    cmd: &NewCommand<'_>,
    summary: String,
    bumps: bool,
    now: i64,
) -> rusqlite::Result<ControlReceipt> {
    tx.execute(
        "UPDATE tasks SET revision = revision + ?3, updated_ms = ?2 WHERE id = ?1",
        dbp![cmd.task_id, now, i64::from(bumps)],
    )?;
    let revision: u32 = tx.query_row(
        "SELECT revision FROM tasks WHERE id = ?1",
        dbp![cmd.task_id],
        |r| r.get(0),
    )?;
    let seq: i64 = tx.query_row(
        "SELECT COALESCE(MAX(seq), 0) + 1 FROM task_commands WHERE task_id = ?1",
        dbp![cmd.task_id],
        |r| r.get(0),
    )?;
    tx.execute(
        "INSERT INTO task_commands (task_id, id, seq, origin, kind, text, expected_revision,
            revision, state, reason, request_seq, created_ms, updated_ms)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'accepted', NULL, NULL, ?9, ?9)",
        dbp![
            cmd.task_id,
            cmd.id,
            seq,
            cmd.origin,
            cmd.kind,
            cmd.text,
            cmd.expected_revision,
            revision,
            now
        ],
    )?;
    Ok(ControlReceipt {
        command_id: cmd.id.to_string(),
        kind: cmd.kind.to_string(),
        origin: cmd.origin.to_string(),
        summary,
        revision,
        state: "accepted".into(),
        reason: None,
        request: None,
        accepted_at: now,
        updated_at: now,
    })
}

/// Moves commands `ids` of task `id` to `state` (with `reason`, and the request that carried
/// them out), unless they already reached a final state.
pub(crate) fn set_commands(
    tx: &dyn Db,
    id: &str,
    ids: &[String],
    state: &str,
    reason: Option<&str>,
    request: Option<u32>,
    now: i64,
) -> rusqlite::Result<()> {
    for c in ids {
        tx.execute(
            "UPDATE task_commands SET state = ?3, reason = ?4,
                request_seq = COALESCE(?5, request_seq), updated_ms = ?6
             WHERE task_id = ?1 AND id = ?2
               AND state IN ('accepted', 'running', 'awaiting_confirmation')",
            dbp![id, c, state, reason, request, now],
        )?;
    }
    Ok(())
}

/// What a stored command was, for an idempotent replay's comparison.
pub(crate) struct Contents {
    pub kind: String,
    pub text: Option<String>,
    pub expected_revision: Option<u32>,
}

/// The contents of command `command_id` of task `id`, if it was accepted before.
pub(crate) fn command_contents(
    c: &dyn Db,
    id: &str,
    command_id: &str,
) -> rusqlite::Result<Option<Contents>> {
    c.query_row(
        "SELECT kind, text, expected_revision FROM task_commands WHERE task_id = ?1 AND id = ?2",
        dbp![id, command_id],
        |r| {
            Ok(Contents {
                kind: r.get(0)?,
                text: r.get(1)?,
                expected_revision: r.get(2)?,
            })
        },
    )
    .optional()
}

/// Task `id`'s latest revision.
pub(crate) fn revision(c: &dyn Db, id: &str) -> rusqlite::Result<u32> {
    c.query_row("SELECT revision FROM tasks WHERE id = ?1", dbp![id], |r| {
        r.get(0)
    })
}

/// Accepts a control command: like [`accept_command`], but the revision moves only when
/// `bumps` (a `revise`).
pub(crate) fn accept_control(
    tx: &dyn Db,
    cmd: &NewCommand<'_>,
    bumps: bool,
    now: i64,
) -> rusqlite::Result<ControlReceipt> {
    let summary = match cmd.text {
        Some(_) => "[text]".to_string(),
        None => cmd.kind.to_string(),
    };
    insert_command(tx, cmd, summary, bumps, now)
}

/// Records who has control (`user` or `agent`).
pub(crate) fn set_controller(tx: &dyn Db, id: &str, controller: &str) -> rusqlite::Result<()> {
    tx.execute(
        "UPDATE tasks SET controller = ?2 WHERE id = ?1",
        dbp![id, controller],
    )
    .map(|_| ())
}

/// Sets (a JSON value) or removes one key of the session's private control state
/// (`pausedSteps`: a paused run's remaining steps, verbatim; `replans`: the replan chain's
/// digests).
pub(crate) fn set_control(
    tx: &dyn Db,
    id: &str,
    key: &str,
    value: Option<&str>,
) -> rusqlite::Result<()> {
    match (tx.engine(), value) {
        (Engine::Sqlite, Some(v)) => tx.execute(
            "UPDATE tasks SET control = json_set(COALESCE(control, '{}'), ?2, json(?3))
             WHERE id = ?1",
            dbp![id, format!("$.{key}"), v],
        ),
        (Engine::Sqlite, None) => tx.execute(
            "UPDATE tasks SET control = json_remove(COALESCE(control, '{}'), ?2) WHERE id = ?1",
            dbp![id, format!("$.{key}")],
        ),
        (Engine::Postgres, Some(v)) => tx.execute(
            "UPDATE tasks SET control = jsonb_set(COALESCE(control, '{}')::jsonb,
                ARRAY[?2::text], ?3::jsonb)::text
             WHERE id = ?1",
            dbp![id, key, v],
        ),
        (Engine::Postgres, None) => tx.execute(
            "UPDATE tasks SET control = (COALESCE(control, '{}')::jsonb - ?2::text)::text
             WHERE id = ?1",
            dbp![id, key],
        ),
    }
    .map(|_| ())
}

fn receipt_from_row(r: &DbRow) -> rusqlite::Result<ControlReceipt> {
    let text: Option<String> = r.get(3)?;
    let kind: String = r.get(1)?;
    Ok(ControlReceipt {
        command_id: r.get(0)?,
        summary: match &text {
            Some(t) if kind == "command" => super::lines::summary(t),
            Some(_) => "[text]".into(),
            None => kind.clone(),
        },
        kind,
        origin: r.get(2)?,
        revision: r.get(4)?,
        state: r.get(5)?,
        reason: r.get(6)?,
        request: r.get(7)?,
        accepted_at: r.get(8)?,
        updated_at: r.get(9)?,
    })
}

const COMMAND_COLUMNS: &str =
    "id, kind, origin, text, revision, state, reason, request_seq, created_ms, updated_ms";

/// The most recent `limit` control receipts of task `id`, oldest first.
pub(crate) fn commands(
    c: &dyn Db,
    id: &str,
    limit: usize,
) -> rusqlite::Result<Vec<ControlReceipt>> {
    let sql = format!(
        "SELECT {COMMAND_COLUMNS} FROM task_commands WHERE task_id = ?1 ORDER BY seq DESC LIMIT ?2"
    );
    let mut out = c.query_map(&sql, dbp![id, limit], receipt_from_row)?;
    out.reverse();
    Ok(out)
}

/// One control receipt of task `id`.
pub(crate) fn command(
    c: &dyn Db,
    id: &str,
    command_id: &str,
) -> rusqlite::Result<Option<ControlReceipt>> {
    let sql = format!("SELECT {COMMAND_COLUMNS} FROM task_commands WHERE task_id = ?1 AND id = ?2");
    c.query_row(&sql, dbp![id, command_id], receipt_from_row)
        .optional()
}

/// The parts of a status that live beside the task row: the last mutation, the recent
/// control receipts, pending and applied revisions.
fn fill(c: &dyn Db, t: &mut TaskStatus) -> rusqlite::Result<()> {
    t.last_dispatched_mutation = last_mutation(c, &t.id)?;
    // The session's private control state, one key per column, in one read.
    let key = |k: &str| match c.engine() {
        Engine::Sqlite => format!("json_extract(control, '$.{k}')"),
        Engine::Postgres => format!("(control::jsonb ->> '{k}')"),
    };
    let sql = format!(
        "SELECT {}, {}, {}, {}, {} FROM tasks WHERE id = ?1",
        key("fieldRequest"),
        key("confirmationRequest"),
        key("needsAgent"),
        key("replacedBy"),
        key("verification"),
    );
    let keys: [Option<String>; 5] = c.query_row(&sql, dbp![t.id], |r| {
        Ok([r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?])
    })?;
    let [question, confirm, turn, replaced, verification] = keys;
    t.field_request = question.and_then(|q| serde_json::from_str(&q).ok());
    t.confirmation_request = confirm.and_then(|q| serde_json::from_str(&q).ok());
    t.needs_agent = turn.and_then(|q| serde_json::from_str(&q).ok());
    t.replaced_by_task_id = replaced;
    t.commands = commands(c, &t.id, STATUS_COMMANDS)?;
    t.verification = verification.and_then(|v| serde_json::from_str(&v).ok());
    t.pending_revisions = c.query_map(
        "SELECT revision FROM task_commands
         WHERE task_id = ?1 AND kind = 'update' AND state = 'accepted' ORDER BY seq",
        dbp![t.id],
        |r| r.get(0),
    )?;
    t.applied_revision = if t.pending_revisions.is_empty() {
        t.revision
    } else {
        c.query_row(
            "SELECT COALESCE(MAX(revision), 1) FROM task_commands
             WHERE task_id = ?1 AND NOT (kind = 'update' AND state = 'accepted')",
            dbp![&t.id],
            |r| r.get(0),
        )?
    };
    Ok(())
}

/// What a closed task needs to be reopened (seed 003 "Continuing a browser task").
pub(crate) struct Reopen {
    pub spawn: Option<String>,
    pub control: Option<String>,
    pub last_seq: u32,
}

/// Reads what reopening task `id` needs.
pub(crate) fn reopen_info(c: &dyn Db, id: &str) -> rusqlite::Result<Reopen> {
    let (spawn, control): (Option<String>, Option<String>) = c.query_row(
        "SELECT spawn, control FROM tasks WHERE id = ?1",
        dbp![id],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    let last_seq = c.query_row(
        "SELECT COALESCE(MAX(seq), 0) FROM task_requests WHERE task_id = ?1",
        dbp![id],
        |r| r.get(0),
    )?;
    Ok(Reopen {
        spawn,
        control,
        last_seq,
    })
}

/// The hand-off's one command was sent (issue 26 item 4): status says so.
pub(crate) fn mark_handoff_used(tx: &dyn Db, id: &str) -> rusqlite::Result<()> {
    let sql = match tx.engine() {
        Engine::Sqlite => {
            "UPDATE tasks SET control = json_set(control, '$.needsAgent.used', json('true'))
             WHERE id = ?1 AND json_extract(control, '$.needsAgent') IS NOT NULL"
        }
        Engine::Postgres => {
            "UPDATE tasks SET control = jsonb_set(control::jsonb, '{needsAgent,used}', 'true')::text
             WHERE id = ?1 AND (control::jsonb -> 'needsAgent') IS NOT NULL"
        }
    };
    tx.execute(sql, dbp![id])?;
    Ok(())
}

/// Replaces task `id`'s goal (an update accepted before the task started).
pub(crate) fn set_goal(tx: &dyn Db, id: &str, goal: &str) -> rusqlite::Result<()> {
    tx.execute("UPDATE tasks SET goal = ?2 WHERE id = ?1", dbp![id, goal])
        .map(|_| ())
}

/// Task `id`, whoever owns it.
pub(crate) fn get_task(c: &dyn Db, id: &str) -> rusqlite::Result<Option<TaskStatus>> {
    let sql = format!("SELECT {TASK_COLUMNS} FROM tasks WHERE id = ?1");
    let task = c.query_row(&sql, dbp![id], task_from_row).optional()?;
    match task {
        Some(mut t) => {
            fill(c, &mut t)?;
            Ok(Some(t))
        }
        None => Ok(None),
    }
}

/// `owner`'s tasks, newest first, at most `limit`.
pub(crate) fn list_tasks(
    c: &dyn Db,
    owner: &TaskOwner,
    limit: u32,
) -> rusqlite::Result<Vec<TaskStatus>> {
    let sql = format!(
        "SELECT {TASK_COLUMNS} FROM tasks
         WHERE agent_id = ?1 AND principal_id = ?2 AND conversation_id = ?3
         ORDER BY created_ms DESC, rowid DESC LIMIT ?4"
    );
    let mut tasks = c.query_map(
        &sql,
        dbp![
            owner.agent_id,
            owner.principal_id,
            owner.conversation_id,
            limit
        ],
        task_from_row,
    )?;
    for t in &mut tasks {
        fill(c, t)?;
    }
    Ok(tasks)
}

/// Every task in the file, newest first, at most `limit` (the CLI's `task list` for the person
/// who owns the data directory).
pub(crate) fn all_tasks(c: &dyn Db, limit: u32) -> rusqlite::Result<Vec<TaskStatus>> {
    let sql =
        format!("SELECT {TASK_COLUMNS} FROM tasks ORDER BY created_ms DESC, rowid DESC LIMIT ?1");
    let mut tasks = c.query_map(&sql, dbp![limit], task_from_row)?;
    for t in &mut tasks {
        t.last_dispatched_mutation = last_mutation(c, &t.id)?;
    }
    Ok(tasks)
}

/// The receipts of task `id`, in request order.
pub(crate) fn receipts(c: &dyn Db, id: &str) -> rusqlite::Result<Vec<Receipt>> {
    let mut out = c.query_map(
        "SELECT seq, state, reason, outcome, started_ms, ended_ms FROM task_requests
         WHERE task_id = ?1 ORDER BY seq",
        dbp![id],
        |r| {
            Ok(Receipt {
                request: r.get(0)?,
                state: r.get(1)?,
                reason: r.get(2)?,
                outcome: r.get(3)?,
                started_at: r.get(4)?,
                ended_at: r.get(5)?,
                operations: Vec::new(),
            })
        },
    )?;
    for rec in &mut out {
        rec.operations = c.query_map(
            "SELECT operation_id, tool, dispatched_ms, status, error_code, result, observation,
                resolved_by
             FROM task_operations WHERE task_id = ?1 AND request_seq = ?2 ORDER BY rowid",
            dbp![id, rec.request],
            |r| {
                let result: Option<String> = r.get(5)?;
                let observation: Option<String> = r.get(6)?;
                Ok(OperationReceipt {
                    operation_id: r.get(0)?,
                    tool: r.get(1)?,
                    dispatched_at: r.get(2)?,
                    status: r.get(3)?,
                    error_code: r.get(4)?,
                    result: result.and_then(|s| serde_json::from_str(&s).ok()),
                    observation: observation.and_then(|s| serde_json::from_str(&s).ok()),
                    resolved_by: r.get(7)?,
                })
            },
        )?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Store;
    use rusqlite::params;

    /// One engine the records' properties are checked on (issue 23: the same tests on both).
    enum TestEngine {
        Sqlite {
            store: Store,
            _dir: tempfile::TempDir,
        },
        #[cfg(feature = "postgres")]
        Postgres(Box<crate::store::pg::PgStore>, &'static str),
    }

    impl TestEngine {
        fn write<T>(&self, f: impl FnOnce(&dyn Db) -> rusqlite::Result<T>) -> crate::Result<T> {
            match self {
                TestEngine::Sqlite { store, .. } => store.write(|tx| f(tx)),
                #[cfg(feature = "postgres")]
                TestEngine::Postgres(p, process) => {
                    p.db_tx("test", Some(process), false, |db, _| f(db))
                }
            }
        }

        fn read<T>(&self, f: impl FnOnce(&dyn Db) -> rusqlite::Result<T>) -> crate::Result<T> {
            self.write(f)
        }
    }

    /// SQLite always; the fleet's PostgreSQL store too when `JEVGATE_PG_URL` names a cluster
    /// (a fresh database each), with the reason printed when it does not (a failure under
    /// `JEVGATE_REQUIRE_PG=1`).
    fn engines() -> Vec<TestEngine> {
        let dir = tempfile::tempdir().unwrap();
        #[cfg_attr(not(feature = "postgres"), allow(unused_mut))] // reason: the PostgreSQL arm
        let mut out = vec![TestEngine::Sqlite {
            store: Store::open(dir.path()).unwrap(),
            _dir: dir,
        }];
        let require = std::env::var("JEVGATE_REQUIRE_PG").is_ok_and(|v| v == "1");
        match std::env::var("JEVGATE_PG_URL") {
            #[cfg(feature = "postgres")]
            Ok(url) if !url.is_empty() => out.push(TestEngine::Postgres(
                Box::new(crate::store::pg::PgStore::open_fresh(&url).unwrap()),
                "proc_test",
            )),
            _ => {
                assert!(
                    !require,
                    "JEVGATE_REQUIRE_PG=1 but no PostgreSQL engine here"
                );
                use std::io::Write;
                let _ = writeln!(
                    std::io::stderr(),
                    "records: PostgreSQL arm skipped (JEVGATE_PG_URL unset or no feature `postgres`)"
                );
            }
        }
        out
    }

    // Issue 23 item 3: on the shared store, recovery takes only the open tasks whose owner
    // process is dead on the database clock (or unknown); a live process's task keeps running.
    #[cfg(feature = "postgres")]
    #[test]
    fn recovery_on_the_shared_store_takes_only_the_tasks_of_dead_processes() {
        let Some(TestEngine::Postgres(pg, _)) = engines().into_iter().nth(1) else {
            return;
        };
        let owner = TaskOwner::new("a", "p", "c");
        let running = TaskUpdate {
            state: Some(TaskState::Running),
            ..Default::default()
        };
        for (process, id) in [("proc_live", "live"), ("proc_dead", "dead")] {
            pg.db_tx("test", Some(process), false, |tx, _| {
                insert_task(tx, id, &owner, &TaskTarget::default(), "g", 1)?;
                update_task(tx, id, &running, 1)?;
                begin_request(tx, id, 1, 1)?;
                checkpoint(tx, id, 1, &format!("{id}:1:1"), "page_click", 1)
            })
            .unwrap();
        }
        let (me, dead_after) = ("proc_me", 10_000);
        let scope = pg
            .db_tx("test", Some(me), true, |tx, now| {
                let now = now.unwrap_or_default();
                // proc_live's heartbeat is fresh, proc_dead's is older than the threshold.
                tx.execute(
                    "INSERT INTO jevgate_processes (process_id, started_at, heartbeat_at)
                     VALUES ('proc_live', ?1, ?1), ('proc_dead', ?2, ?2)",
                    dbp![now - 1_000, now - dead_after - 1],
                )?;
                let scope = orphans(tx, now - dead_after, None)?;
                let one = orphans(tx, now - dead_after, Some("live"))?;
                Ok((scope, one))
            })
            .unwrap();
        assert_eq!(scope.0.as_deref(), Some(r#"["dead"]"#));
        assert_eq!(
            scope.1.as_deref(),
            Some("[]"),
            "a live owner's task is not taken"
        );
        let (interrupted, _) = pg
            .db_tx("test", Some(me), false, |tx, _| {
                recover_in(tx, 9, scope.0.as_deref())
            })
            .unwrap();
        assert_eq!(interrupted, 1);
        let get = |id: &str| {
            pg.db_tx("test", Some(me), false, |c, _| get_task(c, id))
                .unwrap()
                .unwrap()
        };
        assert_eq!(get("live").state, TaskState::Running);
        let dead = get("dead");
        assert_eq!(
            (dead.state, dead.reason.as_deref()),
            (TaskState::NeedsReconciliation, Some(INTERRUPTED))
        );
        assert_eq!(dead.last_dispatched_mutation.unwrap().status, "interrupted");
        // Nothing is left to take: the dead owner's task is closed, the live one is not an orphan.
        let again = pg
            .db_tx("test", Some(me), true, |tx, now| {
                orphans(tx, now.unwrap_or_default() - dead_after, None)
            })
            .unwrap();
        assert_eq!(again.as_deref(), Some("[]"));
    }

    // R-TSK-RCPT: what recovery makes of each shape a dead process can leave behind.
    #[test]
    fn r_tsk_rcpt_recovery_reports_interrupted_requests_and_never_leaves_one_running() {
        for store in engines() {
            let owner = TaskOwner::new("a", "p", "c");
            let target = TaskTarget::default();
            store
                .write(|tx| {
                    // a: a click checkpointed, no result stored.
                    insert_task(tx, "a", &owner, &target, "press x", 1)?;
                    update_task(
                        tx,
                        "a",
                        &TaskUpdate {
                            state: Some(TaskState::Running),
                            ..Default::default()
                        },
                        1,
                    )?;
                    begin_request(tx, "a", 1, 1)?;
                    checkpoint(tx, "a", 1, "a:1:1", "page_click", 1)?;
                    // b: a request started, nothing dispatched yet.
                    insert_task(tx, "b", &owner, &target, "press y", 1)?;
                    update_task(
                        tx,
                        "b",
                        &TaskUpdate {
                            state: Some(TaskState::Running),
                            ..Default::default()
                        },
                        1,
                    )?;
                    begin_request(tx, "b", 1, 1)?;
                    // c: a session waiting for its next command; everything settled.
                    insert_task(tx, "c", &owner, &target, "", 1)?;
                    update_task(
                        tx,
                        "c",
                        &TaskUpdate {
                            state: Some(TaskState::WaitingInput),
                            ..Default::default()
                        },
                        1,
                    )?;
                    begin_request(tx, "c", 1, 1)?;
                    checkpoint(tx, "c", 1, "c:1:1", "page_scroll", 1)?;
                    settle_operation(tx, "c:1:1", "done", None, None)?;
                    end_request(tx, "c", 1, "done", "DONE", "Done: scrolled down", 2)?;
                    // d: already finished: untouched.
                    insert_task(tx, "d", &owner, &target, "x", 1)?;
                    update_task(
                        tx,
                        "d",
                        &TaskUpdate {
                            state: Some(TaskState::Completed),
                            ..Default::default()
                        },
                        1,
                    )?;
                    Ok(())
                })
                .unwrap();
            assert_eq!(store.write(|tx| recover(tx, 9)).unwrap().0, 2);
            let get = |id: &str| store.read(|c| get_task(c, id)).unwrap().unwrap();
            let a = get("a");
            assert_eq!(a.state, TaskState::NeedsReconciliation);
            assert_eq!(a.reason.as_deref(), Some(INTERRUPTED));
            assert!(a.outcome.unwrap().starts_with("Unknown: "));
            assert_eq!(a.last_dispatched_mutation.unwrap().status, "interrupted");
            let b = get("b");
            assert_eq!(
                (b.state, b.reason.as_deref()),
                (TaskState::Failed, Some(INTERRUPTED))
            );
            let c = get("c");
            assert_eq!(
                (c.state, c.reason.as_deref()),
                (TaskState::Failed, Some(INTERRUPTED))
            );
            assert!(
                c.outcome.unwrap().starts_with("Not done: "),
                "nothing was in flight"
            );
            assert_eq!(get("d").state, TaskState::Completed);
            let r = store.read(|c| receipts(c, "a")).unwrap();
            assert_eq!(r[0].state, "interrupted");
            // Idempotent: a second recovery finds nothing running.
            assert_eq!(store.write(|tx| recover(tx, 10)).unwrap().0, 0);
        }
    }

    // Issue 21 item 3: recovery keeps open the sessions that waited for their next command on
    // a target the gateway opens (with their accepted commands and revisions, in order; an
    // answer's entry is listed dropped), and ends as before a host's own backend's session and
    // one with an operation in doubt.
    #[test]
    fn r_tsk_ctl_recovery_keeps_waiting_sessions_for_readmission() {
        for store in engines() {
            let owner = TaskOwner::new("a", "p", "c");
            let target = TaskTarget::default();
            let waiting = TaskUpdate {
                state: Some(TaskState::WaitingInput),
                ..Default::default()
            };
            store
                .write(|tx| {
                    for (id, brought, op) in [
                        ("e", false, "done"),
                        ("f", true, "done"),
                        ("g", false, "unknown"),
                    ] {
                        insert_task(tx, id, &owner, &target, "", 1)?;
                        set_spawn(
                            tx,
                            id,
                            &format!(r#"{{"keepOpen":true,"brought":{brought}}}"#),
                        )?;
                        update_task(tx, id, &waiting, 1)?;
                        begin_request(tx, id, 1, 1)?;
                        checkpoint(tx, id, 1, &format!("{id}:1:1"), "page_click", 1)?;
                        settle_operation(tx, &format!("{id}:1:1"), op, None, None)?;
                        end_request(tx, id, 1, "done", "DONE", "Done: x", 2)?;
                        for (n, kind, text) in [
                            (1, "command", "press A"),
                            (2, "answer", "12 Main St"),
                            (3, "update", "then press B"),
                        ] {
                            insert_command(
                                tx,
                                &NewCommand {
                                    task_id: id,
                                    id: &format!("{id}-cmd-{n}"),
                                    origin: "user",
                                    kind,
                                    text: Some(text),
                                    expected_revision: None,
                                },
                                "[text]".into(),
                                kind != "answer",
                                3,
                            )?;
                        }
                    }
                    Ok(())
                })
                .unwrap();
            let (_, kept) = store.write(|tx| recover(tx, 9)).unwrap();
            assert_eq!(kept.len(), 1, "{kept:#?}");
            assert_eq!(kept[0].id, "e");
            assert_eq!(kept[0].last_seq, 1);
            assert_eq!(
                kept[0].queue,
                [
                    ("e-cmd-1".to_string(), "press A".to_string(), false, false),
                    // An update is the agent's goal: it runs as a goal run after the restart.
                    (
                        "e-cmd-3".to_string(),
                        "then press B".to_string(),
                        false,
                        true
                    )
                ]
            );
            let get = |id: &str| store.read(|c| get_task(c, id)).unwrap().unwrap();
            let state = |id: &str, cmd: &str| {
                get(id)
                    .commands
                    .iter()
                    .find(|c| c.command_id == cmd)
                    .map(|c| c.state.clone())
                    .unwrap()
            };
            assert_eq!(get("e").state, TaskState::WaitingInput);
            assert_eq!(
                (
                    state("e", "e-cmd-1"),
                    state("e", "e-cmd-2"),
                    state("e", "e-cmd-3")
                ),
                ("accepted".into(), "dropped".into(), "accepted".into())
            );
            assert_eq!(get("f").state, TaskState::Failed);
            assert_eq!(state("f", "f-cmd-1"), "dropped");
            assert_eq!(get("g").state, TaskState::NeedsReconciliation);
            assert_eq!(state("g", "g-cmd-3"), "dropped");
            // A second recovery keeps the same session.
            let (_, again) = store.write(|tx| recover(tx, 10)).unwrap();
            assert_eq!(again, kept);
        }
    }

    // Issue 21 defect 11: a retention pass is bounded (at most `scan` looked at, `batch`
    // deleted), walks the index (no full scan, no sort) and goes on where the last one stopped,
    // so tasks it must keep (open, in doubt) never starve the ones behind them.
    #[test]
    fn r_tsk_retention_passes_are_bounded_and_walk_past_what_they_keep() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let owner = TaskOwner::new("a", "p", "c");
        let target = TaskTarget::default();
        let closed = |state| TaskUpdate {
            state: Some(state),
            ..Default::default()
        };
        store
            .write(|tx| {
                // The oldest 300: closed but with an operation in doubt (kept forever).
                for i in 0..300 {
                    let id = format!("doubt-{i:04}");
                    insert_task(tx, &id, &owner, &target, "g", i)?;
                    begin_request(tx, &id, 1, i)?;
                    checkpoint(tx, &id, 1, &format!("{id}:1:1"), "page_click", i)?;
                    settle_operation(tx, &format!("{id}:1:1"), "unknown", None, None)?;
                    update_task(tx, &id, &closed(TaskState::Failed), i)?;
                }
                // Then 200 deletable ones (with receipts), 10 open ones, 10 needing
                // reconciliation, and 5 closed but too young.
                for i in 0..200 {
                    let id = format!("old-{i:04}");
                    insert_task(tx, &id, &owner, &target, "g", 1000 + i)?;
                    begin_request(tx, &id, 1, 1000 + i)?;
                    checkpoint(tx, &id, 1, &format!("{id}:1:1"), "page_scroll", 1000 + i)?;
                    settle_operation(tx, &format!("{id}:1:1"), "done", None, Some("{}"))?;
                    end_request(tx, &id, 1, "done", "DONE", "Done: x", 1000 + i)?;
                    let state = [
                        TaskState::Completed,
                        TaskState::Failed,
                        TaskState::Cancelled,
                    ][i as usize % 3];
                    update_task(tx, &id, &closed(state), 1000 + i)?;
                }
                for (i, state) in [
                    (0, TaskState::WaitingInput),
                    (1, TaskState::NeedsReconciliation),
                ] {
                    for j in 0..10 {
                        let id = format!("keep-{i}-{j}");
                        insert_task(tx, &id, &owner, &target, "g", 500)?;
                        update_task(tx, &id, &closed(state), 500)?;
                    }
                }
                for i in 0..5 {
                    let id = format!("young-{i}");
                    insert_task(tx, &id, &owner, &target, "g", 9000)?;
                    update_task(tx, &id, &closed(TaskState::Completed), 9000)?;
                }
                Ok(())
            })
            .unwrap();
        let plan: Vec<String> = store
            .read(|c| {
                c.prepare(
                    "EXPLAIN QUERY PLAN SELECT updated_ms, id FROM tasks
                     INDEXED BY tasks_closed_by_age
                     WHERE state IN ('completed', 'failed', 'cancelled')
                       AND updated_ms < ?1 AND (updated_ms, id) > (?2, ?3)
                     ORDER BY updated_ms, id LIMIT ?4",
                )?
                .query_map(params![5000, i64::MIN, "", 10], |r| r.get::<_, String>(3))?
                .collect()
            })
            .unwrap();
        let plan = plan.join("; ");
        assert!(
            plan.contains("SEARCH tasks USING INDEX tasks_closed_by_age"),
            "{plan}"
        );
        assert!(!plan.contains("TEMP B-TREE"), "no sort: {plan}");
        let count =
            |sql: &str| -> i64 { store.read(|c| c.query_row(sql, [], |r| r.get(0))).unwrap() };
        let mut cursor = None;
        let mut passes = 0;
        let mut deleted = 0;
        loop {
            let pass = store
                .write(|tx| sweep_closed(tx, 5000, cursor.clone(), 128, 32))
                .unwrap();
            assert!(pass.scanned <= 128 && pass.deleted <= 32, "{pass:?}");
            passes += 1;
            deleted += pass.deleted;
            cursor = pass.cursor;
            if cursor.is_none() {
                break;
            }
            assert!(passes < 50, "the sweep goes on");
        }
        assert_eq!(deleted, 200);
        assert!(passes <= 300 / 128 + 200 / 32 + 2, "{passes} passes");
        assert_eq!(count("SELECT count(*) FROM tasks WHERE id LIKE 'old-%'"), 0);
        assert_eq!(
            count("SELECT count(*) FROM task_requests WHERE task_id LIKE 'old-%'"),
            0
        );
        assert_eq!(
            count("SELECT count(*) FROM task_operations WHERE task_id LIKE 'old-%'"),
            0
        );
        assert_eq!(
            count("SELECT count(*) FROM tasks WHERE id LIKE 'doubt-%'"),
            300
        );
        assert_eq!(
            count("SELECT count(*) FROM task_operations WHERE task_id LIKE 'doubt-%'"),
            300
        );
        assert_eq!(
            count("SELECT count(*) FROM tasks WHERE id LIKE 'keep-%'"),
            20
        );
        assert_eq!(
            count("SELECT count(*) FROM tasks WHERE id LIKE 'young-%'"),
            5
        );
        // Nothing left to delete: a pass from the start looks, deletes nothing and ends.
        let pass = store
            .write(|tx| sweep_closed(tx, 5000, None, 1000, 32))
            .unwrap();
        assert_eq!((pass.deleted, pass.scanned, pass.cursor), (0, 300, None));
    }
}
