//! The gateway's limits of R-DEV-CAPS ([`DeviceLimits`], whose defaults are the one definition
//! in `crate::caps`) and the shaping of a worker's raw result into what the caller gets:
//! text and javascript caps, the screenshot cap and the cap on every other result, each put
//! in the value form of the untrusted-content envelope (`crate::untrusted`, R-BRW-UNTRUSTED).
//!
//! Pure functions over values: enforced by the gateway, never trusted to the worker. Every cap
//! holds whatever the shape of the worker's answer (extra fields, arrays, nested objects,
//! numbers, huge keys): sizes are measured on the whole value as serialized ([`json_size`]),
//! and a cut keeps a prefix of the same shape with `truncated: true` beside the envelope. This
//! module must never log a result, and never return page-derived data outside the envelope.

use super::executor::{truncate_chars, WorkerFailure, RESULT_CAP_EXCEEDED};
use crate::caps;
use crate::untrusted::{wrap_value, UNTRUSTED_KEY};
use crate::{Error, Result};
use serde_json::{json, Map, Value};
use std::time::Duration;

/// Every limit the gateway enforces on browser tools (R-DEV-CAPS). [`Default`] is the
/// documented product limits; tests shrink them so nothing waits a minute.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceLimits {
    /// Actions in one `browser_batch` (10); more is refused before anything runs.
    pub batch_max_actions: usize,
    /// A batch stops after the action that takes its cumulative wall time past this (30 s).
    pub batch_time_budget: Duration,
    /// A batch stops after the action that takes its cumulative result size past this
    /// (190,000 bytes of the workers' serialized results).
    pub batch_byte_budget: usize,
    /// The largest `max_chars` of read_page/get_text (30,000).
    pub text_max_chars: usize,
    /// `max_chars` when omitted (20,000).
    pub text_default_chars: usize,
    /// browser_javascript's serialized return value (20,000 characters).
    pub javascript_max_chars: usize,
    /// A screenshot's base64 length (150,000); larger is discarded (`RESULT_CAP_EXCEEDED`).
    pub screenshot_max_base64: usize,
    /// A single (non-batch) command (60 s).
    pub command_timeout: Duration,
    /// A whole `browser_batch` call (90 s).
    pub batch_timeout: Duration,
    /// How long a screenshot artifact is kept (24 h of the gateway's wall clock): older ones are
    /// purged by the gateway's reaper (about once a minute) and by
    /// [`Gateway::purge_artifacts`](crate::Gateway::purge_artifacts) (R-DEV-SHOT).
    pub artifact_retention: Duration,
    /// Screenshot artifacts one root session keeps (200): storing one more deletes its oldest
    /// (R-DEV-SHOT).
    pub artifact_max_per_session: usize,
}

impl Default for DeviceLimits {
    fn default() -> DeviceLimits {
        DeviceLimits {
            batch_max_actions: caps::BATCH_MAX_ACTIONS,
            batch_time_budget: caps::BATCH_TIME_BUDGET,
            batch_byte_budget: caps::BATCH_BYTE_BUDGET,
            text_max_chars: caps::TEXT_MAX_CHARS,
            text_default_chars: caps::TEXT_DEFAULT_CHARS,
            javascript_max_chars: caps::JAVASCRIPT_MAX_CHARS,
            screenshot_max_base64: caps::SCREENSHOT_MAX_BASE64,
            command_timeout: caps::COMMAND_TIMEOUT,
            batch_timeout: caps::BATCH_TIMEOUT,
            artifact_retention: Duration::from_secs(24 * 60 * 60),
            artifact_max_per_session: 200,
        }
    }
}

impl DeviceLimits {
    /// `INVALID_ARGUMENT` when a limit is zero or the text default exceeds the text maximum.
    pub fn validate(&self) -> Result<()> {
        let zero = self.batch_max_actions == 0
            || self.batch_time_budget.is_zero()
            || self.batch_byte_budget == 0
            || self.text_max_chars == 0
            || self.text_default_chars == 0
            || self.javascript_max_chars == 0
            || self.screenshot_max_base64 == 0
            || self.command_timeout.is_zero()
            || self.batch_timeout.is_zero()
            || self.artifact_retention.is_zero()
            || self.artifact_max_per_session == 0;
        if zero || self.text_default_chars > self.text_max_chars {
            return Err(Error::InvalidArgument {
                name: "limits",
                reason: "every limit must be positive and text_default_chars ≤ text_max_chars"
                    .into(),
            });
        }
        Ok(())
    }
}

/// The fields beside a text tool's `text` (`title`, `url`, `generation`…) and beside a
/// screenshot's image, together, as serialized: 2,000 characters.
pub(crate) const METADATA_MAX_CHARS: usize = 2_000;

