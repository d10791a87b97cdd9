//! `resolve` (R-GRM-RESOLVE): one intent on one observation, for the browser or the computer
//! adapter, to exactly one primitive, a decision request or a final outcome code.
//!
//! This module owns the mapping rules only. It never dispatches, never retries, never reads
//! a page and never chooses between several plausible controls: two matches or none go to a
//! decision. It never reads or returns the value of a sensitive field.

use serde::Serialize;

use super::address::typed_address;
use super::intent::{CalcKey, HistoryDirection, Intent, Key, KeypadKey, ScrollDirection};
use crate::observation::{Control, Observation};

/// Which adapter runs the command.
///
/// ```
/// use jevgate::grammar::Adapter;
/// assert_ne!(Adapter::Browser, Adapter::Computer);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Adapter {
    /// A Remote Browser tab (one user-approved tab; primitives of SPEC §6 R-BRW-ACT).
    Browser,
    /// Computer Use (a desktop helper's accessibility tree of the front application).
    Computer,
}

/// One action to dispatch, named after the browser primitives (R-BRW-ACT); the computer
/// adapter runs the equivalent desktop action.
///
/// ```
/// use jevgate::grammar::Primitive;
/// let p = Primitive::Keypress { key: jevgate::grammar::Key::Enter, count: 1 };
/// assert_eq!(serde_json::to_string(&p).unwrap(), r#"{"primitive":"keypress","key":"Enter","count":1}"#);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "primitive", rename_all = "snake_case")]
pub enum Primitive {
    /// `page_scroll(direction)` with the observed generation.
    Scroll {
        /// Which way.
        direction: ScrollDirection,
    },
    /// `page_keypress(key, count)` (native key codes).
    Keypress {
        /// The key.
        key: Key,
        /// How many presses.
        count: u32,
    },
    /// `tab_history(back|forward)`.
    History {
        /// Which way.
        direction: HistoryDirection,
    },
    /// `page_type(ref, text, submit)`: text (and Enter when `submit`) under one operation.
    Type {
        /// The field's ref.
        target: String,
        /// The text to type.
        text: String,
        /// Press Enter after the text.
        submit: bool,
    },
    /// `tab_navigate(url)` in the bound tab.
    Navigate {
        /// The URL to open.
        url: String,
    },
    /// Click or press one control (a menu command, a keypad button).
    Press {
        /// The control's ref.
        target: String,
    },
    /// Press keypad keys one by one (a number's digits, calculator keys); each key is matched
    /// again on a fresh observation after the previous press settles ([`keypad_key`] does the
    /// matching). Every key had its one button on the observation this was resolved on.
    PressKeys {
        /// The keys, in order.
        keys: Vec<KeypadKey>,
    },
    /// Erase `count` characters at the end of a field by rewriting its value to `value`.
    Erase {
        /// The field's ref.
        target: String,
        /// How many characters go.
        count: u32,
        /// The field's value without them.
        value: String,
    },
}

/// A decision (Jev question) the command needs, with what it may choose from.
///
/// ```
/// use jevgate::grammar::DecisionRequest;
/// let d = DecisionRequest::default();
/// assert!(d.options.is_empty() && !d.choose_field);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct DecisionRequest {
    /// The refs offered, in page order.
    pub options: Vec<String>,
    /// The decision only chooses which field the text goes into.
    pub choose_field: bool,
    /// The text to enter should a field be chosen (the X of `ค้นหา X` / `type X`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text_offer: Option<String>,
    /// Press Enter after the text (a search).
    pub submit: bool,
    /// A text field has focus: the whole command is also offered as text to type.
    pub offer_command_text: bool,
}

/// A final outcome: nothing is dispatched and the command reports this code.
///
/// ```
/// use jevgate::grammar::Outcome;
/// assert_eq!(Outcome::ScrollLimit.code(), "SCROLL_LIMIT");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Outcome {
    /// A new tab or window would widen the approved scope (browser).
    NewTabOutOfScope,
    /// No history entry in that direction.
    HistoryUnavailable,
    /// Already at the top or bottom.
    ScrollLimit,
    /// The backend cannot press keys (no `navigation` in the observation: extension < 0.3.5).
    KeyUnsupported,
    /// The focused field is empty.
    NothingToErase,
    /// The field's value is not known whole (sensitive, not reported, or ambiguous field).
    EraseUnavailable,
    /// The address cannot be opened.
    NavigationUnresolved,
}

