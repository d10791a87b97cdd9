//! The computer helper as a paired device (issue 25): [`ComputerHelper`] is the
//! [`ToolExecutor`] `jevgate-computer serve` hands to the library's channel worker
//! ([`crate::device::DeviceWorker`], the same client `jevgate-worker` uses), answering the
//! helper contract version 1 (seed 003 "Computer helper contract", the gateway's side in
//! `device/computer.rs`):
//!
//! - `observe` → the front application's observation with `contractVersion: 1`, controls (their
//!   contract actions `press`/`set_text`/`focus`), focus, window title, application,
//!   `supportedActions` and `capabilities: {standardCommands, keys: ["backspace"]}`; a
//!   sensitive field's value is never read (model.rs); a menu bar's commands carry `menu`, the
//!   names of the menus they are in (`Edit` for Edit → Copy);
//! - `set_text` is AT-SPI `SetTextContents`; where the field has no EditableText interface
//!   (Chromium's address bar) it is typed instead: the field is focused (as `focus`), its text
//!   selected (Ctrl+A) and the new text typed key by key through XTest — only into an editable
//!   field that has the keyboard focus, and only text every character of which is a key of the
//!   keyboard map (checked before anything is typed);
//! - standard commands ([`standard_commands`]): for an application whose shortcuts it knows
//!   (Chromium: `tab:new` Ctrl+T, `tab:close` Ctrl+W, `app:quit` Alt+F → Exit,
//!   `address:focus` Ctrl+L) it lists them in `capabilities.standardCommands`; an `observe` with
//!   `standard_command` set to one of them echoes it as `standardCommand` and adds one control,
//!   ref `standard-<name>` (`standard-app-quit`), that a `press` runs as that chord through
//!   XTest — only while the application it was offered for is still the front one (a shortcut
//!   is never sent to another application); Chromium's `app:quit` is its own app menu's Exit
//!   (Alt+F, then the shown "Exit" menu item pressed through AT-SPI: Chromium on Linux has
//!   no quit shortcut);
//! - `computer_action` (`press`/`set_text`/`focus` a ref of the last observation, or `key`),
//!   with its `operation_id`: the receipt is recorded before acting and its end after
//!   (state.rs); an operation id already recorded is refused, so nothing runs twice. `set_text`
//!   only into the field that has the keyboard focus (else `FOCUS_REQUIRED`, before any
//!   receipt: nothing ran). `focus`
//!   is AT-SPI `GrabFocus`, else (GTK 4 has none) one XTest click at the centre of an editable
//!   field only — a click on a button would press it — confirmed by the field's focused state;
//!   a refusal that certainly did nothing answers `EXECUTION_FAILED` (`contract_code`);
//! - `operation_status` → the receipt, or `{"state":"not_found"}`;
//! - `computer_access` → granted under a valid approval, else `waiting` on a pending access
//!   request the person answers with `jevgate-computer approve` (never blocking the helper:
//!   the gateway asks again) or refuses with `jevgate-computer revoke` (`CONSENT_REQUIRED`),
//!   `COMPUTER_ACCESS_TIMEOUT` once it is five minutes old on the helper's injected clock.
//!   With `{"check": true}` (the gateway's connection check) it only reads: no request is
//!   opened, `CONSENT_REQUIRED` without an approval or a pending request. With
//!   `{"revoke": true}` (the gateway revokes access after a disconnect) the approval is
//!   withdrawn and a pending request ends: `{"state": "revoked"}`.
//!
//! Consent comes first (state.rs): `CONSENT_REQUIRED` without a valid approval,
//! `APPLICATION_NOT_ALLOWED` for a front application not approved — refused before anything is
//! observed or recorded, so the gateway's receipt check sees `not_found`. A refusal travels as
//! `execution_failed` with the code leading the message (`CONSENT_REQUIRED: …`); the gateway
//! keeps only the code.
//!
//! It must never read a sensitive value, never act without a recorded receipt, never run an
//! operation id twice, and never log names, values, text or typed text.

