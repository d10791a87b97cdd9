//! The thin AT-SPI I/O layer of the computer helper (issue 25): a blocking D-Bus client
//! (`zbus::blocking`) on the accessibility bus, speaking `org.a11y.atspi.*` directly. It finds
//! the applications, reads one application's tree into the flat [`RawNode`] list the pure model
//! (src/computer/model.rs) turns into an observation, and acts on a node of the last reading:
//! an AT-SPI action (press), `GrabFocus`, `SetTextContents`, and finds the point a click
//! focuses an editable field at where `GrabFocus` is unavailable (GTK 4): only an editable field's
//! ([`Atspi::editable_place`]), never a button's, which a click would press.
//!
//! It owns the bounds of a reading: at most [`MAX_NODES`] nodes, [`MAX_DEPTH`] levels and
//! [`MAX_CHILDREN`] children of one node, [`WALK_BUDGET`] in all (the walk half of it, the
//! nodes' details the rest; a node left without details is dropped), every call with
//! [`CALL_TIMEOUT`]; a node seen twice (a cycle) is read once; subtrees not on screen are skipped.
//! It must never read the text of a sensitive field (password role), never panic on what an
//! application answers, and never log a name, a text or a D-Bus error message (an application
//! writes those); errors carry only the D-Bus error name or a fixed word.

use super::model::{self, RawNode};
use crate::clock::{self, SharedClock};
use std::collections::HashSet;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use zbus::blocking::Connection;
use zbus::zvariant::{OwnedObjectPath, OwnedValue};

/// Most nodes read from one application.
pub const MAX_NODES: usize = 3_000;
/// Deepest level read.
pub const MAX_DEPTH: usize = 64;
/// Most children read of one node.
pub const MAX_CHILDREN: i32 = 500;
/// Longest text read from one node, in characters.
pub const MAX_NODE_TEXT: i32 = 2_000;
/// The time one reading may take.
pub const WALK_BUDGET: Duration = Duration::from_secs(5);
/// The time one D-Bus call may take (a hung application does not hang the helper).
pub const CALL_TIMEOUT: Duration = Duration::from_secs(2);

const ROOT: &str = "/org/a11y/atspi/accessible/root";
const REGISTRY: &str = "org.a11y.atspi.Registry";
const I_ACCESSIBLE: &str = "org.a11y.atspi.Accessible";
const I_ACTION: &str = "org.a11y.atspi.Action";
const I_TEXT: &str = "org.a11y.atspi.Text";
const I_EDITABLE: &str = "org.a11y.atspi.EditableText";
const I_COMPONENT: &str = "org.a11y.atspi.Component";

/// A failure of the AT-SPI layer: a stable code and a detail free of application text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AtspiError {
    /// `ATSPI_UNAVAILABLE`, `APPLICATION_NOT_FOUND`, `TARGET_NOT_FOUND`, `ACTION_UNAVAILABLE`,
    /// `ACTION_FAILED` or `ATSPI_CALL_FAILED`.
    pub code: &'static str,
    /// A D-Bus error name or a fixed word (never an application's message).
    pub detail: String,
}

impl fmt::Display for AtspiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.detail)
    }
}

impl std::error::Error for AtspiError {}

fn err(code: &'static str, detail: impl Into<String>) -> AtspiError {
    AtspiError {
        code,
        detail: detail.into(),
    }
}

/// Only the error's name: a D-Bus error's message is the application's text.
fn call_failed(e: zbus::Error) -> AtspiError {
    let detail = match &e {
        zbus::Error::MethodError(name, _, _) => name.as_str().to_string(),
        zbus::Error::InputOutput(_) => "io".into(),
        zbus::Error::Variant(_) => "bad reply".into(),
        _ => "call failed".into(),
    };
    err("ATSPI_CALL_FAILED", detail)
}

/// An interface the application does not implement (GTK 4.8 has no `Component.GrabFocus`) is
/// `ACTION_UNAVAILABLE`, not a failed call.
fn unsupported_is_unavailable(e: AtspiError) -> AtspiError {
    let unsupported = [
        "org.freedesktop.DBus.Error.NotSupported",
        "org.freedesktop.DBus.Error.UnknownMethod",
        "org.freedesktop.DBus.Error.UnknownInterface",
    ];
    if unsupported.contains(&e.detail.as_str()) {
        err("ACTION_UNAVAILABLE", e.detail)
    } else {
        e
    }
}

