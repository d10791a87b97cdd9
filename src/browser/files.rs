//! Path confinement for file uploads and saved downloads (issue 15: `browser_file_upload`,
//! `browser_download_files`): every path a model names is resolved inside the workspace
//! directory the host chose, or refused.
//!
//! This module owns [`confine`], [`confine_upload`], the copy of a finished download into the
//! workspace ([`save_into`]) and the staging of uploads (issue 20 item 5): a file to upload is
//! opened without following any link on the way (`openat2` with `RESOLVE_BENEATH |
//! RESOLVE_NO_SYMLINKS`, or, where the kernel has no `openat2`, one `openat(O_NOFOLLOW)` per
//! component — both through rustix's safe wrappers, the core has no `unsafe`) and what was
//! opened is copied into the session's private staging directory, so Chromium, which reads an
//! upload later, only ever reads that copy. It never follows a path out of the workspace (no
//! `..`, no absolute path elsewhere, no symlink whose target is outside), never overwrites an
//! existing file, and never puts a path, a file name or file contents into an error or a log
//! line.

use std::ffi::OsStr;
use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;

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
    let (root, inside) = inside_workspace(workspace, requested)?;
    let candidate = root.join(inside);
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

/// The canonical workspace and `requested` relative to it (lexically: nothing is resolved),
/// or the refusal of [`confine`].
fn inside_workspace(workspace: &Path, requested: &str) -> Result<(PathBuf, PathBuf)> {
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
    let inside = if asked.is_absolute() {
        // Compared lexically with the workspace as given and as resolved.
        let inside = asked
            .strip_prefix(workspace)
            .or_else(|_| asked.strip_prefix(&root));
        match inside {
            Ok(rest) => rest.to_path_buf(),
            Err(_) => return Err(refused("an absolute path outside the workspace")),
        }
    } else {
        asked.to_path_buf()
    };
    Ok((root, inside))
}

/// A file to upload, confined to `workspace` like [`confine`] and stricter: no link anywhere
/// on the way is followed, not even one that stays inside (issue 20 item 5), and it must be a
/// regular file. The canonical path it names — a check only: the local browser reads uploads
/// through the same link-free open and hands Chromium a private copy
/// (`set_input_files`), so a file swapped after this check never reaches a page.
///
/// ```no_run
/// let path = jevgate::unstable::confine_upload(std::path::Path::new("/srv/ws"), "report.pdf")?;
/// # Ok::<(), jevgate::Error>(())
/// ```
pub fn confine_upload(workspace: &Path, requested: &str) -> Result<PathBuf> {
    open_beneath(workspace, requested).map(|(_, path)| path)
}

/// Opens the regular file `requested` (relative to `workspace`, or absolute inside it) for
/// reading, following no link on the way: `openat2` with `RESOLVE_BENEATH |
/// RESOLVE_NO_SYMLINKS` from the workspace, or, when the kernel has no `openat2` (`ENOSYS`),
/// [`open_walk`]. Opened non-blocking, so a FIFO put there is refused, never waited on. The
/// file and its canonical path.
pub(crate) fn open_beneath(workspace: &Path, requested: &str) -> Result<(File, PathBuf)> {
    let (root, inside) = inside_workspace(workspace, requested)?;
    let names: Vec<&OsStr> = inside
        .components()
        .filter_map(|c| match c {
            Component::Normal(name) => Some(name),
            _ => None,
        })
        .collect();
    if names.is_empty() {
        return Err(refused("not a regular file"));
    }
    let dir = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY)
        .open(&root)
        .map_err(|_| refused("the workspace directory is missing or not a directory"))?;
    let relative: PathBuf = names.iter().collect();
    let file = match open_resolved(&dir, &relative) {
        Err(Errno::NOSYS) => open_walk(dir, &names),
        other => other,
    }
    .map_err(open_refusal)?;
    match file.metadata() {
        Ok(m) if m.is_file() => Ok((file, root.join(relative))),
        Ok(_) => Err(refused("not a regular file")),
        Err(_) => Err(refused("the file in the workspace is not readable")),
    }
}

/// The flags every open of an upload uses.
fn read_flags() -> OFlags {
    OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOCTTY | OFlags::NONBLOCK
}

/// One `openat2` beneath `dir` that follows no link (Linux 5.6+).
#[cfg(target_os = "linux")]
fn open_resolved(dir: &File, relative: &Path) -> std::result::Result<File, Errno> {
    use rustix::fs::ResolveFlags;
    rustix::fs::openat2(
        dir,
        relative,
        read_flags(),
        Mode::empty(),
        ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS,
    )
    .map(File::from)
}

#[cfg(not(target_os = "linux"))]
fn open_resolved(_dir: &File, _relative: &Path) -> std::result::Result<File, Errno> {
    Err(Errno::NOSYS)
}