use super::atspi::{AtspiError, Session};
use super::keys::{Keyboard, Modifier};
use super::model;
use super::state::{self, Receipts};
use crate::clock::SharedClock;
use crate::device::computer::{ComputerAction, ComputerCommand, ACCESS_TIMEOUT, CONTRACT_VERSION};
use crate::device::{ToolExecutor, WorkerFailure};
use crate::CancelToken;
use parking_lot::Mutex;
use serde_json::{json, Value};
use std::collections::HashSet;
use std::path::PathBuf;
use std::time::Duration;

/// How the helper reaches its desktop and where it keeps its state.
#[derive(Debug, Clone)]
pub struct HelperOptions {
    /// The state directory: consent, the pending access request, receipts.
    pub state_dir: PathBuf,
    /// Observe this application (accessible name) instead of the front one.
    pub app: Option<String>,
    /// The accessibility bus address (`None`: found from the session bus or
    /// `AT_SPI_BUS_ADDRESS`).
    pub a11y_bus: Option<String>,
    /// The X display for keys (`None`: `DISPLAY`).
    pub display: Option<String>,
    /// The clock of consent, access requests and receipts (R-CLK).
    pub clock: SharedClock,
}

/// How long a field clicked for focus may take to report it (the toolkit handles the click on
/// its main loop).
pub const FOCUS_SETTLE: Duration = Duration::from_secs(2);

struct Desktop {
    session: Option<Session>,
    keyboard: Option<Keyboard>,
    /// The application and refs of the last observation: the only refs an action may name.
    last_app: Option<String>,
    last_refs: HashSet<String>,
}

/// The helper's executor (see the module comment). Commands run one at a time (the channel
/// worker's job loop); the locks only guard against a host calling it from several threads.
pub struct ComputerHelper {
    options: HelperOptions,
    desktop: Mutex<Desktop>,
    receipts: Mutex<Result<Receipts, String>>,
}

impl std::fmt::Debug for ComputerHelper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ComputerHelper").finish_non_exhaustive()
    }
}

/// A refusal with `code` leading the message (the gateway reads only the code).
fn refuse(code: &str, why: &str) -> WorkerFailure {
    WorkerFailure::new("execution_failed", format!("{code}: {why}"))
}

/// The code the gateway reads for an action the desktop refused (the receipt keeps the
/// desktop's own): one that certainly did nothing — an action or interface the application
/// lacks or declined, a focus click refused before it was made, no keyboard, an unknown key —
/// is `EXECUTION_FAILED` (not executed); one that may have acted (a D-Bus call that failed on
/// the way, a click that did not give the focus, the X server gone mid-way) keeps its own code,
/// which the gateway does not know and reads as an unknown outcome (seed 003: a failure without
/// a cause code stays unknown).
fn contract_code(code: &'static str) -> &'static str {
    match code {
        "ACTION_UNAVAILABLE"
        | "ACTION_FAILED"
        | "POINT_OFF_SCREEN"
        | "WINDOW_NOT_FOUND"
        | "KEYBOARD_UNAVAILABLE"
        | "KEY_UNKNOWN"
        | "KEY_UNMAPPED" => "EXECUTION_FAILED",
        other => other,
    }
}

fn atspi_failure(e: &AtspiError) -> WorkerFailure {
    refuse(e.code, "the desktop refused")
}

/// A contract key name as the keyboard layer's (`backspace` → `BackSpace`).
fn key_name(key: &str) -> &str {
    const NAMES: &[(&str, &str)] = &[
        ("backspace", "BackSpace"),
        ("enter", "Return"),
        ("return", "Return"),
        ("esc", "Escape"),
        ("escape", "Escape"),
        ("tab", "Tab"),
        ("delete", "Delete"),
        ("home", "Home"),
        ("end", "End"),
        ("left", "Left"),
        ("right", "Right"),
        ("up", "Up"),
        ("down", "Down"),
        ("space", "space"),
    ];
    NAMES
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(key))
        .map_or(key, |(_, k)| k)
}

/// A standard command of the helper contract and the keyboard chord that runs it in an
/// application that has it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StandardCommand {
    /// Its contract name (`tab:new`, `tab:close`, `app:quit`, `address:focus`).
    pub name: &'static str,
    /// The ref of its control in an observation asked for it.
    pub reference: &'static str,
    /// The modifiers held.
    pub modifiers: &'static [Modifier],
    /// The key pressed (a keys.rs name).
    pub key: &'static str,
    /// The chord opens a menu, and the command is then the shown menu item with one of these
    /// names, pressed through AT-SPI: Chromium on Linux has no quit shortcut (Ctrl+Shift+Q does
    /// nothing in Chromium 156), so `app:quit` is its own app menu (Alt+F) → Exit.
    pub menu_item: Option<&'static [&'static str]>,
}

