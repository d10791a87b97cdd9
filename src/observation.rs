//! The page observation of a browser tab (R-BRW-OBS), shared by the browser backends and the
//! step-command grammar.
//!
//! This module owns the data shape and its JSON form only (camelCase, exactly as SPEC §6
//! writes it), and the bounds of a control's enclosing container (issue 26: at most 32, name
//! and text cut, whoever sent them). It never reads a page, never holds a value of a sensitive
//! field, and never decides anything: deciding is the grammar's and the task controller's
//! work.

use serde::{Deserialize, Serialize};

/// The most containers one observation lists (R-BRW-OBS; more sets `truncated.containers`).
pub(crate) const MAX_CONTAINERS: usize = 32;
/// The most characters of a container's name.
pub(crate) const CONTAINER_NAME_CHARS: usize = 200;
/// The most characters of a container's text.
pub(crate) const CONTAINER_TEXT_CHARS: usize = 300;
/// The longest container id (`k12`, `f3k7`; anything longer is not one).
const CONTAINER_ID_CHARS: usize = 32;

/// One read of a tab: what the page offers right now, valid for one `generation`.
///
/// Refs (`e1`, `e2`, …) of [`Control`]s are valid for this generation only. A control inside
/// a cross-origin (out-of-process) iframe has its frame's number in page order in front:
/// `f1e3` is the third control of the first such frame, so it never collides with `e3`.
///
/// ```
/// use jevgate::observation::Observation;
/// let json = r#"{"generation":3,"url":"https://example.com/","title":"Example",
///   "navigation":{"canGoBack":true,"canGoForward":false},
///   "truncated":{"controls":false,"title":false,"url":false},
///   "focus":"e1","scroll":{"atTop":true,"atBottom":false},
///   "controls":[{"ref":"e1","role":"searchbox","name":"Search","value":"",
///     "editable":true,"searchLike":true,"sensitive":false,"actions":["type"]}],
///   "text":"Example Domain"}"#;
/// let obs: Observation = serde_json::from_str(json).unwrap();
/// assert_eq!(obs.controls[0].reference, "e1");
/// assert!(obs.navigation.unwrap().can_go_back);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Observation {
    /// The page generation this read belongs to; refs are valid for it only.
    pub generation: u64,
    /// The tab's URL (possibly cut, see [`Truncated::url`]).
    #[serde(default)]
    pub url: String,
    /// The page title (possibly cut, see [`Truncated::title`]).
    #[serde(default)]
    pub title: String,
    /// History availability; `None` when the backend does not report it (an extension older
    /// than 0.3.5), in which case keys, back/forward and search take the slower paths.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub navigation: Option<Navigation>,
    /// Which parts of this observation were cut to fit the limits.
    #[serde(default)]
    pub truncated: Truncated,
    /// The ref of the control that has keyboard focus, if any.
    #[serde(default)]
    pub focus: Option<String>,
    /// Where the page is scrolled.
    #[serde(default)]
    pub scroll: ScrollPosition,
    /// The interactive controls, in page order (iframes — cross-origin ones too, at the
    /// frame's place — and open shadow DOM included).
    #[serde(default)]
    pub controls: Vec<Control>,
    /// The dialogs and forms that enclose listed controls (at most 32; a control names its
    /// own in [`Control::container`]). Absent from the JSON when there are none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub containers: Vec<Container>,
    /// Bounded visible text of the page (untrusted page content).
    #[serde(default)]
    pub text: String,
    /// A JavaScript dialog open in the tab; while it is, the page cannot be read (no
    /// controls) and every action but handling it is refused. Absent when none is open.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dialog: Option<Dialog>,
    /// Keys the backend presses as discrete key actions (a computer helper's
    /// `capabilities.keys`, such as `backspace`). Absent when it names none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keys: Vec<String>,
}

impl Observation {
    /// The container (nearest enclosing open dialog, else form) of `control`, if it has one
    /// listed here.
    ///
    /// ```
    /// use jevgate::observation::Observation;
    /// let obs: Observation = serde_json::from_str(r#"{"generation":1,
    ///   "controls":[{"ref":"e1","role":"button","name":"Delete","container":"k1"},
    ///               {"ref":"e2","role":"link","name":"Home"}],
    ///   "containers":[{"id":"k1","kind":"dialog","name":"Delete account?",
    ///                  "text":"Delete account? This cannot be undone. Delete Cancel"}]}"#).unwrap();
    /// let k = obs.container_of(&obs.controls[0]).unwrap();
    /// assert_eq!((k.kind.as_str(), k.name.as_str()), ("dialog", "Delete account?"));
    /// assert!(obs.container_of(&obs.controls[1]).is_none());
    /// ```
    pub fn container_of(&self, control: &Control) -> Option<&Container> {
        let id = control.container.as_deref()?;
        self.containers.iter().find(|k| k.id == id)
    }

