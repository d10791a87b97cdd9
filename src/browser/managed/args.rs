//! The arguments of a managed tool call and the shared wording of its refusals: each field read
//! with its type and bounds checked, `INVALID_TOOL_ARGUMENTS` naming the field and the rule.
//!
//! It never echoes an argument's value (a name shown back is a short identifier or `?`) and
//! never reads anything but the call's JSON.

use serde_json::{Map, Value};

use super::target::{parse_target, Target};
use crate::browser::{MAX_VIEWPORT, MIN_VIEWPORT};
use crate::untrusted::unwrap_text;
use crate::{Error, Result};

/// The longest text, URL or function accepted (characters).
pub(super) const MAX_TEXT: usize = 100_000;

/// `INVALID_TOOL_ARGUMENTS` for `tool`, naming the field and rule (never the value).
pub(super) fn bad(tool: &'static str, reason: impl Into<String>) -> Error {
    Error::InvalidToolArguments {
        tool,
        reason: reason.into(),
    }
}

/// A tool name safe to show back: a short identifier, else `?`.
pub(super) fn shown_name(name: &str) -> String {
    if !name.is_empty()
        && name.len() <= 64
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        name.to_string()
    } else {
        "?".into()
    }
}

/// A tool call's arguments, read field by field with the field named in every refusal.
pub(super) struct Args<'a> {
    pub(super) tool: &'static str,
    pub(super) obj: &'a Map<String, Value>,
}

impl<'a> Args<'a> {
    pub(super) fn opt_str(&self, key: &str) -> Result<Option<&'a str>> {
        match self.obj.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if s.chars().count() <= MAX_TEXT => Ok(Some(s)),
            Some(Value::String(_)) => Err(bad(
                self.tool,
                format!("`{key}` is longer than {MAX_TEXT} characters"),
            )),
            Some(_) => Err(bad(self.tool, format!("`{key}` must be a string"))),
        }
    }

    pub(super) fn str(&self, key: &str) -> Result<&'a str> {
        self.opt_str(key)?
            .ok_or_else(|| bad(self.tool, format!("`{key}` is required")))
    }

    pub(super) fn opt_bool(&self, key: &str) -> Result<Option<bool>> {
        match self.obj.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(_) => Err(bad(self.tool, format!("`{key}` must be true or false"))),
        }
    }

    pub(super) fn num(&self, key: &str, max: f64) -> Result<f64> {
        self.opt_num(key, max)?
            .ok_or_else(|| bad(self.tool, format!("`{key}` is required")))
    }

    pub(super) fn side(&self, key: &str) -> Result<u32> {
        match self.obj.get(key) {
            None | Some(Value::Null) => Err(bad(self.tool, format!("`{key}` is required"))),
            Some(v) => v
                .as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .filter(|n| (MIN_VIEWPORT..=MAX_VIEWPORT).contains(n))
                .ok_or_else(|| {
                    bad(
                        self.tool,
                        format!(
                            "`{key}` must be a whole number from {MIN_VIEWPORT} to {MAX_VIEWPORT}"
                        ),
                    )
                }),
        }
    }

    pub(super) fn opt_num(&self, key: &str, max: f64) -> Result<Option<f64>> {
        match self.obj.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => match n.as_f64() {
                Some(v) if (0.0..=max).contains(&v) => Ok(Some(v)),
                _ => Err(bad(
                    self.tool,
                    format!("`{key}` must be a number from 0 to {max}"),
                )),
            },
            Some(_) => Err(bad(self.tool, format!("`{key}` must be a number"))),
        }
    }

    pub(super) fn target(&self, key: &str) -> Result<Target> {
        parse_target(self.str(key)?).ok_or_else(|| {
            bad(
                self.tool,
                format!("`{key}` must be a ref (e5) or css=…, role=…[name=\"…\"] or text=…"),
            )
        })
    }
}

/// A path refused by the workspace confinement as `INVALID_TOOL_ARGUMENTS` naming `field`
/// (the confinement's reason never holds the path); other errors as they are.
pub(super) fn confined_error(tool: &'static str, field: &str, e: Error) -> Error {
    match e {
        Error::InvalidArgument { reason, .. } => bad(tool, format!("`{field}`: {reason}")),
        other => other,
    }
}

pub(super) fn text_of(wrapped: &str) -> &str {
    unwrap_text(wrapped).unwrap_or(wrapped)
}

pub(super) fn count_error(kind: &str, n: usize) -> Error {
    Error::TargetNotFound {
        reason: if n == 0 {
            format!("the {kind} selector matched no interactive element (count 0)")
        } else {
            format!("the {kind} selector matched {n} interactive elements (count {n}); make it match exactly one")
        },
    }
}
