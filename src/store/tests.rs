//! R-STO: open/create, WAL and synchronous=FULL, migrations, damaged and foreign files,
//! exclusive data directory, many threads.

use super::*;
use std::sync::Arc;

fn open(dir: &Path) -> Result<Store> {
    Store::open(dir)
}

#[test]
fn creates_the_file_in_wal_mode_with_full_sync_and_current_schema() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir.path().join("nested/data")).unwrap();
    assert!(store.path().exists());
    let (mode, sync, app): (String, i64, i32) = store
        .read(|c| {
            Ok((
                c.pragma_query_value(None, "journal_mode", |r| r.get(0))?,
                c.pragma_query_value(None, "synchronous", |r| r.get(0))?,
                c.pragma_query_value(None, "application_id", |r| r.get(0))?,
            ))
        })
        .unwrap();
    assert_eq!(mode, "wal");
    assert_eq!(sync, 2, "FULL");
    assert_eq!(app, super::names::APPLICATION_ID);
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    assert_eq!(store.gateway_secret().unwrap().len(), 32);
    store.quick_check().unwrap();
}

#[test]
fn reopening_keeps_data_and_the_gateway_secret() {
    let dir = tempfile::tempdir().unwrap();
    let secret = {
        let s = open(dir.path()).unwrap();
        s.write(|tx| tx.execute("INSERT INTO meta (key, value) VALUES ('probe', x'01')", []))
            .unwrap();
        s.gateway_secret().unwrap()
    };
    let s = open(dir.path()).unwrap();
    assert_eq!(s.gateway_secret().unwrap(), secret);
    let n: i64 = s
        .read(|c| {
            c.query_row("SELECT count(*) FROM meta WHERE key = 'probe'", [], |r| {
                r.get(0)
            })
        })
        .unwrap();
    assert_eq!(n, 1);
}

#[test]
fn a_second_open_of_the_same_directory_is_refused_until_the_first_closes() {
    let dir = tempfile::tempdir().unwrap();
    let first = open(dir.path()).unwrap();
    let err = open(dir.path()).unwrap_err();
    assert_eq!(err.code(), "STORE_LOCKED");
    assert_eq!(err.http_status(), 409);
    first.close();
    assert_eq!(first.schema_version().unwrap_err().code(), "GATEWAY_CLOSED");
    open(dir.path()).unwrap();
}

#[test]
fn a_file_that_is_not_sqlite_is_store_corrupt_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let garbage = b"this is my diary, not a database\n".repeat(100);
    std::fs::write(dir.path().join(DB_FILE), &garbage).unwrap();
    let err = open(dir.path()).unwrap_err();
    assert_eq!(err.code(), "STORE_CORRUPT");
    assert!(err.to_string().contains("not a SQLite database"), "{err}");
    assert!(!err.to_string().contains("diary"));
    assert_eq!(std::fs::read(dir.path().join(DB_FILE)).unwrap(), garbage);
    // Short garbage too.
    std::fs::write(dir.path().join(DB_FILE), b"SQLite").unwrap();
    assert_eq!(open(dir.path()).unwrap_err().code(), "STORE_CORRUPT");
}

#[test]
fn a_sqlite_database_of_another_program_is_store_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    {
        let c = Connection::open(dir.path().join(DB_FILE)).unwrap();
        c.execute_batch(
            "CREATE TABLE photos (id INTEGER PRIMARY KEY); INSERT INTO photos VALUES (1);",
        )
        .unwrap();
    }
    let err = open(dir.path()).unwrap_err();
    assert_eq!(err.code(), "STORE_CORRUPT");
    assert!(err.to_string().contains("another program"), "{err}");
    // Another program that set its own application_id.
    let dir2 = tempfile::tempdir().unwrap();
    {
        let c = Connection::open(dir2.path().join(DB_FILE)).unwrap();
        c.execute_batch("PRAGMA application_id = 42;").unwrap();
    }
    assert_eq!(open(dir2.path()).unwrap_err().code(), "STORE_CORRUPT");
}