    /// Holds the containers to their bounds, whoever produced them (the page library, a
    /// paired worker): only containers a control names, each id once, valid ids and kinds,
    /// at most [`MAX_CONTAINERS`], names and texts cut to their lengths; a control naming a
    /// container not kept names none. Sets `truncated.containers` when something named was
    /// dropped. Linear in the observation.
    pub(crate) fn bound_containers(&mut self) {
        use std::collections::HashSet;
        if self.containers.is_empty() && self.controls.iter().all(|c| c.container.is_none()) {
            return;
        }
        let named: HashSet<&str> = self
            .controls
            .iter()
            .filter_map(|c| c.container.as_deref())
            .collect();
        let mut cut = false;
        let mut kept: Vec<Container> = Vec::new();
        let mut ids: HashSet<String> = HashSet::new();
        for mut k in std::mem::take(&mut self.containers) {
            if !named.contains(k.id.as_str()) {
                continue;
            }
            let valid = !k.id.is_empty()
                && k.id.len() <= CONTAINER_ID_CHARS
                && (k.kind == "dialog" || k.kind == "form");
            if !valid || ids.contains(&k.id) || kept.len() == MAX_CONTAINERS {
                cut |= kept.len() == MAX_CONTAINERS || !valid;
                continue;
            }
            clip(&mut k.name, CONTAINER_NAME_CHARS);
            clip(&mut k.text, CONTAINER_TEXT_CHARS);
            ids.insert(k.id.clone());
            kept.push(k);
        }
        for c in &mut self.controls {
            if c.container.as_ref().is_some_and(|id| !ids.contains(id)) {
                c.container = None;
                cut = true;
            }
        }
        self.containers = kept;
        self.truncated.containers |= cut;
    }
}

/// Cuts `s` to at most `max` characters.
fn clip(s: &mut String, max: usize) {
    if let Some((i, _)) = s.char_indices().nth(max) {
        s.truncate(i);
    }
}

/// The nearest enclosing open dialog (`dialog[open]`, `role=dialog`/`alertdialog`,
/// `aria-modal=true`), else form (`form`, `role=form`), of one or more listed controls: the
/// evidence of what pressing a control inside it means (untrusted page content). It never
/// holds a field's value: its text is the container's visible text without any form field.
///
/// ```
/// let k: jevgate::observation::Container = serde_json::from_str(
///     r#"{"id":"k1","kind":"form","name":"Payment","text":"Payment Card number Pay now"}"#).unwrap();
/// assert_eq!(serde_json::to_string(&k).unwrap(),
///     r#"{"id":"k1","kind":"form","name":"Payment","text":"Payment Card number Pay now"}"#);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Container {
    /// The container's id for this observation (`k1`, `k2`…; `f1k2` inside the first
    /// cross-origin iframe).
    pub id: String,
    /// `dialog` or `form`.
    pub kind: String,
    /// Its accessible name (`aria-label`, `aria-labelledby`, its first legend or heading), at
    /// most 200 characters.
    #[serde(default)]
    pub name: String,
    /// Its visible text, whitespace squashed, at most 300 characters.
    #[serde(default)]
    pub text: String,
}

/// An open JavaScript dialog (`alert`, `confirm`, `prompt`, `beforeunload`).
///
/// ```
/// let d = jevgate::observation::Dialog { kind: "confirm".into(), message: "Delete?".into() };
/// assert_eq!(serde_json::to_string(&d).unwrap(), r#"{"type":"confirm","message":"Delete?"}"#);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Dialog {
    /// `alert`, `confirm`, `prompt` or `beforeunload`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The dialog's message (untrusted page content, at most 500 characters).
    #[serde(default)]
    pub message: String,
}

/// Whether the tab has history entries to go to (R-BRW-OBS `navigation`).
///
/// ```
/// let n = jevgate::observation::Navigation { can_go_back: true, can_go_forward: false };
/// assert_eq!(serde_json::to_string(&n).unwrap(), r#"{"canGoBack":true,"canGoForward":false}"#);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Navigation {
    /// A back entry exists.
    pub can_go_back: bool,
    /// A forward entry exists.
    pub can_go_forward: bool,
}

/// Which parts of an observation were cut to fit the limits (R-BRW-OBS `truncated`).
///
/// ```
/// let t = jevgate::observation::Truncated::default();
/// assert_eq!(serde_json::to_string(&t).unwrap(), r#"{"controls":false,"title":false,"url":false}"#);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Truncated {
    /// The control list is partial (OBSERVATION_TRUNCATED): over the budget, or a frame whose
    /// content could not be reached (a sandboxed or unattachable cross-origin iframe).
    pub controls: bool,
    /// The title was cut.
    pub title: bool,
    /// The URL was cut.
    pub url: bool,
    /// The page text was cut to its budget (absent from the JSON when not).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub text: bool,
    /// Containers were left out (more than 32, or ones a backend sent that could not be
    /// kept); controls inside them name none (absent from the JSON when not).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub containers: bool,
}