/// The walk for kernels without `openat2`: each directory opened from the one before with
/// `O_DIRECTORY | O_NOFOLLOW`, the file with `O_NOFOLLOW`, one name at a time (a name is never
/// `..`: refused before), so no link is followed anywhere.
pub(crate) fn open_walk(dir: File, names: &[&OsStr]) -> std::result::Result<File, Errno> {
    let Some((last, dirs)) = names.split_last() else {
        return Err(Errno::INVAL);
    };
    let mut dir = dir;
    for name in dirs {
        let next = rustix::fs::openat(
            &dir,
            *name,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        dir = File::from(next);
    }
    rustix::fs::openat(&dir, *last, read_flags() | OFlags::NOFOLLOW, Mode::empty()).map(File::from)
}

fn open_refusal(e: Errno) -> Error {
    match e {
        // ELOOP: a link where NOFOLLOW / NO_SYMLINKS forbids one; EXDEV: BENEATH escaped.
        Errno::LOOP | Errno::XDEV => refused("a link in the path is not followed for uploads"),
        Errno::NOTDIR => refused("a component of the path is not a directory"),
        Errno::NOENT => refused("no such file in the workspace"),
        _ => refused("the file in the workspace cannot be opened"),
    }
}

/// Copies `file` (opened by [`open_beneath`]) into a fresh owner-only directory under
/// `staging` (created 0700 when missing) as `name` (mode 0600): what the page gets instead of
/// the workspace path. At most `max` bytes: a larger file is refused (`INVALID_ARGUMENT`) and
/// nothing is left behind. The copy's path.
pub(crate) fn stage_copy(file: File, name: &OsStr, staging: &Path, max: u64) -> Result<PathBuf> {
    let too_big = || refused(&format!("larger than the upload limit of {max} bytes"));
    let len = file
        .metadata()
        .map_err(|_| refused("the file in the workspace is not readable"))?
        .len();
    if len > max {
        return Err(too_big());
    }
    let failed = |what: &str, e: std::io::Error| Error::ExecutionFailed {
        reason: format!("cannot stage the upload ({what}: {})", e.kind()),
    };
    private_dir(staging).map_err(|e| failed("staging directory", e))?;
    let sub = staging.join(super::world::next_internal_id().to_string());
    private_dir(&sub).map_err(|e| failed("staging directory", e))?;
    let copy = sub.join(name);
    let mut dst = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&copy)
        .map_err(|e| failed("copy", e))?;
    let copied = dst
        .set_permissions(std::fs::Permissions::from_mode(0o600))
        .and_then(|()| std::io::copy(&mut file.take(max.saturating_add(1)), &mut dst))
        .and_then(|n| dst.flush().map(|()| n));
    let refusal = match copied {
        Ok(n) if n <= max => return Ok(copy),
        // It grew while it was copied.
        Ok(_) => too_big(),
        Err(e) => failed("copy", e),
    };
    let _ = std::fs::remove_dir_all(&sub);
    Err(refusal)
}

