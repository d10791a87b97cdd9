//! The computer helper's observation model (issue 25): what an agent sees of the front
//! application, built purely from a flat list of accessibility nodes the AT-SPI layer read
//! (src/computer/atspi.rs). Controls with refs, roles, names, states, actions and focus; bounded
//! static text; the window title and the application's name.
//!
//! It owns the bounds and the privacy rules of an observation: at most [`MAX_CONTROLS`] controls,
//! names cut at [`MAX_NAME_CHARS`], text at [`MAX_TEXT_CHARS`] in all, and a sensitive field
//! (password role) shows its role and states but never a value. It does no I/O and must never
//! read a value the I/O layer did not hand it, never panic on a hostile node list (parents out
//! of range, cycles through parents, empty or enormous strings), and never log a name or a text.

use serde::Serialize;

/// Most controls in one observation (the rest are counted in `omitted`).
pub const MAX_CONTROLS: usize = 400;
/// Longest name or value of one control, in characters.
pub const MAX_NAME_CHARS: usize = 200;
/// Most static text in one observation, in characters (all lines together).
pub const MAX_TEXT_CHARS: usize = 8_000;
/// Most static text lines in one observation.
pub const MAX_TEXT_LINES: usize = 200;

/// AT-SPI state bits (`AtspiStateType`), as the `GetState` pair of words read as one `u64`.
pub mod state {
    /// The window is the active one.
    pub const ACTIVE: u32 = 1;
    /// A check box or toggle is checked.
    pub const CHECKED: u32 = 4;
    /// The text can be edited.
    pub const EDITABLE: u32 = 7;
    /// The control is enabled.
    pub const ENABLED: u32 = 8;
    /// The control is expanded.
    pub const EXPANDED: u32 = 10;
    /// The control can take the keyboard focus.
    pub const FOCUSABLE: u32 = 11;
    /// The control has the keyboard focus.
    pub const FOCUSED: u32 = 12;
    /// The control is pressed.
    pub const PRESSED: u32 = 20;
    /// The item is selected.
    pub const SELECTED: u32 = 23;
    /// The control reacts to input.
    pub const SENSITIVE: u32 = 24;
    /// The control is on screen.
    pub const SHOWING: u32 = 25;
    /// The control is visible (perhaps scrolled away).
    pub const VISIBLE: u32 = 30;
    /// The field is required.
    pub const REQUIRED: u32 = 33;
    /// The control is read-only.
    pub const READ_ONLY: u32 = 43;

    /// Whether bit `bit` is set in `states`.
    pub fn has(states: u64, bit: u32) -> bool {
        bit < 64 && states & (1u64 << bit) != 0
    }
}

/// The states an observation names, in this order.
const NAMED_STATES: &[(u32, &str)] = &[
    (state::FOCUSED, "focused"),
    (state::CHECKED, "checked"),
    (state::PRESSED, "pressed"),
    (state::SELECTED, "selected"),
    (state::EXPANDED, "expanded"),
    (state::EDITABLE, "editable"),
    (state::READ_ONLY, "readonly"),
    (state::REQUIRED, "required"),
];

/// Roles whose nodes are controls even without an action (AT-SPI role names).
const CONTROL_ROLES: &[&str] = &[
    "push button",
    "button",
    "text box",
    "search box",
    "switch",
    "toggle button",
    "check box",
    "radio button",
    "menu item",
    "check menu item",
    "radio menu item",
    "combo box",
    "entry",
    "password text",
    "spin button",
    "slider",
    "link",
    "page tab",
    "menu",
];

/// Roles whose nodes are windows (their name is the window title).
const WINDOW_ROLES: &[&str] = &["frame", "window", "dialog"];

/// Roles whose text is static text of the observation.
const TEXT_ROLES: &[&str] = &[
    "label",
    "text",
    "paragraph",
    "static",
    "heading",
    "status bar",
];

