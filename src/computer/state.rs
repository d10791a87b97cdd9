//! The computer helper's own small state on disk (issue 25), in its state directory: the
//! person's consent (`consent.json`), a pending access request (`access-request.json`) and the
//! operation receipts (`receipts.json`).
//!
//! Consent as seed 003 puts it: pairing alone authorizes nothing. The person approves
//! applications and an access duration in the helper (`jevgate-computer approve --app NAME
//! --minutes N`, [`approve`]); [`check_consent`] is the pure rule every observation and action
//! passes first (`CONSENT_REQUIRED` without an approval or after it expired,
//! `APPLICATION_NOT_ALLOWED` for a front application not approved). Times are wall-clock Unix
//! milliseconds of the helper's injected clock.
//!
//! Receipts: an action's receipt is recorded (written and synced, atomically replacing the file)
//! before the action runs, and its end after; the newest [`MAX_RECEIPTS`] are kept, so a helper
//! restarted after a crash still answers `operation_status` for them. A receipts file that
//! cannot be read is never taken as empty (that would say "not executed" about operations that
//! ran): the helper then refuses actions and cannot answer receipts until it is repaired.
//!
//! This module must never store an application's text, a typed text, a ref's content or a
//! token; it holds application names (the person's own approvals), operation ids, action kinds
//! and codes only.

use crate::clock::Clock;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Receipts kept (the oldest are forgotten first).
pub const MAX_RECEIPTS: usize = 500;
/// The shortest approval.
pub const MIN_APPROVAL: Duration = Duration::from_secs(60);
/// The longest approval.
pub const MAX_APPROVAL: Duration = Duration::from_secs(24 * 60 * 60);
/// Most applications one approval names.
pub const MAX_APPROVED_APPS: usize = 32;

const CONSENT_FILE: &str = "consent.json";
const REQUEST_FILE: &str = "access-request.json";
const RECEIPTS_FILE: &str = "receipts.json";

/// The person's approval.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Consent {
    /// The applications (accessible names) the person approved.
    pub applications: Vec<String>,
    /// When it was given, Unix ms.
    pub approved_at: i64,
    /// When it ends, Unix ms.
    pub expires_at: i64,
}

/// Writes `bytes` to `dir/name` atomically (a synced temporary file renamed over it), owner
/// only whatever the umask: `dir` is created mode 0700 (an existing one is left as it is) and
/// the file is written 0600 — the consent file decides what the helper may touch, and the
/// helper's token lives beside it.
pub fn write_private(dir: &Path, name: &str, bytes: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let tmp = dir.join(format!(".{name}.tmp"));
    // A temporary file left by a crash (or planted) is never written through.
    match std::fs::remove_file(&tmp) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, dir.join(name))?;
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Records the person's approval of `applications` for `duration` from now on `clock`
/// (replacing any earlier one). `Err` with a short reason for an empty list, more than
/// [`MAX_APPROVED_APPS`], an empty or control-character name, or a duration outside
/// [`MIN_APPROVAL`]..=[`MAX_APPROVAL`].
pub fn approve(
    dir: &Path,
    applications: &[String],
    duration: Duration,
    clock: &dyn Clock,
) -> Result<Consent, String> {
    if applications.is_empty() || applications.len() > MAX_APPROVED_APPS {
        return Err(format!("approve 1 to {MAX_APPROVED_APPS} applications"));
    }
    if applications
        .iter()
        .any(|a| a.is_empty() || a.chars().count() > 200 || a.chars().any(char::is_control))
    {
        return Err("an application name must be 1 to 200 characters".into());
    }
    if !(MIN_APPROVAL..=MAX_APPROVAL).contains(&duration) {
        return Err("the access duration must be 1 minute to 24 hours".into());
    }
    let now = clock.wall_millis();
    let ms = i64::try_from(duration.as_millis()).unwrap_or(i64::MAX);
    let consent = Consent {
        applications: applications.to_vec(),
        approved_at: now,
        expires_at: now.saturating_add(ms),
    };
    let bytes = serde_json::to_vec_pretty(&consent).map_err(|_| "serialize".to_string())?;
    write_private(dir, CONSENT_FILE, &bytes)
        .map_err(|e| format!("cannot write the approval: {}", e.kind()))?;
    Ok(consent)
}

/// The person withdraws the approval (no approval is not an error), and refuses a pending
/// access request: the gateway waiting on it is answered `CONSENT_REQUIRED`.
pub fn revoke(dir: &Path) -> std::io::Result<()> {
    remove_consent(dir)?;
    match pending_access_request(dir) {
        Some(at) => write_request(dir, at, true),
        None => Ok(()),
    }
}

/// The gateway revokes the device's access (seed 003 "Computer connection status": a
/// disconnect revokes access): the approval is withdrawn and a pending request ends, so only a
/// new approval by the person grants access again.
pub fn revoke_access(dir: &Path) -> std::io::Result<()> {
    remove_consent(dir)?;
    close_access_request(dir);
    Ok(())
}

