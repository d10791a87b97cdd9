//! Path confinement for file uploads and saved downloads (issue 15: `browser_file_upload`,
//! `browser_download_files`): every path a model names is resolved inside the workspace
//! directory the host chose, or refused.
//!
//! This module owns [`confine`], [`confine_upload`] and the copy of a finished download into the
//! workspace ([`save_into`]). It never follows a path out of the workspace (no `..`, no absolute
//! path elsewhere, no symlink whose target is outside), never overwrites an existing file, and
//! never puts a path, a file name or file contents into an error or a log line.

use std::io::Write;
use std::path::{Component, Path, PathBuf};

use crate::{Error, Result};

fn refused(reason: &str) -> Error {
    Error::InvalidArgument {
        name: "path",
        reason: reason.into(),
    }
}

/// Resolves `requested` (relative to `workspace`, or absolute inside it) to a canonical path
/// inside the canonical workspace. The path need not exist; the part that exists is resolved
/// through its symlinks and must stay inside. Refused (`INVALID_ARGUMENT`, the path never
/// echoed): an empty path, a NUL, any `..` component, an absolute path outside the workspace, a
/// symlink resolving outside it or not resolving at all, a workspace that is not a directory.
///
/// ```
/// let ws = std::env::temp_dir();
/// let err = jevgate::unstable::confine(&ws, "../../etc/passwd").unwrap_err();
/// assert_eq!(err.code(), "INVALID_ARGUMENT");
/// assert!(!err.to_string().contains("passwd"));
/// ```
pub fn confine(workspace: &Path, requested: &str) -> Result<PathBuf> {
    if requested.is_empty() || requested.len() > 4096 || requested.contains('\0') {
        return Err(refused("must be a non-empty path of at most 4096 bytes"));
    }
    let asked = Path::new(requested);
    if asked
        .components()
        .any(|c| matches!(c, Component::ParentDir))
    {
        return Err(refused("a `..` component is not allowed"));
    }
    let root = workspace
        .canonicalize()
        .ok()
        .filter(|r| r.is_dir())
        .ok_or_else(|| refused("the workspace directory is missing or not a directory"))?;
    let candidate = if asked.is_absolute() {
        // Compared lexically with the workspace as given and as resolved.
        let inside = asked
            .strip_prefix(workspace)
            .or_else(|_| asked.strip_prefix(&root));
        match inside {
            Ok(rest) => root.join(rest),
            Err(_) => return Err(refused("an absolute path outside the workspace")),
        }
    } else {
        root.join(asked)
    };
    // The deepest part that exists (as a link or not), resolved; the rest is appended.
    let mut existing = candidate.as_path();
    let mut rest: Vec<&std::ffi::OsStr> = Vec::new();
    while std::fs::symlink_metadata(existing).is_err() {
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name);
                existing = parent;
            }
            _ => return Err(refused("the path does not resolve")),
        }
    }
    let mut resolved = existing
        .canonicalize()
        .map_err(|_| refused("a link in the path does not resolve"))?;
    if !resolved.starts_with(&root) {
        return Err(refused("the path resolves outside the workspace"));
    }
    for name in rest.into_iter().rev() {
        resolved.push(name);
    }
    Ok(resolved)
}

/// [`confine`] for a file to upload: it must also exist and be a regular file (after links).
///
/// ```no_run
/// let path = jevgate::unstable::confine_upload(std::path::Path::new("/srv/ws"), "report.pdf")?;
/// # Ok::<(), jevgate::Error>(())
/// ```
pub fn confine_upload(workspace: &Path, requested: &str) -> Result<PathBuf> {
    let path = confine(workspace, requested)?;
    match std::fs::metadata(&path) {
        Ok(m) if m.is_file() => Ok(path),
        Ok(_) => Err(refused("not a regular file")),
        Err(_) => Err(refused("no such file in the workspace")),
    }
}