/// Any other tool's whole result as serialized (navigate, find, form_input, tabs, the
/// computer's actions: an outcome and a snapshot of at most 20,000 characters): 50,000
/// characters.
pub(crate) const RESULT_MAX_CHARS: usize = 50_000;

/// How deep a result may nest before the rest is cut.
const MAX_DEPTH: usize = 64;

fn json_str_len(s: &str) -> usize {
    s.chars().count().saturating_add(2)
}

/// A value's size: the characters of its compact JSON serialization, each string counted by
/// its characters (an escape counts as the one character it stands for, as `max_chars` counts
/// text). Linear in the value.
pub(crate) fn json_size(v: &Value) -> usize {
    match v {
        Value::Null | Value::Bool(true) => 4,
        Value::Bool(false) => 5,
        Value::Number(n) => n.to_string().len(),
        Value::String(s) => json_str_len(s),
        Value::Array(a) => a
            .iter()
            .map(json_size)
            .fold(1 + a.len().max(1), usize::saturating_add),
        Value::Object(o) => o
            .iter()
            .map(|(k, v)| {
                json_str_len(k)
                    .saturating_add(1)
                    .saturating_add(json_size(v))
            })
            .fold(1 + o.len().max(1), usize::saturating_add),
    }
}

/// Cuts `value` to a [`json_size`] of at most `max`, keeping a prefix of the same
/// shape (strings cut, trailing array elements and object entries dropped; a key is never
/// cut, its entry is dropped). Returns the value and whether anything was cut.
pub(crate) fn cap_value(value: Value, max: usize) -> (Value, bool) {
    if json_size(&value) <= max {
        return (value, false);
    }
    let mut budget = max;
    let kept = cut_value(value, &mut budget, 0).unwrap_or(Value::Null);
    (kept, true)
}

/// The prefix of `v` that fits `budget` (which it spends), or `None` when nothing of it fits.
/// Stops at the first cut: everything after it is dropped.
fn cut_value(v: Value, budget: &mut usize, depth: usize) -> Option<Value> {
    let size = json_size(&v);
    if size <= *budget {
        *budget -= size;
        return Some(v);
    }
    let out = match v {
        Value::String(s) if *budget > 2 => {
            let mut room = *budget - 2;
            let mut end = 0;
            for (at, c) in s.char_indices() {
                if room == 0 {
                    break;
                }
                room -= 1;
                end = at + c.len_utf8();
            }
            Some(Value::String(s[..end].to_string()))
        }
        Value::Array(items) if *budget >= 2 && depth < MAX_DEPTH => {
            *budget -= 2;
            let mut kept = Vec::new();
            for item in items {
                let comma = usize::from(!kept.is_empty());
                if *budget <= comma {
                    break;
                }
                *budget -= comma;
                let whole = json_size(&item) <= *budget;
                match cut_value(item, budget, depth + 1) {
                    Some(x) => kept.push(x),
                    None => break,
                }
                if !whole {
                    break;
                }
            }
            Some(Value::Array(kept))
        }
        Value::Object(entries) if *budget >= 2 && depth < MAX_DEPTH => {
            *budget -= 2;
            let mut kept = Map::new();
            for (key, item) in entries {
                let comma = usize::from(!kept.is_empty());
                let head = json_str_len(&key).saturating_add(1).saturating_add(comma);
                if head >= *budget {
                    break;
                }
                *budget -= head;
                let whole = json_size(&item) <= *budget;
                match cut_value(item, budget, depth + 1) {
                    Some(x) => {
                        kept.insert(key, x);
                    }
                    None => break,
                }
                if !whole {
                    break;
                }
            }
            Some(Value::Object(kept))
        }
        _ => None,
    };
    *budget = 0;
    out
}

/// Caps a text tool's result (read_page, get_text): the `text` to `max_chars` characters (a
/// `text` that is not a string counts as serialized), and everything beside it, whatever its
/// shape, to [`METADATA_MAX_CHARS`] serialized; a result that is neither a string nor an
/// object is capped to `max_chars` serialized.
pub(crate) fn cap_text(raw: Value, max_chars: usize) -> Value {
    let mut truncated;
    let data = match raw {
        Value::String(s) => {
            let (kept, cut) = truncate_chars(&s, max_chars);
            truncated = cut;
            json!({"text": kept})
        }
        Value::Object(mut obj) => {
            // A worker that already cut the text to `max_chars` says so.
            truncated = obj.get("truncated") == Some(&Value::Bool(true));
            let text = obj.remove("text");
            let (rest, cut) = cap_value(Value::Object(obj), METADATA_MAX_CHARS);
            truncated |= cut;
            let mut obj = match rest {
                Value::Object(o) => o,
                _ => Map::new(),
            };
            let text = match text {
                Some(Value::String(s)) => {
                    let (kept, cut) = truncate_chars(&s, max_chars);
                    truncated |= cut;
                    Some(if cut {
                        Value::String(kept.to_string())
                    } else {
                        Value::String(s)
                    })
                }
                Some(other) => {
                    let (kept, cut) = cap_value(other, max_chars);
                    truncated |= cut;
                    Some(kept)
                }
                None => None,
            };
            if let Some(text) = text {
                obj.insert("text".into(), text);
            }
            Value::Object(obj)
        }
        other => {
            let (kept, cut) = cap_value(other, max_chars);
            truncated = cut;
            kept
        }
    };
    json!({UNTRUSTED_KEY: wrap_value(data), "truncated": truncated, "maxChars": max_chars})
}

