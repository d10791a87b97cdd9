//! Credential references (R-CFG-ENV, R-CFG-KEYFILE).
//!
//! A configuration names where a key lives — a file or an environment variable — never the key.
//! Keys are resolved at call time (files are read on every request so rotation needs no restart)
//! into a [`Secret`], whose `Debug` and `Display` never show it. Nothing here logs or returns a
//! key in an error, nor a variable name that looks like one (a key pasted into `apiKeyEnv`).
//!
//! Resolution never blocks on what sits at a key path: only a regular file is opened, non-blocking
//! and read bounded (a FIFO or a device is refused at once), so the evaluation's deadline covers it.

use crate::Error;
use std::ffi::OsString;

/// Environment names a Jev `apiKeyEnv` may not use: native CLI authentication and control
/// variables (seed 003 "Configure a direct connection" and the Anthropic settings group).
pub const REFUSED_ENV_NAMES: [&str; 8] = [
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "CODEX_HOME",
    "HOME",
    "PATH",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_AUTH_TOKEN",
    "CLAUDE_CODE_OAUTH_TOKEN",
];

/// The upstream identity group (seed 003 "Configure a compatible upstream"): an `upstream`
/// provider without both `baseUrl` and a key reference reads `ANTHROPIC_BASE_URL` and the first
/// set credential of the other three, in this order.
pub const UPSTREAM_IDENTITY_ENV: [&str; 4] = [
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_API_KEY",
    "CLAUDE_CODE_OAUTH_TOKEN",
];

/// The variable a direct TypeSafe connection reads when no reference is configured.
pub const TYPESAFE_DEFAULT_ENV: &str = "TYPESAFE_API_KEY";

/// Key files larger than this are refused: a key file holds the key only.
pub const MAX_KEY_FILE_BYTES: u64 = 16 * 1024;

/// Where a credential is read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CredentialRef {
    /// An absolute path to a file holding only the key (a trailing newline is trimmed).
    File(String),
    /// An environment variable name.
    Env(String),
}

/// A resolved key. Its `Debug`/`Display` print `<redacted>`; read it with [`Secret::expose`].
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// The key itself, for an `Authorization` header. Never log it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

impl std::fmt::Display for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}

impl CredentialRef {
    /// A short description naming the reference (never the key), for errors and reports.
    /// A variable's name is repeated only when it has the conventional shape
    /// (`conventional_env_name`); any other name — a key pasted into `apiKeyEnv` passes the
    /// name check — is described by where it comes from instead.
    pub fn describe(&self) -> String {
        match self {
            CredentialRef::File(p) => format!("key file {p}"),
            CredentialRef::Env(n) if conventional_env_name(n) => {
                format!("environment variable {n}")
            }
            CredentialRef::Env(_) => {
                "the environment variable named in the configuration (its name \
                 is not repeated: it does not look like a variable name and may be a key)"
                    .to_string()
            }
        }
    }

    /// Reads the key now. `env` looks a variable up (the process environment in production).
    /// Unreadable, empty or malformed → `JEV_MISSING_CREDENTIALS`.
    pub fn resolve(&self, env: &dyn Fn(&str) -> Option<OsString>) -> crate::Result<Secret> {
        let missing = |why: &str| Error::MissingCredentials {
            reason: format!("{} {why}", self.describe()),
        };
        let raw = match self {
            CredentialRef::Env(name) => match env(name) {
                None => return Err(missing("is not set")),
                Some(v) => v.into_string().map_err(|_| missing("is not valid UTF-8"))?,
            },
            CredentialRef::File(path) => read_key_file(path).map_err(&missing)?,
        };
        let key = raw.strip_suffix('\n').unwrap_or(&raw);
        let key = key.strip_suffix('\r').unwrap_or(key);
        if key.is_empty() {
            return Err(missing("is empty"));
        }
        if key.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(missing(
                "holds more than one key (whitespace or control characters)",
            ));
        }
        Ok(Secret(key.to_string()))
    }
}