/// Where the page is scrolled (R-BRW-OBS `scroll`).
///
/// ```
/// let s = jevgate::observation::ScrollPosition { at_top: true, at_bottom: false };
/// assert_eq!(serde_json::to_string(&s).unwrap(), r#"{"atTop":true,"atBottom":false}"#);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ScrollPosition {
    /// Nothing more to scroll up.
    pub at_top: bool,
    /// Nothing more to scroll down.
    pub at_bottom: bool,
}

/// One interactive control of the page (R-BRW-OBS `controls[]`).
///
/// ```
/// use jevgate::observation::Control;
/// let c = Control::new("e7", "button", "Sign in");
/// assert_eq!(
///     serde_json::to_string(&c).unwrap(),
///     r#"{"ref":"e7","role":"button","name":"Sign in","editable":false,"searchLike":false,"sensitive":false,"actions":["click"]}"#
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Control {
    /// The control's ref (`e1`, `e2`…; `f1e2` inside the first cross-origin iframe), valid for
    /// the observation's generation only.
    #[serde(rename = "ref")]
    pub reference: String,
    /// Accessibility role (`button`, `link`, `textbox`, `searchbox`, `combobox`, …).
    #[serde(default)]
    pub role: String,
    /// Accessible name (the label a person sees).
    #[serde(default)]
    pub name: String,
    /// The current value of a field; never present for a sensitive field, and absent when
    /// the backend could not report it whole.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// Text can be typed into it.
    #[serde(default)]
    pub editable: bool,
    /// It looks like a search field (role searchbox, type=search, a search label…).
    #[serde(default)]
    pub search_like: bool,
    /// A password, credit-card or one-time-code field: its value is never reported.
    #[serde(default)]
    pub sensitive: bool,
    /// What can be done with it (`click`, `type`, `select`, `press`, …).
    #[serde(default)]
    pub actions: Vec<String>,
    /// For checkboxes, radios and switches: whether it is checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checked: Option<bool>,
    /// The control is disabled (it has no actions).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub disabled: bool,
    /// The id of its nearest enclosing container (see [`Observation::container_of`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,
    /// A desktop menu-bar command's place: the names of the menus it is in (`Edit` for
    /// Edit → Copy; empty for a menu-bar title). Absent for every other control.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub menu: Option<String>,
}

impl Control {
    /// A clickable, non-editable control with the given ref, role and name.
    ///
    /// ```
    /// let c = jevgate::observation::Control::new("e1", "link", "Home");
    /// assert_eq!(c.actions, vec!["click".to_string()]);
    /// ```
    pub fn new(reference: &str, role: &str, name: &str) -> Control {
        Control {
            reference: reference.to_string(),
            role: role.to_string(),
            name: name.to_string(),
            value: None,
            editable: false,
            search_like: false,
            sensitive: false,
            actions: vec!["click".to_string()],
            checked: None,
            disabled: false,
            container: None,
            menu: None,
        }
    }

    /// An editable text field with the given ref, role, name and value.
    ///
    /// ```
    /// let f = jevgate::observation::Control::field("e2", "textbox", "Name", Some("Ann"));
    /// assert!(f.editable && f.value.as_deref() == Some("Ann"));
    /// ```
    pub fn field(reference: &str, role: &str, name: &str, value: Option<&str>) -> Control {
        Control {
            reference: reference.to_string(),
            role: role.to_string(),
            name: name.to_string(),
            value: value.map(str::to_string),
            editable: true,
            search_like: false,
            sensitive: false,
            actions: vec!["click".to_string(), "type".to_string()],
            checked: None,
            disabled: false,
            container: None,
            menu: None,
        }
    }

