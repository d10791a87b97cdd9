//! Temporary directories named after the process that owns them, and the sweep of those whose
//! owner is gone (issue 12 for Chromium profiles, issue 20 item 4 for the binary's private
//! stores).
//!
//! A name is `<prefix>-p<pid>-t<start time>-<suffix>`: the owner is the process with that pid
//! *and* that start time (clock ticks after boot, `/proc/<pid>/stat` field 22), so a pid reused
//! by another process does not keep a dead owner's directory alive. A host killed outright
//! (SIGKILL) never runs its cleanup; the next start of any jevgate process of the same user
//! removes what it left.
//!
//! It never removes a directory of a live owner, of another user, one whose name does not
//! parse, a symlink (never followed) or anything that is not a directory; it never reads a
//! file's contents and never logs a path.

use std::path::{Path, PathBuf};

/// The start time of process `pid` (clock ticks after boot, field 22 of `/proc/<pid>/stat`),
/// `None` when the process does not exist (or is a zombie: it has exited).
pub(crate) fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let mut rest = stat.rsplit(')').next()?.split_whitespace();
    let state = rest.next()?;
    if state == "Z" || state == "X" {
        return None;
    }
    // After the state (field 3), the start time is field 22: 19 fields further.
    rest.nth(18)?.parse().ok()
}

/// This process as an owner: its pid and start time (0 when `/proc` cannot tell).
fn me() -> (u32, u64) {
    let pid = std::process::id();
    (pid, start_time(pid).unwrap_or(0))
}

/// `<prefix>-p<pid>-t<start>-<suffix>` for this process.
pub(crate) fn owned_name(prefix: &str, suffix: &str) -> String {
    let (pid, started) = me();
    format!("{prefix}-p{pid}-t{started}-{suffix}")
}

/// `(pid, start time)` out of `<prefix>-p<pid>-t<start>-<suffix>`; the suffix is one or more
/// ASCII letters, digits or dashes. `None` for any other name.
pub(crate) fn owner_of(name: &str, prefix: &str) -> Option<(u32, u64)> {
    let rest = name.strip_prefix(prefix)?.strip_prefix("-p")?;
    let (pid, rest) = rest.split_once('-')?;
    let (started, suffix) = rest.strip_prefix('t')?.split_once('-')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let suffix_ok = !suffix.is_empty()
        && suffix
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-');
    if !digits(pid) || !digits(started) || !suffix_ok {
        return None;
    }
    Some((pid.parse().ok()?, started.parse().ok()?))
}

/// The owner `(pid, start time)` no longer runs: no such process, or the pid now belongs to a
/// process started at another time. An unknown recorded start time (0) counts as alive while
/// the pid exists.
pub(crate) fn owner_gone(pid: u32, started: u64) -> bool {
    match start_time(pid) {
        None => true,
        Some(now) => started != 0 && now != started,
    }
}

/// Removes the directories of `parent` named `<prefix>-p<pid>-t<start>-…` that belong to this
/// user and whose owner is gone. Returns how many were removed.
pub(crate) fn sweep(parent: &Path, prefix: &str) -> usize {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(parent) else {
        return 0;
    };
    let uid = std::fs::metadata("/proc/self").map(|m| m.uid()).ok();
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some((pid, started)) = name.to_str().and_then(|n| owner_of(n, prefix)) else {
            continue;
        };
        let Ok(meta) = std::fs::symlink_metadata(entry.path()) else {
            continue;
        };
        if !meta.is_dir() || Some(meta.uid()) != uid {
            continue;
        }
        if owner_gone(pid, started) && std::fs::remove_dir_all(entry.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// A fresh private (0700) directory `<temp>/<prefix>-p<pid>-t<start>-<24 hex>` owned by this
/// process, after sweeping the `<prefix>` directories of owners that are gone. The caller
/// removes it when done; if this process is killed first, the next call of any process of
/// the same user with the same prefix removes it.
///
/// ```
/// let dir = jevgate::unstable::private_temp_dir("jevgate-doctest").unwrap();
/// assert!(dir.is_dir());
/// std::fs::remove_dir_all(&dir).unwrap();
/// ```
pub fn private_temp_dir(prefix: &str) -> crate::Result<PathBuf> {
    let parent = std::env::temp_dir();
    let swept = sweep(&parent, prefix);
    if swept > 0 {
        log::info!("removed {swept} temporary data directories of processes that are gone");
    }
    let dir = parent.join(owned_name(prefix, &crate::ids::random_hex(12)?));
    let mut builder = std::fs::DirBuilder::new();
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(&dir).map_err(|e| crate::Error::Internal {
        reason: format!("cannot create a temporary data directory: {}", e.kind()),
    })?;
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn issue20_owner_names_parse_only_our_shape() {
        let (pid, started) = me();
        let name = owned_name("jevgate-mcp", "00ff");
        assert_eq!(owner_of(&name, "jevgate-mcp"), Some((pid, started)));
        assert_eq!(owner_of(&name, "jevgate-task"), None);
        for odd in [
            "jevgate-mcp-00ff",
            "jevgate-mcp-p12-t3-",
            "jevgate-mcp-p12-t3",
            "jevgate-mcp-p-t3-a",
            "jevgate-mcp-p12-tx-a",
            "jevgate-mcp-p12-t3-a/b",
            "jevgate-mcp-p+12-t3-a",
            "jevgate-mcpp12-t3-a",
        ] {
            assert_eq!(owner_of(odd, "jevgate-mcp"), None, "{odd}");
        }
        assert_eq!(
            owner_of("jevgate-mcp-p12-t3-0-1", "jevgate-mcp"),
            Some((12, 3))
        );
    }

    #[test]
    fn issue20_private_temp_dir_is_0700_ours_and_kept_while_we_live() {
        let dir = private_temp_dir("jevgate-unit-temp").unwrap();
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        let name = dir.file_name().unwrap().to_str().unwrap();
        assert_eq!(owner_of(name, "jevgate-unit-temp"), Some(me()));
        assert_eq!(sweep(&std::env::temp_dir(), "jevgate-unit-temp"), 0);
        assert!(dir.exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