impl Outcome {
    /// The stable code string.
    ///
    /// ```
    /// assert_eq!(jevgate::grammar::Outcome::NewTabOutOfScope.code(), "NEW_TAB_OUT_OF_SCOPE");
    /// ```
    pub fn code(self) -> &'static str {
        match self {
            Outcome::NewTabOutOfScope => "NEW_TAB_OUT_OF_SCOPE",
            Outcome::HistoryUnavailable => "HISTORY_UNAVAILABLE",
            Outcome::ScrollLimit => "SCROLL_LIMIT",
            Outcome::KeyUnsupported => "KEY_UNSUPPORTED",
            Outcome::NothingToErase => "NOTHING_TO_ERASE",
            Outcome::EraseUnavailable => "ERASE_UNAVAILABLE",
            Outcome::NavigationUnresolved => "NAVIGATION_UNRESOLVED",
        }
    }
}

/// What to do with an intent on the observed page.
///
/// ```
/// use jevgate::grammar::{Outcome, Resolution};
/// assert_eq!(Resolution::Outcome(Outcome::ScrollLimit).outcome_code(), Some("SCROLL_LIMIT"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "resolution", content = "detail", rename_all = "snake_case")]
pub enum Resolution {
    /// Dispatch exactly this primitive, without a decision.
    Act(Primitive),
    /// Ask one decision over the observed controls.
    Decide(DecisionRequest),
    /// Dispatch nothing; the command settles with this code.
    Outcome(Outcome),
}

impl Resolution {
    /// The outcome code, when this is a final outcome.
    ///
    /// ```
    /// use jevgate::grammar::{Resolution, DecisionRequest};
    /// assert_eq!(Resolution::Decide(DecisionRequest::default()).outcome_code(), None);
    /// ```
    pub fn outcome_code(&self) -> Option<&'static str> {
        match self {
            Resolution::Outcome(o) => Some(o.code()),
            _ => None,
        }
    }
}

/// Maps `intent` on `observation` for `adapter` (R-GRM-RESOLVE).
///
/// Browser: `NewTab`/`NewWindow` → `NEW_TAB_OUT_OF_SCOPE`; `History` without an entry →
/// `HISTORY_UNAVAILABLE`; `Scroll` at the limit → `SCROLL_LIMIT`; keys without
/// `navigation` → `KEY_UNSUPPORTED`; `Search` into the only search-like field →
/// `page_type(submit)`, with several editable fields → a decision choosing the field.
/// Computer: digits and calculator keys need a keypad (each digit 0–9 shown exactly once) and
/// press buttons; `ลบ` erases in a focused text field and presses Subtract only when no Delete
/// control could be meant; while a text field has focus, words are text.
///
/// ```
/// use jevgate::grammar::{parse_command, resolve, Adapter, Outcome, Primitive, Resolution};
/// use jevgate::observation::{Control, Navigation, Observation};
///
/// let mut page = Observation::default();
/// page.navigation = Some(Navigation { can_go_back: false, can_go_forward: false });
/// let mut search = Control::field("e1", "searchbox", "Search", Some(""));
/// search.search_like = true;
/// page.controls.push(search);
///
/// assert_eq!(
///     resolve(&parse_command("back"), &page, Adapter::Browser),
///     Resolution::Outcome(Outcome::HistoryUnavailable)
/// );
/// assert_eq!(
///     resolve(&parse_command("ค้นหา แมว"), &page, Adapter::Browser),
///     Resolution::Act(Primitive::Type { target: "e1".into(), text: "แมว".into(), submit: true })
/// );
/// ```
pub fn resolve(intent: &Intent, observation: &Observation, adapter: Adapter) -> Resolution {
    match adapter {
        Adapter::Browser => browser(intent, observation),
        Adapter::Computer => computer(intent, observation),
    }
}

