//! JSON → typed [`Config`], with the JSON path of the first offending value, and the public
//! constructors ([`Config::from_json_str`], [`Config::from_json_slice`], [`Config::validate`],
//! which runs `rules.rs`).
//!
//! serde's own messages can quote the rejected value (`invalid type: string "…"`); a misplaced
//! secret must not come back in an error, so messages are rewritten to name only the kind of
//! value found and what was expected. Keys are repeated in paths only when identifier-like
//! (`^[A-Za-z][A-Za-z0-9_]{0,63}$`); any other key — a secret pasted as an object key — is shown
//! as `<key>`.

use super::{Config, MAX_CONFIG_BYTES};
use crate::Error;
use serde_path_to_error::Segment;

impl Config {
    /// Parses and validates a configuration document.
    pub fn from_json_str(text: &str) -> crate::Result<Config> {
        Config::from_json_slice(text.as_bytes())
    }

    /// Parses and validates a configuration document given as bytes (must be UTF-8 JSON).
    pub fn from_json_slice(bytes: &[u8]) -> crate::Result<Config> {
        let config = parse(bytes)?;
        config.validate()?;
        Ok(config)
    }

    /// Checks every rule of SPEC §2 on an already typed configuration.
    pub fn validate(&self) -> crate::Result<()> {
        super::rules::validate(self)
    }
}

pub(super) fn parse(bytes: &[u8]) -> crate::Result<Config> {
    if bytes.len() > MAX_CONFIG_BYTES {
        return Err(Error::config(
            "",
            format!("document is larger than {MAX_CONFIG_BYTES} bytes"),
        ));
    }
    if std::str::from_utf8(bytes).is_err() {
        return Err(Error::config("", "document is not valid UTF-8"));
    }
    objects_not_arrays(bytes)?;
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let result: Result<Config, _> = serde_path_to_error::deserialize(&mut de);
    let config = match result {
        Ok(c) => c,
        Err(e) => return Err(convert(e)),
    };
    if let Err(e) = de.end() {
        return Err(Error::config(
            "",
            format!(
                "trailing characters after the document at line {} column {}",
                e.line(),
                e.column()
            ),
        ));
    }
    Ok(config)
}

fn convert(e: serde_path_to_error::Error<serde_json::Error>) -> Error {
    let mut path = String::new();
    for seg in e.path().iter() {
        match seg {
            Segment::Seq { index } => path.push_str(&format!("[{index}]")),
            Segment::Map { key } | Segment::Enum { variant: key } => {
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(&path_key(key));
            }
            Segment::Unknown => {}
            // `Segment` is non-exhaustive upstream.
            #[allow(unreachable_patterns)] // reason: future segment kinds add nothing to paths
            _ => {}
        }
    }
    let inner = e.inner();
    let location = format!("line {} column {}", inner.line(), inner.column());
    use serde_json::error::Category;
    match inner.classify() {
        Category::Syntax | Category::Eof | Category::Io => Error::config(
            path,
            format!("{} at {location}", Error::json_problem(inner)),
        ),
        Category::Data => {
            let msg = strip_location(&inner.to_string());
            let (path, reason) = describe(path, &msg);
            Error::config(path, reason)
        }
    }
}

fn strip_location(msg: &str) -> String {
    match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_string(),
        None => msg.to_string(),
    }
}

/// Turns a serde data-error message into `(path, reason)` without quoting values.
fn describe(mut path: String, msg: &str) -> (String, String) {
    if let Some(rest) = msg.strip_prefix("unknown field `") {
        // serde_path_to_error already tracked the unknown key itself.
        let key = sanitize_key(rest.split('`').next().unwrap_or(""));
        if !path.ends_with(key.as_str()) {
            if !path.is_empty() {
                path.push('.');
            }
            path.push_str(&key);
        }
        return (path, "unknown key".to_string());
    }
    if let Some(rest) = msg.strip_prefix("duplicate field `") {
        let key = rest.split('`').next().unwrap_or("");
        if !path.is_empty() {
            path.push('.');
        }
        path.push_str(&sanitize_key(key));
        return (path, "duplicate key".to_string());
    }
    if let Some(rest) = msg.strip_prefix("missing field `") {
        let key = rest.split('`').next().unwrap_or("");
        if !path.is_empty() {
            path.push('.');
        }
        path.push_str(&sanitize_key(key));
        return (path, "is required".to_string());
    }
    if let Some(rest) = msg.strip_prefix("unknown variant ") {
        let expected = rest.split_once(", expected ").map(|(_, e)| e).unwrap_or("");
        return (path, format!("unknown value, expected {expected}"));
    }
    for prefix in ["invalid type: ", "invalid value: "] {
        if let Some(rest) = msg.strip_prefix(prefix) {
            let (found, expected) = rest.split_once(", expected ").unwrap_or((rest, "?"));
            return (
                path,
                format!(
                    "expected {}, found {}",
                    expected_words(expected),
                    kind_of(found)
                ),
            );
        }
    }
    if msg.starts_with("invalid length") {
        return (path, "has the wrong number of elements".to_string());
    }
    (path, "invalid value".to_string())
}

