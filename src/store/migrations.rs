//! Forward-only schema migrations, versioned by `PRAGMA user_version`.
//!
//! Each migration runs in its own transaction together with the version bump, so a crash leaves
//! the file at the previous version, never half-migrated. Never edit a released migration; add
//! the next one.

use super::names::{sqlite_error, APPLICATION_ID};
use crate::{Error, Result};
use rusqlite::{Connection, TransactionBehavior};

/// The newest schema version this build knows.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

type Migration = fn(&rusqlite::Transaction<'_>) -> rusqlite::Result<()>;

/// `MIGRATIONS[i]` takes the schema from version `i` to `i + 1`.
const MIGRATIONS: &[Migration] = &[
    v1_meta,
    v2_control_leases,
    v3_devices,
    v4_jev_usage,
    v5_device_owners,
    v6_tasks,
    v7_private_receipts,
    v8_task_commands,
    v9_autopilot_receipts,
];

/// v1: store identity and the per-gateway secret.
fn v1_meta(tx: &rusqlite::Transaction<'_>) -> rusqlite::Result<()> {
    tx.execute_batch(
        "CREATE TABLE meta (key TEXT PRIMARY KEY NOT NULL, value BLOB NOT NULL) STRICT;",
    )?;
    let mut secret = [0u8; 32];
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut secret)
        .map_err(|_| rusqlite::Error::InvalidQuery)?;
    tx.execute(
        "INSERT INTO meta (key, value) VALUES ('gateway_secret', ?1)",
        [&secret[..]],
    )?;
    Ok(())
}

/// v2: control-lease holder changes and owed revocation notices (lease clock policy).
fn v2_control_leases(tx: &rusqlite::Transaction<'_>) -> rusqlite::Result<()> {
    tx.execute_batch(
        "CREATE TABLE control_leases (
            device_id TEXT PRIMARY KEY NOT NULL,
            holder TEXT,
            revoked TEXT NOT NULL,
            version INTEGER NOT NULL
        ) STRICT;",
    )
}

/// v3: paired devices (token stored only as a SHA-256 hash, last authenticated channel
/// protocol) and screenshot artifacts of root sessions (R-DEV-PAIR, R-DEV-VER, R-DEV-SHOT).
fn v3_devices(tx: &rusqlite::Transaction<'_>) -> rusqlite::Result<()> {
    tx.execute_batch(
        "CREATE TABLE devices (
            device_id TEXT PRIMARY KEY NOT NULL,
            owner TEXT NOT NULL,
            installation_id TEXT NOT NULL,
            name TEXT NOT NULL,
            capability TEXT NOT NULL,
            browser_name TEXT,
            browser_version TEXT,
            token_hash BLOB NOT NULL UNIQUE,
            last_protocol INTEGER,
            paired_at INTEGER NOT NULL,
            last_seen_at INTEGER,
            UNIQUE (owner, installation_id)
        ) STRICT;
        CREATE INDEX devices_owner ON devices (owner);
        CREATE TABLE artifacts (
            artifact_id TEXT PRIMARY KEY NOT NULL,
            root_session TEXT NOT NULL,
            device_id TEXT NOT NULL,
            media_type TEXT NOT NULL,
            size INTEGER NOT NULL,
            created_at INTEGER NOT NULL
        ) STRICT;
        CREATE INDEX artifacts_session ON artifacts (root_session);",
    )
}

/// v4: Jev usage records (R-JEV-USAGE): metadata only — never state, questions, answers' text
/// or credentials; the request id only as a keyed hash.
fn v4_jev_usage(tx: &rusqlite::Transaction<'_>) -> rusqlite::Result<()> {
    tx.execute_batch(
        "CREATE TABLE jev_usage (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            at_ms INTEGER NOT NULL,
            agent_id TEXT NOT NULL,
            session_id TEXT,
            task_id TEXT,
            request_id_hash TEXT,
            generation INTEGER NOT NULL,
            provider TEXT NOT NULL,
            latency_ms INTEGER NOT NULL,
            outcome TEXT NOT NULL,
            validation_reason TEXT,
            requested_model TEXT,
            model TEXT,
            input_tokens INTEGER,
            output_tokens INTEGER,
            charged_credits REAL,
            rate_version TEXT
        ) STRICT;
        CREATE INDEX jev_usage_agent ON jev_usage (agent_id, seq);",
    )
}