// ---------------------------------------------------------------- shared helpers

fn act(p: Primitive) -> Resolution {
    Resolution::Act(p)
}

fn all_controls(
    obs: &Observation,
    text_offer: Option<&str>,
    offer_command_text: bool,
) -> Resolution {
    Resolution::Decide(DecisionRequest {
        options: obs.controls.iter().map(|c| c.reference.clone()).collect(),
        choose_field: false,
        text_offer: text_offer.map(str::to_string),
        submit: false,
        offer_command_text,
    })
}

fn typeable(c: &Control) -> bool {
    c.editable && !c.sensitive
}

/// A decision choosing among the editable fields, or over all controls when there are none.
fn choose_field(obs: &Observation, text: &str, submit: bool, fields: &[&Control]) -> Resolution {
    if fields.is_empty() {
        let mut all = all_controls(obs, Some(text), false);
        if let Resolution::Decide(d) = &mut all {
            d.submit = submit;
        }
        return all;
    }
    Resolution::Decide(DecisionRequest {
        options: fields.iter().map(|c| c.reference.clone()).collect(),
        choose_field: true,
        text_offer: Some(text.to_string()),
        submit,
        offer_command_text: false,
    })
}

fn focused(obs: &Observation) -> Option<&Control> {
    let focus = obs.focus.as_deref()?;
    obs.controls.iter().find(|c| c.reference == focus)
}

/// The field the keyboard is in: the focused editable control, or (when the helper reports
/// focus on the static text inside a field) the one editable field holding exactly that
/// text. `Err(())` when two fields hold that text.
fn text_focus(obs: &Observation) -> Result<Option<&Control>, ()> {
    let Some(f) = focused(obs) else {
        return Ok(None);
    };
    if f.editable {
        return Ok(Some(f));
    }
    if !is_static_text(&f.role) || f.name.is_empty() {
        return Ok(None);
    }
    let mut holders = obs
        .controls
        .iter()
        .filter(|c| c.editable && c.value.as_deref() == Some(f.name.as_str()));
    match (holders.next(), holders.next()) {
        (Some(one), None) => Ok(Some(one)),
        (Some(_), Some(_)) => Err(()),
        (None, _) => Ok(None),
    }
}

fn role_key(role: &str) -> String {
    let mut r: String = role
        .chars()
        .filter(|c| c.is_alphanumeric())
        .map(|c| c.to_ascii_lowercase())
        .collect();
    if let Some(stripped) = r.strip_prefix("ax") {
        r = stripped.to_string();
    }
    r
}

fn is_static_text(role: &str) -> bool {
    matches!(role_key(role).as_str(), "statictext" | "text")
}

fn is_menu(role: &str) -> bool {
    role_key(role).starts_with("menu")
}

/// Erases `count` characters at the end of `field` by rewriting its value.
fn erase_in(field: &Control, count: u32) -> Resolution {
    if field.sensitive {
        return Resolution::Outcome(Outcome::EraseUnavailable);
    }
    let Some(value) = field.value.as_deref() else {
        return Resolution::Outcome(Outcome::EraseUnavailable);
    };
    if value.is_empty() {
        return Resolution::Outcome(Outcome::NothingToErase);
    }
    let keep = value.chars().count().saturating_sub(count as usize);
    let cut = value
        .char_indices()
        .nth(keep)
        .map_or(value.len(), |(i, _)| i);
    act(Primitive::Erase {
        target: field.reference.clone(),
        count,
        value: value.get(..cut).unwrap_or("").to_string(),
    })
}

// ---------------------------------------------------------------- browser