fn remove_consent(dir: &Path) -> std::io::Result<()> {
    match std::fs::remove_file(dir.join(CONSENT_FILE)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// The approval on disk; `None` when there is none or it cannot be read (no consent).
pub fn read_consent(dir: &Path) -> Option<Consent> {
    let bytes = std::fs::read(dir.join(CONSENT_FILE)).ok()?;
    if bytes.len() > 64 * 1024 {
        return None;
    }
    serde_json::from_slice(&bytes).ok()
}

/// Whether `consent` lets the helper observe or act on `application` at `now_ms` (pure):
/// `CONSENT_REQUIRED` without one or once `expires_at` is reached, `APPLICATION_NOT_ALLOWED`
/// when `application` is not one of its applications.
pub fn check_consent(
    consent: Option<&Consent>,
    now_ms: i64,
    application: Option<&str>,
) -> Result<(), &'static str> {
    let Some(c) = consent.filter(|c| now_ms < c.expires_at) else {
        return Err("CONSENT_REQUIRED");
    };
    match application {
        Some(app) if !c.applications.iter().any(|a| a == app) => Err("APPLICATION_NOT_ALLOWED"),
        _ => Ok(()),
    }
}

/// Records that the gateway is waiting for the person's approval since `now_ms`.
pub fn open_access_request(dir: &Path, now_ms: i64) -> std::io::Result<()> {
    write_request(dir, now_ms, false)
}

fn write_request(dir: &Path, requested_at: i64, refused: bool) -> std::io::Result<()> {
    write_private(
        dir,
        REQUEST_FILE,
        serde_json::json!({ "requestedAt": requested_at, "refused": refused })
            .to_string()
            .as_bytes(),
    )
}

fn read_request(dir: &Path) -> Option<serde_json::Value> {
    let bytes = std::fs::read(dir.join(REQUEST_FILE)).ok()?;
    serde_json::from_slice::<serde_json::Value>(&bytes).ok()
}

/// When the pending access request was made (Unix ms), if one is pending.
pub fn pending_access_request(dir: &Path) -> Option<i64> {
    read_request(dir)?.get("requestedAt")?.as_i64()
}

/// Whether the person refused the pending access request ([`revoke`] while it was pending).
pub fn access_request_refused(dir: &Path) -> bool {
    read_request(dir)
        .is_some_and(|v| v.get("refused").and_then(serde_json::Value::as_bool) == Some(true))
}

/// Ends the pending access request (answered, timed out or abandoned).
pub fn close_access_request(dir: &Path) {
    let _ = std::fs::remove_file(dir.join(REQUEST_FILE));
}

/// One operation's receipt on disk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReceiptEntry {
    /// The gateway's operation id.
    pub operation_id: String,
    /// `started`, `completed` or `failed`.
    pub state: String,
    /// The action's kind.
    pub action: String,
    /// A failed action's code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// When it was recorded, Unix ms.
    pub at: i64,
}

#[derive(Serialize, Deserialize)]
struct ReceiptsFile {
    receipts: VecDeque<ReceiptEntry>,
}

/// The helper's operation receipts, as on disk.
#[derive(Debug)]
pub struct Receipts {
    dir: PathBuf,
    entries: VecDeque<ReceiptEntry>,
}