/// An accessible object: its bus name and path.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Object {
    /// The unique bus name of its application.
    pub bus: String,
    /// Its object path.
    pub path: OwnedObjectPath,
}

/// One application on the accessibility bus.
#[derive(Clone, Debug)]
pub struct Application {
    /// Its accessible name (bounded).
    pub name: String,
    /// Its root object.
    pub root: Object,
}

/// A reading of one application: the nodes and the objects behind their refs.
#[derive(Debug, Default)]
pub struct Reading {
    /// The application's name.
    pub application: String,
    /// The nodes, parents before children.
    pub nodes: Vec<RawNode>,
    /// `objects[i]` is node `i`'s object.
    pub objects: Vec<Object>,
    /// The reading stopped at a bound.
    pub truncated: bool,
}

/// Threads reading node details at once (their calls share the one connection).
const DETAIL_THREADS: usize = 4;

/// What `details` reads of one node.
struct Details {
    role: String,
    name: String,
    actions: Vec<String>,
    text: Option<String>,
    description: Option<String>,
}

/// A blocking client of the accessibility bus.
pub struct Atspi {
    bus: Connection,
    /// Times a reading's budget (R-CLK: the system clock only through `clock.rs`).
    clock: SharedClock,
}

impl Atspi {
    /// Connects to the accessibility bus: `AT_SPI_BUS_ADDRESS` when set, else the address
    /// `org.a11y.Bus.GetAddress` gives on the session bus.
    pub fn connect() -> Result<Atspi, AtspiError> {
        let address = match std::env::var("AT_SPI_BUS_ADDRESS") {
            Ok(a) if !a.is_empty() => a,
            _ => {
                let session = zbus::blocking::connection::Builder::session()
                    .and_then(|b| b.method_timeout(CALL_TIMEOUT).build())
                    .map_err(|_| err("ATSPI_UNAVAILABLE", "no session bus"))?;
                let reply = session
                    .call_method(
                        Some("org.a11y.Bus"),
                        "/org/a11y/bus",
                        Some("org.a11y.Bus"),
                        "GetAddress",
                        &(),
                    )
                    .map_err(|_| err("ATSPI_UNAVAILABLE", "no org.a11y.Bus"))?;
                reply
                    .body()
                    .deserialize::<String>()
                    .map_err(|_| err("ATSPI_UNAVAILABLE", "bad address"))?
            }
        };
        Atspi::connect_address(&address)
    }

    /// Connects to the accessibility bus at `address` (a D-Bus address).
    pub fn connect_address(address: &str) -> Result<Atspi, AtspiError> {
        let bus = zbus::blocking::connection::Builder::address(address)
            .and_then(|b| b.method_timeout(CALL_TIMEOUT).build())
            .map_err(|_| err("ATSPI_UNAVAILABLE", "accessibility bus unreachable"))?;
        Ok(Atspi {
            bus,
            clock: clock::system(),
        })
    }

    fn call<B, R>(&self, o: &Object, iface: &str, method: &str, body: &B) -> Result<R, AtspiError>
    where
        B: serde::Serialize + zbus::zvariant::DynamicType,
        R: for<'d> serde::Deserialize<'d> + zbus::zvariant::Type,
    {
        let reply = self
            .bus
            .call_method(
                Some(o.bus.as_str()),
                o.path.as_str(),
                Some(iface),
                method,
                body,
            )
            .map_err(call_failed)?;
        reply.body().deserialize::<R>().map_err(call_failed)
    }

    fn property(&self, o: &Object, iface: &str, name: &str) -> Result<OwnedValue, AtspiError> {
        self.call(o, "org.freedesktop.DBus.Properties", "Get", &(iface, name))
    }

    fn string_property(&self, o: &Object, iface: &str, name: &str) -> Result<String, AtspiError> {
        let v = self.property(o, iface, name)?;
        String::try_from(v).map_err(|_| err("ATSPI_CALL_FAILED", "bad reply"))
    }

