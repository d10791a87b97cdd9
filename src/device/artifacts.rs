//! Screenshot artifacts (R-DEV-SHOT): private files of one root session under
//! `<data_dir>/artifacts/` (directory 0700, files 0600 on Unix), with their metadata in SQLite.
//!
//! It owns writing, reading and deleting those files: a root session keeps at most
//! `artifact_max_per_session` of them (its oldest go when it stores one more), a host deletes a
//! session's artifacts when its conversation ends, and artifacts older than `artifact_retention`
//! are purged (by the gateway's reaper, or on demand).
//!
//! Deletion removes the file first and the row second, with no lock held across file I/O. A
//! crash in between leaves a row whose file is gone: `get` answers `ARTIFACT_NOT_FOUND` for it
//! and the next deletion of the same selection finishes the job (a missing file is not an
//! error). The other order could leave a file without a row, which nothing would ever delete.
//!
//! It must never return an artifact to another root session (the answer is the same
//! `ARTIFACT_NOT_FOUND` as for an unknown id), never delete another session's or an unexpired
//! artifact, and never log an artifact's bytes or its root session.

use super::caps::DeviceLimits;
use crate::clock::SharedClock;
use crate::ids::random_id;
use crate::store::Store;
use crate::{Error, Result};
use parking_lot::RwLock;
use rusqlite::{params, OptionalExtension};
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Rows read per selection when deleting; their files are removed with no lock held.
const BATCH: usize = 256;

/// A stored screenshot.
#[derive(Clone, PartialEq, Eq)]
pub struct Artifact {
    /// The artifact id (`art_…`).
    pub id: String,
    /// `image/png`, `image/jpeg`, `image/webp` or `application/octet-stream`.
    pub media_type: String,
    /// The decoded image.
    pub bytes: Vec<u8>,
}

impl std::fmt::Debug for Artifact {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Artifact")
            .field("id", &self.id)
            .field("media_type", &self.media_type)
            .field("len", &self.bytes.len())
            .finish()
    }
}

#[derive(Debug)]
pub(crate) struct Artifacts {
    dir: PathBuf,
    store: Arc<Store>,
    clock: SharedClock,
}

fn io(op: &str, e: std::io::Error) -> Error {
    Error::store_io(op, e.kind())
}

fn valid_id(id: &str) -> bool {
    id.len() == 28 && id.starts_with("art_") && id[4..].bytes().all(|b| b.is_ascii_hexdigit())
}

/// The newest `created_at` (Unix ms) that is expired at `now_ms`: an artifact expires when its
/// age reaches `retention` (counted in whole milliseconds). A wall clock that jumped back makes
/// newer artifacts look younger, never older.
pub(crate) fn expiry_cutoff(now_ms: i64, retention: Duration) -> i64 {
    now_ms.saturating_sub(i64::try_from(retention.as_millis()).unwrap_or(i64::MAX))
}

/// Which artifacts a deletion takes.
#[derive(Debug, Clone, Copy)]
enum Doomed<'a> {
    /// Every artifact of one root session.
    Session(&'a str),
    /// Every artifact created at or before this wall time (Unix ms).
    CreatedUpTo(i64),
}

impl Artifacts {
    pub fn new(dir: PathBuf, store: Arc<Store>, clock: SharedClock) -> Artifacts {
        Artifacts { dir, store, clock }
    }