    /// The control can be clicked or pressed.
    ///
    /// ```
    /// assert!(jevgate::observation::Control::new("e1", "button", "OK").is_pressable());
    /// ```
    pub fn is_pressable(&self) -> bool {
        self.actions.iter().any(|a| a == "click" || a == "press")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An observation of a page without dialogs or forms, as JSON from before containers.
    const OLD: &str = r#"{"generation":3,"url":"https://example.com/","title":"Example","navigation":{"canGoBack":true,"canGoForward":false},"truncated":{"controls":false,"title":false,"url":false},"focus":"e1","scroll":{"atTop":true,"atBottom":false},"controls":[{"ref":"e1","role":"searchbox","name":"Search","value":"","editable":true,"searchLike":true,"sensitive":false,"actions":["type"]}],"text":"Example Domain"}"#;

    // R-BRW-OBS (issue 26 slice A): JSON without containers parses and prints byte for byte
    // as before; with them it round-trips and the control finds its container.
    #[test]
    fn r_brw_obs_containers_are_optional_and_round_trip() {
        let old: Observation = serde_json::from_str(OLD).unwrap();
        assert!(old.containers.is_empty() && old.controls[0].container.is_none());
        assert!(!old.truncated.containers);
        assert_eq!(serde_json::to_string(&old).unwrap(), OLD);

        let mut new = old.clone();
        new.controls[0].container = Some("k1".into());
        new.containers.push(Container {
            id: "k1".into(),
            kind: "form".into(),
            name: "Find".into(),
            text: "Find Search Go".into(),
        });
        new.truncated.containers = true;
        let json = serde_json::to_string(&new).unwrap();
        assert!(json.contains(r#""container":"k1""#), "{json}");
        assert!(
            json.contains(
                r#""containers":[{"id":"k1","kind":"form","name":"Find","text":"Find Search Go"}]"#
            ),
            "{json}"
        );
        assert!(json.contains(r#""containers":true"#), "{json}");
        let back: Observation = serde_json::from_str(&json).unwrap();
        assert_eq!(back, new);
        assert_eq!(back.container_of(&back.controls[0]).unwrap().name, "Find");
        // A container without name or text parses (both default to empty).
        let bare: Container = serde_json::from_str(r#"{"id":"k2","kind":"dialog"}"#).unwrap();
        assert!(bare.name.is_empty() && bare.text.is_empty());
    }

    // R-BRW-OBS, issue 26 slice A: a backend (a paired worker among them) that sends 10,000
    // containers, 1 MB of text, bad ids and kinds and dangling references gets them bounded:
    // at most 32 containers, names ≤ 200 and texts ≤ 300 characters, references only to kept
    // containers, the cut said in `truncated.containers`.
    #[test]
    fn r_brw_obs_containers_are_bounded_whatever_a_backend_sends() {
        let mut o = Observation::default();
        // 1 MB of text (and of name) in each of the first 40; 10,000 in all.
        let big = "é".repeat(1 << 19);
        for i in 0..10_000 {
            let text = if i < 40 { big.clone() } else { "x".repeat(400) };
            o.containers.push(Container {
                id: format!("k{i}"),
                kind: if i == 1 {
                    "region".into()
                } else {
                    "dialog".into()
                },
                name: text.clone(),
                text,
            });
            let mut c = Control::new(&format!("e{i}"), "button", "B");
            c.container = Some(format!("k{i}"));
            o.controls.push(c);
        }
        // A duplicate id, an id too long, a container nobody names, a dangling reference.
        o.containers.insert(
            0,
            Container {
                id: "k0".into(),
                kind: "form".into(),
                ..Container::default()
            },
        );
        o.containers.push(Container {
            id: "unnamed".into(),
            kind: "form".into(),
            ..Container::default()
        });
        o.controls[2].container = Some("x".repeat(100));
        o.controls[3].container = Some("k-missing".into());
        o.bound_containers();
        assert_eq!(o.containers.len(), MAX_CONTAINERS);
        assert!(o.truncated.containers);
        assert_eq!(
            o.containers[0].kind, "form",
            "the first of a duplicated id is kept"
        );
        assert!(o
            .containers
            .iter()
            .all(|k| k.kind == "dialog" || k.kind == "form"));
        assert!(o
            .containers
            .iter()
            .all(|k| k.id != "k1" && k.id != "unnamed"));
        for k in &o.containers[1..] {
            assert!(k.name.len() <= 2 * CONTAINER_NAME_CHARS);
            assert_eq!(k.name.chars().count(), CONTAINER_NAME_CHARS);
            assert_eq!(k.text.chars().count(), CONTAINER_TEXT_CHARS);
        }
        for c in &o.controls {
            if let Some(id) = &c.container {
                assert!(o.container_of(c).is_some(), "{id} dangles");
            }
        }
        assert!(o.controls[1].container.is_none() && o.controls[2].container.is_none());
        assert!(o.controls[3].container.is_none() && o.controls[9_999].container.is_none());
        assert_eq!(
            o.controls.iter().filter(|c| c.container.is_some()).count(),
            32
        );

        // Within the bounds nothing changes and nothing is said to be cut.
        let mut fine = Observation::default();
        let mut c = Control::new("e1", "button", "Delete");
        c.container = Some("k1".into());
        fine.controls.push(c);
        fine.containers.push(Container {
            id: "k1".into(),
            kind: "dialog".into(),
            name: "Delete account?".into(),
            text: "This cannot be undone.".into(),
        });
        let before = fine.clone();
        fine.bound_containers();
        assert_eq!(fine, before);
    }
}