    fn i32_property(&self, o: &Object, iface: &str, name: &str) -> Result<i32, AtspiError> {
        let v = self.property(o, iface, name)?;
        i32::try_from(v).map_err(|_| err("ATSPI_CALL_FAILED", "bad reply"))
    }

    fn children(&self, o: &Object) -> Result<Vec<Object>, AtspiError> {
        let count = self.i32_property(o, I_ACCESSIBLE, "ChildCount")?;
        let pairs: Vec<(String, OwnedObjectPath)> = if count <= MAX_CHILDREN {
            self.call(o, I_ACCESSIBLE, "GetChildren", &())?
        } else {
            let mut v = Vec::new();
            for i in 0..MAX_CHILDREN {
                v.push(self.call(o, I_ACCESSIBLE, "GetChildAtIndex", &(i,))?);
            }
            v
        };
        Ok(pairs
            .into_iter()
            .take(MAX_CHILDREN as usize)
            .filter(|(_, p)| p.as_str() != "/org/a11y/atspi/null")
            .map(|(bus, path)| Object { bus, path })
            .collect())
    }

    /// The applications on the bus (the registry's children), with their names.
    pub fn applications(&self) -> Result<Vec<Application>, AtspiError> {
        let desktop = Object {
            bus: REGISTRY.into(),
            path: OwnedObjectPath::try_from(ROOT).map_err(|_| err("ATSPI_CALL_FAILED", "path"))?,
        };
        let mut apps = Vec::new();
        for root in self.children(&desktop)? {
            // An application that does not answer is left out, not an error of the listing.
            if let Ok(name) = self.string_property(&root, I_ACCESSIBLE, "Name") {
                apps.push(Application {
                    name: model::bounded(&name, model::MAX_NAME_CHARS),
                    root,
                });
            }
        }
        Ok(apps)
    }

    /// The application named `name`, else (no name) the front one: the one with an active
    /// window, else the last one started.
    pub fn application(&self, name: Option<&str>) -> Result<Application, AtspiError> {
        let apps = self.applications()?;
        if let Some(name) = name {
            return apps
                .into_iter()
                .find(|a| a.name == name)
                .ok_or_else(|| err("APPLICATION_NOT_FOUND", "no such application"));
        }
        for a in apps.iter().rev() {
            let Ok(windows) = self.children(&a.root) else {
                continue;
            };
            for w in windows {
                if self
                    .states(&w)
                    .is_ok_and(|s| model::state::has(s, model::state::ACTIVE))
                {
                    return Ok(a.clone());
                }
            }
        }
        apps.into_iter()
            .next_back()
            .ok_or_else(|| err("APPLICATION_NOT_FOUND", "no application"))
    }

    /// `app`'s top-level windows that are not its main windows (role `frame`): the popups a
    /// menu opens, each as an [`Application`] whose tree [`Atspi::read`] reads alone — a menu is
    /// found without reading a main window's page (at most [`MAX_CHILDREN`]).
    pub fn popups(&self, app: &Application) -> Result<Vec<Application>, AtspiError> {
        let mut out = Vec::new();
        for w in self.children(&app.root)? {
            let role: Result<String, _> = self.call(&w, I_ACCESSIBLE, "GetRoleName", &());
            if role.is_ok_and(|r| r != "frame") {
                out.push(Application {
                    name: app.name.clone(),
                    root: w,
                });
            }
        }
        Ok(out)
    }

    fn states(&self, o: &Object) -> Result<u64, AtspiError> {
        let words: Vec<u32> = self.call(o, I_ACCESSIBLE, "GetState", &())?;
        let lo = u64::from(words.first().copied().unwrap_or(0));
        let hi = u64::from(words.get(1).copied().unwrap_or(0));
        Ok(lo | hi << 32)
    }