/// How long a menu a standard command opened may take to show its item.
pub const MENU_SETTLE: Duration = Duration::from_secs(4);

impl StandardCommand {
    /// The name of its control in `application`'s observation (`Quit Chromium`, `New Tab`).
    pub fn label(&self, application: &str) -> String {
        match self.name {
            "tab:new" => "New Tab".into(),
            "tab:close" => "Close Tab".into(),
            "app:quit" => format!("Quit {}", model::bounded(application, 60)),
            _ => "Focus the address bar".into(),
        }
    }
}

const CTRL: &[Modifier] = &[Modifier::Control];
const ALT: &[Modifier] = &[Modifier::Alt];

/// Chromium's (and Google Chrome's) shortcuts on Linux.
const CHROMIUM: &[StandardCommand] = &[
    StandardCommand {
        name: "tab:new",
        reference: "standard-tab-new",
        modifiers: CTRL,
        key: "t",
        menu_item: None,
    },
    StandardCommand {
        name: "tab:close",
        reference: "standard-tab-close",
        modifiers: CTRL,
        key: "w",
        menu_item: None,
    },
    StandardCommand {
        name: "app:quit",
        reference: "standard-app-quit",
        modifiers: ALT,
        key: "f",
        menu_item: Some(&["Exit", "Quit"]),
    },
    StandardCommand {
        name: "address:focus",
        reference: "standard-address-focus",
        modifiers: CTRL,
        key: "l",
        menu_item: None,
    },
];

/// The standard commands the helper offers for `application` (its accessible name): Chromium's
/// for Chromium and Google Chrome, none for an application whose shortcuts it does not know
/// (pure).
pub fn standard_commands(application: &str) -> &'static [StandardCommand] {
    let a = application.trim().to_ascii_lowercase();
    if ["chromium", "chromium-browser", "google chrome", "chrome"].contains(&a.as_str()) {
        CHROMIUM
    } else {
        &[]
    }
}

/// After a standard command's chord opened a menu of `app`: presses its shown menu item named
/// one of `names` through AT-SPI, once it shows (looked for until [`MENU_SETTLE`] on `clock`);
/// when it never shows, Escape closes the menu and the answer is `MENU_ITEM_NOT_FOUND` (the
/// menu was opened: an outcome the gateway reads as unknown).
fn press_menu_item(
    atspi: &super::atspi::Atspi,
    clock: &dyn crate::clock::Clock,
    app: &str,
    names: &[&str],
    keyboard: &Keyboard,
) -> Result<(), &'static str> {
    let mut settle = crate::clock::Grace::new(clock, MENU_SETTLE);
    loop {
        // The popups first (the page in the main window may be large), then the whole
        // application (bounded) for a toolkit that keeps its menus inside the window.
        let mut trees = Vec::new();
        if let Ok(a) = atspi.application(Some(app)) {
            trees = atspi.popups(&a).unwrap_or_default();
            trees.push(a);
        }
        let item = trees.iter().find_map(|p| {
            let r = atspi.read(p).ok()?;
            let i = r.nodes.iter().position(|n| {
                n.role == "menu item"
                    && model::state::has(n.states, model::state::SHOWING)
                    && names.contains(&model::display_name(&n.name))
            })?;
            r.objects.get(i).cloned()
        });
        if let Some(o) = item {
            return atspi.press(&o).map_err(|e| e.code);
        }
        match settle.next(Duration::from_millis(100)) {
            Some(slice) => std::thread::sleep(slice),
            None => {
                let _ = keyboard.key("Escape");
                return Err("MENU_ITEM_NOT_FOUND");
            }
        }
    }
}

/// The standard command of `application` whose control is `reference`.
fn standard_of(application: &str, reference: &str) -> Option<&'static StandardCommand> {
    standard_commands(application)
        .iter()
        .find(|s| s.reference == reference)
}

