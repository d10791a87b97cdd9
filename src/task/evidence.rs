//! Browser evidence of a task (issue 21 item 7, R-TSK-VER; seed 003 "Parent verification and
//! recovery", "Mutation checkpoints and crash inspection"): what [`super::Tasks::evidence`]
//! returns and the pure parts of making it.
//!
//! This module owns the [`Evidence`] shape, the bounded map of evidence ids
//! ([`EvidenceIds`]: id → task, request, kind and expiry on the gateway's clock, five minutes,
//! for issue 26's `verify` to look up), the privacy rules of an observation shown as evidence
//! ([`fresh_view`], [`recorded_view`]) and the one read of the receipts that recorded evidence
//! needs ([`read_recorded`], read-only). Which backend a fresh inspection uses is the service's.
//!
//! Evidence is page content: the observation travels inside the one untrusted envelope, whole
//! ([`crate::untrusted::wrap_value`] under [`crate::untrusted::UNTRUSTED_KEY`]). A sensitive
//! field's value (a password, a card number, a one-time code: flagged `sensitive` by the
//! backend, or named so) never appears; another field's value appears bounded, and only in
//! fresh evidence (receipts keep no field values). It must never write anything, never change
//! a task's state (an interrupted or unknown request stays what it is: evidence is never
//! permission to act), never replay an operation, and never log any of it.

use super::{DispatchedMutation, TaskOwner, TaskState};
use crate::browser::OperationRecord;
use crate::clock::Instant;
use crate::observation::{Control, Observation};
use crate::store::db::{dbp, Db};
use rusqlite::OptionalExtension;
use serde::Serialize;
use serde_json::Value;
use std::collections::{HashMap, VecDeque};
use std::time::Duration;

/// How long an evidence id stays valid, on the gateway's clock (seed 003: proof expires after
/// five minutes).
pub const EVIDENCE_TTL: Duration = Duration::from_secs(5 * 60);
/// The most evidence ids a gateway keeps at once (the oldest go first).
pub const MAX_EVIDENCE_IDS: usize = 4096;
/// The most evidence ids of one principal kept at once (its oldest go first), so one caller
/// cannot push everyone else's out.
pub const MAX_EVIDENCE_IDS_PER_PRINCIPAL: usize = 256;
/// The most characters of page text an observation shown as evidence keeps.
pub const EVIDENCE_TEXT_CHARS: usize = 4000;
/// The most controls it keeps.
pub const EVIDENCE_CONTROLS: usize = 200;
/// The most characters of one (non-sensitive) field's value it shows.
pub const EVIDENCE_VALUE_CHARS: usize = 200;
/// The most characters of its URL (without query and fragment) it shows.
pub const EVIDENCE_URL_CHARS: usize = 2048;

/// Where the observation of an [`Evidence`] comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EvidenceSource {
    /// The last observation the task's receipts kept (no field values).
    Recorded,
    /// A new observation of the task's page, taken for this call.
    Fresh,
}

/// A bounded, untrusted observation of a task's page with an id (issue 21 item 7, R-TSK-VER):
/// what [`super::Tasks::evidence`] returns.
///
/// `untrusted_content` is page content (`{"notice", "data": observation | null}`): hand it to a
/// model only as data, never as instructions, and never log it. Everything beside it is the
/// gateway's own. Evidence changes nothing: an in-doubt operation stays in doubt and an
/// interrupted request stays interrupted, whatever the page shows.
#[derive(Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Evidence {
    /// The evidence id (`ev_` + 24 hex), valid for [`EVIDENCE_TTL`] on the gateway's clock,
    /// tied to this task and request.
    pub evidence_id: String,
    /// The task.
    pub task_id: String,
    /// The task's latest request (1-based; 0 before its first), the one this evidence is tied
    /// to.
    pub request: u32,
    /// That request's receipt state (`running`, `done`, `not_done`, `unknown`, `interrupted`,
    /// …), when there is one.
    pub request_state: Option<String>,
    /// The task's state when the evidence was taken.
    pub task_state: TaskState,
    /// An operation of the task is in doubt: only `operation_status` or a person resolves it;
    /// evidence never does.
    pub in_doubt: bool,
    /// `recorded` or `fresh`.
    pub source: EvidenceSource,
    /// When the observation was taken (ms since the Unix epoch): fresh, when it was read;
    /// recorded, when the operation it was read right after was dispatched; `None` without an
    /// observation.
    pub observed_at: Option<i64>,
    /// When the evidence id stops being valid (ms since the Unix epoch, the gateway's clock).
    pub expires_at: i64,
    /// The last page mutation prepared for dispatch (its checkpoint committed): not proof that
    /// the browser completed it.
    pub last_dispatched_mutation: Option<DispatchedMutation>,
    /// Fresh evidence only: what the browser's own record says about that operation (the
    /// receipt's last operation only, read, never replayed); `unknown` when nobody can say.
    pub operation_status: Option<OperationRecord>,
    /// The observation, whole, inside the untrusted envelope: `{"notice", "data"}` with `data`
    /// the observation (or `null` when the receipts kept none).
    pub untrusted_content: Value,
}