    /// Stores `bytes` for `root_session` and returns the new id. The session then keeps its
    /// `keep` newest artifacts (at least the new one): older ones are deleted. Failing to
    /// delete them is logged, not returned — the new artifact is stored and the next `put`
    /// tries again.
    pub fn put(
        &self,
        root_session: &str,
        device_id: &str,
        media_type: &str,
        bytes: &[u8],
        keep: usize,
    ) -> Result<String> {
        let id = random_id("art_")?;
        let mut dir = std::fs::DirBuilder::new();
        dir.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut dir, 0o700);
        dir.create(&self.dir)
            .map_err(|e| io("create artifacts directory", e))?;
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let path = self.dir.join(&id);
        let mut file = options.open(&path).map_err(|e| io("create artifact", e))?;
        file.write_all(bytes)
            .and_then(|_| file.sync_all())
            .map_err(|e| io("write artifact", e))?;
        let now = self.clock.wall_millis();
        let keep = i64::try_from(keep.max(1)).unwrap_or(i64::MAX);
        let stored = self.store.write(|tx| {
            tx.execute(
                "INSERT INTO artifacts (artifact_id, root_session, device_id, media_type, size, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![id, root_session, device_id, media_type, bytes.len() as i64, now],
            )?;
            // Beyond the session's `keep` newest, by insertion order (rowid), which a wall-clock
            // jump cannot reorder.
            let mut st = tx.prepare(
                "SELECT artifact_id FROM artifacts WHERE root_session = ?1
                 ORDER BY rowid DESC LIMIT -1 OFFSET ?2",
            )?;
            let excess = st.query_map(params![root_session, keep], |r| r.get::<_, String>(0))?;
            excess.collect::<rusqlite::Result<Vec<String>>>()
        });
        let excess = match stored {
            Ok(excess) => excess,
            Err(e) => {
                let _ = std::fs::remove_file(&path);
                return Err(e);
            }
        };
        if !excess.is_empty() {
            match self.remove(&excess) {
                Ok((_, None)) => {}
                Ok((_, Some(kind))) => {
                    log::warn!("artifacts over a session's cap not deleted: {kind}")
                }
                Err(e) => log::warn!("artifacts over a session's cap not deleted: {}", e.code()),
            }
        }
        Ok(id)
    }

    /// Deletes every artifact of `root_session` (its conversation ended); returns how many.
    /// Another session's artifacts are untouched. `STORE_IO` when a file could not be
    /// removed: every other one is deleted, that one stays for a later call.
    pub fn delete_session(&self, root_session: &str) -> Result<usize> {
        self.delete(Doomed::Session(root_session), usize::MAX)
    }

    /// Deletes the artifacts expired at `now_ms` (wall time, Unix ms) under `retention`,
    /// looking at no more than `budget` of them; returns how many were deleted. Errors as
    /// [`Artifacts::delete_session`].
    pub fn purge_expired(&self, now_ms: i64, retention: Duration, budget: usize) -> Result<usize> {
        self.delete(
            Doomed::CreatedUpTo(expiry_cutoff(now_ms, retention)),
            budget,
        )
    }

    /// Deletes the `doomed` artifacts in batches read in rowid order, resuming after the last
    /// row read so a file that cannot be removed is not read again in this call.
    fn delete(&self, doomed: Doomed<'_>, budget: usize) -> Result<usize> {
        let mut after = i64::MIN;
        let mut seen = 0usize;
        let mut deleted = 0usize;
        let mut failed = None;
        while seen < budget {
            let limit = BATCH.min(budget - seen);
            let batch: Vec<(i64, String)> = self.store.read(|c| {
                let (sql, key) = match doomed {
                    Doomed::Session(s) => (
                        "SELECT rowid, artifact_id FROM artifacts
                         WHERE root_session = ?1 AND rowid > ?2 ORDER BY rowid LIMIT ?3",
                        rusqlite::types::Value::Text(s.to_string()),
                    ),
                    Doomed::CreatedUpTo(t) => (
                        "SELECT rowid, artifact_id FROM artifacts
                         WHERE created_at <= ?1 AND rowid > ?2 ORDER BY rowid LIMIT ?3",
                        rusqlite::types::Value::Integer(t),
                    ),
                };
                let mut st = c.prepare_cached(sql)?;
                let rows = st.query_map(params![key, after, limit as i64], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })?;
                rows.collect()
            })?;
            let Some(&(last, _)) = batch.last() else {
                break;
            };
            after = last;
            seen += batch.len();
            let full = batch.len() == limit;
            let ids: Vec<String> = batch.into_iter().map(|(_, id)| id).collect();
            let (n, f) = self.remove(&ids)?;
            deleted += n;
            failed = failed.or(f);
            if !full {
                break;
            }
        }
        match failed {
            Some(kind) => Err(Error::store_io("delete artifact", kind)),
            None => Ok(deleted),
        }
    }

    /// Removes the files of `ids`, then the rows of those whose file is gone (removed now or
    /// already missing). Returns the rows deleted and the first file that could not be removed
    /// (its row stays, so a later deletion retries it).
    fn remove(&self, ids: &[String]) -> Result<(usize, Option<std::io::ErrorKind>)> {
        let mut gone = Vec::with_capacity(ids.len());
        let mut failed = None;
        for id in ids {
            // A row with a malformed id was never a file of ours: drop the row only.
            if !valid_id(id) {
                gone.push(id);
                continue;
            }
            match std::fs::remove_file(self.dir.join(id)) {
                Ok(()) => gone.push(id),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => gone.push(id),
                Err(e) => {
                    failed.get_or_insert(e.kind());
                }
            }
        }
        if gone.is_empty() {
            return Ok((0, failed));
        }
        let deleted = self.store.write(|tx| {
            let mut st = tx.prepare_cached("DELETE FROM artifacts WHERE artifact_id = ?1")?;
            let mut n = 0;
            for id in &gone {
                n += st.execute([id])?;
            }
            Ok(n)
        })?;
        Ok((deleted, failed))
    }

    /// The artifact, only for the root session that owns it.
    pub fn get(&self, root_session: &str, id: &str) -> Result<Artifact> {
        if !valid_id(id) {
            return Err(Error::ArtifactNotFound);
        }
        let media_type: Option<String> = self.store.read(|c| {
            c.query_row(
                "SELECT media_type FROM artifacts WHERE artifact_id = ?1 AND root_session = ?2",
                params![id, root_session],
                |r| r.get(0),
            )
            .optional()
        })?;
        let media_type = media_type.ok_or(Error::ArtifactNotFound)?;
        let bytes = std::fs::read(self.dir.join(id)).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => Error::ArtifactNotFound,
            _ => io("read artifact", e),
        })?;
        Ok(Artifact {
            id: id.to_string(),
            media_type,
            bytes,
        })
    }
}