impl ComputerHelper {
    /// A helper on `options`; the desktop is connected on the first command that needs it.
    pub fn new(options: HelperOptions) -> ComputerHelper {
        let receipts = Receipts::load(&options.state_dir);
        if receipts.is_err() {
            log::error!("computer helper: its receipts file cannot be read; actions are refused");
        }
        ComputerHelper {
            options,
            desktop: Mutex::new(Desktop {
                session: None,
                keyboard: None,
                last_app: None,
                last_refs: HashSet::new(),
            }),
            receipts: Mutex::new(receipts),
        }
    }

    fn now_ms(&self) -> i64 {
        self.options.clock.wall_millis()
    }

    fn session<'a>(&self, d: &'a mut Desktop) -> Result<&'a mut Session, WorkerFailure> {
        if d.session.is_none() {
            let s = match &self.options.a11y_bus {
                Some(a) => Session::connect_address(a),
                None => Session::connect(),
            }
            .map_err(|e| atspi_failure(&e))?;
            d.session = Some(s);
        }
        d.session
            .as_mut()
            .ok_or_else(|| refuse("ATSPI_UNAVAILABLE", "no accessibility bus"))
    }

    /// The X connection for keys and the focus click, connected on first use.
    fn keyboard<'a>(&self, d: &'a mut Desktop) -> Option<&'a Keyboard> {
        if d.keyboard.is_none() {
            d.keyboard = Keyboard::connect_display(self.options.display.as_deref()).ok();
        }
        d.keyboard.as_ref()
    }

    /// Focuses the control `reference` names: AT-SPI `GrabFocus`; where the toolkit has none
    /// (GTK 4.8 answers it unsupported), one click at the centre of an editable field — never of
    /// anything else, which a click would press — then its focused state is awaited for
    /// [`FOCUS_SETTLE`] on the helper's clock (`FOCUS_NOT_TAKEN` when it never comes: the click
    /// was made, so an unknown outcome). The outer error is the desktop's failure; the inner one
    /// the action's code.
    fn focus(
        &self,
        d: &mut Desktop,
        reference: &str,
    ) -> Result<Result<(), &'static str>, WorkerFailure> {
        let session = self.session(d)?;
        match session.focus(reference) {
            Err(e) if e.code == "ACTION_UNAVAILABLE" || e.code == "ACTION_FAILED" => {}
            done => return Ok(done.map_err(|e| e.code)),
        }
        // Already focused: nothing to click.
        if session.is_focused(reference).unwrap_or(false) {
            return Ok(Ok(()));
        }
        let place = match session.editable_place(reference) {
            Ok(place) => place,
            Err(e) => return Ok(Err(e.code)),
        };
        let Some(k) = self.keyboard(d) else {
            return Ok(Err("KEYBOARD_UNAVAILABLE"));
        };
        let origin = match (place.needs_origin(), place.pid) {
            (false, _) => None,
            (true, Some(pid)) => match k.window_origin(pid) {
                Ok(origin) => Some(origin),
                Err(e) => return Ok(Err(e.code)),
            },
            (true, None) => return Ok(Err("WINDOW_NOT_FOUND")),
        };
        let Some((x, y)) = place.click_point(origin) else {
            return Ok(Err("ACTION_UNAVAILABLE"));
        };
        if let Err(e) = k.click(x, y) {
            return Ok(Err(e.code));
        }
        let session = self.session(d)?;
        let clock = &*self.options.clock;
        let mut settle = crate::clock::Grace::new(clock, FOCUS_SETTLE);
        loop {
            if session.is_focused(reference).unwrap_or(false) {
                return Ok(Ok(()));
            }
            match settle.next(Duration::from_millis(20)) {
                Some(slice) => std::thread::sleep(slice),
                // The click was made: what it did is not known.
                None => return Ok(Err("FOCUS_NOT_TAKEN")),
            }
        }
    }

    /// `set_text` without EditableText (see the module comment): the field `reference` names
    /// must be editable; the text must be typeable whole (else nothing is done:
    /// `ACTION_UNAVAILABLE`, `KEY_UNKNOWN`, `KEY_UNMAPPED`); the field is focused and must
    /// report the focus ([`FOCUS_SETTLE`]); then Ctrl+A and the text. A failure once keys were
    /// sent keeps a code the gateway reads as an unknown outcome (`TYPING_INTERRUPTED`).
    fn type_into(
        &self,
        d: &mut Desktop,
        reference: &str,
        text: &str,
    ) -> Result<Result<(), &'static str>, WorkerFailure> {
        if let Err(e) = self.session(d)?.editable_state(reference) {
            return Ok(Err(e.code));
        }
        match self.keyboard(d) {
            None => return Ok(Err("KEYBOARD_UNAVAILABLE")),
            Some(k) => {
                if let Err(e) = k.can_type(text) {
                    return Ok(Err(e.code));
                }
            }
        }
        if let Err(code) = self.focus(d, reference)? {
            return Ok(Err(code));
        }
        // GrabFocus answered; the toolkit reports the focus on its main loop.
        let session = self.session(d)?;
        let clock = &*self.options.clock;
        let mut settle = crate::clock::Grace::new(clock, FOCUS_SETTLE);
        while !session.is_focused(reference).unwrap_or(false) {
            match settle.next(Duration::from_millis(20)) {
                Some(slice) => std::thread::sleep(slice),
                None => return Ok(Err("FOCUS_NOT_TAKEN")),
            }
        }
        let Some(k) = self.keyboard(d) else {
            return Ok(Err("KEYBOARD_UNAVAILABLE"));
        };
        let typed = k
            .chord(&[Modifier::Control], "a")
            .and_then(|()| k.type_text(text));
        Ok(typed.map_err(|_| "TYPING_INTERRUPTED"))
    }

    /// The consent rule for the front application (its name, once allowed).
    fn allowed_app(&self, d: &mut Desktop) -> Result<String, WorkerFailure> {
        let consent = state::read_consent(&self.options.state_dir);
        state::check_consent(consent.as_ref(), self.now_ms(), None)
            .map_err(|code| refuse(code, "the person has not approved access"))?;
        let app = self
            .session(d)?
            .atspi()
            .application(self.options.app.as_deref())
            .map_err(|e| atspi_failure(&e))?;
        state::check_consent(consent.as_ref(), self.now_ms(), Some(&app.name))
            .map_err(|code| refuse(code, "the front application is not approved"))?;
        Ok(app.name)
    }

    /// `observe`; with `standard_command` naming one the front application has, the
    /// observation also echoes it and carries its control (see the module comment).
    fn observe(&self, args: &Value) -> Result<Value, WorkerFailure> {
        let asked = args.get("standard_command").and_then(Value::as_str);
        let mut d = self.desktop.lock();
        let app = self.allowed_app(&mut d)?;
        let obs = self
            .session(&mut d)?
            .observe(Some(&app))
            .map_err(|e| atspi_failure(&e))?;
        d.last_app = Some(obs.application.clone());
        d.last_refs = obs.controls.iter().map(|c| c.reference.clone()).collect();
        let mut v = contract_observation(&obs);
        let standard = asked.and_then(|name| {
            standard_commands(&obs.application)
                .iter()
                .find(|s| s.name == name)
        });
        if let Some(s) = standard {
            v["standardCommand"] = json!(s.name);
            // First: a page full of controls never pushes it past the gateway's bound.
            if let Some(controls) = v["controls"].as_array_mut() {
                controls.insert(
                    0,
                    json!({
                        "ref": s.reference,
                        "role": "push button",
                        "name": s.label(&obs.application),
                        "actions": ["press"],
                    }),
                );
            }
            d.last_refs.insert(s.reference.to_string());
        }
        Ok(v)
    }

    fn act(&self, args: &Value) -> Result<Value, WorkerFailure> {
        let command = ComputerCommand::from_args(args)
            .map_err(|e| refuse("INVALID_ARGUMENT", &e.to_string()))?;
        let mut d = self.desktop.lock();
        let app = self.allowed_app(&mut d)?;
        let reference = match &command.action {
            ComputerAction::Press { reference }
            | ComputerAction::Focus { reference }
            | ComputerAction::SetText { reference, .. } => Some(reference.clone()),
            ComputerAction::Key { .. } => None,
        };
        if let Some(r) = &reference {
            if d.last_app.as_deref() != Some(app.as_str()) {
                return Err(refuse(
                    "STALE_OBSERVATION",
                    "the front application changed since the observation",
                ));
            }
            if !d.last_refs.contains(r) {
                return Err(refuse(
                    "TARGET_NOT_FOUND",
                    "not a ref of the last observation",
                ));
            }
        }
        if let ComputerAction::Key { key } = &command.action {
            if super::keys::keysym(key_name(key)).is_none() {
                return Err(refuse("INVALID_ARGUMENT", "unknown key"));
            }
        }
        // Text goes only into the field that has the keyboard focus, as a person typing: a field
        // behind the focus is refused before anything is recorded (seed 003 "Unfocused fields":
        // the gateway focuses it and types again).
        if let ComputerAction::SetText { reference, .. } = &command.action {
            match self.session(&mut d)?.is_focused(reference) {
                Ok(true) => {}
                Ok(false) => {
                    return Err(refuse(
                        "FOCUS_REQUIRED",
                        "the field does not have the keyboard focus",
                    ))
                }
                Err(_) => return Err(refuse("EXECUTION_FAILED", "the field's focus is unknown")),
            }
        }
        // The receipt before the action, synced; never an operation id twice.
        {
            let mut receipts = self.receipts.lock();
            let receipts = receipts
                .as_mut()
                .map_err(|_| refuse("CONTROL_DENIED", "the helper's receipts are unreadable"))?;
            if receipts.get(&command.operation_id).is_some() {
                return Err(refuse("INVALID_ARGUMENT", "operation_id already used"));
            }
            receipts
                .start(&command.operation_id, command.kind(), self.now_ms())
                .map_err(|_| refuse("CONTROL_DENIED", "the receipt could not be recorded"))?;
        }
        let outcome: Result<(), &'static str> = match &command.action {
            // A standard command's control: its chord, to the application it was offered for
            // (checked above to be the front one still).
            ComputerAction::Press { reference } if reference.starts_with("standard-") => {
                // Connected on first use, then borrowed beside the accessibility session.
                self.keyboard(&mut d);
                let atspi = d.session.as_ref().map(Session::atspi);
                match (standard_of(&app, reference), d.keyboard.as_ref()) {
                    (None, _) => Err("ACTION_UNAVAILABLE"),
                    (Some(_), None) => Err("KEYBOARD_UNAVAILABLE"),
                    (Some(s), Some(k)) => match k.chord(s.modifiers, s.key) {
                        Err(e) => Err(e.code),
                        Ok(()) => match s.menu_item {
                            None => Ok(()),
                            Some(names) => {
                                let clock = &*self.options.clock;
                                match atspi {
                                    Some(a) => press_menu_item(a, clock, &app, names, k),
                                    None => Err("ATSPI_UNAVAILABLE"),
                                }
                            }
                        },
                    },
                }
            }
            ComputerAction::Press { reference } => {
                self.session(&mut d)?.press(reference).map_err(|e| e.code)
            }
            ComputerAction::Focus { reference } => self.focus(&mut d, reference)?,
            ComputerAction::SetText { reference, text } => {
                match self.session(&mut d)?.set_text(reference, text) {
                    // No EditableText (Chromium): typed into the focused field instead.
                    Err(e) if e.code == "ACTION_UNAVAILABLE" => {
                        self.type_into(&mut d, reference, text)?
                    }
                    done => done.map_err(|e| e.code),
                }
            }
            ComputerAction::Key { key } => match self.keyboard(&mut d) {
                Some(k) => k.key(key_name(key)).map_err(|e| e.code),
                None => Err("KEYBOARD_UNAVAILABLE"),
            },
        };
        let finished = self.receipts.lock().as_mut().map_err(|_| ()).and_then(|r| {
            r.finish(&command.operation_id, outcome.err())
                .map_err(|_| ())
        });
        if finished.is_err() {
            log::warn!("computer helper: an operation's end could not be recorded");
        }
        match outcome {
            Ok(()) => Ok(json!({
                "operation_id": command.operation_id,
                "state": "completed",
                "action": command.kind(),
            })),
            Err(code) => Err(refuse(
                contract_code(code),
                "the desktop refused the action",
            )),
        }
    }

    fn operation_status(&self, args: &Value) -> Result<Value, WorkerFailure> {
        let id = args
            .get("operation_id")
            .and_then(Value::as_str)
            .ok_or_else(|| refuse("INVALID_ARGUMENT", "operation_id is required"))?;
        crate::device::computer::check_operation_id(id)
            .map_err(|e| refuse("INVALID_ARGUMENT", &e.to_string()))?;
        let receipts = self.receipts.lock();
        // An unreadable receipts file answers without a cause code: never "not found".
        let receipts = receipts
            .as_ref()
            .map_err(|_| WorkerFailure::new("execution_failed", "receipts unreadable"))?;
        Ok(match receipts.get(id) {
            None => json!({"state": "not_found"}),
            Some(e) => {
                let mut v = json!({
                    "operation_id": e.operation_id,
                    "state": e.state,
                    "action": e.action,
                });
                if let Some(code) = &e.code {
                    v["code"] = json!(code);
                }
                v
            }
        })
    }

    /// `computer_access`: granted under a valid approval (a pending request then ends); else
    /// the pending access request (opened by the first ask) is `waiting` until the person
    /// approves, and `COMPUTER_ACCESS_TIMEOUT` once it is five minutes old on the helper's clock
    /// (the request ends). Never blocks: the gateway asks again, and other commands (receipts)
    /// are answered meanwhile.
    fn access(&self, args: &Value) -> Result<Value, WorkerFailure> {
        let dir = &self.options.state_dir;
        let now = self.now_ms();
        let flag = |k: &str| args.get(k).and_then(Value::as_bool) == Some(true);
        if flag("revoke") {
            state::revoke_access(dir)
                .map_err(|_| refuse("CONTROL_DENIED", "the approval could not be withdrawn"))?;
            log::info!("computer helper: the gateway revoked access; the person approves again");
            return Ok(json!({"state": "revoked"}));
        }
        if let Some(c) =
            state::read_consent(dir).filter(|c| state::check_consent(Some(c), now, None).is_ok())
        {
            state::close_access_request(dir);
            return Ok(json!({
                "state": "granted",
                "applications": c.applications,
                "expiresAt": c.expires_at,
            }));
        }
        if state::access_request_refused(dir) {
            state::close_access_request(dir);
            return Err(refuse("CONSENT_REQUIRED", "the person refused access"));
        }
        let requested_at = match state::pending_access_request(dir) {
            Some(at) => at,
            // A check only reads: no request is shown for it.
            None if flag("check") => {
                return Err(refuse(
                    "CONSENT_REQUIRED",
                    "the person has not approved access",
                ))
            }
            None => {
                state::open_access_request(dir, now).map_err(|_| {
                    refuse("CONSENT_REQUIRED", "the access request could not be shown")
                })?;
                log::info!("computer helper: waiting for the person to approve access");
                now
            }
        };
        let limit = i64::try_from(ACCESS_TIMEOUT.as_millis()).unwrap_or(i64::MAX);
        if now.saturating_sub(requested_at) >= limit {
            state::close_access_request(dir);
            return Err(refuse(
                "COMPUTER_ACCESS_TIMEOUT",
                "nobody answered the access request",
            ));
        }
        Ok(json!({"state": "waiting", "requestedAt": requested_at}))
    }
}