impl std::fmt::Debug for Evidence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The observation is page content: never in debug output.
        f.debug_struct("Evidence")
            .field("evidence_id", &self.evidence_id)
            .field("task_id", &self.task_id)
            .field("request", &self.request)
            .field("request_state", &self.request_state)
            .field("task_state", &self.task_state)
            .field("in_doubt", &self.in_doubt)
            .field("source", &self.source)
            .field("last_dispatched_mutation", &self.last_dispatched_mutation)
            .field("operation_status", &self.operation_status)
            .finish_non_exhaustive()
    }
}

impl Evidence {
    /// The observation inside the envelope (`None` when there is none): page content.
    pub fn observation(&self) -> Option<&Value> {
        self.untrusted_content.get("data").filter(|v| !v.is_null())
    }
}

/// What an evidence id stands for: issue 26's `verify` looks it up (crate-internal).
#[doc(hidden)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvidenceRecord {
    /// The task.
    pub task_id: String,
    /// Its owner.
    pub owner: TaskOwner,
    /// The task's latest request when the evidence was taken.
    pub request: u32,
    /// A fresh inspection (not the recorded observation).
    pub fresh: bool,
    /// The receipt's last dispatched operation then.
    pub operation: Option<String>,
    /// When it stops being valid (the gateway's clock).
    pub expires: Instant,
}

/// The evidence ids a gateway issued (bounded: [`MAX_EVIDENCE_IDS`], and
/// [`MAX_EVIDENCE_IDS_PER_PRINCIPAL`] of one principal; the oldest go first). Every entry
/// lives [`EVIDENCE_TTL`], so insertion order is expiry order.
#[derive(Debug, Default)]
pub(crate) struct EvidenceIds {
    records: HashMap<String, EvidenceRecord>,
    order: VecDeque<String>,
    per_principal: HashMap<String, usize>,
}

impl EvidenceIds {
    /// Keeps `record` under `id` (made by the caller from the secure random source).
    pub(crate) fn insert(&mut self, id: String, record: EvidenceRecord, now: Instant) {
        self.prune(now);
        let principal = record.owner.principal_id.clone();
        if self.per_principal.get(&principal).copied().unwrap_or(0)
            >= MAX_EVIDENCE_IDS_PER_PRINCIPAL
        {
            let oldest = self.order.iter().position(|k| {
                self.records
                    .get(k)
                    .is_some_and(|r| r.owner.principal_id == principal)
            });
            if let Some(i) = oldest {
                if let Some(k) = self.order.remove(i) {
                    self.forget(&k);
                }
            }
        }
        while self.order.len() >= MAX_EVIDENCE_IDS {
            match self.order.pop_front() {
                Some(k) => self.forget(&k),
                None => break,
            }
        }
        *self.per_principal.entry(principal).or_insert(0) += 1;
        self.order.push_back(id.clone());
        self.records.insert(id, record);
    }

    /// The record of `id` while it is valid at `now`; `None` for an unknown, evicted or
    /// expired id.
    pub(crate) fn lookup(&self, id: &str, now: Instant) -> Option<EvidenceRecord> {
        self.records.get(id).filter(|r| now < r.expires).cloned()
    }

    /// The record of `id` whether or not it is still valid (a verification tells an expired id
    /// from one never issued while the id is still kept); `None` for an unknown or evicted id.
    pub(crate) fn lookup_kept(&self, id: &str) -> Option<EvidenceRecord> {
        self.records.get(id).cloned()
    }