#[test]
fn a_newer_schema_is_store_version_unsupported() {
    let dir = tempfile::tempdir().unwrap();
    open(dir.path()).unwrap().close();
    {
        let c = Connection::open(dir.path().join(DB_FILE)).unwrap();
        c.pragma_update(None, "user_version", SCHEMA_VERSION + 7)
            .unwrap();
    }
    let err = open(dir.path()).unwrap_err();
    assert_eq!(err.code(), "STORE_VERSION_UNSUPPORTED");
    assert!(
        matches!(err, Error::StoreVersionUnsupported { found, supported } if found == SCHEMA_VERSION + 7 && supported == SCHEMA_VERSION)
    );
}

#[test]
fn a_damaged_page_is_store_corrupt_never_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    {
        let s = open(dir.path()).unwrap();
        s.write(|tx| {
            for i in 0..2000 {
                tx.execute(
                    "INSERT INTO meta (key, value) VALUES (?1, zeroblob(64))",
                    [format!("filler-{i:05}")],
                )?;
            }
            Ok(())
        })
        .unwrap();
    }
    let path = dir.path().join(DB_FILE);
    let mut bytes = std::fs::read(&path).unwrap();
    assert!(bytes.len() > 16 * 4096, "several pages");
    // Overwrite the b-tree pages after the first one with a pattern.
    for b in &mut bytes[4096 + 8..4096 * 12] {
        *b = 0xA5;
    }
    std::fs::write(&path, &bytes).unwrap();
    let err = open(dir.path()).unwrap_err();
    assert_eq!(err.code(), "STORE_CORRUPT", "{err}");
}

#[test]
fn a_truncated_database_is_store_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    {
        let s = open(dir.path()).unwrap();
        s.write(|tx| {
            for i in 0..500 {
                tx.execute(
                    "INSERT INTO meta (key, value) VALUES (?1, zeroblob(100))",
                    [format!("k{i}")],
                )?;
            }
            Ok(())
        })
        .unwrap();
    }
    let path = dir.path().join(DB_FILE);
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    assert_eq!(open(dir.path()).unwrap_err().code(), "STORE_CORRUPT");
}

