//! The one numbered list of schema migrations, with one body per engine (issue 23 item 1).
//!
//! Owns [`MIGRATIONS`]: entry `i` takes a store from version `i` to `i + 1` on the gateway's
//! SQLite file (applied by `migrations.rs`, versioned by `PRAGMA user_version`) and on the
//! fleet's PostgreSQL store (applied by `pg.rs` under an advisory lock, versioned by the rows
//! of `jevgate_migrations`), so both engines report the same version numbers for the same
//! schema. What stays in each process (screenshot files on its disk) has no PostgreSQL table,
//! and what only a fleet needs (process liveness, the carried calls) rides in the entry whose
//! tables it belongs with, created on PostgreSQL only; each body's comment says which.
//!
//! Holds statements only: it never opens, applies or versions anything. Never edit a released
//! migration (SQLite's v1–v9 are released); add the next entry.

/// The newest schema version this build knows (both engines).
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// One step of the schema: its number, what it adds, and its body on each engine.
pub(crate) struct Migration {
    /// `MIGRATIONS[i].version == i + 1`.
    pub(crate) version: i64,
    /// What the step adds, in a few words (logs, the doctor).
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))] // reason: PostgreSQL only
    pub(crate) name: &'static str,
    /// The body on the gateway's SQLite file.
    pub(super) sqlite: fn(&rusqlite::Transaction<'_>) -> rusqlite::Result<()>,
    /// The body on the fleet's PostgreSQL store.
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))] // reason: PostgreSQL only
    pub(crate) postgres: PgBody,
}