/// Caps browser_javascript's serialized return value (`{"value": v}` or `v`).
pub(crate) fn cap_javascript(raw: Value, max_chars: usize) -> Value {
    let value = match raw {
        Value::Object(mut obj) if obj.contains_key("value") => {
            obj.remove("value").unwrap_or(Value::Null)
        }
        other => other,
    };
    let serialized = value.to_string();
    let (kept, cut) = truncate_chars(&serialized, max_chars);
    if cut {
        json!({UNTRUSTED_KEY: wrap_value(json!({"serializedPrefix": kept})), "truncated": true})
    } else {
        json!({UNTRUSTED_KEY: wrap_value(json!({"value": value})), "truncated": false})
    }
}

/// A screenshot taken out of a worker result: its base64 image, media type and the other
/// (page-derived) fields.
pub(crate) struct Screenshot {
    pub base64: String,
    pub media_type: String,
    pub rest: Map<String, Value>,
}

/// Takes the image out of a screenshot/zoom result and checks the base64 cap.
pub(crate) fn take_screenshot(raw: Value, max_base64: usize) -> Result<Screenshot, WorkerFailure> {
    let Value::Object(mut obj) = raw else {
        return Err(WorkerFailure::new(
            "execution_failed",
            "the browser returned no image",
        ));
    };
    let Some(Value::String(image)) = obj.remove("image") else {
        return Err(WorkerFailure::new(
            "execution_failed",
            "the browser returned no image",
        ));
    };
    let mut media_type = match obj.remove("mediaType") {
        Some(Value::String(m)) => m,
        _ => "image/png".to_string(),
    };
    let mut base64 = image;
    if let Some(rest) = base64.strip_prefix("data:") {
        if let Some((kind, data)) = rest.split_once(";base64,") {
            media_type = kind.to_string();
            base64 = data.to_string();
        }
    }
    if !matches!(
        media_type.as_str(),
        "image/png" | "image/jpeg" | "image/webp"
    ) {
        media_type = "application/octet-stream".into();
    }
    if base64.len() > max_base64 {
        return Err(WorkerFailure::new(
            RESULT_CAP_EXCEEDED,
            format!("the screenshot exceeded {max_base64} base64 characters and was discarded"),
        ));
    }
    // The fields beside the image: as for the image, over the cap is discarded, not cut.
    let rest = Value::Object(obj);
    if json_size(&rest) > METADATA_MAX_CHARS {
        return Err(WorkerFailure::new(
            RESULT_CAP_EXCEEDED,
            format!(
                "the screenshot's other fields exceeded {METADATA_MAX_CHARS} characters and were discarded"
            ),
        ));
    }
    let Value::Object(rest) = rest else {
        return Err(WorkerFailure::new(
            "execution_failed",
            "the browser returned no image",
        ));
    };
    Ok(Screenshot {
        base64,
        media_type,
        rest,
    })
}