/// `dir` as an owner-only directory: created 0700 (exactly, whatever the umask) when missing;
/// an existing one must be a real directory (not a link) that only its owner can enter.
fn private_dir(dir: &Path) -> std::io::Result<()> {
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let m = std::fs::symlink_metadata(dir)?;
            if m.is_dir() && m.permissions().mode() & 0o077 == 0 {
                Ok(())
            } else {
                Err(std::io::Error::from(std::io::ErrorKind::PermissionDenied))
            }
        }
        Err(e) => Err(e),
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
        // A link that stays inside is fine for `confine`, never for an upload (issue 20 item 5).
        #[cfg(unix)]
        std::os::unix::fs::symlink(ws.join("sub/a.txt"), ws.join("inner-link")).unwrap();
        #[cfg(unix)]
        assert_eq!(confine(&ws, "inner-link").unwrap(), root.join("sub/a.txt"));
        #[cfg(unix)]
        assert_eq!(
            confine_upload(&ws, "inner-link").unwrap_err().code(),
            "INVALID_ARGUMENT"
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

    fn mode(p: &Path) -> u32 {
        std::fs::symlink_metadata(p).unwrap().permissions().mode() & 0o777
    }

    // Issue 20 item 5: no link anywhere on the way to an upload is followed — the last
    // component, a directory, inside the workspace or out — neither by `openat2` nor by the
    // component walk used where the kernel has no `openat2`; a FIFO is refused, never waited on.
    #[test]
    fn issue20_an_upload_is_opened_without_following_any_link() {
        let ws = workspace();
        let secret = ws.with_extension("outside");
        std::fs::write(&secret, b"SECRET").unwrap();
        std::os::unix::fs::symlink(&secret, ws.join("out-link")).unwrap();
        std::os::unix::fs::symlink(ws.join("sub/a.txt"), ws.join("in-link")).unwrap();
        std::os::unix::fs::symlink(ws.join("sub"), ws.join("dir-link")).unwrap();
        std::os::unix::fs::symlink(secret.parent().unwrap(), ws.join("sub/up-link")).unwrap();
        let fifo = ws.join("sub/fifo");
        assert!(std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success());
        let outside_name = secret.file_name().unwrap().to_str().unwrap().to_string();
        let bad = [
            "out-link".to_string(),
            "in-link".to_string(),
            "dir-link/a.txt".to_string(),
            format!("sub/up-link/{outside_name}"),
            "sub/fifo".to_string(),
            "sub".to_string(),
            "sub/missing".to_string(),
            "sub/a.txt/x".to_string(),
        ];
        for requested in &bad {
            let err = open_beneath(&ws, requested).unwrap_err();
            assert_eq!(err.code(), "INVALID_ARGUMENT", "{requested}");
            let text = err.to_string();
            assert!(!text.contains(requested.as_str()) && !text.contains(&outside_name));
            // The walk alone (what runs without openat2) refuses the links too.
            let names: Vec<&OsStr> = Path::new(requested).iter().collect();
            let walked = open_walk(File::open(&ws).unwrap(), &names)
                .ok()
                .filter(|f| f.metadata().is_ok_and(|m| m.is_file()));
            assert!(walked.is_none(), "{requested}");
        }
        let (mut file, path) = open_beneath(&ws, "sub/a.txt").unwrap();
        assert_eq!(path, ws.canonicalize().unwrap().join("sub/a.txt"));
        let mut text = String::new();
        file.read_to_string(&mut text).unwrap();
        assert_eq!(text, "abc");
        let names = [OsStr::new("sub"), OsStr::new("a.txt")];
        assert!(open_walk(File::open(&ws).unwrap(), &names).is_ok());
        std::fs::remove_dir_all(&ws).unwrap();
        std::fs::remove_file(&secret).unwrap();
    }

    // Issue 20 item 5: the staged copy is of what was opened — a file swapped for a link to a
    // secret after the open still stages its own bytes — owner-only (0700 directory, 0600
    // file), and a file over the limit is refused with nothing left behind.
    #[test]
    fn issue20_an_upload_is_staged_as_a_private_copy_of_what_was_opened() {
        let ws = workspace();
        let staging = ws.with_extension("staging");
        let secret = ws.with_extension("secret");
        std::fs::write(&secret, b"SECRET-SECRET").unwrap();
        std::fs::write(ws.join("bait.txt"), b"bait-content!").unwrap();
        let (file, _) = open_beneath(&ws, "bait.txt").unwrap();
        std::fs::remove_file(ws.join("bait.txt")).unwrap();
        std::os::unix::fs::symlink(&secret, ws.join("bait.txt")).unwrap();
        let copy = stage_copy(file, OsStr::new("bait.txt"), &staging, 100).unwrap();
        assert_eq!(std::fs::read(&copy).unwrap(), b"bait-content!");
        assert_eq!(copy.file_name().unwrap(), "bait.txt");
        assert_eq!(mode(&copy), 0o600);
        assert_eq!(mode(copy.parent().unwrap()), 0o700);
        assert_eq!(mode(&staging), 0o700);
        // The same name again: its own directory, no overwrite.
        std::fs::write(ws.join("again.txt"), b"second").unwrap();
        let (file, _) = open_beneath(&ws, "again.txt").unwrap();
        let second = stage_copy(file, OsStr::new("bait.txt"), &staging, 100).unwrap();
        assert_ne!(second, copy);
        assert_eq!(std::fs::read(&copy).unwrap(), b"bait-content!");
        // Over the limit: refused, nothing staged.
        let (file, _) = open_beneath(&ws, "again.txt").unwrap();
        let err = stage_copy(file, OsStr::new("big.txt"), &staging, 5).unwrap_err();
        assert_eq!(err.code(), "INVALID_ARGUMENT");
        assert!(err.to_string().contains("limit of 5 bytes"), "{err}");
        assert_eq!(std::fs::read_dir(&staging).unwrap().count(), 2);
        // A staging directory others can enter is not used.
        std::fs::set_permissions(&staging, std::fs::Permissions::from_mode(0o755)).unwrap();
        let (file, _) = open_beneath(&ws, "again.txt").unwrap();
        assert!(stage_copy(file, OsStr::new("x"), &staging, 100).is_err());
        for dir in [&ws, &staging] {
            std::fs::remove_dir_all(dir).unwrap();
        }
        std::fs::remove_file(&secret).unwrap();
    }
}