    /// Reads `app`'s tree (on-screen nodes only), bounded.
    pub fn read(&self, app: &Application) -> Result<Reading, AtspiError> {
        let started = self.clock.now();
        let mut reading = Reading {
            application: app.name.clone(),
            ..Reading::default()
        };
        let mut seen: HashSet<Object> = HashSet::new();
        seen.insert(app.root.clone());
        // Depth-first, in tree order: (object, parent index, depth).
        let mut stack: Vec<(Object, Option<usize>, usize)> = self
            .children(&app.root)?
            .into_iter()
            .rev()
            .map(|o| (o, None, 0))
            .collect();
        while let Some((o, parent, depth)) = stack.pop() {
            // The walk takes at most half the budget: the details of what it found need the
            // rest (a large web page would otherwise leave no time to name anything).
            if reading.nodes.len() >= MAX_NODES
                || self.clock.now().saturating_duration_since(started) > WALK_BUDGET / 2
            {
                reading.truncated = true;
                break;
            }
            if !seen.insert(o.clone()) {
                continue;
            }
            // A node that stops answering (it went away meanwhile) is skipped with its subtree.
            let Ok(states) = self.states(&o) else {
                continue;
            };
            // GTK 4 leaves SHOWING off some containers on screen; VISIBLE is off for a hidden
            // stack page, so either state keeps a subtree.
            let shown = model::state::has(states, model::state::SHOWING)
                || model::state::has(states, model::state::VISIBLE);
            if !shown && parent.is_some() {
                continue;
            }
            // Role, name, actions and text are read afterwards, in parallel (`details`).
            let node = RawNode {
                parent,
                states,
                ..RawNode::default()
            };
            let index = reading.nodes.len();
            reading.nodes.push(node);
            reading.objects.push(o.clone());
            if depth + 1 < MAX_DEPTH {
                if let Ok(children) = self.children(&o) {
                    for c in children.into_iter().rev() {
                        stack.push((c, Some(index), depth + 1));
                    }
                }
            } else {
                reading.truncated = true;
            }
        }
        // The details of the nodes, by DETAIL_THREADS threads on the one connection: their
        // calls are pipelined on the bus instead of waiting for each other's round trips.
        let slots: Vec<parking_lot::Mutex<Option<Details>>> = (0..reading.nodes.len())
            .map(|_| parking_lot::Mutex::new(None))
            .collect();
        let over = AtomicBool::new(false);
        std::thread::scope(|scope| {
            for t in 0..DETAIL_THREADS {
                let (slots, over, reading) = (&slots, &over, &reading);
                scope.spawn(move || {
                    for i in (t..reading.objects.len()).step_by(DETAIL_THREADS) {
                        if self.clock.now().saturating_duration_since(started) > WALK_BUDGET {
                            over.store(true, Ordering::Relaxed);
                            return;
                        }
                        *slots[i].lock() =
                            self.details(&reading.objects[i], reading.nodes[i].states);
                    }
                });
            }
        });
        reading.truncated |= over.load(Ordering::Relaxed);
        for (node, slot) in reading.nodes.iter_mut().zip(slots) {
            // A node that stopped answering, or whose details the budget left unread, keeps
            // no role and no states: neither a control nor text.
            if slot.lock().is_none() {
                node.states = 0;
            }
            if let Some(d) = slot.into_inner() {
                node.role = d.role;
                node.name = d.name;
                node.actions = d.actions;
                node.text = d.text;
                // The description (a tooltip) names only a control without a name.
                node.description = d.description.unwrap_or_default();
            }
        }
        Ok(reading)
    }

