//! Local readiness checks of a configuration (R-CFG-KEYFILE, seed 003 "Check readiness").
//!
//! Checks that each referenced credential file is a readable regular file of plausible size and
//! that each referenced environment variable is set — without reading any key into a report,
//! without naming a variable whose name looks like a key, and without any network call (a test
//! points every endpoint at a loopback listener that must see no connection). It does not prove
//! that a provider accepts the key.

use super::credentials::{CredentialRef, MAX_KEY_FILE_BYTES, UPSTREAM_IDENTITY_ENV};
use super::{parse_endpoint, Config, Provider};
use serde::Serialize;
use std::ffi::OsString;

/// Outcome of one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CheckStatus {
    /// Ready.
    Ok,
    /// Works, but something deserves attention (e.g. a key file readable by others).
    Warn,
    /// Will fail at run time.
    Error,
    /// Not applicable (feature disabled).
    Skipped,
}

/// One line of a [`DoctorReport`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DoctorCheck {
    /// What was checked (`jev.credentials`, `thinking.credentials`, `store`, …).
    pub name: String,
    /// The verdict.
    pub status: CheckStatus,
    /// The error code a call would fail with, for `error` checks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<&'static str>,
    /// A short explanation naming references, never secrets.
    pub detail: String,
}

/// The result of [`doctor`]: `ok` is false when any check is `error`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DoctorReport {
    /// No check failed.
    pub ok: bool,
    /// Every check, in a stable order.
    pub checks: Vec<DoctorCheck>,
}

impl DoctorReport {
    /// Builds a report, deriving `ok` from the checks.
    pub fn new(checks: Vec<DoctorCheck>) -> DoctorReport {
        let ok = checks.iter().all(|c| c.status != CheckStatus::Error);
        DoctorReport { ok, checks }
    }

    /// The report as a JSON object `{"ok": bool, "checks": [...]}`.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|_| "{\"ok\":false,\"checks\":[]}".into())
    }
}

fn check(name: &str, status: CheckStatus, detail: impl Into<String>) -> DoctorCheck {
    DoctorCheck {
        name: name.to_string(),
        status,
        code: (status == CheckStatus::Error).then_some("JEV_MISSING_CREDENTIALS"),
        detail: detail.into(),
    }
}

/// Inspects a credential reference: file metadata and permissions, or variable presence.
fn credential(
    name: &str,
    r: &CredentialRef,
    env: &dyn Fn(&str) -> Option<OsString>,
) -> DoctorCheck {
    match r.resolve(env) {
        Err(e) => check(name, CheckStatus::Error, e.to_string()),
        Ok(_) => {
            if let CredentialRef::File(path) = r {
                if let Some(warn) = file_permission_warning(path) {
                    return check(name, CheckStatus::Warn, format!("{}: {warn}", r.describe()));
                }
            }
            check(name, CheckStatus::Ok, format!("{} is set", r.describe()))
        }
    }
}

#[cfg(unix)]
fn file_permission_warning(path: &str) -> Option<&'static str> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(path).ok()?;
    debug_assert!(meta.len() <= MAX_KEY_FILE_BYTES);
    (meta.permissions().mode() & 0o077 != 0)
        .then_some("is readable by group or others; restrict it to the gateway's user (chmod 600)")
}

#[cfg(not(unix))]
fn file_permission_warning(_path: &str) -> Option<&'static str> {
    None
}

/// The upstream identity group read from the environment when an upstream has no explicit
/// reference: a base URL and a credential, taken together, never mixed.
fn upstream_identity(env: &dyn Fn(&str) -> Option<OsString>) -> DoctorCheck {
    const NAME: &str = "jev.credentials";
    let present = |k: &str| env(k).is_some_and(|v| !v.is_empty());
    let group = UPSTREAM_IDENTITY_ENV;
    if !group.iter().any(|k| present(k)) {
        return check(
            NAME,
            CheckStatus::Error,
            "upstream without baseUrl uses the gateway's upstream identity, but none of ANTHROPIC_BASE_URL, ANTHROPIC_AUTH_TOKEN, ANTHROPIC_API_KEY, CLAUDE_CODE_OAUTH_TOKEN is set",
        );
    }
    let url_ok = env("ANTHROPIC_BASE_URL")
        .and_then(|v| v.into_string().ok())
        .is_some_and(|u| parse_endpoint(&u).is_ok());
    if !url_ok {
        return check(
            NAME,
            CheckStatus::Error,
            "the upstream identity group is incomplete: ANTHROPIC_BASE_URL is missing or not an allowed URL",
        );
    }
    if !group[1..].iter().any(|k| present(k)) {
        return check(
            NAME,
            CheckStatus::Error,
            "the upstream identity group is incomplete: no credential beside ANTHROPIC_BASE_URL",
        );
    }
    check(
        NAME,
        CheckStatus::Ok,
        "upstream identity group (ANTHROPIC_BASE_URL and a credential) is set",
    )
}

/// Runs every local check of `config`. `env` looks variables up (the process environment in
/// production; a map in tests). Makes no network call and reads no key into the report.
pub fn doctor(config: &Config, env: &dyn Fn(&str) -> Option<OsString>) -> DoctorReport {
    let jev = &config.gateway.jev;
    let mut checks = vec![check("config", CheckStatus::Ok, "configuration is valid")];
    let jev_check = if !jev.enabled {
        check("jev.credentials", CheckStatus::Skipped, "Jev is disabled")
    } else {
        match (config.jev_credential(), jev.provider) {
            (Some(r), _) => credential("jev.credentials", &r, env),
            (None, Some(Provider::Upstream)) => upstream_identity(env),
            (None, _) => check(
                "jev.credentials",
                CheckStatus::Ok,
                "the provider needs no credentials",
            ),
        }
    };
    checks.push(jev_check);
    if let Some(t) = &jev.thinking {
        let r = match (&t.api_key_file, &t.api_key_env) {
            (Some(f), _) => CredentialRef::File(f.clone()),
            (None, Some(e)) => CredentialRef::Env(e.clone()),
            (None, None) => unreachable_ref(),
        };
        checks.push(credential("thinking.credentials", &r, env));
    }
    if let Some(b) = &jev.browser {
        for (i, binding) in b.bindings.iter().enumerate() {
            let r = match (&binding.api_key_file, &binding.api_key_env) {
                (Some(f), _) => CredentialRef::File(f.clone()),
                (None, Some(e)) => CredentialRef::Env(e.clone()),
                (None, None) => continue,
            };
            checks.push(credential(
                &format!("browser.bindings[{i}].credentials"),
                &r,
                env,
            ));
        }
    }
    // Issue 23: the shared store's URL reference (set, readable, private); the URL itself is
    // never read into the report.
    if let Some(r) = config.gateway.store.url_ref() {
        checks.push(credential("store.url", &r, env));
    }
    DoctorReport::new(checks)
}

/// Validation guarantees thinking has a reference; an empty env name fails resolution cleanly
/// should that ever change.
fn unreachable_ref() -> CredentialRef {
    CredentialRef::Env(String::new())
}