/// Reads a key file without ever blocking on what sits at the path: the path must name a
/// regular file (checked before opening, so a FIFO or a device is never opened), it is opened
/// non-blocking (so a FIFO swapped in after the check opens at once and is then refused by the
/// second check, on the opened file) and at most [`MAX_KEY_FILE_BYTES`] + 1 bytes are read.
fn read_key_file(path: &str) -> Result<String, &'static str> {
    use std::io::Read;
    let not_found = |e: std::io::Error| match e.kind() {
        std::io::ErrorKind::NotFound => "does not exist",
        std::io::ErrorKind::PermissionDenied => "is not readable (permission denied)",
        _ => "cannot be opened",
    };
    let before = std::fs::metadata(path).map_err(not_found)?;
    if !before.is_file() {
        return Err("is not a regular file");
    }
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = options.open(path).map_err(not_found)?;
    let meta = file.metadata().map_err(|_| "cannot be inspected")?;
    if !meta.is_file() {
        return Err("is not a regular file");
    }
    if meta.len() > MAX_KEY_FILE_BYTES {
        return Err("is too large to hold only a key");
    }
    let mut buf = Vec::new();
    file.take(MAX_KEY_FILE_BYTES + 1)
        .read_to_end(&mut buf)
        .map_err(|_| "is not readable")?;
    if buf.len() as u64 > MAX_KEY_FILE_BYTES {
        return Err("is too large to hold only a key");
    }
    String::from_utf8(buf).map_err(|_| "is not readable UTF-8 text")
}

/// Whether an environment variable name looks like one a person chose (`PRIVATE_JEV_TOKEN`)
/// rather than a key pasted in its place: upper-case letters, digits and `_`, starting with a
/// letter, at most 64 bytes, each `_`-separated word at most 16 characters and at most 6 digits
/// in all. Names outside that shape are never repeated in reports or errors (issue 12 item 10).
pub(crate) fn conventional_env_name(name: &str) -> bool {
    name.len() <= 64
        && name.starts_with(|c: char| c.is_ascii_uppercase())
        && name
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
        && name.split('_').all(|word| word.len() <= 16)
        && name.bytes().filter(u8::is_ascii_digit).count() <= 6
}