    /// One node's role, name, actions, text (never a sensitive field's) and, when it has no
    /// name, its description; `None` when it does not answer.
    fn details(&self, o: &Object, states: u64) -> Option<Details> {
        let role: String = self.call(o, I_ACCESSIBLE, "GetRoleName", &()).ok()?;
        let name = self
            .string_property(o, I_ACCESSIBLE, "Name")
            .map(|n| model::bounded(&n, model::MAX_NAME_CHARS))
            .unwrap_or_default();
        let interfaces: Vec<String> = self
            .call(o, I_ACCESSIBLE, "GetInterfaces", &())
            .unwrap_or_default();
        let has = |i: &str| interfaces.iter().any(|x| x == i);
        let mut actions = Vec::new();
        if has(I_ACTION) {
            let list: Vec<(String, String, String)> = self
                .call(o, I_ACTION, "GetActions", &())
                .unwrap_or_default();
            actions = list
                .into_iter()
                .take(16)
                .map(|(n, _, _)| model::bounded(&n, 40))
                .collect();
        }
        let text = if has(I_TEXT) && !RawNode::is_sensitive(&role) {
            self.text(o).ok()
        } else {
            None
        };
        let probe = RawNode {
            role: role.clone(),
            states,
            actions: actions.clone(),
            ..RawNode::default()
        };
        let description = if model::display_name(&name).is_empty() && model::is_control(&probe) {
            self.string_property(o, I_ACCESSIBLE, "Description")
                .map(|d| model::bounded(&d, model::MAX_NAME_CHARS))
                .ok()
        } else {
            None
        };
        Some(Details {
            role: model::bounded(&role, 40),
            name,
            actions,
            text,
            description,
        })
    }

    fn text(&self, o: &Object) -> Result<String, AtspiError> {
        let count = self.i32_property(o, I_TEXT, "CharacterCount")?;
        let end = count.clamp(0, MAX_NODE_TEXT);
        let s: String = self.call(o, I_TEXT, "GetText", &(0i32, end))?;
        Ok(model::bounded(&s, MAX_NODE_TEXT as usize))
    }

    /// Runs `o`'s first pressing action (click, press, activate, toggle), else its first action.
    pub fn press(&self, o: &Object) -> Result<(), AtspiError> {
        let list: Vec<(String, String, String)> = self
            .call(o, I_ACTION, "GetActions", &())
            .map_err(|_| err("ACTION_UNAVAILABLE", "no actions"))?;
        let index = list
            .iter()
            .position(|(n, _, _)| model::is_press_action(n))
            .or(if list.is_empty() { None } else { Some(0) })
            .ok_or_else(|| err("ACTION_UNAVAILABLE", "no actions"))?;
        let done: bool = self
            .call(o, I_ACTION, "DoAction", &(index as i32,))
            .map_err(unsupported_is_unavailable)?;
        if done {
            Ok(())
        } else {
            Err(err("ACTION_FAILED", "DoAction answered false"))
        }
    }

    /// Gives `o` the keyboard focus.
    pub fn focus(&self, o: &Object) -> Result<(), AtspiError> {
        let done: bool = self
            .call(o, I_COMPONENT, "GrabFocus", &())
            .map_err(unsupported_is_unavailable)?;
        if done {
            Ok(())
        } else {
            Err(err("ACTION_FAILED", "GrabFocus answered false"))
        }
    }

    /// Whether `o` has the keyboard focus now (a fresh `GetState`).
    pub fn is_focused(&self, o: &Object) -> Result<bool, AtspiError> {
        Ok(model::state::has(self.states(o)?, model::state::FOCUSED))
    }

    /// Where an editable field is (editable, not read-only, sensitive, shown, with a real
    /// extent): the one kind of control the helper may click to focus when `GrabFocus` is
    /// unavailable (GTK 4). Anything else — a button above all, which a click would press — is
    /// `ACTION_UNAVAILABLE`.
    pub fn editable_place(&self, o: &Object) -> Result<FieldPlace, AtspiError> {
        use model::state::{has, EDITABLE, READ_ONLY, SENSITIVE, SHOWING, VISIBLE};
        let states = self.states(o)?;
        if !has(states, EDITABLE) || has(states, READ_ONLY) || !has(states, SENSITIVE) {
            return Err(err("ACTION_UNAVAILABLE", "not an editable field"));
        }
        // GTK 4 sets VISIBLE, not SHOWING, on a field on screen.
        if !has(states, SHOWING) && !has(states, VISIBLE) {
            return Err(err("ACTION_UNAVAILABLE", "not on screen"));
        }
        let extents = |coords: u32| -> Result<Extent, AtspiError> {
            self.call(o, I_COMPONENT, "GetExtents", &(coords,))
                .map_err(unsupported_is_unavailable)
        };
        // ATSPI_COORD_TYPE_SCREEN, then ATSPI_COORD_TYPE_WINDOW.
        let (screen, window) = (extents(0)?, extents(1)?);
        let pid = self
            .bus
            .call_method(
                Some("org.freedesktop.DBus"),
                "/org/freedesktop/DBus",
                Some("org.freedesktop.DBus"),
                "GetConnectionUnixProcessID",
                &(o.bus.as_str(),),
            )
            .ok()
            .and_then(|r| r.body().deserialize::<u32>().ok());
        Ok(FieldPlace {
            screen,
            window,
            pid,
        })
    }