/// A migration's body on PostgreSQL.
#[cfg_attr(not(feature = "postgres"), allow(dead_code))] // reason: PostgreSQL only
pub(crate) enum PgBody {
    /// These statements.
    Sql(&'static str),
    /// These statements, then the fleet's random secret stored in `jevgate_meta` (once, with
    /// the table).
    SqlThenFleetSecret(&'static str),
}

/// The migrations, in order. Never edit a released one; add the next.
pub(crate) const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "store identity and secret",
        sqlite: v1_meta,
        // The fleet's secret (keys the hashes of caller scopes, request ids, profile keys and
        // pairing codes, so no row holds a raw id), one liveness row per process (times are
        // milliseconds on the database clock), and the Jev request ledger (R-JEV-LEDGER) keyed
        // by that secret — on SQLite the ledger is the one process's memory.
        postgres: PgBody::SqlThenFleetSecret(
            "CREATE TABLE jevgate_meta (
                key TEXT PRIMARY KEY,
                value BYTEA NOT NULL
            );
            CREATE TABLE jevgate_processes (
                process_id TEXT PRIMARY KEY,
                started_at BIGINT NOT NULL,
                heartbeat_at BIGINT NOT NULL
            );
            CREATE TABLE jevgate_request_ledger (
                scope BYTEA NOT NULL,
                request BYTEA NOT NULL,
                expires_at BIGINT NOT NULL,
                PRIMARY KEY (scope, request)
            );
            CREATE INDEX jevgate_request_ledger_expiry ON jevgate_request_ledger (expires_at);",
        ),
    },
    Migration {
        version: 2,
        name: "control leases",
        sqlite: v2_control_leases,
        // Device control leases (the pure state as JSON plus the columns the fleet queries:
        // the holding process, the end on the database clock, a fencing token that only grows)
        // and profile leases across processes (issue 23 item 2, R-PROF-2): the process whose
        // browser session or task holds a persistent profile, keyed by the profile's HMAC under
        // the fleet secret (never the key), renewed by the holder's heartbeat.
        postgres: PgBody::Sql(
            "CREATE TABLE jevgate_control_leases (
                device_id TEXT PRIMARY KEY,
                state TEXT NOT NULL DEFAULT '{}',
                holder TEXT,
                revoked TEXT[] NOT NULL DEFAULT '{}',
                holder_process TEXT,
                expires_at BIGINT,
                fencing_token BIGINT NOT NULL DEFAULT 0,
                taken_back BIGINT[] NOT NULL DEFAULT '{}'
            );
            CREATE INDEX jevgate_control_leases_holder ON jevgate_control_leases (holder);
            CREATE TABLE jevgate_profile_leases (
                profile_key TEXT PRIMARY KEY,
                holder_process TEXT NOT NULL,
                expires_at BIGINT NOT NULL,
                fencing_token BIGINT NOT NULL
            );
            CREATE INDEX jevgate_profile_leases_holder ON jevgate_profile_leases (holder_process);",
        ),
    },
    Migration {
        version: 3,
        name: "devices",
        sqlite: v3_devices,
        // The registry with the SQLite table's name and columns (the registry runs the same
        // statements on both engines), so a device paired through one process authenticates
        // to any other (token only as its SHA-256 hash). One-time pairing codes any process
        // redeems (R-DEV-PAIR): the code's HMAC under the fleet secret (never the code), its
        // owner, its end on the database clock. Which process holds each device's WebSocket
        // (issue 23 item 4; NULL: none now; with what the callers' device selection needs,
        // never a token) and the commands carried to it (arguments and results as JSON text,
        // bounded by the channel's frame cap). Screenshot artifacts are files on one
        // process's disk: not in the shared store.
        postgres: PgBody::Sql(
            "CREATE TABLE devices (
                device_id TEXT PRIMARY KEY NOT NULL,
                owner TEXT NOT NULL,
                installation_id TEXT NOT NULL,
                name TEXT NOT NULL,
                capability TEXT NOT NULL,
                browser_name TEXT,
                browser_version TEXT,
                token_hash BYTEA NOT NULL UNIQUE,
                last_protocol BIGINT,
                paired_at BIGINT NOT NULL,
                last_seen_at BIGINT,
                UNIQUE (owner, installation_id)
            );
            CREATE INDEX devices_owner ON devices (owner);
            CREATE TABLE jevgate_pairing_codes (
                hash BYTEA PRIMARY KEY,
                owner TEXT NOT NULL,
                expires_at BIGINT NOT NULL
            );
            CREATE INDEX jevgate_pairing_codes_expiry ON jevgate_pairing_codes (expires_at);
            CREATE TABLE jevgate_device_connections (
                device_id TEXT PRIMARY KEY,
                process_id TEXT,
                owner TEXT NOT NULL,
                name TEXT NOT NULL,
                capability TEXT NOT NULL,
                last_protocol BIGINT,
                connected_at BIGINT NOT NULL
            );
            CREATE INDEX jevgate_device_connections_owner ON jevgate_device_connections (owner);
            CREATE TABLE jevgate_remote_commands (
                id BIGSERIAL PRIMARY KEY,
                device_id TEXT NOT NULL,
                from_process TEXT NOT NULL,
                to_process TEXT NOT NULL,
                tool TEXT NOT NULL,
                args TEXT NOT NULL,
                deadline_ms BIGINT NOT NULL,
                state TEXT NOT NULL DEFAULT 'queued'
                    CHECK (state IN ('queued', 'sent', 'done', 'cancelled')),
                result TEXT,
                created_at BIGINT NOT NULL
            );
            CREATE INDEX jevgate_remote_commands_to ON jevgate_remote_commands (to_process, state);",
        ),
    },
    Migration {
        version: 4,
        name: "Jev usage records",
        sqlite: v4_jev_usage,
        // The SQLite table, integers as BIGINT, shared by every process.
        postgres: PgBody::Sql(
            "CREATE TABLE jev_usage (
                seq BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
                at_ms BIGINT NOT NULL,
                agent_id TEXT NOT NULL,
                session_id TEXT,
                task_id TEXT,
                request_id_hash TEXT,
                generation BIGINT NOT NULL,
                provider TEXT NOT NULL,
                latency_ms BIGINT NOT NULL,
                outcome TEXT NOT NULL,
                validation_reason TEXT,
                requested_model TEXT,
                model TEXT,
                input_tokens BIGINT,
                output_tokens BIGINT,
                charged_credits DOUBLE PRECISION,
                rate_version TEXT
            );
            CREATE INDEX jev_usage_agent ON jev_usage (agent_id, seq);",
        ),
    },
    Migration {
        version: 5,
        name: "device owners",
        sqlite: v5_device_owners,
        postgres: PgBody::Sql(
            "CREATE TABLE jevgate_device_owners (
                device_id TEXT PRIMARY KEY,
                owner TEXT NOT NULL
            );",
        ),
    },
    Migration {
        version: 6,
        name: "tasks and receipts",
        sqlite: v6_tasks,
        // The SQLite tables with the same names and columns (the task records run the same
        // statements on both engines through `db.rs`), integers as BIGINT, a `rowid` identity
        // where the records order by insertion, and the process that runs each task and
        // request (`owner_process`: its liveness row in `jevgate_processes`), so recovery and
        // takeover interrupt only what a dead process left running.
        postgres: PgBody::Sql(
            "CREATE TABLE tasks (
                rowid BIGINT GENERATED BY DEFAULT AS IDENTITY,
                id TEXT PRIMARY KEY NOT NULL,
                agent_id TEXT NOT NULL,
                principal_id TEXT NOT NULL,
                conversation_id TEXT NOT NULL,
                target TEXT NOT NULL,
                goal TEXT NOT NULL,
                revision BIGINT NOT NULL,
                controller TEXT NOT NULL,
                state TEXT NOT NULL,
                reason TEXT,
                outcome TEXT,
                actions BIGINT NOT NULL,
                evaluations BIGINT NOT NULL,
                action_log TEXT NOT NULL,
                step_run TEXT,
                created_ms BIGINT NOT NULL,
                updated_ms BIGINT NOT NULL,
                owner_process TEXT
            );
            CREATE INDEX tasks_by_owner ON tasks (agent_id, principal_id, conversation_id, created_ms);
            CREATE INDEX tasks_by_process ON tasks (owner_process)
                WHERE state IN ('queued', 'running', 'waiting_input');
            CREATE TABLE task_requests (
                task_id TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
                seq BIGINT NOT NULL,
                state TEXT NOT NULL,
                reason TEXT,
                outcome TEXT,
                started_ms BIGINT NOT NULL,
                ended_ms BIGINT,
                owner_process TEXT,
                PRIMARY KEY (task_id, seq)
            );
            CREATE TABLE task_operations (
                rowid BIGINT GENERATED BY DEFAULT AS IDENTITY,
                operation_id TEXT PRIMARY KEY NOT NULL,
                task_id TEXT NOT NULL,
                request_seq BIGINT NOT NULL,
                tool TEXT NOT NULL,
                dispatched_ms BIGINT NOT NULL,
                status TEXT NOT NULL,
                error_code TEXT,
                result TEXT,
                observation TEXT,
                FOREIGN KEY (task_id, request_seq) REFERENCES task_requests (task_id, seq)
                    ON DELETE CASCADE
            );
            CREATE INDEX task_operations_by_request ON task_operations (task_id, request_seq);",
        ),
    },
    Migration {
        version: 7,
        name: "private receipts",
        sqlite: v7_private_receipts,
        // No build ever kept observations on PostgreSQL: only the retention sweep's index.
        postgres: PgBody::Sql(
            "CREATE INDEX tasks_closed_by_age ON tasks (updated_ms, id)
                WHERE state IN ('completed', 'failed', 'cancelled');",
        ),
    },
    Migration {
        version: 8,
        name: "task commands",
        sqlite: v8_task_commands,
        // The SQLite step, plus the task control calls carried to the live process running
        // the task (R-TSK-CTL): the call as JSON (it may hold the person's words: private,
        // like task_commands.text), `queued` → `taken` (once, by its owner) → `done` with the
        // answer, or `withdrawn` by the caller when the owner died before taking it; times
        // are milliseconds on the database clock.
        postgres: PgBody::Sql(
            "ALTER TABLE tasks ADD COLUMN spawn TEXT;
            ALTER TABLE tasks ADD COLUMN control TEXT;
            ALTER TABLE task_operations ADD COLUMN resolved_by TEXT;
            ALTER TABLE task_operations ADD COLUMN resolved_ms BIGINT;
            CREATE TABLE task_commands (
                task_id TEXT NOT NULL REFERENCES tasks (id) ON DELETE CASCADE,
                id TEXT NOT NULL,
                seq BIGINT NOT NULL,
                origin TEXT NOT NULL,
                kind TEXT NOT NULL,
                text TEXT,
                expected_revision BIGINT,
                revision BIGINT NOT NULL,
                state TEXT NOT NULL,
                reason TEXT,
                request_seq BIGINT,
                created_ms BIGINT NOT NULL,
                updated_ms BIGINT NOT NULL,
                PRIMARY KEY (task_id, id)
            );
            CREATE UNIQUE INDEX task_commands_by_seq ON task_commands (task_id, seq);
            CREATE TABLE jevgate_task_calls (
                id BIGSERIAL PRIMARY KEY,
                task_id TEXT NOT NULL,
                from_process TEXT NOT NULL,
                to_process TEXT NOT NULL,
                call TEXT NOT NULL,
                state TEXT NOT NULL DEFAULT 'queued'
                    CHECK (state IN ('queued', 'taken', 'done', 'withdrawn')),
                result TEXT,
                created_at BIGINT NOT NULL
            );
            CREATE INDEX jevgate_task_calls_to ON jevgate_task_calls (to_process, state);",
        ),
    },
    Migration {
        version: 9,
        name: "autopilot receipts",
        sqlite: v9_autopilot_receipts,
        // The SQLite tables (the receipts run the same statements on both engines), integers
        // as BIGINT, and the process running each run (`owner_process`: its liveness row), so
        // a start recovers only what a dead process left running.
        postgres: PgBody::Sql(
            "CREATE TABLE autopilot_runs (
                id TEXT PRIMARY KEY NOT NULL,
                principal_id TEXT NOT NULL,
                conversation_id TEXT NOT NULL,
                device_id TEXT NOT NULL,
                state TEXT NOT NULL,
                reason TEXT,
                steps BIGINT NOT NULL,
                started_ms BIGINT NOT NULL,
                ended_ms BIGINT,
                owner_process TEXT
            );
            CREATE INDEX autopilot_runs_by_owner ON autopilot_runs (principal_id, started_ms);
            CREATE INDEX autopilot_runs_by_process ON autopilot_runs (owner_process)
                WHERE state = 'running';
            CREATE TABLE autopilot_operations (
                operation_id TEXT PRIMARY KEY NOT NULL,
                run_id TEXT NOT NULL REFERENCES autopilot_runs (id) ON DELETE CASCADE,
                tool TEXT NOT NULL,
                dispatched_ms BIGINT NOT NULL,
                status TEXT NOT NULL,
                error_code TEXT
            );
            CREATE INDEX autopilot_operations_by_run ON autopilot_operations (run_id);",
        ),
    },
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