/// Copies the file `from` (a finished download) to `requested` confined to `workspace`; the
/// target must not exist (created exclusively, so a link put there is not followed). The path
/// written.
pub fn save_into(from: &Path, workspace: &Path, requested: &str) -> Result<PathBuf> {
    let to = confine(workspace, requested)?;
    let mut src = std::fs::File::open(from).map_err(|_| Error::ExecutionFailed {
        reason: "the downloaded file is not readable".into(),
    })?;
    let mut dst = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&to)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => refused("a file of that name already exists"),
            _ => refused("cannot create the file in the workspace"),
        })?;
    std::io::copy(&mut src, &mut dst)
        .and_then(|_| dst.flush())
        .map_err(|e| Error::ExecutionFailed {
            reason: format!("cannot copy the download: {}", e.kind()),
        })?;
    Ok(to)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workspace() -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "jevgate-confine-{}-{}",
            std::process::id(),
            super::super::world::next_internal_id()
        ));
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(dir.join("sub/a.txt"), b"abc").unwrap();
        dir
    }

    // Issue 15 (Paths): `..`, absolute paths outside and symlinks out of the workspace are
    // refused with an error that names no path.
    #[test]
    fn issue15_confine_refuses_escapes_without_echoing_the_path() {
        let ws = workspace();
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink("/etc/passwd", ws.join("link")).unwrap();
            std::os::unix::fs::symlink("/etc", ws.join("etcdir")).unwrap();
            std::os::unix::fs::symlink(ws.join("nowhere"), ws.join("dangling")).unwrap();
        }
        for bad in [
            "../../etc/passwd",
            "sub/../../x",
            "/etc/passwd",
            "link",
            "etcdir/passwd",
            "etcdir/newfile",
            "dangling",
            "",
            "a\0b",
        ] {
            let err = confine(&ws, bad).unwrap_err();
            assert_eq!(err.code(), "INVALID_ARGUMENT", "{bad:?}");
            let text = err.to_string();
            assert!(!text.contains("passwd") && !text.contains("etc"), "{text}");
            assert!(confine_upload(&ws, bad).is_err());
        }
        assert!(confine(&std::env::temp_dir().join("no-such-ws-xyz"), "a").is_err());
        std::fs::remove_dir_all(&ws).unwrap();
    }

    #[test]
    fn issue15_confine_accepts_paths_inside_and_upload_needs_a_regular_file() {
        let ws = workspace();
        let root = ws.canonicalize().unwrap();
        assert_eq!(confine(&ws, "sub/a.txt").unwrap(), root.join("sub/a.txt"));
        assert_eq!(
            confine(&ws, "./sub/new/b.txt").unwrap(),
            root.join("sub/new/b.txt")
        );
        let abs = ws.join("sub/a.txt");
        assert_eq!(
            confine(&ws, abs.to_str().unwrap()).unwrap(),
            root.join("sub/a.txt")
        );
        #[cfg(unix)]
        std::os::unix::fs::symlink(ws.join("sub/a.txt"), ws.join("inner-link")).unwrap();
        #[cfg(unix)]
        assert_eq!(
            confine_upload(&ws, "inner-link").unwrap(),
            root.join("sub/a.txt")
        );
        assert_eq!(
            confine_upload(&ws, "sub/a.txt").unwrap(),
            root.join("sub/a.txt")
        );
        assert_eq!(
            confine_upload(&ws, "sub").unwrap_err().code(),
            "INVALID_ARGUMENT"
        );
        assert_eq!(
            confine_upload(&ws, "missing.txt").unwrap_err().code(),
            "INVALID_ARGUMENT"
        );

        let from = ws.join("sub/a.txt");
        let saved = save_into(&from, &ws, "copy.txt").unwrap();
        assert_eq!(std::fs::read(&saved).unwrap(), b"abc");
        assert_eq!(
            save_into(&from, &ws, "copy.txt").unwrap_err().code(),
            "INVALID_ARGUMENT"
        );
        assert!(save_into(&from, &ws, "../out.txt").is_err());
        assert!(!ws.parent().unwrap().join("out.txt").exists());
        std::fs::remove_dir_all(&ws).unwrap();
    }
}