    /// `Ok` when `o` is an editable field now (editable, not read-only, sensitive to input),
    /// else `ACTION_UNAVAILABLE`.
    pub fn editable_state(&self, o: &Object) -> Result<(), AtspiError> {
        use model::state::{has, EDITABLE, READ_ONLY, SENSITIVE};
        let states = self.states(o)?;
        if has(states, EDITABLE) && !has(states, READ_ONLY) && has(states, SENSITIVE) {
            Ok(())
        } else {
            Err(err("ACTION_UNAVAILABLE", "not an editable field"))
        }
    }

    /// Replaces `o`'s text (EditableText).
    pub fn set_text(&self, o: &Object, text: &str) -> Result<(), AtspiError> {
        let done: bool = self
            .call(o, I_EDITABLE, "SetTextContents", &(text,))
            .map_err(unsupported_is_unavailable)?;
        if done {
            Ok(())
        } else {
            Err(err("ACTION_FAILED", "SetTextContents answered false"))
        }
    }

    /// The current text of `o` (bounded), unless it is a sensitive field.
    pub fn read_text(&self, o: &Object) -> Result<String, AtspiError> {
        let role: String = self.call(o, I_ACCESSIBLE, "GetRoleName", &())?;
        if RawNode::is_sensitive(&role) {
            return Err(err("ACTION_UNAVAILABLE", "sensitive field"));
        }
        self.text(o)
    }
}

/// An extent as AT-SPI gives it: x, y, width, height.
pub type Extent = (i32, i32, i32, i32);

/// Where an editable field is ([`Atspi::editable_place`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldPlace {
    /// Its extent in screen coordinates, as the toolkit answers them.
    pub screen: Extent,
    /// Its extent relative to its window.
    pub window: Extent,
    /// The process of its application, when the bus names it.
    pub pid: Option<u32>,
}

impl FieldPlace {
    /// The screen point at the field's centre. A toolkit that knows screen coordinates answers
    /// them apart from window ones; GTK 4 answers window coordinates for both (it has no global
    /// coordinates), and then `window_origin` — the application's window's place on the screen,
    /// which the caller reads from the X server — is needed. `None` when the extent is not a
    /// real one (no size, a negative corner) or the origin is needed and unknown.
    /// Saturating: any answer is accepted.
    pub fn click_point(&self, window_origin: Option<(i32, i32)>) -> Option<(i32, i32)> {
        let (x, y) = if self.screen != self.window {
            (self.screen.0, self.screen.1)
        } else {
            let (ox, oy) = window_origin?;
            (
                self.window.0.saturating_add(ox),
                self.window.1.saturating_add(oy),
            )
        };
        let (w, h) = (self.window.2, self.window.3);
        (w > 0 && h > 0 && x >= 0 && y >= 0)
            .then(|| (x.saturating_add(w / 2), y.saturating_add(h / 2)))
    }

    /// Whether [`FieldPlace::click_point`] needs the window's origin.
    pub fn needs_origin(&self) -> bool {
        self.screen == self.window
    }
}

/// A reading and its observation: refs of the observation act on the reading's objects.
pub struct Session {
    atspi: Atspi,
    reading: Reading,
}

impl Session {
    /// Connects to the accessibility bus.
    pub fn connect() -> Result<Session, AtspiError> {
        Ok(Session {
            atspi: Atspi::connect()?,
            reading: Reading::default(),
        })
    }

    /// Connects to the accessibility bus at `address`.
    pub fn connect_address(address: &str) -> Result<Session, AtspiError> {
        Ok(Session {
            atspi: Atspi::connect_address(address)?,
            reading: Reading::default(),
        })
    }