/// v5: device owners for the control routes (R-LEASE-7), kept apart from `devices` because a
/// host may name the owner of a device it drives without pairing it. Paired devices' owners are
/// copied in, so an upgraded store knows every owner it knew before.
fn v5_device_owners(tx: &rusqlite::Transaction<'_>) -> rusqlite::Result<()> {
    tx.execute_batch(
        "CREATE TABLE device_owners (
            device_id TEXT PRIMARY KEY NOT NULL,
            owner TEXT NOT NULL
        ) STRICT;
        INSERT INTO device_owners (device_id, owner) SELECT device_id, owner FROM devices;",
    )
}

/// Tasks and their receipts (R-TSK, R-TSK-RCPT). A request is one command (or step list) of a
/// task; its receipt is the request row plus one row per dispatched operation, written before
/// the operation is sent. No arguments, field values, credentials or lease tokens are columns.
fn v6_tasks(tx: &rusqlite::Transaction<'_>) -> rusqlite::Result<()> {
    tx.execute_batch(
        "CREATE TABLE tasks (
            id TEXT PRIMARY KEY NOT NULL,
            agent_id TEXT NOT NULL,
            principal_id TEXT NOT NULL,
            conversation_id TEXT NOT NULL,
            target TEXT NOT NULL,
            goal TEXT NOT NULL,
            revision INTEGER NOT NULL,
            controller TEXT NOT NULL,
            state TEXT NOT NULL,
            reason TEXT,
            outcome TEXT,
            actions INTEGER NOT NULL,
            evaluations INTEGER NOT NULL,
            action_log TEXT NOT NULL,
            step_run TEXT,
            created_ms INTEGER NOT NULL,
            updated_ms INTEGER NOT NULL
        ) STRICT;
        CREATE INDEX tasks_by_owner ON tasks (agent_id, principal_id, conversation_id, created_ms);
        CREATE TABLE task_requests (
            task_id TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
            seq INTEGER NOT NULL,
            state TEXT NOT NULL,
            reason TEXT,
            outcome TEXT,
            started_ms INTEGER NOT NULL,
            ended_ms INTEGER,
            PRIMARY KEY (task_id, seq)
        ) STRICT;
        CREATE TABLE task_operations (
            operation_id TEXT PRIMARY KEY NOT NULL,
            task_id TEXT NOT NULL,
            request_seq INTEGER NOT NULL,
            tool TEXT NOT NULL,
            dispatched_ms INTEGER NOT NULL,
            status TEXT NOT NULL,
            error_code TEXT,
            result TEXT,
            observation TEXT,
            FOREIGN KEY (task_id, request_seq) REFERENCES task_requests (task_id, seq)
                ON DELETE CASCADE
        ) STRICT;
        CREATE INDEX task_operations_by_request ON task_operations (task_id, request_seq);",
    )
}

/// v7 (issue 21 defects 7 and 11): receipts keep no field values — the observations older
/// builds kept with each operation could hold typed text and prefilled values, so they are
/// dropped (the operation rows stay) — and the index the retention sweep walks: closed tasks by
/// their last change.
fn v7_private_receipts(tx: &rusqlite::Transaction<'_>) -> rusqlite::Result<()> {
    tx.execute_batch(
        "UPDATE task_operations SET observation = NULL WHERE observation IS NOT NULL;
        CREATE INDEX tasks_closed_by_age ON tasks (updated_ms, id)
            WHERE state IN ('completed', 'failed', 'cancelled');",
    )
}

/// v8: the task control plane (R-TSK-CTL): every command a task accepts is a row with its own
/// control receipt (accepted, running, done, not_done, dropped, unknown, needs_agent,
/// awaiting_confirmation), so an accepted command either runs or is listed dropped — across a
/// restart too. `text` is the command's own words: the one column they live in (they go with
/// the task's retention). `spawn` keeps what a spawn asked for besides its goal (budget,
/// start URL, keepOpen) so a task can be continued after its slot thread or its process ended;
/// `control` the session's private control state (a paused step run's remaining steps,
/// verbatim — status shows them masked). An in-doubt operation resolved by reconciliation or
/// by a person records who resolved it (`resolved_by`: `operation_status` or `person`).
fn v8_task_commands(tx: &rusqlite::Transaction<'_>) -> rusqlite::Result<()> {
    tx.execute_batch(
        "ALTER TABLE tasks ADD COLUMN spawn TEXT;
        ALTER TABLE tasks ADD COLUMN control TEXT;
        ALTER TABLE task_operations ADD COLUMN resolved_by TEXT;
        ALTER TABLE task_operations ADD COLUMN resolved_ms INTEGER;
        CREATE TABLE task_commands (
            task_id TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
            id TEXT NOT NULL,
            seq INTEGER NOT NULL,
            origin TEXT NOT NULL,
            kind TEXT NOT NULL,
            text TEXT,
            expected_revision INTEGER,
            revision INTEGER NOT NULL,
            state TEXT NOT NULL,
            reason TEXT,
            request_seq INTEGER,
            created_ms INTEGER NOT NULL,
            updated_ms INTEGER NOT NULL,
            PRIMARY KEY (task_id, id)
        ) STRICT;
        CREATE UNIQUE INDEX task_commands_by_seq ON task_commands (task_id, seq);",
    )
}