#[test]
fn many_threads_write_and_read_concurrently_without_losing_a_write() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(open(dir.path()).unwrap());
    let threads: Vec<_> = (0..16)
        .map(|t| {
            let store = Arc::clone(&store);
            std::thread::spawn(move || {
                for i in 0..50 {
                    store
                        .write(|tx| {
                            tx.execute(
                                "INSERT INTO meta (key, value) VALUES (?1, x'00')",
                                [format!("t{t}-{i}")],
                            )
                        })
                        .unwrap();
                    store.schema_version().unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let n: i64 = store
        .read(|c| {
            c.query_row("SELECT count(*) FROM meta WHERE key LIKE 't%'", [], |r| {
                r.get(0)
            })
        })
        .unwrap();
    assert_eq!(n, 16 * 50);
}

#[test]
fn a_failed_write_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path()).unwrap();
    let err = store
        .write(|tx| {
            tx.execute("INSERT INTO meta (key, value) VALUES ('half', x'00')", [])?;
            tx.execute("INSERT INTO no_such_table VALUES (1)", [])
        })
        .unwrap_err();
    assert_eq!(err.code(), "STORE_IO");
    let n: i64 = store
        .read(|c| {
            c.query_row("SELECT count(*) FROM meta WHERE key = 'half'", [], |r| {
                r.get(0)
            })
        })
        .unwrap();
    assert_eq!(n, 0);
}

// R-LEASE-7 / R-STO: upgrading a v4 store (owners known only from `devices`) to v5 copies every
// paired device's owner into `device_owners`, so no owner is forgotten by the upgrade.
#[test]
fn v5_migration_copies_paired_devices_owners() {
    let dir = tempfile::tempdir().unwrap();
    {
        let s = open(dir.path()).unwrap();
        s.write(|tx| {
            tx.execute_batch(
                "DROP TABLE autopilot_operations; DROP TABLE autopilot_runs;
                 DROP TABLE device_owners; DROP TABLE task_commands;
                 DROP TABLE task_operations; DROP TABLE task_requests; DROP TABLE tasks;
                 INSERT INTO devices (device_id, owner, installation_id, name, capability,
                    token_hash, paired_at) VALUES
                    ('dev_a', 'alice', 'i1', 'laptop', 'browser', x'01', 1),
                    ('dev_b', 'bob', 'i2', 'desk', 'shell', x'02', 2);
                 PRAGMA user_version = 4;",
            )
        })
        .unwrap();
        s.close();
    }
    let s = open(dir.path()).unwrap();
    assert_eq!(s.schema_version().unwrap(), SCHEMA_VERSION);
    let owners: Vec<(String, String)> = s
        .read(|c| {
            let mut stmt =
                c.prepare("SELECT device_id, owner FROM device_owners ORDER BY device_id")?;
            let rows = stmt
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<rusqlite::Result<Vec<_>>>();
            rows
        })
        .unwrap();
    assert_eq!(
        owners,
        vec![
            ("dev_a".to_string(), "alice".to_string()),
            ("dev_b".to_string(), "bob".to_string())
        ]
    );
}

// Issue 21 defects 7 and 11 / R-TSK-RCPT: upgrading a v6 store drops the observations older
// builds kept (they could hold typed text and prefilled field values), keeps the operation
// rows, and adds the index the retention sweep walks.
#[test]
fn v7_migration_drops_kept_observations_and_indexes_closed_tasks() {
    let dir = tempfile::tempdir().unwrap();
    {
        let s = open(dir.path()).unwrap();
        s.write(|tx| {
            tx.execute_batch(
                "DROP TABLE autopilot_operations; DROP TABLE autopilot_runs;
                 DROP INDEX tasks_closed_by_age;
                 DROP TABLE task_commands;
                 ALTER TABLE tasks DROP COLUMN spawn;
                 ALTER TABLE tasks DROP COLUMN control;
                 ALTER TABLE task_operations DROP COLUMN resolved_by;
                 ALTER TABLE task_operations DROP COLUMN resolved_ms;
                 INSERT INTO tasks (id, agent_id, principal_id, conversation_id, target, goal,
                    revision, controller, state, actions, evaluations, action_log, created_ms,
                    updated_ms)
                    VALUES ('t', 'a', 'p', 'c', '{}', 'g', 1, 'user', 'completed', 1, 0, '[]',
                    1, 1);
                 INSERT INTO task_requests (task_id, seq, state, started_ms)
                    VALUES ('t', 1, 'done', 1);
                 INSERT INTO task_operations (operation_id, task_id, request_seq, tool,
                    dispatched_ms, status, result, observation)
                    VALUES ('t:1:1', 't', 1, 'page_type', 1, 'done', '{}',
                    '{\"controls\":[{\"ref\":\"e1\",\"value\":\"typed-SECRET\"}]}');
                 PRAGMA user_version = 6;",
            )
        })
        .unwrap();
        s.close();
    }
    let s = open(dir.path()).unwrap();
    assert_eq!(s.schema_version().unwrap(), SCHEMA_VERSION);
    let (n, kept): (i64, Option<String>) = s
        .read(|c| {
            c.query_row(
                "SELECT count(*), max(observation) FROM task_operations",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
        })
        .unwrap();
    assert_eq!((n, kept), (1, None));
    let index: i64 = s
        .read(|c| {
            c.query_row(
                "SELECT count(*) FROM sqlite_master WHERE name = 'tasks_closed_by_age'",
                [],
                |r| r.get(0),
            )
        })
        .unwrap();
    assert_eq!(index, 1);
}

// Issue 23 item 1: one numbered list, entry i taking a store from version i to i + 1 on both
// engines.
#[test]
fn the_migrations_are_numbered_one_to_schema_version() {
    for (i, m) in schema::MIGRATIONS.iter().enumerate() {
        assert_eq!(m.version, i as i64 + 1, "{}", m.name);
        assert!(!m.name.is_empty());
    }
    assert_eq!(schema::MIGRATIONS.len() as i64, SCHEMA_VERSION);
}