    /// How many ids are kept.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.records.len()
    }

    /// Drops the expired entries (they are at the front).
    fn prune(&mut self, now: Instant) {
        while let Some(k) = self.order.front() {
            let expired = self.records.get(k).is_none_or(|r| now >= r.expires);
            if !expired {
                break;
            }
            if let Some(k) = self.order.pop_front() {
                self.forget(&k);
            }
        }
    }

    fn forget(&mut self, id: &str) {
        if let Some(r) = self.records.remove(id) {
            if let Some(n) = self.per_principal.get_mut(&r.owner.principal_id) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    self.per_principal.remove(&r.owner.principal_id);
                }
            }
        }
    }
}

/// What the receipts say for recorded evidence (and the request every evidence is tied to).
#[derive(Debug, Default)]
pub(crate) struct Recorded {
    /// The task's latest request (0 before its first).
    pub request: u32,
    /// Its receipt state.
    pub request_state: Option<String>,
    /// The last kept observation (stored JSON) and when its operation was dispatched.
    pub observation: Option<(String, i64)>,
    /// An operation of the task is in doubt.
    pub in_doubt: bool,
}

/// Reads what recorded evidence needs from the receipts of task `id` (read-only).
pub(crate) fn read_recorded(c: &dyn Db, id: &str) -> rusqlite::Result<Recorded> {
    let latest: Option<(u32, String)> = c
        .query_row(
            "SELECT seq, state FROM task_requests WHERE task_id = ?1 ORDER BY seq DESC LIMIT 1",
            dbp![id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    let observation: Option<(String, i64)> = c
        .query_row(
            "SELECT observation, dispatched_ms FROM task_operations
             WHERE task_id = ?1 AND observation IS NOT NULL
             ORDER BY request_seq DESC, rowid DESC LIMIT 1",
            dbp![id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    Ok(Recorded {
        request: latest.as_ref().map_or(0, |l| l.0),
        request_state: latest.map(|l| l.1),
        observation,
        in_doubt: super::records::in_doubt(c, id)?,
    })
}

/// A field whose value must never be shown: flagged by the backend, a password role, or named
/// like a secret (a backend that forgot the flag: the same words the local browser's page
/// script looks for).
fn is_sensitive(c: &Control) -> bool {
    if c.sensitive || c.role.eq_ignore_ascii_case("password") {
        return true;
    }
    let name = c.name.to_lowercase();
    const PHRASES: [&str; 16] = [
        "password",
        "passwd",
        "passcode",
        "pwd",
        "card number",
        "cardnumber",
        "card no",
        "cvv",
        "cvc",
        "security code",
        "card code",
        "one-time",
        "one time",
        "verification code",
        "auth code",
        "2fa",
    ];
    const WORDS: [&str; 7] = ["otp", "pin", "iban", "ssn", "mfa", "csc", "cc"];
    PHRASES.iter().any(|p| name.contains(p))
        || name
            .split(|ch: char| !ch.is_alphanumeric())
            .any(|w| WORDS.contains(&w))
}

/// `s` cut to `max` characters; whether it was cut.
fn bounded(s: &str, max: usize) -> (String, bool) {
    match s.char_indices().nth(max) {
        Some((i, _)) => (s[..i].to_string(), true),
        None => (s.to_string(), false),
    }
}

/// A URL as evidence shows it: without its query and fragment (a submitted form's values, a
/// password of a GET form among them, travel there), bounded.
fn shown_url(url: &str) -> (String, bool) {
    let end = url.find(['?', '#']).unwrap_or(url.len());
    bounded(&url[..end], EVIDENCE_URL_CHARS)
}

/// A new observation as fresh evidence shows it (JSON): bounded text, controls and URL; a
/// non-sensitive field's value bounded to [`EVIDENCE_VALUE_CHARS`] (`valueTruncated` when cut);
/// a sensitive field's value never (`valueHidden`), whatever the backend sent.
pub(crate) fn fresh_view(o: &Observation) -> Value {
    let mut shown = o.clone();
    let (url, url_cut) = shown_url(&o.url);
    shown.url = url;
    shown.truncated.url |= url_cut;
    let (text, text_cut) = bounded(&o.text, EVIDENCE_TEXT_CHARS);
    shown.text = text;
    shown.truncated.text |= text_cut;
    let (title, title_cut) = bounded(&o.title, 500);
    shown.title = title;
    shown.truncated.title |= title_cut;
    if shown.controls.len() > EVIDENCE_CONTROLS {
        shown.controls.truncate(EVIDENCE_CONTROLS);
        shown.truncated.controls = true;
    }
    // Only the containers of the controls shown, each bounded.
    shown.bound_containers();
    if let Some(d) = &mut shown.dialog {
        d.message = bounded(&d.message, 500).0;
    }
    // Per control: (hidden, cut) notes for the JSON below.
    let notes: Vec<(bool, bool)> = shown
        .controls
        .iter_mut()
        .map(|c| {
            c.name = bounded(&c.name, 200).0;
            if is_sensitive(c) {
                let had = c.value.take().is_some();
                c.sensitive = true;
                (had, false)
            } else if let Some(v) = c.value.take() {
                let (v, cut) = bounded(&v, EVIDENCE_VALUE_CHARS);
                c.value = Some(v);
                (false, cut)
            } else {
                (false, false)
            }
        })
        .collect();
    let mut json = serde_json::to_value(&shown).unwrap_or(Value::Null);
    if let Some(controls) = json.get_mut("controls").and_then(Value::as_array_mut) {
        for (c, (hidden, cut)) in controls.iter_mut().zip(notes) {
            if let Some(c) = c.as_object_mut() {
                if hidden {
                    c.insert("valueHidden".into(), Value::Bool(true));
                }
                if cut {
                    c.insert("valueTruncated".into(), Value::Bool(true));
                }
            }
        }
    }
    json
}

/// A kept observation (the stored JSON) as recorded evidence shows it: as the receipt kept it
/// (names, roles, refs, states, value lengths), with any field value a receipt written before
/// values were dropped might still hold taken out. Unreadable JSON shows as `null`.
pub(crate) fn recorded_view(stored: &str) -> Value {
    let mut v: Value = serde_json::from_str(stored).unwrap_or(Value::Null);
    if let Some(controls) = v.get_mut("controls").and_then(Value::as_array_mut) {
        for c in controls.iter_mut() {
            if let Some(c) = c.as_object_mut() {
                c.remove("value");
            }
        }
    }
    v
}

/// The fixed reason a failed inspection gives, by the code it failed with (never the failure's
/// own text).
pub(crate) fn inspection_reason(code: &str) -> &'static str {
    match code {
        "BROWSER_UNAVAILABLE" | "TAB_UNAVAILABLE" => "the task's browser is gone",
        "DEVICE_OFFLINE" | "DEVICE_CHANNEL_IO" => "the device is offline",
        "TAB_LEASE_HELD" => "the device's tab is leased (wait for the lease to expire)",
        "DEVICE_CONTROL_ELSEWHERE" | "DEVICE_CONTROL_REVOKED" | "DEVICE_CONTROL_NOT_HELD" => {
            "another conversation controls the device"
        }
        "DEVICE_NOT_PAIRED" => "the device is no longer paired",
        _ => "the task's browser could not be observed",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::{Clock, ManualClock};

    fn record(principal: &str, task: &str, expires: Instant) -> EvidenceRecord {
        EvidenceRecord {
            task_id: task.into(),
            owner: TaskOwner::new("a", principal, "c"),
            request: 1,
            fresh: true,
            operation: None,
            expires,
        }
    }

    // R-TSK-VER (issue 21 item 7): an evidence id is valid for five minutes on the gateway's
    // clock, then gone; unknown ids are never valid.
    #[test]
    fn r_tsk_ver_evidence_ids_expire_after_five_minutes_on_the_gateways_clock() {
        let clock = ManualClock::new();
        let mut ids = EvidenceIds::default();
        let t0 = clock.now();
        ids.insert("ev_1".into(), record("p", "t", t0 + EVIDENCE_TTL), t0);
        clock.advance(EVIDENCE_TTL - Duration::from_millis(1));
        assert_eq!(ids.lookup("ev_1", clock.now()).unwrap().task_id, "t");
        assert!(ids.lookup("ev_2", clock.now()).is_none());
        clock.advance(Duration::from_millis(1));
        assert!(ids.lookup("ev_1", clock.now()).is_none());
        // The next insert prunes it.
        let now = clock.now();
        ids.insert("ev_3".into(), record("p", "t", now + EVIDENCE_TTL), now);
        assert_eq!(ids.len(), 1);
    }

    // Bounded: one principal keeps at most its share (its oldest go), the gateway at most
    // MAX_EVIDENCE_IDS; another principal's ids survive a flood.
    #[test]
    fn r_tsk_ver_evidence_ids_are_bounded_per_principal_and_in_all() {
        let now = Instant::from_origin(Duration::from_secs(1));
        let exp = now + EVIDENCE_TTL;
        let mut ids = EvidenceIds::default();
        ids.insert("bob".into(), record("bob", "t2", exp), now);
        for i in 0..(MAX_EVIDENCE_IDS_PER_PRINCIPAL + 10) {
            ids.insert(format!("m{i}"), record("mallory", "t", exp), now);
        }
        assert!(ids.lookup("bob", now).is_some());
        assert!(ids.lookup("m0", now).is_none());
        assert!(ids
            .lookup(&format!("m{}", MAX_EVIDENCE_IDS_PER_PRINCIPAL + 9), now)
            .is_some());
        assert_eq!(ids.len(), MAX_EVIDENCE_IDS_PER_PRINCIPAL + 1);
        for i in 0..(MAX_EVIDENCE_IDS + 5) {
            ids.insert(format!("x{i}"), record(&format!("p{i}"), "t", exp), now);
        }
        assert_eq!(ids.len(), MAX_EVIDENCE_IDS);
        assert!(ids.lookup("bob", now).is_none(), "the oldest went first");
        assert!(ids.per_principal.values().sum::<usize>() == MAX_EVIDENCE_IDS);
    }

    // Privacy (issue 21 item 7, defect 7): a sensitive field's value never shows, whatever the
    // backend sent; a plain field's value shows bounded; text, controls and URL are bounded.
    #[test]
    fn r_tsk_ver_fresh_view_hides_sensitive_values_and_bounds_the_rest() {
        let mut o = Observation {
            url: "https://shop.example/pay?pw=hunter2#frag".into(),
            text: "x".repeat(EVIDENCE_TEXT_CHARS + 10),
            ..Observation::default()
        };
        let mut pw = Control::field("e1", "textbox", "Password", Some("hunter2"));
        pw.sensitive = false; // a backend that forgot the flag
        let mut flagged = Control::field("e2", "textbox", "Whatever", Some("s3cret"));
        flagged.sensitive = true;
        let pin = Control::field("e3", "textbox", "Card PIN", Some("1234"));
        let shipping = Control::field("e4", "textbox", "Shipping", Some("Ann"));
        let long = Control::field("e5", "textbox", "Notes", Some(&"n".repeat(500)));
        o.controls = vec![pw, flagged, pin, shipping, long];
        for i in 0..EVIDENCE_CONTROLS {
            o.controls
                .push(Control::new(&format!("b{i}"), "button", "B"));
        }
        let v = fresh_view(&o);
        let s = v.to_string();
        for secret in ["hunter2", "s3cret", "1234"] {
            assert!(!s.contains(secret), "{secret} leaked");
        }
        assert_eq!(v["url"], "https://shop.example/pay");
        assert_eq!(v["controls"][0]["valueHidden"], true);
        assert_eq!(v["controls"][0]["sensitive"], true);
        assert_eq!(v["controls"][3]["value"], "Ann", "a plain field shows");
        assert_eq!(
            v["controls"][4]["value"].as_str().unwrap().chars().count(),
            EVIDENCE_VALUE_CHARS
        );
        assert_eq!(v["controls"][4]["valueTruncated"], true);
        assert_eq!(v["controls"].as_array().unwrap().len(), EVIDENCE_CONTROLS);
        assert_eq!(v["truncated"]["controls"], true);
        assert_eq!(v["truncated"]["text"], true);
        assert_eq!(
            v["text"].as_str().unwrap().chars().count(),
            EVIDENCE_TEXT_CHARS
        );
    }

    #[test]
    fn r_tsk_ver_recorded_view_drops_any_value_a_receipt_still_held() {
        let v = recorded_view(
            r#"{"url":"https://a/","controls":[{"ref":"e1","value":"old","valueChars":3}]}"#,
        );
        assert!(v["controls"][0].get("value").is_none());
        assert_eq!(v["controls"][0]["valueChars"], 3);
        assert_eq!(recorded_view("not json"), Value::Null);
    }
}