impl Receipts {
    /// Loads `dir`'s receipts (none yet is an empty list); `Err` when the file exists and
    /// cannot be read as receipts.
    pub fn load(dir: &Path) -> Result<Receipts, String> {
        let entries = match std::fs::read(dir.join(RECEIPTS_FILE)) {
            Ok(bytes) => {
                serde_json::from_slice::<ReceiptsFile>(&bytes)
                    .map_err(|_| "the receipts file is not readable".to_string())?
                    .receipts
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => VecDeque::new(),
            Err(e) => return Err(format!("cannot read the receipts file: {}", e.kind())),
        };
        Ok(Receipts {
            dir: dir.to_path_buf(),
            entries,
        })
    }

    /// The receipt of `operation_id`, if recorded.
    pub fn get(&self, operation_id: &str) -> Option<&ReceiptEntry> {
        self.entries
            .iter()
            .rev()
            .find(|e| e.operation_id == operation_id)
    }

    fn save(&self) -> std::io::Result<()> {
        let file = ReceiptsFile {
            receipts: self.entries.clone(),
        };
        let bytes = serde_json::to_vec(&file).map_err(std::io::Error::other)?;
        write_private(&self.dir, RECEIPTS_FILE, &bytes)
    }

    /// Records `operation_id` as started (synced to disk before this returns). On failure
    /// nothing is recorded (and the caller must not act).
    pub fn start(&mut self, operation_id: &str, action: &str, now_ms: i64) -> std::io::Result<()> {
        self.entries.push_back(ReceiptEntry {
            operation_id: operation_id.into(),
            state: "started".into(),
            action: action.into(),
            code: None,
            at: now_ms,
        });
        while self.entries.len() > MAX_RECEIPTS {
            self.entries.pop_front();
        }
        let saved = self.save();
        if saved.is_err() {
            self.entries.pop_back();
        }
        saved
    }

    /// Records the end of `operation_id`: `completed`, or `failed` with `code`.
    pub fn finish(&mut self, operation_id: &str, code: Option<&str>) -> std::io::Result<()> {
        if let Some(e) = self
            .entries
            .iter_mut()
            .rev()
            .find(|e| e.operation_id == operation_id)
        {
            e.state = if code.is_some() {
                "failed"
            } else {
                "completed"
            }
            .into();
            e.code = code.map(str::to_string);
        }
        self.save()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;

    // Issue 25 item 2: consent is the person's, bounded in time and to applications.
    #[test]
    fn r_computer_consent_is_required_bounded_and_expires() {
        let dir = tempfile::tempdir().unwrap();
        let clock = ManualClock::new();
        let now = || clock.wall_millis();
        assert_eq!(
            check_consent(read_consent(dir.path()).as_ref(), now(), Some("calc")),
            Err("CONSENT_REQUIRED")
        );
        let apps = vec!["calc".to_string()];
        for bad in [Duration::from_secs(59), Duration::from_secs(86_401)] {
            assert!(approve(dir.path(), &apps, bad, &clock).is_err());
        }
        assert!(approve(dir.path(), &[], Duration::from_secs(60), &clock).is_err());
        assert!(approve(
            dir.path(),
            &["a\nb".into()],
            Duration::from_secs(60),
            &clock
        )
        .is_err());
        approve(dir.path(), &apps, Duration::from_secs(30 * 60), &clock).unwrap();
        let c = read_consent(dir.path());
        assert_eq!(check_consent(c.as_ref(), now(), Some("calc")), Ok(()));
        assert_eq!(check_consent(c.as_ref(), now(), None), Ok(()));
        assert_eq!(
            check_consent(c.as_ref(), now(), Some("terminal")),
            Err("APPLICATION_NOT_ALLOWED")
        );
        clock.advance(Duration::from_secs(30 * 60));
        assert_eq!(
            check_consent(c.as_ref(), now(), Some("calc")),
            Err("CONSENT_REQUIRED")
        );
        revoke(dir.path()).unwrap();
        revoke(dir.path()).unwrap();
        assert_eq!(read_consent(dir.path()), None);
        // Revoking while an access request waits refuses it; the gateway's revocation ends it.
        open_access_request(dir.path(), 7).unwrap();
        assert!(!access_request_refused(dir.path()));
        revoke(dir.path()).unwrap();
        assert_eq!(pending_access_request(dir.path()), Some(7));
        assert!(access_request_refused(dir.path()));
        approve(dir.path(), &apps, Duration::from_secs(60), &clock).unwrap();
        revoke_access(dir.path()).unwrap();
        assert_eq!(read_consent(dir.path()), None);
        assert_eq!(pending_access_request(dir.path()), None);
        std::fs::write(dir.path().join(CONSENT_FILE), b"garbage").unwrap();
        assert_eq!(read_consent(dir.path()), None);
    }

    // Issue 25 item 1: receipts survive a restart, bounded; an unreadable file is not empty.
    #[test]
    fn r_computer_receipts_survive_a_restart_and_are_never_guessed() {
        let dir = tempfile::tempdir().unwrap();
        let mut r = Receipts::load(dir.path()).unwrap();
        r.start("op-1", "press", 1).unwrap();
        assert_eq!(r.get("op-1").unwrap().state, "started");
        let again = Receipts::load(dir.path()).unwrap();
        assert_eq!(again.get("op-1").unwrap().state, "started");
        r.finish("op-1", None).unwrap();
        r.start("op-2", "key", 2).unwrap();
        r.finish("op-2", Some("ACTION_FAILED")).unwrap();
        let again = Receipts::load(dir.path()).unwrap();
        assert_eq!(again.get("op-1").unwrap().state, "completed");
        let failed = again.get("op-2").unwrap();
        assert_eq!(
            (failed.state.as_str(), failed.code.as_deref()),
            ("failed", Some("ACTION_FAILED"))
        );
        assert!(again.get("op-3").is_none());
        for i in 0..(MAX_RECEIPTS + 5) {
            r.start(&format!("n-{i}"), "press", 3).unwrap();
        }
        let again = Receipts::load(dir.path()).unwrap();
        assert!(again.get("op-1").is_none() && again.get("n-5").is_some());
        std::fs::write(dir.path().join(RECEIPTS_FILE), b"{").unwrap();
        assert!(Receipts::load(dir.path()).is_err());
    }
}

#[cfg(test)]
mod private_files {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    // Issue 25 (owner-only files): the state directory is created 0700 and every file written
    // 0600 (modes set at creation, so a umask can only narrow them), also over an existing
    // file that was wider and a planted temporary file.
    #[test]
    fn state_files_are_owner_only_whatever_the_umask() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("state");
        write_private(&dir, "token", b"one").unwrap();
        std::fs::set_permissions(dir.join("token"), std::fs::Permissions::from_mode(0o666))
            .unwrap();
        std::fs::write(dir.join(".token.tmp"), b"planted").unwrap();
        write_private(&dir, "token", b"two").unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&dir.join("token")), 0o600);
        assert_eq!(std::fs::read(dir.join("token")).unwrap(), b"two");
        assert!(!dir.join(".token.tmp").exists());
    }
}
