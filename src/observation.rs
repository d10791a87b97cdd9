//! The page observation of a browser tab (R-BRW-OBS), shared by the browser backends and the
//! step-command grammar.
//!
//! This module owns the data shape and its JSON form only (camelCase, exactly as SPEC §6
//! writes it). It never reads a page, never holds a value of a sensitive field, and never
//! decides anything: deciding is the grammar's and the task controller's work.

use serde::{Deserialize, Serialize};

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
    /// Bounded visible text of the page (untrusted page content).
    #[serde(default)]
    pub text: String,
    /// A JavaScript dialog open in the tab; while it is, the page cannot be read (no
    /// controls) and every action but handling it is refused. Absent when none is open.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dialog: Option<Dialog>,
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
