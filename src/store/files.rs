//! Who may read the data directory and the store's files (issue 20 item 1).
//!
//! Owns creating the data directory owner-only (0700, missing parents too) and the store's own
//! files (database, lock) 0600, whatever the host's umask: a mode given at creation can only be
//! narrowed by the umask, never widened. SQLite gives the WAL, the shared-memory file and any
//! rollback journal the mode of the database file (its unix VFS copies it and sets it even
//! against the umask), so creating the database 0600 before SQLite opens it makes them 0600
//! too. It also tells which of these a local user other than the owner can reach, for
//! `open`'s log and `doctor`.
//!
//! It must never change the mode of anything that already exists (the host chose it: it is
//! reported, not silently "fixed"), never follow or report the contents of a file, and never
//! put a path in a message (only the store's own file names).

use super::names::{DB_FILE, LOCK_FILE};
use crate::{Error, Result};
use std::fs::File;
use std::path::Path;

/// Files of the store whose mode is checked: the database, its WAL and shared memory, the lock.
const STORE_FILES: [&str; 4] = [
    DB_FILE,
    "jevgate.sqlite3-wal",
    "jevgate.sqlite3-shm",
    LOCK_FILE,
];

/// Creates `dir` (and any missing parent) mode 0700; an existing directory is left as it is.
pub(crate) fn create_data_dir(dir: &Path) -> Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder
        .create(dir)
        .map_err(|e| Error::store_io("create data directory", e))
}

/// Opens `path` for writing, creating it mode 0600 when missing (an existing file keeps its
/// mode and content).
pub(crate) fn open_private(path: &Path) -> std::io::Result<File> {
    let mut options = File::options();
    options.create(true).truncate(false).write(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)
}

/// Creates the database file empty and 0600 when it does not exist yet, so SQLite (which would
/// create it 0644 less the umask) finds it and keeps its mode for the WAL and shared memory.
pub(crate) fn precreate_database(path: &Path) -> Result<()> {
    let mut options = File::options();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    match options.open(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(Error::store_io("create database", e)),
    }
}

/// What of `data_dir` a local user other than its owner can reach: the directory when its
/// mode grants group or others anything, each store file readable or writable by them. One
/// sentence each, naming only the store's own file names and the modes; empty when private.
pub(crate) fn exposure(data_dir: &Path) -> Vec<String> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        // The directory through a link the host may have made (a link's own mode is 0777);
        // the store's files as they are.
        let dir_mode = std::fs::metadata(data_dir)
            .ok()
            .map(|m| m.permissions().mode() & 0o777);
        let mode = |p: &Path| {
            std::fs::symlink_metadata(p)
                .ok()
                .map(|m| m.permissions().mode() & 0o777)
        };
        let mut found = Vec::new();
        if let Some(m) = dir_mode.filter(|m| m & 0o077 != 0) {
            found.push(format!(
                "the data directory is open to group or others (mode {m:03o}); restrict it to the gateway's user (chmod 700)"
            ));
        }
        for name in STORE_FILES {
            if let Some(m) = mode(&data_dir.join(name)).filter(|m| m & 0o066 != 0) {
                found.push(format!(
                    "{name} is readable or writable by group or others (mode {m:03o}); restrict it to the gateway's user (chmod 600)"
                ));
            }
        }
        found
    }
    #[cfg(not(unix))]
    {
        let _ = data_dir;
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn chmod(p: &Path, mode: u32) {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn issue20_exposure_names_the_open_directory_and_files_never_a_path() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("secret-name").join("data");
        create_data_dir(&dir).unwrap();
        for d in [&dir, &tmp.path().join("secret-name")] {
            let mode = std::fs::metadata(d).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o700, "{}", d.display());
        }
        drop(open_private(&dir.join(LOCK_FILE)).unwrap());
        precreate_database(&dir.join(DB_FILE)).unwrap();
        assert!(exposure(&dir).is_empty(), "{:?}", exposure(&dir));
        // A link to a private directory is private.
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&dir, &link).unwrap();
        assert!(exposure(&link).is_empty(), "{:?}", exposure(&link));

        chmod(&dir, 0o711);
        chmod(&dir.join(DB_FILE), 0o640);
        let found = exposure(&dir);
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found[0].contains("data directory") && found[0].contains("711"));
        assert!(found[1].starts_with(DB_FILE) && found[1].contains("640"));
        assert!(found.iter().all(|f| !f.contains("secret-name")));
        // Reported, never changed.
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o711);
        // An existing directory and database are kept as they are.
        create_data_dir(&dir).unwrap();
        precreate_database(&dir.join(DB_FILE)).unwrap();
        let mode = std::fs::metadata(dir.join(DB_FILE))
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o640);
    }
}