/// What stands in a path for a key that is not identifier-like: a key may be anything a
/// person typed — a secret pasted as an object key included — and errors never repeat it.
pub(crate) const KEY_PLACEHOLDER: &str = "<key>";

/// A key as it may appear in an error path: itself when identifier-like
/// (`^[A-Za-z][A-Za-z0-9_]{0,63}$`, the shape of every key jevgate defines), otherwise
/// [`KEY_PLACEHOLDER`].
pub(crate) fn path_key(key: &str) -> std::borrow::Cow<'_, str> {
    let mut chars = key.chars();
    let ident = matches!(chars.next(), Some(c) if c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && key.len() <= 64;
    if ident {
        key.into()
    } else {
        KEY_PLACEHOLDER.into()
    }
}

fn sanitize_key(key: &str) -> String {
    path_key(key).into_owned()
}

fn kind_of(found: &str) -> &'static str {
    let word = found.split([' ', '`']).next().unwrap_or("");
    match word {
        "string" => "a string",
        "integer" => "an integer",
        "floating" => "a number",
        "boolean" => "a boolean",
        "null" | "unit" => "null",
        "map" => "an object",
        "sequence" => "an array",
        "character" => "a string",
        _ => "another value",
    }
}

fn expected_words(expected: &str) -> String {
    match expected {
        "u64" | "u32" | "u16" | "usize" => "a nonnegative integer".to_string(),
        "f64" | "f32" => "a number".to_string(),
        "a boolean" | "a string" | "a sequence" => expected.replace("sequence", "array"),
        e if e.starts_with("struct ") => "an object".to_string(),
        e => e.to_string(),
    }
}

/// serde's derived structs also accept a JSON array (fields by position). A configuration is
/// keyed, so every place that holds an object must hold an object: this walks those places and
/// rejects an array there before the typed pass runs. Syntax errors are left to the typed pass.
fn objects_not_arrays(bytes: &[u8]) -> crate::Result<()> {
    use serde_json::Value;
    if bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[') {
        return Err(Error::config("", "expected an object, found an array"));
    }
    let Ok(root) = serde_json::from_slice::<Value>(bytes) else {
        return Ok(());
    };
    fn at<'a>(parent: &'a Value, key: &str, path: &str) -> crate::Result<Option<&'a Value>> {
        let Some(child) = parent.get(key) else {
            return Ok(None);
        };
        let child_path = if path.is_empty() {
            key.to_string()
        } else {
            format!("{path}.{key}")
        };
        if child.is_array() {
            return Err(Error::config(
                child_path,
                "expected an object, found an array",
            ));
        }
        Ok(Some(child))
    }
    fn each<'a>(
        parent: &'a Value,
        key: &str,
        path: &str,
    ) -> crate::Result<Vec<(String, &'a Value)>> {
        let mut out = Vec::new();
        if let Some(Value::Array(items)) = parent.get(key) {
            for (i, item) in items.iter().enumerate() {
                let p = if path.is_empty() {
                    format!("{key}[{i}]")
                } else {
                    format!("{path}.{key}[{i}]")
                };
                if item.is_array() {
                    return Err(Error::config(p, "expected an object, found an array"));
                }
                out.push((p, item));
            }
        }
        Ok(out)
    }
    if let Some(gateway) = at(&root, "gateway", "")? {
        if let Some(jev) = at(gateway, "jev", "gateway")? {
            let p = "gateway.jev";
            at(jev, "images", p)?;
            at(jev, "thinking", p)?;
            if let Some(features) = at(jev, "features", p)? {
                for f in [
                    "computerTasks",
                    "computerSteps",
                    "browserTasks",
                    "browserSteps",
                ] {
                    at(features, f, "gateway.jev.features")?;
                }
            }
            if let Some(browser) = at(jev, "browser", p)? {
                for (bp, binding) in each(browser, "bindings", "gateway.jev.browser")? {
                    at(binding, "scope", &bp)?;
                    at(binding, "budget", &bp)?;
                    each(binding, "fields", &bp)?;
                }
            }
        }
        at(gateway, "computerUse", "gateway")?;
    }
    for (ap, agent) in each(&root, "agents", "")? {
        at(agent, "jev", &ap)?;
        at(agent, "computerUse", &ap)?;
    }
    Ok(())
}
