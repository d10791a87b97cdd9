//! Form tools: `browser_fill_form` (several fields in one call), `browser_select_option`,
//! `browser_check` / `browser_uncheck` (a real click, only when the state differs).
//!
//! It never logs or echoes a field's value (a refusal names the field by its index), and never
//! sets a field of another generation than the one its target was resolved on.

use serde_json::{json, Map, Value};

use super::args::{bad, Args, MAX_TEXT};
use super::target::parse_target;
use super::ManagedBrowser;
use crate::browser::backend::{ActionResult, ClickArgs, FormInputArgs, TypeArgs};
use crate::browser::StaleCause;
use crate::observation::Observation;
use crate::{Error, Result};

/// The most fields one `browser_fill_form` fills.
const MAX_FIELDS: usize = 50;

impl ManagedBrowser {
    /// `browser_select_option`: the option with that value or label.
    pub(super) fn select_option(&self, a: &Args<'_>) -> Result<Value> {
        let t = a.target("target")?;
        let value = a.str("value")?;
        let (generation, reference) = self.locate(&t)?;
        let action = self.backend.form_input(FormInputArgs {
            operation_id: self.op(),
            generation,
            reference,
            value: value.to_string(),
        })?;
        self.after_action(action, Map::new())
    }

    /// `browser_check` (`want`) / `browser_uncheck`; `changed: false` when it already was.
    pub(super) fn check(&self, a: &Args<'_>, want: bool) -> Result<Value> {
        let t = a.target("target")?;
        let obs = self.observe()?;
        let (generation, reference) = self.resolve(&t, &obs)?;
        match self.set_checked(&obs, generation, &reference, want)? {
            Some(action) => self.after_action(action, Map::new()),
            None => {
                let mut out = self.page_view(None, None)?;
                out["changed"] = json!(false);
                Ok(out)
            }
        }
    }

    /// Clicks a checkbox or radio when its state differs from `want`; `None` when it already
    /// is. `TARGET_NOT_FOUND` for an element without a checked state.
    pub(super) fn set_checked(
        &self,
        obs: &Observation,
        generation: u64,
        reference: &str,
        want: bool,
    ) -> Result<Option<ActionResult>> {
        let control = Self::control(obs, generation, reference).ok_or(Error::StaleObservation {
            cause: StaleCause::GenerationChanged,
        })?;
        let Some(checked) = control.checked else {
            return Err(Error::TargetNotFound {
                reason: "the target is not a checkbox or radio".into(),
            });
        };
        if checked == want {
            return Ok(None);
        }
        Ok(Some(self.backend.page_click(ClickArgs {
            operation_id: self.op(),
            generation,
            reference: reference.to_string(),
        })?))
    }

    /// `browser_fill_form`: every field resolved on one observation before any is set; text
    /// typed, a checkbox or radio clicked to its value, a select's option picked. Stops after
    /// an action that opened a dialog.
    pub(super) fn fill_form(&self, a: &Args<'_>) -> Result<Value> {
        let (tool, obj) = (a.tool, a.obj);
        let Some(Value::Array(fields)) = obj.get("fields") else {
            return Err(bad(tool, "`fields` must be an array of {target, value}"));
        };
        if fields.is_empty() || fields.len() > MAX_FIELDS {
            return Err(bad(
                tool,
                format!("`fields` must have 1 to {MAX_FIELDS} entries"),
            ));
        }
        let mut parsed = Vec::with_capacity(fields.len());
        for (i, f) in fields.iter().enumerate() {
            let Value::Object(fo) = f else {
                return Err(bad(tool, format!("`fields[{i}]` must be an object")));
            };
            if fo.keys().any(|k| k != "target" && k != "value") {
                return Err(bad(
                    tool,
                    format!("`fields[{i}]` accepts only target and value"),
                ));
            }
            let t = match fo.get("target") {
                Some(Value::String(s)) => parse_target(s).ok_or_else(|| {
                    bad(
                        tool,
                        format!(
                            "`fields[{i}].target` must be a ref (e5) or css=…, role=… or text=…"
                        ),
                    )
                })?,
                _ => return Err(bad(tool, format!("`fields[{i}].target` must be a string"))),
            };
            let value = match fo.get("value") {
                Some(Value::String(s)) if s.chars().count() <= MAX_TEXT => s.clone(),
                Some(Value::Bool(v)) => v.to_string(),
                _ => {
                    return Err(bad(
                        tool,
                        format!("`fields[{i}].value` must be a string or a boolean"),
                    ))
                }
            };
            parsed.push((t, value));
        }
        let obs = self.observe()?;
        let mut resolved = Vec::with_capacity(parsed.len());
        for (i, (t, value)) in parsed.iter().enumerate() {
            let (generation, reference) = self.resolve(t, &obs).map_err(|e| match e {
                Error::TargetNotFound { reason } => Error::TargetNotFound {
                    reason: format!("fields[{i}]: {reason}"),
                },
                other => other,
            })?;
            resolved.push((generation, reference, value));
        }
        let mut last = None;
        for (i, (generation, reference, value)) in resolved.into_iter().enumerate() {
            let control =
                Self::control(&obs, generation, &reference).ok_or(Error::StaleObservation {
                    cause: StaleCause::GenerationChanged,
                })?;
            let action = if control.checked.is_some() {
                let want = match value.as_str() {
                    "true" | "on" | "checked" => true,
                    "false" | "off" | "unchecked" => false,
                    _ => {
                        return Err(bad(
                            tool,
                            format!(
                                "`fields[{i}].value` must be true or false for a checkbox or radio"
                            ),
                        ))
                    }
                };
                self.set_checked(&obs, generation, &reference, want)?
            } else if control.editable {
                Some(self.backend.page_type(TypeArgs {
                    operation_id: self.op(),
                    generation,
                    reference,
                    text: value.clone(),
                    submit: false,
                })?)
            } else {
                Some(self.backend.form_input(FormInputArgs {
                    operation_id: self.op(),
                    generation,
                    reference,
                    value: value.clone(),
                })?)
            };
            if let Some(a) = action {
                let dialog = a.dialog.is_some();
                last = Some(a);
                if dialog {
                    break;
                }
            }
        }
        let mut extra = Map::new();
        extra.insert("filled".into(), json!(fields.len()));
        match last {
            Some(a) => self.after_action(a, extra),
            None => {
                let mut out = self.page_view(None, None)?;
                out["filled"] = json!(fields.len());
                Ok(out)
            }
        }
    }
}