/// v9 (issue 26 item 8, R-AUTO): the receipts of `browser_autopilot` runs on a paired device —
/// one row per run (who, which device, how it ended) and one per action, written before the
/// action is dispatched (`dispatched`), then settled. No goal, value, argument or page text is a
/// column; operation ids name the run (`<run id>:<n>`).
fn v9_autopilot_receipts(tx: &rusqlite::Transaction<'_>) -> rusqlite::Result<()> {
    tx.execute_batch(
        "CREATE TABLE autopilot_runs (
            id TEXT PRIMARY KEY NOT NULL,
            principal_id TEXT NOT NULL,
            conversation_id TEXT NOT NULL,
            device_id TEXT NOT NULL,
            state TEXT NOT NULL,
            reason TEXT,
            steps INTEGER NOT NULL,
            started_ms INTEGER NOT NULL,
            ended_ms INTEGER
        ) STRICT;
        CREATE INDEX autopilot_runs_by_owner ON autopilot_runs (principal_id, started_ms);
        CREATE TABLE autopilot_operations (
            operation_id TEXT PRIMARY KEY NOT NULL,
            run_id TEXT NOT NULL REFERENCES autopilot_runs (id) ON DELETE CASCADE,
            tool TEXT NOT NULL,
            dispatched_ms INTEGER NOT NULL,
            status TEXT NOT NULL,
            error_code TEXT
        ) STRICT;
        CREATE INDEX autopilot_operations_by_run ON autopilot_operations (run_id);",
    )
}

pub(super) fn migrate(conn: &Connection) -> Result<()> {
    let app_id: i32 = conn
        .pragma_query_value(None, "application_id", |r| r.get(0))
        .map_err(|e| sqlite_error("read application_id", e))?;
    let version: i64 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .map_err(|e| sqlite_error("read user_version", e))?;
    if app_id == 0 && version == 0 {
        let tables: i64 = conn
            .query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))
            .map_err(|e| sqlite_error("inspect schema", e))?;
        if tables > 0 {
            return Err(Error::StoreCorrupt {
                reason: "the file is a SQLite database of another program".into(),
            });
        }
    } else if app_id != APPLICATION_ID {
        return Err(Error::StoreCorrupt {
            reason: "the file is a SQLite database of another program".into(),
        });
    }
    if version > SCHEMA_VERSION {
        return Err(Error::StoreVersionUnsupported {
            found: version,
            supported: SCHEMA_VERSION,
        });
    }
    if version < 0 {
        return Err(Error::StoreCorrupt {
            reason: "negative schema version".into(),
        });
    }
    let verdict: String = conn
        .pragma_query_value(None, "quick_check", |r| r.get(0))
        .map_err(|e| sqlite_error("check integrity", e))?;
    if verdict != "ok" {
        return Err(Error::StoreCorrupt {
            reason: "quick_check reported damage".into(),
        });
    }
    for (from, step) in MIGRATIONS.iter().enumerate().skip(version as usize) {
        // A Connection used only here; the transaction needs `&mut`-free immediate behaviour.
        let tx = rusqlite::Transaction::new_unchecked(conn, TransactionBehavior::Immediate)
            .map_err(|e| sqlite_error("begin migration", e))?;
        step(&tx).map_err(|e| sqlite_error("migrate", e))?;
        tx.pragma_update(None, "application_id", APPLICATION_ID)
            .and_then(|_| tx.pragma_update(None, "user_version", from as i64 + 1))
            .map_err(|e| sqlite_error("migrate", e))?;
        tx.commit()
            .map_err(|e| sqlite_error("commit migration", e))?;
    }
    Ok(())
}