/// The contract observation (version 1) of a model observation.
pub fn contract_observation(obs: &model::Observation) -> Value {
    let controls: Vec<Value> = obs
        .controls
        .iter()
        .map(|c| {
            let mut actions = Vec::new();
            if c.actions.iter().any(|a| model::is_press_action(a)) {
                actions.push("press");
            }
            let editable = c.states.contains(&"editable") && !c.states.contains(&"readonly");
            if editable {
                actions.push("set_text");
            }
            if editable || !actions.is_empty() {
                actions.push("focus");
            }
            let mut v = json!({
                "ref": c.reference,
                "role": c.role,
                "name": c.name,
                "states": c.states,
                "actions": actions,
            });
            if c.sensitive {
                v["sensitive"] = json!(true);
            } else if let Some(value) = &c.value {
                v["value"] = json!(value);
            }
            if let Some(menu) = &c.menu {
                v["menu"] = json!(menu);
            }
            v
        })
        .collect();
    let mut v = json!({
        "contractVersion": CONTRACT_VERSION,
        "application": obs.application,
        "windowTitle": obs.window_title,
        "controls": controls,
        "text": obs.text,
        "omitted": obs.omitted,
        "supportedActions": ["press", "set_text", "focus", "key"],
        "capabilities": {
            "standardCommands": standard_commands(&obs.application)
                .iter()
                .map(|s| s.name)
                .collect::<Vec<_>>(),
            "keys": ["backspace"],
        },
    });
    if let Some(f) = &obs.focused {
        v["focused"] = json!(f);
    }
    v
}