fn browser(intent: &Intent, obs: &Observation) -> Resolution {
    let nav = obs.navigation;
    match intent {
        Intent::Scroll { direction } => {
            let at_limit = match direction {
                ScrollDirection::Up => obs.scroll.at_top,
                ScrollDirection::Down => obs.scroll.at_bottom,
            };
            if at_limit {
                Resolution::Outcome(Outcome::ScrollLimit)
            } else {
                act(Primitive::Scroll {
                    direction: *direction,
                })
            }
        }
        Intent::Key { key, count } => match nav {
            None => Resolution::Outcome(Outcome::KeyUnsupported),
            Some(_) => act(Primitive::Keypress {
                key: *key,
                count: *count,
            }),
        },
        Intent::History { direction } => match nav {
            None => all_controls(obs, None, false),
            Some(n) => {
                let available = match direction {
                    HistoryDirection::Back => n.can_go_back,
                    HistoryDirection::Forward => n.can_go_forward,
                };
                if available {
                    act(Primitive::History {
                        direction: *direction,
                    })
                } else {
                    Resolution::Outcome(Outcome::HistoryUnavailable)
                }
            }
        },
        Intent::Search { text } => {
            let fields: Vec<&Control> = obs.controls.iter().filter(|c| typeable(c)).collect();
            let mut search_like = fields.iter().filter(|c| c.search_like);
            match (nav, search_like.next(), search_like.next()) {
                (Some(_), Some(only), None) => act(Primitive::Type {
                    target: only.reference.clone(),
                    text: text.clone(),
                    submit: true,
                }),
                _ => choose_field(obs, text, true, &fields),
            }
        }
        Intent::Type { text } => {
            let fields: Vec<&Control> = obs.controls.iter().filter(|c| typeable(c)).collect();
            choose_field(obs, text, false, &fields)
        }
        Intent::Navigate { url } => navigate_url(url).map_or_else(
            || Resolution::Outcome(Outcome::NavigationUnresolved),
            |url| act(Primitive::Navigate { url }),
        ),
        Intent::NewTab | Intent::NewWindow => Resolution::Outcome(Outcome::NewTabOutOfScope),
        Intent::Erase { count, .. } => match (nav, text_focus(obs)) {
            (Some(_), Ok(Some(field))) if !field.sensitive => {
                if field.value.as_deref() == Some("") {
                    Resolution::Outcome(Outcome::NothingToErase)
                } else {
                    act(Primitive::Keypress {
                        key: Key::Backspace,
                        count: *count,
                    })
                }
            }
            _ => all_controls(obs, None, false),
        },
        Intent::CloseTab
        | Intent::QuitApp
        | Intent::Digits { .. }
        | Intent::CalcKey { .. }
        | Intent::Keypad { .. } => all_controls(obs, None, false),
        Intent::Decide { text_offer } => all_controls(obs, text_offer.as_deref(), false),
    }
}

/// Re-checks a navigate URL (an `Intent` may be built by hand): typed rules of R-GRM-URL.
fn navigate_url(url: &str) -> Option<String> {
    typed_address(url.trim())
}

// ---------------------------------------------------------------- computer

/// The one pressable, non-sensitive, non-menu control labelled exactly `label` (trimmed).
fn unique_button<'a>(obs: &'a Observation, labels: &[&str]) -> Option<&'a Control> {
    let mut found = obs.controls.iter().filter(|c| {
        c.is_pressable()
            && !c.sensitive
            && !is_menu(&c.role)
            && labels.iter().any(|l| c.name.trim() == *l)
    });
    match (found.next(), found.next()) {
        (Some(one), None) => Some(one),
        _ => None,
    }
}

/// The keypad button for a digit `0`–`9`, when exactly one is shown.
fn keypad_digit(obs: &Observation, d: char) -> Option<&Control> {
    let mut buf = [0u8; 4];
    unique_button(obs, &[d.encode_utf8(&mut buf)])
}

fn has_keypad(obs: &Observation) -> bool {
    ('0'..='9').all(|d| keypad_digit(obs, d).is_some())
}

/// The control a menu command or identically named button offers (`New Tab`, `Close Tab`).
fn named_command<'a>(obs: &'a Observation, name: &str) -> Option<&'a Control> {
    let mut found = obs
        .controls
        .iter()
        .filter(|c| c.is_pressable() && !c.sensitive && c.name.trim().eq_ignore_ascii_case(name));
    match (found.next(), found.next()) {
        (Some(one), None) => Some(one),
        _ => None,
    }
}

fn press_or_decide(obs: &Observation, control: Option<&Control>) -> Resolution {
    match control {
        Some(c) => act(Primitive::Press {
            target: c.reference.clone(),
        }),
        None => all_controls(obs, None, false),
    }
}