/// Whether `name` is a well-formed environment variable name (`[A-Za-z_][A-Za-z0-9_]*`, ≤128).
pub(crate) fn valid_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && name.len() <= 128
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k: &str| map.get(k).map(OsString::from)
    }

    // R-CFG-KEYFILE: the file holds the key only; a trailing newline is trimmed; it is read on
    // every resolve, so rotation takes effect without restart.
    #[test]
    fn key_file_is_trimmed_and_reread_on_every_resolve() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("jev.key");
        std::fs::write(&path, "first-key\n").unwrap();
        let r = CredentialRef::File(path.to_str().unwrap().to_string());
        let env = env_of(&[]);
        assert_eq!(r.resolve(&env).unwrap().expose(), "first-key");
        std::fs::write(&path, "second-key\r\n").unwrap();
        assert_eq!(r.resolve(&env).unwrap().expose(), "second-key");
    }

    #[test]
    fn unreadable_or_empty_key_file_is_missing_credentials_without_the_key() {
        let dir = tempfile::tempdir().unwrap();
        let env = env_of(&[]);
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (b"".to_vec(), "is empty"),
            (b"\n".to_vec(), "is empty"),
            (b"two keys\n".to_vec(), "holds more than one key"),
            (b"k1\nk2\n".to_vec(), "holds more than one key"),
            (vec![0xff, 0xfe], "is not readable UTF-8 text"),
            (vec![b'a'; 20_000], "is too large"),
        ];
        for (i, (content, why)) in cases.into_iter().enumerate() {
            let path = dir.path().join(format!("k{i}"));
            std::fs::write(&path, &content).unwrap();
            let err = CredentialRef::File(path.to_str().unwrap().into())
                .resolve(&env)
                .unwrap_err();
            assert_eq!(err.code(), "JEV_MISSING_CREDENTIALS");
            assert!(err.to_string().contains(why), "{err}");
            assert!(!err.to_string().contains("two keys"));
        }
        let missing = CredentialRef::File(dir.path().join("nope").to_str().unwrap().into());
        assert!(missing
            .resolve(&env)
            .unwrap_err()
            .to_string()
            .contains("does not exist"));
        let a_dir = CredentialRef::File(dir.path().to_str().unwrap().into());
        assert_eq!(
            a_dir.resolve(&env).unwrap_err().code(),
            "JEV_MISSING_CREDENTIALS"
        );
    }

    // R-CFG-KEYFILE, issue 12 item 5: a FIFO (or any non-regular file) at the key path is
    // refused at once — the old code opened it and blocked forever waiting for a writer. Run
    // in a thread with a generous join timeout so a regression fails instead of hanging.
    #[cfg(unix)]
    #[test]
    fn a_fifo_or_device_at_the_key_path_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("jev.key");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let (tx, rx) = std::sync::mpsc::channel();
        let paths = [fifo.to_str().unwrap().to_string(), "/dev/zero".to_string()];
        std::thread::spawn(move || {
            for p in paths {
                let r = CredentialRef::File(p).resolve(&|_| None);
                tx.send(r.map(|_| ()).map_err(|e| e.to_string())).unwrap();
            }
        });
        for _ in 0..2 {
            let r = rx
                .recv_timeout(std::time::Duration::from_secs(20))
                .expect("resolving a FIFO key file blocked");
            let err = r.unwrap_err();
            assert!(err.contains("is not a regular file"), "{err}");
        }
    }

    #[test]
    fn env_reference_resolves_at_call_time() {
        let r = CredentialRef::Env("PRIVATE_JEV_TOKEN".into());
        assert!(r
            .resolve(&env_of(&[]))
            .unwrap_err()
            .to_string()
            .contains("is not set"));
        assert!(r
            .resolve(&env_of(&[("PRIVATE_JEV_TOKEN", "")]))
            .unwrap_err()
            .to_string()
            .contains("is empty"));
        let s = r
            .resolve(&env_of(&[("PRIVATE_JEV_TOKEN", "sk-123")]))
            .unwrap();
        assert_eq!(s.expose(), "sk-123");
        assert_eq!(format!("{s:?} {s}"), "Secret(<redacted>) <redacted>");
    }

    // Issue 12 item 10b: a key pasted as a variable name is never repeated by resolution errors
    // (nor, through them, by doctor).
    #[test]
    fn a_secret_looking_variable_name_is_not_repeated() {
        for name in [
            "sk_live_SENTINEL7f3a9c",
            "AKIAIOSFODNN7SENTINEL",
            "ghp_SENTINEL16C7e42F292c",
        ] {
            assert!(
                valid_env_name(name),
                "passes the configuration check: {name}"
            );
            let err = CredentialRef::Env(name.into())
                .resolve(&env_of(&[]))
                .unwrap_err();
            assert!(!err.to_string().contains("SENTINEL"), "{err}");
            assert!(err.to_string().contains("is not set"), "{err}");
        }
        let err = CredentialRef::Env("PRIVATE_JEV_TOKEN".into())
            .resolve(&env_of(&[]))
            .unwrap_err();
        assert!(err.to_string().contains("PRIVATE_JEV_TOKEN"), "{err}");
        for ok in [
            "PRIVATE_JEV_TOKEN",
            "CLAUDE_CODE_OAUTH_TOKEN",
            "TYPESAFE_API_KEY",
            "K2",
        ] {
            assert!(conventional_env_name(ok), "{ok}");
        }
        for secret in [
            "AKIAIOSFODNN7EXAMPLE",
            "ghp_16C7e42F292c",
            "sk_live_51H8",
            "X1234567",
        ] {
            assert!(!conventional_env_name(secret), "{secret}");
        }
    }

    #[test]
    fn env_name_shape() {
        for ok in ["A", "_X", "PRIVATE_JEV_TOKEN", "k9"] {
            assert!(valid_env_name(ok), "{ok}");
        }
        for bad in ["", "9A", "A-B", "A B", "Ä", "A=B"] {
            assert!(!valid_env_name(bad), "{bad}");
        }
    }
}