/// Any other tool: the whole result is page-derived, capped to [`RESULT_MAX_CHARS`] serialized
/// (a cut result carries `truncated: true` and `maxChars` beside the envelope).
pub(crate) fn wrap_result(raw: Value) -> Value {
    let (data, cut) = cap_value(raw, RESULT_MAX_CHARS);
    if cut {
        json!({UNTRUSTED_KEY: wrap_value(data), "truncated": true, "maxChars": RESULT_MAX_CHARS})
    } else {
        json!({UNTRUSTED_KEY: wrap_value(data)})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // R-DEV-CAPS: text caps at the edge, counted in characters.
    #[test]
    fn text_is_cut_at_max_chars() {
        let v = cap_text(json!({"text": "ab€d", "title": "t"}), 4);
        assert_eq!(v["truncated"], false);
        assert_eq!(v[UNTRUSTED_KEY]["data"]["text"], "ab€d");
        let v = cap_text(json!({"text": "ab€de"}), 4);
        assert_eq!(v["truncated"], true);
        assert_eq!(v[UNTRUSTED_KEY]["data"]["text"], "ab€d");
        let v = cap_text(json!("plain"), 2);
        assert_eq!(v[UNTRUSTED_KEY]["data"]["text"], "pl");
    }

    // R-DEV-CAPS: sizes are the compact serialization, an escape counting as one character.
    #[test]
    fn json_size_is_the_serialized_length() {
        assert_eq!(json_size(&json!("a\"b\n\u{1}é")), 8);
        for v in [
            json!(null),
            json!(false),
            json!(-12.5),
            json!("ab€é"),
            json!([]),
            json!({}),
            json!([1, [2, {"k": "v"}], {}]),
            json!({"a": {"b": [true, null]}, "c": "x"}),
        ] {
            assert_eq!(json_size(&v), v.to_string().chars().count(), "{v}");
        }
    }

    // R-DEV-CAPS: whatever the shape, a cut value fits its cap and keeps a prefix.
    #[test]
    fn cap_value_fits_every_shape() {
        let z = "z".repeat(5000);
        let shapes = [
            json!({"text": "short", "content": z}),
            json!([z, z, z]),
            json!({"a": {"b": {"c": [1, 2, {"d": z}]}}}),
            json!((0..5000).collect::<Vec<u32>>()),
            json!({ z.clone(): 1, "a": 2 }),
            json!("é".repeat(5000)),
            (0..100).fold(json!(z), |v, _| json!([v])),
        ];
        for shape in shapes {
            for max in [0, 1, 2, 3, 10, 100, 999] {
                let (kept, cut) = cap_value(shape.clone(), max);
                assert!(cut);
                assert!(
                    kept.to_string().chars().count() <= max.max(4),
                    "{max}: {kept}"
                );
            }
            let (kept, cut) = cap_value(shape.clone(), 1_000_000);
            assert!(!cut && kept == shape);
        }
        let (kept, _) = cap_value(json!({"a": "xyz", "b": [1, 2, 3]}), 20);
        assert_eq!(kept, json!({"a": "xyz", "b": [1]}));
    }

    // R-DEV-CAPS: text tools — the text by characters, everything beside it by size.
    #[test]
    fn text_results_of_any_shape_are_capped() {
        let z = "z".repeat(50_000);
        for raw in [
            json!({"text": "short", "content": z}),
            json!({"text": [z]}),
            json!([z]),
            json!({"text": {"nested": z}}),
            json!(12345),
        ] {
            let v = cap_text(raw, 100);
            assert!(v.to_string().len() < 100 + METADATA_MAX_CHARS + 300, "{v}");
            assert_eq!(v["truncated"], raw_is_small(&v));
        }
        let v = cap_text(json!({"text": "abc", "title": "t", "url": "u"}), 100);
        assert_eq!(v["truncated"], false);
        assert_eq!(
            v[UNTRUSTED_KEY]["data"],
            json!({"text": "abc", "title": "t", "url": "u"})
        );
        // Any other tool: the whole result.
        let v = wrap_result(json!({"matches": [z, z]}));
        assert_eq!(v["truncated"], true);
        assert!(v.to_string().len() < RESULT_MAX_CHARS + 300);
        assert_eq!(wrap_result(json!({"ok": 1})).get("truncated"), None);
    }

    fn raw_is_small(v: &Value) -> Value {
        json!(v[UNTRUSTED_KEY]["data"] != json!(12345))
    }

    // R-DEV-CAPS: javascript serialized value cap.
    #[test]
    fn javascript_value_is_capped_when_serialized() {
        let v = cap_javascript(json!({"value": "xx"}), 4);
        assert_eq!(v["truncated"], false);
        assert_eq!(v[UNTRUSTED_KEY]["data"]["value"], "xx");
        let v = cap_javascript(json!({"value": "xxx"}), 4);
        assert_eq!(v["truncated"], true);
        assert_eq!(v[UNTRUSTED_KEY]["data"]["serializedPrefix"], "\"xxx");
    }

    // R-DEV-CAPS: screenshot cap at its edge.
    #[test]
    fn screenshot_over_the_cap_is_discarded() {
        assert!(take_screenshot(json!({"image": "AAAA"}), 4).is_ok());
        let err = take_screenshot(json!({"image": "AAAAAAAA"}), 4)
            .err()
            .unwrap();
        assert_eq!(err.code, RESULT_CAP_EXCEEDED);
        let shot = take_screenshot(json!({"image": "data:image/jpeg;base64,AAAA"}), 4)
            .ok()
            .unwrap();
        assert_eq!(shot.media_type, "image/jpeg");
        assert_eq!(shot.base64, "AAAA");
        // The fields beside the image are capped too, whatever they are.
        let err = take_screenshot(json!({"image": "AAAA", "alt": "z".repeat(5000)}), 4)
            .err()
            .unwrap();
        assert_eq!(err.code, RESULT_CAP_EXCEEDED);
        assert!(take_screenshot(json!({"image": "AAAA", "width": 800}), 4).is_ok());
    }
}