fn could_mean_delete(obs: &Observation) -> bool {
    obs.controls.iter().any(|c| {
        let n = c.name.to_ascii_lowercase();
        n.contains("delete") || n.contains("backspace") || n.contains('⌫') || n.trim() == "ลบ"
    })
}

/// A typeable single-line field by role: a text field, combo box or search field
/// (AT-SPI's `entry` is Chromium's address bar).
fn is_address_field(c: &Control) -> bool {
    let r = role_key(&c.role);
    typeable(c)
        && [
            "textfield",
            "combobox",
            "searchfield",
            "textbox",
            "searchbox",
            "entry",
        ]
        .iter()
        .any(|k| r.contains(k))
}

/// The address a computer's navigate `intent` types after the helper's `address:focus` (seed
/// 003 "Opening a site", "Computer helper contract"): the address, when it is one to open and
/// `observation` has no one address field (none, or several); `None` otherwise (one address
/// field is typed into directly; another intent is not an address).
pub(crate) fn address_to_focus(intent: &Intent, observation: &Observation) -> Option<String> {
    let Intent::Navigate { url } = intent else {
        return None;
    };
    let url = navigate_url(url)?;
    let mut bars = observation.controls.iter().filter(|c| is_address_field(c));
    match (bars.next(), bars.next()) {
        (Some(_), None) => None,
        _ => Some(url),
    }
}

/// The typeable field the keyboard is in (see [`text_focus`]), if one is.
pub(crate) fn focused_field(observation: &Observation) -> Option<&Control> {
    text_focus(observation)
        .ok()
        .flatten()
        .filter(|c| typeable(c))
}

fn computer(intent: &Intent, obs: &Observation) -> Resolution {
    let focus = text_focus(obs);
    let text_focused = !matches!(focus, Ok(None));
    match intent {
        Intent::Scroll { direction } => act(Primitive::Scroll {
            direction: *direction,
        }),
        Intent::Key { key, count } => match (key, focus) {
            (Key::Backspace, Ok(Some(field))) => erase_in(field, *count),
            (Key::Backspace, Err(())) => Resolution::Outcome(Outcome::EraseUnavailable),
            _ => act(Primitive::Keypress {
                key: *key,
                count: *count,
            }),
        },
        Intent::History { direction } => match obs.navigation {
            Some(n)
                if !(match direction {
                    HistoryDirection::Back => n.can_go_back,
                    HistoryDirection::Forward => n.can_go_forward,
                }) =>
            {
                Resolution::Outcome(Outcome::HistoryUnavailable)
            }
            _ => act(Primitive::History {
                direction: *direction,
            }),
        },
        Intent::Search { text } | Intent::Type { text } => {
            let fields: Vec<&Control> = obs.controls.iter().filter(|c| typeable(c)).collect();
            choose_field(obs, text, matches!(intent, Intent::Search { .. }), &fields)
        }
        Intent::Navigate { url } => {
            let Some(url) = navigate_url(url) else {
                return Resolution::Outcome(Outcome::NavigationUnresolved);
            };
            let bars: Vec<&Control> = obs
                .controls
                .iter()
                .filter(|c| is_address_field(c))
                .collect();
            match bars.as_slice() {
                [only] => act(Primitive::Type {
                    target: only.reference.clone(),
                    text: url,
                    submit: true,
                }),
                [] => all_controls(obs, Some(&url), false),
                several => choose_field(obs, &url, true, several),
            }
        }
        Intent::NewTab => press_or_decide(obs, named_command(obs, "New Tab")),
        Intent::NewWindow => press_or_decide(obs, named_command(obs, "New Window")),
        Intent::CloseTab => press_or_decide(obs, named_command(obs, "Close Tab")),
        Intent::QuitApp => {
            let mut quits = obs.controls.iter().filter(|c| {
                c.is_pressable()
                    && c.name
                        .get(..5)
                        .is_some_and(|p| p.eq_ignore_ascii_case("quit "))
            });
            match (quits.next(), quits.next()) {
                (Some(one), None) => press_or_decide(obs, Some(one)),
                _ => all_controls(obs, None, false),
            }
        }
        Intent::Erase {
            count,
            also_subtract,
        } => match focus {
            Ok(Some(field)) => erase_in(field, *count),
            Err(()) => Resolution::Outcome(Outcome::EraseUnavailable),
            Ok(None) => {
                let subtract = unique_button(obs, CalcKey::Subtract.labels());
                match subtract {
                    Some(b) if *also_subtract && has_keypad(obs) && !could_mean_delete(obs) => {
                        act(Primitive::Press {
                            target: b.reference.clone(),
                        })
                    }
                    _ => all_controls(obs, None, false),
                }
            }
        },
        Intent::Digits { digits } => press_keys(
            obs,
            text_focused,
            digits.chars().map(KeypadKey::Digit),
            false,
        ),
        Intent::Keypad { keys, said_lop } => {
            press_keys(obs, text_focused, keys.iter().copied(), *said_lop)
        }
        Intent::CalcKey { key } => {
            if text_focused || !has_keypad(obs) {
                all_controls(obs, None, text_focused)
            } else {
                press_or_decide(obs, unique_button(obs, key.labels()))
            }
        }
        Intent::Decide { text_offer } => all_controls(obs, text_offer.as_deref(), text_focused),
    }
}