/// One accessibility node as the I/O layer read it (its values already bounded there).
#[derive(Clone, Debug, Default)]
pub struct RawNode {
    /// Index of the parent in the same list (`None` for the application's windows).
    pub parent: Option<usize>,
    /// The AT-SPI role name ("push button", "password text", …).
    pub role: String,
    /// The accessible name (empty when none).
    pub name: String,
    /// The accessible description (a tooltip), read only when the name is empty.
    pub description: String,
    /// The AT-SPI state set.
    pub states: u64,
    /// The names of its actions ("click", "press", …), in AT-SPI order.
    pub actions: Vec<String>,
    /// Its text (Text interface), when it has one and it is not sensitive.
    pub text: Option<String>,
}

impl RawNode {
    /// Whether the node is a sensitive field whose value must never be read.
    pub fn is_sensitive(role: &str) -> bool {
        role == "password text"
    }
}

/// One control of an observation.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct Control {
    /// The ref to act on it (valid for the observation that handed it out).
    #[serde(rename = "ref")]
    pub reference: String,
    /// The AT-SPI role name.
    pub role: String,
    /// The accessible name (bounded).
    pub name: String,
    /// Named states ("focused", "checked", …; "disabled" when not enabled or not sensitive).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub states: Vec<&'static str>,
    /// Its action names.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub actions: Vec<String>,
    /// Its value (an editable field's text; never a sensitive field's), bounded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// Whether it is a sensitive field (its value is never read).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub sensitive: bool,
    /// A menu-bar command's place: the names of the menus it is in, joined by " → " (`Edit`
    /// for Edit → Copy; empty for a menu-bar title such as Edit itself). `None` outside a
    /// menu bar.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub menu: Option<String>,
}

/// What the agent sees of the front application.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct Observation {
    /// The application's accessible name.
    pub application: String,
    /// The active (else first) window's title.
    #[serde(rename = "windowTitle")]
    pub window_title: String,
    /// Its controls, in tree order.
    pub controls: Vec<Control>,
    /// The ref of the focused control, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub focused: Option<String>,
    /// Static text lines, bounded.
    pub text: Vec<String>,
    /// Controls and text lines left out by the bounds.
    #[serde(skip_serializing_if = "is_zero")]
    pub omitted: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// `s` cut to at most `max` characters (on a character boundary).
pub fn bounded(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => s[..i].to_string(),
        None => s.to_string(),
    }
}

/// The ref of node `index`.
pub fn reference(index: usize) -> String {
    format!("e{index}")
}