/// Purges expired artifacts with the retention in force and the gateway's wall clock: what
/// [`Gateway::purge_artifacts`](crate::Gateway::purge_artifacts) and the reaper thread run.
#[derive(Debug, Clone)]
pub(crate) struct Purger {
    artifacts: Arc<Artifacts>,
    limits: Arc<RwLock<DeviceLimits>>,
}

impl Purger {
    pub fn new(artifacts: Arc<Artifacts>, limits: Arc<RwLock<DeviceLimits>>) -> Purger {
        Purger { artifacts, limits }
    }

    /// Deletes the expired artifacts, looking at no more than `budget`; returns how many.
    pub fn purge(&self, budget: usize) -> Result<usize> {
        let retention = self.limits.read().artifact_retention;
        let now = self.artifacts.clock.wall_millis();
        self.artifacts.purge_expired(now, retention, budget)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::{Clock, ManualClock};

    const DAY: Duration = Duration::from_secs(24 * 60 * 60);

    fn artifacts() -> (tempfile::TempDir, Artifacts, ManualClock) {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(Store::open(dir.path()).unwrap());
        let clock = ManualClock::new();
        let a = Artifacts::new(dir.path().join("artifacts"), store, Arc::new(clock.clone()));
        (dir, a, clock)
    }

    fn put(a: &Artifacts, session: &str, keep: usize) -> String {
        a.put(session, "dev_1", "image/png", b"\x89PNG", keep)
            .unwrap()
    }

    fn readable(a: &Artifacts, session: &str, id: &str) -> bool {
        match a.get(session, id) {
            Ok(_) => true,
            Err(Error::ArtifactNotFound) => false,
            Err(e) => panic!("unexpected {e:?}"),
        }
    }

    fn rows(a: &Artifacts) -> i64 {
        a.store
            .read(|c| c.query_row("SELECT count(*) FROM artifacts", [], |r| r.get(0)))
            .unwrap()
    }

    fn files(a: &Artifacts) -> usize {
        std::fs::read_dir(&a.dir).map_or(0, |d| d.count())
    }

    // R-DEV-SHOT: an artifact expires when its age reaches the retention, in whole ms.
    #[test]
    fn expiry_cutoff_is_now_minus_retention_and_saturates() {
        assert_eq!(expiry_cutoff(10_000, Duration::from_millis(4_000)), 6_000);
        assert_eq!(
            expiry_cutoff(10_000, Duration::from_micros(4_000_999)),
            6_000
        );
        assert_eq!(expiry_cutoff(i64::MIN + 1, DAY), i64::MIN);
        assert_eq!(expiry_cutoff(0, Duration::MAX), -i64::MAX);
    }

    // R-DEV-SHOT: the default cap at its edge: the 200th artifact keeps the first, the 201st
    // deletes it (row and file) and only it.
    #[test]
    fn the_201st_artifact_of_a_session_deletes_its_oldest() {
        let (_dir, a, _clock) = artifacts();
        let keep = DeviceLimits::default().artifact_max_per_session;
        assert_eq!(keep, 200);
        let other = put(&a, "other", keep);
        let ids: Vec<String> = (0..keep).map(|_| put(&a, "s1", keep)).collect();
        assert!(ids.iter().all(|id| readable(&a, "s1", id)));
        assert_eq!(rows(&a), 201);
        let newest = put(&a, "s1", keep);
        assert!(!readable(&a, "s1", &ids[0]));
        assert!(!a.dir.join(&ids[0]).exists());
        assert!(ids[1..].iter().all(|id| readable(&a, "s1", id)));
        assert!(readable(&a, "s1", &newest));
        assert!(readable(&a, "other", &other));
        assert_eq!((rows(&a), files(&a)), (201, 201));
    }

    // R-DEV-SHOT: a cap shrunk below what a session holds trims it to the newest on the next
    // put; order is insertion order even when the wall clock jumps back.
    #[test]
    fn a_shrunk_cap_keeps_the_newest_in_insertion_order() {
        let (_dir, a, clock) = artifacts();
        let old: Vec<String> = (0..5).map(|_| put(&a, "s1", 200)).collect();
        clock.set_wall(std::time::UNIX_EPOCH);
        let newest = put(&a, "s1", 2);
        assert!(old[..4].iter().all(|id| !readable(&a, "s1", id)));
        assert!(readable(&a, "s1", &old[4]));
        assert!(readable(&a, "s1", &newest));
        assert_eq!((rows(&a), files(&a)), (2, 2));
        // A cap of zero never deletes the artifact just stored.
        let last = put(&a, "s1", 0);
        assert!(readable(&a, "s1", &last));
        assert_eq!(rows(&a), 1);
    }

    // R-DEV-SHOT: retention at its edge with a manual clock.
    #[test]
    fn purge_keeps_an_artifact_until_its_age_reaches_the_retention() {
        let (_dir, a, clock) = artifacts();
        let first = put(&a, "s1", 200);
        clock.advance(Duration::from_secs(60));
        let second = put(&a, "s2", 200);
        clock.advance(DAY - Duration::from_secs(60) - Duration::from_millis(1));
        assert_eq!(
            a.purge_expired(clock.wall_millis(), DAY, usize::MAX)
                .unwrap(),
            0
        );
        assert!(readable(&a, "s1", &first));
        clock.advance(Duration::from_millis(1));
        assert_eq!(
            a.purge_expired(clock.wall_millis(), DAY, usize::MAX)
                .unwrap(),
            1
        );
        assert!(!readable(&a, "s1", &first));
        assert!(!a.dir.join(&first).exists());
        assert!(readable(&a, "s2", &second));
        clock.advance(Duration::from_secs(60));
        assert_eq!(
            a.purge_expired(clock.wall_millis(), DAY, usize::MAX)
                .unwrap(),
            1
        );
        assert_eq!((rows(&a), files(&a)), (0, 0));
    }

    // R-DEV-SHOT: the budget bounds one purge; the next one continues.
    #[test]
    fn purge_looks_at_no_more_than_its_budget() {
        let (_dir, a, clock) = artifacts();
        for _ in 0..5 {
            put(&a, "s1", 200);
        }
        clock.advance(DAY);
        let now = clock.wall_millis();
        assert_eq!(a.purge_expired(now, DAY, 2).unwrap(), 2);
        assert_eq!(a.purge_expired(now, DAY, 0).unwrap(), 0);
        assert_eq!(a.purge_expired(now, DAY, usize::MAX).unwrap(), 3);
        assert_eq!((rows(&a), files(&a)), (0, 0));
    }

    // R-DEV-SHOT: deleting a session takes its artifacts only.
    #[test]
    fn delete_session_deletes_only_that_sessions_artifacts() {
        let (_dir, a, _clock) = artifacts();
        let mine: Vec<String> = (0..3).map(|_| put(&a, "s1", 200)).collect();
        let theirs = put(&a, "s2", 200);
        assert_eq!(a.delete_session("s1").unwrap(), 3);
        assert!(mine.iter().all(|id| !readable(&a, "s1", id)));
        assert!(mine.iter().all(|id| !a.dir.join(id).exists()));
        assert!(readable(&a, "s2", &theirs));
        assert_eq!(a.delete_session("s1").unwrap(), 0);
        assert_eq!(a.delete_session("nobody").unwrap(), 0);
        assert_eq!((rows(&a), files(&a)), (1, 1));
    }

    // R-DEV-SHOT: a file already gone (a crash between file and row, or an operator) does not
    // fail a deletion; its row goes too.
    #[test]
    fn a_file_already_missing_does_not_fail_the_purge() {
        let (_dir, a, clock) = artifacts();
        let gone = put(&a, "s1", 200);
        let kept = put(&a, "s1", 200);
        std::fs::remove_file(a.dir.join(&gone)).unwrap();
        assert!(!readable(&a, "s1", &gone));
        clock.advance(DAY);
        assert_eq!(
            a.purge_expired(clock.wall_millis(), DAY, usize::MAX)
                .unwrap(),
            2
        );
        assert!(!readable(&a, "s1", &kept));
        assert_eq!((rows(&a), files(&a)), (0, 0));
    }

    // R-DEV-SHOT: a file that cannot be removed keeps its row (retried later) and fails the
    // call with STORE_IO, after every other artifact was deleted.
    #[test]
    fn an_unremovable_file_keeps_its_row_and_the_others_are_deleted() {
        let (_dir, a, _clock) = artifacts();
        let stuck = put(&a, "s1", 200);
        let others: Vec<String> = (0..3).map(|_| put(&a, "s1", 200)).collect();
        // A non-empty directory in place of the file: unlink fails whatever our privileges.
        std::fs::remove_file(a.dir.join(&stuck)).unwrap();
        std::fs::create_dir(a.dir.join(&stuck)).unwrap();
        std::fs::write(a.dir.join(&stuck).join("x"), b"x").unwrap();
        let err = a.delete_session("s1").unwrap_err();
        assert_eq!(err.code(), "STORE_IO");
        assert!(others.iter().all(|id| !a.dir.join(id).exists()));
        assert_eq!(rows(&a), 1);
        std::fs::remove_dir_all(a.dir.join(&stuck)).unwrap();
        assert_eq!(a.delete_session("s1").unwrap(), 1);
        assert_eq!(rows(&a), 0);
    }

    // R-DEV-SHOT: puts and purges racing on threads: every expired artifact goes, nothing
    // unexpired is lost, and no file is left without its row.
    #[test]
    fn concurrent_puts_and_purges_lose_nothing_unexpired() {
        let (_dir, a, clock) = artifacts();
        let a = Arc::new(a);
        let old: Vec<String> = (0..40).map(|_| put(&a, "old", 200)).collect();
        clock.advance(DAY);
        let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let purged = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let purgers: Vec<_> = (0..2)
            .map(|_| {
                let (a, done, purged) = (Arc::clone(&a), Arc::clone(&done), Arc::clone(&purged));
                let now = clock.wall_millis();
                std::thread::spawn(move || loop {
                    let finished = done.load(std::sync::atomic::Ordering::Acquire);
                    let n = a.purge_expired(now, DAY, 7).unwrap();
                    purged.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
                    if finished {
                        break;
                    }
                })
            })
            .collect();
        let putters: Vec<_> = (0..4)
            .map(|t| {
                let a = Arc::clone(&a);
                std::thread::spawn(move || {
                    let session = format!("new-{t}");
                    let ids: Vec<String> = (0..15).map(|_| put(&a, &session, 200)).collect();
                    (session, ids)
                })
            })
            .collect();
        let new: Vec<(String, Vec<String>)> =
            putters.into_iter().map(|t| t.join().unwrap()).collect();
        done.store(true, std::sync::atomic::Ordering::Release);
        for p in purgers {
            p.join().unwrap();
        }
        let now = clock.wall_millis();
        let rest = a.purge_expired(now, DAY, usize::MAX).unwrap();
        assert_eq!(purged.load(std::sync::atomic::Ordering::Relaxed) + rest, 40);
        assert!(old.iter().all(|id| !readable(&a, "old", id)));
        for (session, ids) in &new {
            assert!(ids.iter().all(|id| readable(&a, session, id)));
        }
        assert_eq!((rows(&a), files(&a)), (60, 60));
    }
}