/// Keys pressed one by one (seed 003 "Numbers and calculator keys"): words while a text field
/// has focus; on a keypad, when every key has its one button now (decidable up front: else the
/// whole command goes to the decision before anything is pressed) and a bare `ลบ` cannot mean
/// a Delete control; elsewhere a decision.
fn press_keys(
    obs: &Observation,
    text_focused: bool,
    keys: impl Iterator<Item = KeypadKey>,
    said_lop: bool,
) -> Resolution {
    if text_focused {
        return all_controls(obs, None, true);
    }
    let keys: Vec<KeypadKey> = keys.collect();
    if keys.is_empty()
        || !has_keypad(obs)
        || (said_lop && could_mean_delete(obs))
        || keys.iter().any(|k| keypad_key(obs, *k).is_none())
    {
        return all_controls(obs, None, false);
    }
    act(Primitive::PressKeys { keys })
}

/// The ref of the one button for `key` on a fresh observation while running
/// [`Primitive::PressKeys`]: the one pressable, non-sensitive, non-menu control labelled
/// exactly as the key is (`5`; `+` or `Add`), if exactly one is shown.
///
/// ```
/// use jevgate::grammar::{keypad_key, CalcKey, KeypadKey};
/// use jevgate::observation::{Control, Observation};
/// let mut page = Observation::default();
/// page.controls.push(Control::new("b5", "button", "5"));
/// page.controls.push(Control::new("add", "button", "+"));
/// assert_eq!(keypad_key(&page, KeypadKey::Digit('5')), Some("b5"));
/// assert_eq!(keypad_key(&page, KeypadKey::Key(CalcKey::Add)), Some("add"));
/// assert_eq!(keypad_key(&page, KeypadKey::Key(CalcKey::Equals)), None);
/// ```
pub fn keypad_key(observation: &Observation, key: KeypadKey) -> Option<&str> {
    let labels = key.labels();
    if labels.is_empty() {
        return None;
    }
    unique_button(observation, labels).map(|c| c.reference.as_str())
}

/// The ref of the keypad button to press for digit `digit` (`'0'`–`'9'`) on a fresh
/// observation (see [`keypad_key`]): the one pressable, non-sensitive,
/// non-menu control labelled exactly with that digit, if exactly one is shown.
///
/// ```
/// use jevgate::grammar::keypad_button;
/// use jevgate::observation::{Control, Observation};
/// let mut page = Observation::default();
/// page.controls.push(Control::new("b5", "button", "5"));
/// assert_eq!(keypad_button(&page, '5'), Some("b5"));
/// assert_eq!(keypad_button(&page, '6'), None);
/// ```
pub fn keypad_button(observation: &Observation, digit: char) -> Option<&str> {
    keypad_digit(observation, digit).map(|c| c.reference.as_str())
}