impl ToolExecutor for ComputerHelper {
    fn execute(
        &self,
        tool: &str,
        args: &Value,
        _deadline: Duration,
        _cancel: &CancelToken,
    ) -> Result<Value, WorkerFailure> {
        match tool {
            "observe" => self.observe(args),
            "computer_action" => self.act(args),
            "operation_status" => self.operation_status(args),
            "computer_access" => self.access(args),
            _ => Err(refuse("UNKNOWN_TOOL", "not a computer helper command")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::contract_code;

    // Seed 003 "Computer helper contract": a refusal that certainly did nothing carries a cause
    // the gateway knows (not executed); one that may have acted keeps a code it reads as unknown.
    #[test]
    fn r_computer_refusals_carry_a_cause_only_when_nothing_happened() {
        for code in [
            "ACTION_UNAVAILABLE",
            "ACTION_FAILED",
            "POINT_OFF_SCREEN",
            "WINDOW_NOT_FOUND",
            "KEYBOARD_UNAVAILABLE",
            "KEY_UNKNOWN",
            "KEY_UNMAPPED",
        ] {
            assert_eq!(contract_code(code), "EXECUTION_FAILED", "{code}");
        }
        for code in [
            "FOCUS_NOT_TAKEN",
            "ATSPI_CALL_FAILED",
            "DISPLAY_UNAVAILABLE",
            "TARGET_NOT_FOUND",
        ] {
            assert_eq!(contract_code(code), code);
        }
        assert_eq!(
            jevgate_kind("EXECUTION_FAILED"),
            Some(crate::ErrorKind::ExecutionFailed)
        );
        for unknown in [
            "FOCUS_NOT_TAKEN",
            "ATSPI_CALL_FAILED",
            "DISPLAY_UNAVAILABLE",
        ] {
            assert_eq!(jevgate_kind(unknown), None, "{unknown} must stay unknown");
        }
    }

    // Seed 003 "Computer helper contract" (issue 25): the helper offers Chromium's standard
    // commands — each with its own control ref and chord — and none for an application whose
    // shortcuts it does not know; the quit control names the application.
    #[test]
    fn r_computer_standard_commands_for_chromium_only() {
        use super::{standard_commands, standard_of, Modifier};
        let names: Vec<_> = standard_commands("Chromium")
            .iter()
            .map(|s| s.name)
            .collect();
        assert_eq!(names, crate::device::computer::STANDARD_COMMANDS);
        assert_eq!(standard_commands("Google Chrome").len(), 4);
        for other in ["gnome-calculator", "gedit", "", "Chromium Evil"] {
            assert!(standard_commands(other).is_empty(), "{other}");
        }
        for s in standard_commands("Chromium") {
            assert_eq!(
                s.reference,
                format!("standard-{}", s.name.replace(':', "-"))
            );
            assert_eq!(standard_of("Chromium", s.reference), Some(s));
            assert!(crate::computer::keys::keysym(s.key).is_some());
        }
        let quit = standard_of("Chromium", "standard-app-quit").unwrap();
        assert_eq!((quit.modifiers, quit.key), (&[Modifier::Alt][..], "f"));
        assert_eq!(quit.menu_item, Some(&["Exit", "Quit"][..]));
        assert!(standard_commands("Chromium")
            .iter()
            .all(|s| s.menu_item.is_some() == (s.name == "app:quit")));
        assert_eq!(quit.label("Chromium"), "Quit Chromium");
        assert_eq!(standard_of("gnome-calculator", "standard-app-quit"), None);
    }

    fn jevgate_kind(code: &str) -> Option<crate::ErrorKind> {
        crate::ErrorKind::from_code(code)
    }
}
