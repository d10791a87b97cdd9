//! Screenshot artifacts (R-DEV-SHOT): private files of one root session under
//! `<data_dir>/artifacts/` (directory 0700, files 0600 on Unix), with their metadata in SQLite.
//!
//! It owns writing and reading those files. It must never return an artifact to another root
//! session (the answer is the same `ARTIFACT_NOT_FOUND` as for an unknown id) and never log an
//! artifact's bytes.

use super::registry::random_id;
use crate::clock::SharedClock;
use crate::store::Store;
use crate::{Error, Result};
use rusqlite::{params, OptionalExtension};
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

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

impl Artifacts {
    pub fn new(dir: PathBuf, store: Arc<Store>, clock: SharedClock) -> Artifacts {
        Artifacts { dir, store, clock }
    }

    /// Stores `bytes` for `root_session`; returns the new id.
    pub fn put(
        &self,
        root_session: &str,
        device_id: &str,
        media_type: &str,
        bytes: &[u8],
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
        let stored = self.store.write(|tx| {
            tx.execute(
                "INSERT INTO artifacts (artifact_id, root_session, device_id, media_type, size, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![id, root_session, device_id, media_type, bytes.len() as i64, now],
            )
        });
        if let Err(e) = stored {
            let _ = std::fs::remove_file(&path);
            return Err(e);
        }
        Ok(id)
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