    /// The AT-SPI client.
    pub fn atspi(&self) -> &Atspi {
        &self.atspi
    }

    /// Observes application `name` (else the front one); its refs replace the previous ones.
    pub fn observe(&mut self, name: Option<&str>) -> Result<model::Observation, AtspiError> {
        let app = self.atspi.application(name)?;
        self.reading = self.atspi.read(&app)?;
        let mut obs = model::build(&self.reading.application, &self.reading.nodes);
        if self.reading.truncated {
            obs.omitted = obs.omitted.saturating_add(1);
        }
        Ok(obs)
    }

    fn object(&self, reference: &str) -> Result<&Object, AtspiError> {
        model::parse_reference(reference)
            .and_then(|i| self.reading.objects.get(i))
            .ok_or_else(|| err("TARGET_NOT_FOUND", "unknown ref"))
    }

    /// Presses the control `reference` names (an AT-SPI action).
    pub fn press(&self, reference: &str) -> Result<(), AtspiError> {
        self.atspi.press(self.object(reference)?)
    }

    /// Focuses the control `reference` names.
    pub fn focus(&self, reference: &str) -> Result<(), AtspiError> {
        self.atspi.focus(self.object(reference)?)
    }

    /// Where the editable field `reference` names is ([`Atspi::editable_place`]).
    pub fn editable_place(&self, reference: &str) -> Result<FieldPlace, AtspiError> {
        self.atspi.editable_place(self.object(reference)?)
    }

    /// Whether the control `reference` names has the keyboard focus now.
    pub fn is_focused(&self, reference: &str) -> Result<bool, AtspiError> {
        self.atspi.is_focused(self.object(reference)?)
    }

    /// `Ok` when the control `reference` names is an editable field now.
    pub fn editable_state(&self, reference: &str) -> Result<(), AtspiError> {
        self.atspi.editable_state(self.object(reference)?)
    }

    /// Replaces the text of the field `reference` names.
    pub fn set_text(&self, reference: &str, text: &str) -> Result<(), AtspiError> {
        self.atspi.set_text(self.object(reference)?, text)
    }

    /// Reads the text of the control `reference` names (never a sensitive field's).
    pub fn read_text(&self, reference: &str) -> Result<String, AtspiError> {
        self.atspi.read_text(self.object(reference)?)
    }
}

#[cfg(test)]
mod tests {
    use super::FieldPlace;

    fn place(screen: super::Extent, window: super::Extent) -> FieldPlace {
        FieldPlace {
            screen,
            window,
            pid: Some(7),
        }
    }

    // Issue 25: the focus fallback clicks an editable field's centre, on the screen.
    #[test]
    fn a_fields_click_point() {
        // A toolkit with screen coordinates (GTK 3): its own answer, no origin needed.
        let gtk3 = place((100, 200, 40, 20), (10, 20, 40, 20));
        assert!(!gtk3.needs_origin());
        assert_eq!(gtk3.click_point(None), Some((120, 210)));
        // GTK 4 answers window coordinates for both: the window's origin is added, and without
        // it there is no point (never a click at a guess).
        let gtk4 = place((0, 166, 343, 32), (0, 166, 343, 32));
        assert!(gtk4.needs_origin());
        assert_eq!(gtk4.click_point(None), None);
        assert_eq!(gtk4.click_point(Some((0, 0))), Some((171, 182)));
        assert_eq!(gtk4.click_point(Some((50, 30))), Some((221, 212)));
        // Not a real extent: no size, a corner off screen, "unknown" (-1s).
        for bad in [(0, 0, 0, 20), (5, 5, 40, 0), (-1, -1, -1, -1)] {
            assert_eq!(place(bad, bad).click_point(Some((0, 0))), None, "{bad:?}");
        }
        assert_eq!(
            place((-10, 5, 40, 20), (1, 5, 40, 20)).click_point(None),
            None
        );
        // Any answer is accepted without overflow.
        let huge = place(
            (i32::MAX, i32::MAX, i32::MAX, i32::MAX),
            (0, 0, i32::MAX, i32::MAX),
        );
        assert_eq!(huge.click_point(None), Some((i32::MAX, i32::MAX)));
    }
}