/// The node index a ref names, if it is one.
pub fn parse_reference(r: &str) -> Option<usize> {
    let digits = r.strip_prefix('e')?;
    if digits.is_empty() || digits.len() > 9 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Whether `action` presses (GTK 3 "click", GTK 4 "Click", "press", "activate", "toggle");
/// GTK 4's widget actions ("clipboard.copy", "menu.popup") do not.
pub fn is_press_action(action: &str) -> bool {
    ["click", "press", "activate", "toggle"]
        .iter()
        .any(|a| action.eq_ignore_ascii_case(a))
}

/// Whether node `n` is a control of an observation (else text, a window or a container).
pub fn is_control(n: &RawNode) -> bool {
    if state::has(n.states, state::EDITABLE) || CONTROL_ROLES.contains(&n.role.as_str()) {
        return true;
    }
    // A label with GTK 4's clipboard actions is still text.
    !TEXT_ROLES.contains(&n.role.as_str()) && n.actions.iter().any(|a| is_press_action(a))
}

/// A control's name as a person reads it: GTK's class-name placeholders ("GtkButton",
/// "GtkSourceView") are no name, and GTK 4's doubled name of a labelled button ("5 5", its
/// label's text twice) is the label once.
pub fn display_name(name: &str) -> &str {
    let name = name.trim();
    if let Some(rest) = name.strip_prefix("Gtk") {
        if rest.starts_with(|c: char| c.is_ascii_uppercase())
            && rest.chars().all(|c| c.is_ascii_alphanumeric())
        {
            return "";
        }
    }
    let half = name.len() / 2;
    if name.len() % 2 == 1
        && name.is_char_boundary(half)
        && name.as_bytes()[half] == b' '
        && name[..half] == name[half + 1..]
    {
        return &name[..half];
    }
    name
}

/// How many ancestors [`menu_path`] looks through.
const MAX_MENU_DEPTH: usize = 16;

/// The menu-bar place of node `index` ([`Control::menu`]): the names of its enclosing menus up
/// to a menu bar, outermost first; `None` when no menu bar encloses it within
/// [`MAX_MENU_DEPTH`] ancestors (bounded: a hostile list may loop through its parents).
pub fn menu_path(nodes: &[RawNode], index: usize) -> Option<String> {
    let mut menus: Vec<String> = Vec::new();
    let mut parent = nodes.get(index)?.parent;
    for _ in 0..MAX_MENU_DEPTH {
        let p = nodes.get(parent?)?;
        match p.role.as_str() {
            "menu bar" => {
                menus.reverse();
                return Some(bounded(&menus.join(" → "), MAX_NAME_CHARS));
            }
            "menu" => menus.push(display_name(&p.name).to_string()),
            _ => {}
        }
        parent = p.parent;
    }
    None
}

/// A field's value as an observation carries it: whole, or not at all (a value cut to the
/// bound would let an erase rewrite the field without its hidden end).
fn whole_value(text: &str) -> Option<String> {
    (text.chars().count() <= MAX_NAME_CHARS).then(|| text.to_string())
}

/// The control (index in `controls`) among the first few ancestors from `parent` (bounded: a
/// hostile list may loop through its parents).
fn enclosing_control(
    nodes: &[RawNode],
    mut parent: Option<usize>,
    control_of: &std::collections::HashMap<usize, usize>,
) -> Option<usize> {
    for _ in 0..4 {
        let p = parent?;
        if let Some(&c) = control_of.get(&p) {
            return Some(c);
        }
        parent = nodes.get(p)?.parent;
    }
    None
}

/// Builds the observation of application `application` from its nodes (tree order, parents
/// before children). Refs are node indexes, so the I/O layer maps them back to objects.
pub fn build(application: &str, nodes: &[RawNode]) -> Observation {
    let mut controls = Vec::new();
    let mut text = Vec::new();
    let mut text_chars = 0usize;
    let mut omitted = 0usize;
    let mut focused = None;
    let mut window_title = None;
    let mut first_window = None;
    // Node index → index in `controls`, for the labels inside a control.
    let mut control_of = std::collections::HashMap::new();
    // Controls without a name and their descriptions: named by a label inside them, else by
    // the description (a tooltip such as "Clear Display [Escape]").
    let mut described: Vec<(usize, &str)> = Vec::new();
    for (i, n) in nodes.iter().enumerate() {
        if WINDOW_ROLES.contains(&n.role.as_str()) {
            if first_window.is_none() {
                first_window = Some(bounded(&n.name, MAX_NAME_CHARS));
            }
            if window_title.is_none() && state::has(n.states, state::ACTIVE) {
                window_title = Some(bounded(&n.name, MAX_NAME_CHARS));
            }
            continue;
        }
        let sensitive = RawNode::is_sensitive(&n.role);
        if is_control(n) {
            if controls.len() >= MAX_CONTROLS {
                omitted += 1;
                continue;
            }
            let r = reference(i);
            let mut states: Vec<&'static str> = NAMED_STATES
                .iter()
                .filter(|(bit, _)| state::has(n.states, *bit))
                .map(|(_, name)| *name)
                .collect();
            // GTK 3 sets ENABLED and SENSITIVE, GTK 4 only SENSITIVE.
            if !state::has(n.states, state::SENSITIVE) {
                states.push("disabled");
            }
            if state::has(n.states, state::FOCUSED) && focused.is_none() {
                focused = Some(r.clone());
            }
            let value = if sensitive {
                None
            } else {
                n.text.as_deref().and_then(whole_value)
            };
            let name = display_name(&n.name);
            if name.is_empty() && !n.description.trim().is_empty() {
                described.push((controls.len(), n.description.trim()));
            }
            control_of.insert(i, controls.len());
            controls.push(Control {
                reference: r,
                role: bounded(&n.role, 40),
                name: bounded(name, MAX_NAME_CHARS),
                states,
                actions: n.actions.iter().take(8).map(|a| bounded(a, 40)).collect(),
                value,
                sensitive,
                menu: menu_path(nodes, i),
            });
        } else if !sensitive && TEXT_ROLES.contains(&n.role.as_str()) {
            let line = n
                .text
                .as_deref()
                .filter(|t| !t.trim().is_empty())
                .unwrap_or(&n.name);
            let line = line.trim();
            // A label inside a control names it (when the control has no name of its own).
            if let Some(c) = enclosing_control(nodes, n.parent, &control_of) {
                let control: &mut Control = &mut controls[c];
                if control.name.is_empty() {
                    control.name = bounded(line, MAX_NAME_CHARS);
                }
                continue;
            }
            if line.is_empty() {
                continue;
            }
            let room = MAX_TEXT_CHARS.saturating_sub(text_chars);
            if room == 0 || text.len() >= MAX_TEXT_LINES {
                omitted += 1;
                continue;
            }
            let line = bounded(line, room);
            text_chars += line.chars().count();
            text.push(line);
        }
    }
    for (c, description) in described {
        if let Some(control) = controls.get_mut(c) {
            if control.name.is_empty() {
                control.name = bounded(description, MAX_NAME_CHARS);
            }
        }
    }
    Observation {
        application: bounded(application, MAX_NAME_CHARS),
        window_title: window_title.or(first_window).unwrap_or_default(),
        controls,
        focused,
        text,
        omitted,
    }
}

/// The refs of the controls whose name is exactly `name` (the direct commands press "the one
/// visible button with that exact label").
pub fn find_by_name<'a>(obs: &'a Observation, name: &str) -> Vec<&'a Control> {
    obs.controls.iter().filter(|c| c.name == name).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(parent: Option<usize>, role: &str, name: &str, states: &[u32]) -> RawNode {
        RawNode {
            parent,
            role: role.into(),
            name: name.into(),
            description: String::new(),
            states: states.iter().fold(0u64, |s, b| s | 1u64 << b),
            actions: Vec::new(),
            text: None,
        }
    }

    #[test]
    fn controls_text_title_and_focus() {
        let mut b = node(
            Some(1),
            "push button",
            "5",
            &[state::ENABLED, state::SENSITIVE],
        );
        b.actions = vec!["click".into()];
        let mut e = node(
            Some(1),
            "text",
            "",
            &[state::EDITABLE, state::FOCUSED, 8, 24],
        );
        e.text = Some("12".into());
        let nodes = vec![
            node(None, "frame", "Calculator", &[state::ACTIVE]),
            node(Some(0), "panel", "", &[]),
            b,
            e,
            node(Some(1), "label", "Result", &[]),
            node(Some(1), "push button", "off", &[]),
        ];
        let o = build("gnome-calculator", &nodes);
        assert_eq!(o.window_title, "Calculator");
        assert_eq!(o.controls.len(), 3);
        assert_eq!(o.controls[0].reference, "e2");
        assert_eq!(o.controls[1].value.as_deref(), Some("12"));
        assert_eq!(o.focused.as_deref(), Some("e3"));
        assert_eq!(o.controls[2].states, vec!["disabled"]);
        assert_eq!(o.text, vec!["Result"]);
        assert_eq!(find_by_name(&o, "5").len(), 1);
    }

    #[test]
    fn gtk4_names_and_labels() {
        assert_eq!(display_name("5 5"), "5");
        assert_eq!(display_name("÷ ÷"), "÷");
        assert_eq!(display_name("mod mod"), "mod");
        assert_eq!(display_name("GtkButton"), "");
        assert_eq!(display_name("Gtk"), "Gtk");
        assert_eq!(display_name("5 6"), "5 6");
        assert_eq!(display_name("Close"), "Close");
        let mut b = node(None, "button", "GtkButton", &[state::SENSITIVE]);
        b.actions = vec!["Click".into()];
        b.description = "Pi [Ctrl+P]".into();
        let mut l = node(Some(0), "label", "π", &[]);
        l.actions = vec!["clipboard.copy".into()];
        l.text = Some("π".into());
        let o = build("calc", &[b, l]);
        assert_eq!(o.controls.len(), 1);
        assert_eq!(o.controls[0].name, "π");
        assert!(o.controls[0].states.is_empty());
        assert!(o.text.is_empty());
        let mut icon = node(None, "button", "", &[state::SENSITIVE]);
        icon.description = "Clear Display [Escape]".into();
        assert_eq!(
            build("calc", &[icon]).controls[0].name,
            "Clear Display [Escape]"
        );
    }

    #[test]
    fn a_password_field_is_never_read() {
        let mut p = node(None, "password text", "PIN", &[state::EDITABLE]);
        p.text = Some("hunter2".into());
        let o = build("app", &[p]);
        assert!(o.controls[0].sensitive);
        assert_eq!(o.controls[0].value, None);
        assert!(!serde_json::to_string(&o).unwrap().contains("hunter2"));
    }

    #[test]
    fn bounds_hold_on_hostile_lists() {
        let mut nodes = vec![node(
            Some(7_000_000),
            "push button",
            &"x".repeat(100_000),
            &[],
        )];
        for _ in 0..5_000 {
            let mut n = node(Some(usize::MAX), "label", "", &[]);
            n.text = Some("y".repeat(1_000));
            nodes.push(n);
            nodes.push(node(None, "push button", "b", &[]));
        }
        let o = build(&"a".repeat(10_000), &nodes);
        assert_eq!(o.controls.len(), MAX_CONTROLS);
        assert_eq!(o.controls[0].name.chars().count(), MAX_NAME_CHARS);
        assert!(o.text.iter().map(|t| t.chars().count()).sum::<usize>() <= MAX_TEXT_CHARS);
        assert!(o.omitted > 0);
        assert_eq!(bounded("ห้าบวก", 2), "ห้");
    }

    // Issue 25, seed 003 "Menu-bar items are Jev's separate menu choice": a menu bar's
    // commands carry their menu's place; a control elsewhere carries none; a field's value is
    // whole or absent (never cut: ERASE_UNAVAILABLE needs to know).
    #[test]
    fn menu_bar_commands_carry_their_menu_and_values_are_whole() {
        let mut copy = node(Some(2), "menu item", "Copy", &[state::SENSITIVE]);
        copy.actions = vec!["click".into()];
        let mut edit = node(Some(1), "menu", "Edit", &[state::SENSITIVE]);
        edit.actions = vec!["click".into()];
        let mut field = node(Some(0), "text", "", &[state::EDITABLE, state::SENSITIVE]);
        field.text = Some("x".repeat(MAX_NAME_CHARS + 1));
        let mut short = node(Some(0), "text", "", &[state::EDITABLE, state::SENSITIVE]);
        short.text = Some("hello".into());
        let nodes = vec![
            node(None, "frame", "Editor", &[state::ACTIVE]),
            node(Some(0), "menu bar", "", &[]),
            edit,
            copy,
            field,
            short,
        ];
        let o = build("mousepad", &nodes);
        let by_name = |n: &str| o.controls.iter().find(|c| c.name == n).unwrap();
        assert_eq!(by_name("Copy").menu.as_deref(), Some("Edit"));
        assert_eq!(o.controls[0].menu.as_deref(), Some(""));
        let fields: Vec<_> = o.controls.iter().filter(|c| c.role == "text").collect();
        assert_eq!(fields[0].value, None, "a value over the bound is absent");
        assert_eq!(fields[0].menu, None);
        assert_eq!(fields[1].value.as_deref(), Some("hello"));
        // A loop through the parents ends.
        let looped = vec![
            node(Some(1), "menu", "A", &[]),
            node(Some(0), "menu", "B", &[]),
        ];
        assert_eq!(menu_path(&looped, 0), None);
        assert_eq!(menu_path(&looped, 99), None);
    }

    #[test]
    fn refs_round_trip_and_reject_junk() {
        assert_eq!(parse_reference(&reference(42)), Some(42));
        for junk in ["", "e", "e-1", "x1", "e1a", "e99999999999"] {
            assert_eq!(parse_reference(junk), None, "{junk}");
        }
    }
}
