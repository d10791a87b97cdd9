//! The managed tool family's definitions (issue 15, seed 001 "Tools"): each tool's name,
//! description and input JSON Schema, exported in MCP or function-calling form for the
//! capabilities a host turned on.
//!
//! This file owns the list of tool names ([`ManagedTool`], the one enum the executor dispatches
//! on) and what each accepts. It never runs anything; the executor (`mod.rs` and one file per
//! tool group) validates arguments against the same rules and answers `INVALID_TOOL_ARGUMENTS`
//! naming the field. The definitions and the enum cannot drift: a test checks that every
//! definition parses to a variant and every variant has a definition.

use serde_json::{json, Value};

use crate::device::ToolFormat;

/// How a session treats page data (seed 001 "Strict data handling").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DataHandling {
    /// Screenshots are also stored as private artifacts; the session keeps a console and
    /// network journal; authenticated mode and the file tools as the host allows.
    #[default]
    Standard,
    /// Strict: a session of its own (a strict call replaces the thread's standard session,
    /// never reuses it), always isolated (authenticated mode is not exposed), no file tools,
    /// no console or network journal, no screenshot artifact, no download written.
    Strict,
}

/// Which optional parts of the family a host turned on (seed 001 `browser: {tabs, files}`).
///
/// * `tabs` — `browser_tabs` (list / new / select / close).
/// * `files` — `browser_file_upload` / `browser_download_files` (served only when the host also
///   names a workspace directory, `Gateway::set_managed_workspace`).
/// * `vision` — reserved for the model-can-see-images switch; this version lists the same tools
///   with or without it (the pixel tools are always listed, as seed 001 says, and
///   `browser_take_screenshot` always returns its image).
///
/// ```
/// let caps = jevgate::browser::managed::ManagedCaps { tabs: true, ..Default::default() };
/// assert!(caps.tabs && !caps.files);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct ManagedCaps {
    /// `browser_tabs`.
    pub tabs: bool,
    /// `browser_file_upload` / `browser_download_files`.
    pub files: bool,
    /// Reserved (see the type's documentation).
    pub vision: bool,
}

/// Declares [`ManagedTool`] from one list: the enum, every variant in listing order and each
/// variant's wire name.
macro_rules! managed_tools {
    ($($(#[$doc:meta])* $variant:ident => $name:literal,)+) => {
        /// A tool of the managed family, parsed from its name; the executor dispatches on it.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub(crate) enum ManagedTool {
            $($(#[$doc])* $variant,)+
        }

        impl ManagedTool {
            /// Every tool, in listing order.
            #[cfg(test)]
            pub(crate) const ALL: &'static [ManagedTool] = &[$(ManagedTool::$variant,)+];

            /// The tool's name (`browser_click`, …).
            pub(crate) fn name(self) -> &'static str {
                match self {
                    $(ManagedTool::$variant => $name,)+
                }
            }

            /// The tool named `name`, if it is one of the family.
            pub(crate) fn from_name(name: &str) -> Option<ManagedTool> {
                match name {
                    $($name => Some(ManagedTool::$variant),)+
                    _ => None,
                }
            }
        }
    };
}

managed_tools! {
    /// The accessibility tree (or one region of it).
    Snapshot => "browser_snapshot",
    /// Go to a URL (and choose the session mode).
    Navigate => "browser_navigate",
    /// Back one page.
    NavigateBack => "browser_navigate_back",
    /// A real click on an element.
    Click => "browser_click",
    /// Type into an editable element.
    Type => "browser_type",
    /// Several fields in one call.
    FillForm => "browser_fill_form",
    /// An option of a select.
    SelectOption => "browser_select_option",
    /// Check a checkbox or radio.
    Check => "browser_check",
    /// Uncheck a checkbox.
    Uncheck => "browser_uncheck",
    /// A key or chord.
    PressKey => "browser_press_key",
    /// Wait for text or time.
    WaitFor => "browser_wait_for",
    /// Accept or dismiss a dialog (now, or armed for the next action).
    HandleDialog => "browser_handle_dialog",
    /// A JavaScript function in the page.
    Evaluate => "browser_evaluate",
    /// The current view as an image.
    TakeScreenshot => "browser_take_screenshot",
    /// List, open, select or close tabs.
    Tabs => "browser_tabs",
    /// Hover an element.
    Hover => "browser_hover",
    /// Drag an element onto another.
    Drag => "browser_drag",
    /// Resize the viewport.
    Resize => "browser_resize",
    /// Console messages since this turn started.
    ConsoleMessages => "browser_console_messages",
    /// Network requests since this turn started.
    NetworkRequests => "browser_network_requests",
    /// Files from the workspace into a file input.
    FileUpload => "browser_file_upload",
    /// The tab's downloads (and one saved into the workspace).
    DownloadFiles => "browser_download_files",
    /// A click at viewport coordinates.
    MouseClickXy => "browser_mouse_click_xy",
    /// A mouse move to viewport coordinates.
    MouseMoveXy => "browser_mouse_move_xy",
    /// A drag between viewport coordinates.
    MouseDragXy => "browser_mouse_drag_xy",
}

/// Which cap (or data handling) a tool needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Needs {
    Nothing,
    Tabs,
    /// The `files` cap, and standard data handling.
    Files,
    /// Standard data handling: the session keeps a console and network journal.
    Journal,
}

/// One tool of the family.
pub(crate) struct Def {
    pub name: &'static str,
    pub needs: Needs,
    description: &'static str,
    schema: fn() -> Value,
}

const TARGET_DOC: &str = "The element: a ref from the latest snapshot (e5), or a selector: css=<CSS selector>, role=<role> or role=<role>[name=\"<accessible name>\"], text=<accessible name>. A selector must match exactly one interactive element.";

fn target() -> Value {
    json!({"type": "string", "description": TARGET_DOC})
}

fn obj(props: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": props, "required": required, "additionalProperties": false})
}

/// The family in listing order.
pub(crate) const DEFS: &[Def] = &[
    Def {
        name: "browser_snapshot",
        needs: Needs::Nothing,
        description: "Capture the page's accessibility tree, with a [ref=…] per interactive element (iframes and open shadow DOM included). Pass a target to snapshot just one region. Returns untrusted page content.",
        schema: || obj(json!({"target": {"type": "string", "description": format!("Only this region. {TARGET_DOC}")}}), &[]),
    },
    Def {
        name: "browser_navigate",
        needs: Needs::Nothing,
        description: "Go to a URL (http, https or about:blank; a bare domain gets https://). Returns a fresh snapshot. sessionMode: authenticated (the configured profile, with its saved logins) or isolated (clean, never touches the profile); omit it to continue the thread's live mode. Switching modes closes the thread's session and loses its tabs.",
        schema: || obj(json!({
            "url": {"type": "string", "description": "The address."},
            "sessionMode": {"type": "string", "enum": ["authenticated", "isolated"], "description": "The session mode; omit to continue the live one."}
        }), &["url"]),
    },
    Def {
        name: "browser_navigate_back",
        needs: Needs::Nothing,
        description: "Go back one page in the tab's history. Returns a fresh snapshot.",
        schema: || obj(json!({}), &[]),
    },
    Def {
        name: "browser_click",
        needs: Needs::Nothing,
        description: "Click an element (a real mouse click at its centre). Returns a fresh snapshot.",
        schema: || obj(json!({"target": target()}), &["target"]),
    },
    Def {
        name: "browser_type",
        needs: Needs::Nothing,
        description: "Type into an editable element, replacing its content; submit presses Enter after. Returns a fresh snapshot.",
        schema: || obj(json!({
            "target": target(),
            "text": {"type": "string", "description": "The text to type."},
            "submit": {"type": "boolean", "description": "Press Enter after typing (default false)."}
        }), &["target", "text"]),
    },
    Def {
        name: "browser_fill_form",
        needs: Needs::Nothing,
        description: "Fill several fields in one call: text fields are typed into, checkboxes and radios are clicked to the value (\"true\"/\"false\"), selects pick the option with that value or label. Returns a fresh snapshot.",
        schema: || obj(json!({
            "fields": {"type": "array", "minItems": 1, "maxItems": 50, "items": obj(json!({
                "target": target(),
                "value": {"type": ["string", "boolean"], "description": "Text, true/false for a checkbox or radio, an option's value or label for a select."}
            }), &["target", "value"])}
        }), &["fields"]),
    },
    Def {
        name: "browser_select_option",
        needs: Needs::Nothing,
        description: "Pick an option of a select element by its value or visible label. Returns a fresh snapshot.",
        schema: || obj(json!({
            "target": target(),
            "value": {"type": "string", "description": "The option's value or label."}
        }), &["target", "value"]),
    },
    Def {
        name: "browser_check",
        needs: Needs::Nothing,
        description: "Check a checkbox or radio (a real click, only when it is not checked yet). Returns a fresh snapshot.",
        schema: || obj(json!({"target": target()}), &["target"]),
    },
    Def {
        name: "browser_uncheck",
        needs: Needs::Nothing,
        description: "Uncheck a checkbox (a real click, only when it is checked). Returns a fresh snapshot.",
        schema: || obj(json!({"target": target()}), &["target"]),
    },
    Def {
        name: "browser_press_key",
        needs: Needs::Nothing,
        description: "Press a key or chord on the focused element, e.g. Enter, Tab, a, Control+A, Shift+Tab, Meta+L. Modifiers: Control, Shift, Alt, Meta. Returns a fresh snapshot.",
        schema: || obj(json!({"key": {"type": "string", "description": "A key (Enter, Tab, Escape, Backspace, Delete, ArrowUp…, Home, End, PageUp, PageDown, Space, F1–F12, or one character) or modifiers and a key joined by +."}}), &["key"]),
    },
    Def {
        name: "browser_wait_for",
        needs: Needs::Nothing,
        description: "Wait until text appears, until text disappears, or for a number of seconds (at most 30 s in all). Returns a fresh snapshot.",
        schema: || obj(json!({
            "text": {"type": "string", "description": "Wait until this text is on the page."},
            "textGone": {"type": "string", "description": "Wait until this text is no longer on the page."},
            "time": {"type": "number", "minimum": 0, "maximum": 30, "description": "Seconds to wait (alone), or the most to wait for text (default 10)."}
        }), &[]),
    },
    Def {
        name: "browser_handle_dialog",
        needs: Needs::Nothing,
        description: "Accept or dismiss a native alert/confirm/prompt. Call it before the action that opens the dialog (it is then handled as it opens, and that action's result says what was done), or while a dialog is open.",
        schema: || obj(json!({
            "accept": {"type": "boolean", "description": "OK (true) or Cancel (false)."},
            "promptText": {"type": "string", "description": "The answer to a prompt."}
        }), &["accept"]),
    },
    Def {
        name: "browser_evaluate",
        needs: Needs::Nothing,
        description: "Run a JavaScript function in the page, e.g. () => document.title; a returned promise is awaited. Returns its JSON result as untrusted page-derived data.",
        schema: || obj(json!({"function": {"type": "string", "description": "A function expression taking no arguments."}}), &["function"]),
    },
    Def {
        name: "browser_take_screenshot",
        needs: Needs::Nothing,
        description: "Capture the current view: a model-visible image, and a private artifact id for the host (none in strict data handling).",
        schema: || obj(json!({"fullPage": {"type": "boolean", "description": "The whole scrollable page (default: the viewport)."}}), &[]),
    },
    Def {
        name: "browser_tabs",
        needs: Needs::Tabs,
        description: "List, open, select or close tabs. Tabs are numbered from 0 in the list.",
        schema: || obj(json!({
            "action": {"type": "string", "enum": ["list", "new", "select", "close"]},
            "index": {"type": "integer", "minimum": 0, "description": "The tab for select and close."},
            "url": {"type": "string", "description": "The address a new tab opens."}
        }), &["action"]),
    },
    Def {
        name: "browser_hover",
        needs: Needs::Nothing,
        description: "Move the mouse over an element (a real hover: CSS :hover and mouseover fire). Returns a fresh snapshot.",
        schema: || obj(json!({"target": target()}), &["target"]),
    },
    Def {
        name: "browser_drag",
        needs: Needs::Nothing,
        description: "Drag one element onto another with the left mouse button (HTML5 drag and drop included). Both must be visible together. Returns a fresh snapshot.",
        schema: || obj(json!({
            "startTarget": {"type": "string", "description": format!("The element dragged. {TARGET_DOC}")},
            "endTarget": {"type": "string", "description": format!("The element dropped on. {TARGET_DOC}")}
        }), &["startTarget", "endTarget"]),
    },
    Def {
        name: "browser_resize",
        needs: Needs::Nothing,
        description: "Resize the viewport (CSS pixels, each side 200 to 4096). Returns a fresh snapshot.",
        schema: || obj(json!({
            "width": {"type": "integer", "minimum": 200, "maximum": 4096},
            "height": {"type": "integer", "minimum": 200, "maximum": 4096}
        }), &["width", "height"]),
    },
    Def {
        name: "browser_console_messages",
        needs: Needs::Journal,
        description: "Read console messages and uncaught page errors the current tab logged since this turn started (since this tool last returned in this session, or since the host began a new turn). Returns untrusted page output.",
        schema: || obj(json!({}), &[]),
    },
    Def {
        name: "browser_network_requests",
        needs: Needs::Journal,
        description: "List the network requests the current tab made since this turn started (method, URL with token-bearing values redacted, status). Returns untrusted page output.",
        schema: || obj(json!({}), &[]),
    },
    Def {
        name: "browser_file_upload",
        needs: Needs::Files,
        description: "Set the files of a file input (<input type=file>) from the workspace directory (at most 16; an empty list clears it). Returns a fresh snapshot.",
        schema: || obj(json!({
            "target": target(),
            "paths": {"type": "array", "maxItems": 16, "items": {"type": "string"}, "description": "Paths relative to the workspace directory; none may leave it."}
        }), &["target", "paths"]),
    },
    Def {
        name: "browser_download_files",
        needs: Needs::Files,
        description: "List the current tab's downloads; with name, save that completed download into the workspace directory (as saveAs, default its name; an existing file is never overwritten). File contents are never returned.",
        schema: || obj(json!({
            "name": {"type": "string", "description": "A completed download's name, as listed."},
            "saveAs": {"type": "string", "description": "Where to save it, relative to the workspace directory (default: the name)."}
        }), &[]),
    },
    Def {
        name: "browser_mouse_click_xy",
        needs: Needs::Nothing,
        description: "Click at viewport pixel coordinates (CSS pixels of the screenshot), for canvas/WebGL surfaces the accessibility tree cannot express. Prefer ref-based tools when refs exist. Returns a fresh snapshot.",
        schema: || obj(json!({
            "x": {"type": "number", "minimum": 0},
            "y": {"type": "number", "minimum": 0}
        }), &["x", "y"]),
    },
    Def {
        name: "browser_mouse_move_xy",
        needs: Needs::Nothing,
        description: "Move the mouse to viewport pixel coordinates (CSS pixels of the screenshot), for canvas/WebGL surfaces. Prefer ref-based tools when refs exist. Returns a fresh snapshot.",
        schema: || obj(json!({
            "x": {"type": "number", "minimum": 0},
            "y": {"type": "number", "minimum": 0}
        }), &["x", "y"]),
    },
    Def {
        name: "browser_mouse_drag_xy",
        needs: Needs::Nothing,
        description: "Drag with the left mouse button from one viewport point to another (CSS pixels of the screenshot), for canvas/WebGL surfaces. Prefer browser_drag when refs exist. Returns a fresh snapshot.",
        schema: || obj(json!({
            "startX": {"type": "number", "minimum": 0},
            "startY": {"type": "number", "minimum": 0},
            "endX": {"type": "number", "minimum": 0},
            "endY": {"type": "number", "minimum": 0}
        }), &["startX", "startY", "endX", "endY"]),
    },
];

impl ManagedCaps {
    /// Whether the caps turn on a tool that `needs` (data handling aside).
    pub(crate) fn allows(self, needs: Needs) -> bool {
        match needs {
            Needs::Nothing | Needs::Journal => true,
            Needs::Tabs => self.tabs,
            Needs::Files => self.files,
        }
    }
}

/// Whether a tool that `needs` is exposed in `data` handling: seed 001 "Strict data handling"
/// — the file tools (uploads and downloads have their own storage controls) and the session
/// journal tools (no session logging) are not exposed in strict.
pub(crate) fn exposed_in(needs: Needs, data: DataHandling) -> bool {
    data == DataHandling::Standard || !matches!(needs, Needs::Files | Needs::Journal)
}

/// `browser_navigate` as strict data handling lists it: sessions are always isolated there
/// (authenticated mode is not exposed), so `sessionMode` accepts only `isolated`.
fn navigate_in_strict() -> (&'static str, Value) {
    (
        "Go to a URL (http, https or about:blank; a bare domain gets https://). Returns a fresh snapshot. Strict data handling: the session is isolated (clean, no saved logins, nothing kept on disk); sessionMode accepts only isolated.",
        obj(json!({
            "url": {"type": "string", "description": "The address."},
            "sessionMode": {"type": "string", "enum": ["isolated"], "description": "Only isolated in strict data handling."}
        }), &["url"]),
    )
}

/// The managed tool family's definitions for `caps`, as a JSON array in `format`: MCP
/// `{name, description, inputSchema}` or function calling `{type:"function", function:{name,
/// description, parameters}}`.
///
/// ```
/// use jevgate::browser::managed::{managed_tool_definitions, ManagedCaps};
/// use jevgate::device::ToolFormat;
/// let plain = managed_tool_definitions(ToolFormat::Mcp, ManagedCaps::default());
/// let names: Vec<&str> = plain.as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
/// assert!(names.contains(&"browser_click") && !names.contains(&"browser_tabs"));
/// let all = ManagedCaps { tabs: true, files: true, vision: true };
/// let openai = managed_tool_definitions(ToolFormat::OpenAi, all);
/// assert_eq!(openai[0]["function"]["name"], "browser_snapshot");
/// ```
pub fn managed_tool_definitions(format: ToolFormat, caps: ManagedCaps) -> Value {
    managed_tool_definitions_for(format, caps, DataHandling::Standard)
}

/// [`managed_tool_definitions`] for a session of `data` handling. Strict (seed 001 "Strict
/// data handling") lists neither the file tools (whatever the caps) nor
/// `browser_console_messages` / `browser_network_requests`, and `browser_navigate` offers
/// only the isolated session mode.
///
/// ```
/// use jevgate::browser::managed::{managed_tool_definitions_for, DataHandling, ManagedCaps};
/// use jevgate::device::ToolFormat;
/// let all = ManagedCaps { tabs: true, files: true, vision: true };
/// let strict = managed_tool_definitions_for(ToolFormat::Mcp, all, DataHandling::Strict);
/// let names: Vec<&str> = strict.as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
/// assert!(names.contains(&"browser_tabs") && !names.contains(&"browser_file_upload"));
/// assert!(!names.contains(&"browser_console_messages"));
/// ```
pub fn managed_tool_definitions_for(
    format: ToolFormat,
    caps: ManagedCaps,
    data: DataHandling,
) -> Value {
    Value::Array(
        DEFS.iter()
            .filter(|d| caps.allows(d.needs) && exposed_in(d.needs, data))
            .map(|d| {
                let (description, schema) = match ManagedTool::from_name(d.name) {
                    Some(ManagedTool::Navigate) if data == DataHandling::Strict => {
                        navigate_in_strict()
                    }
                    _ => (d.description, (d.schema)()),
                };
                match format {
                    ToolFormat::Mcp => json!({"name": d.name, "description": description, "inputSchema": schema}),
                    ToolFormat::OpenAi => json!({"type": "function", "function": {"name": d.name, "description": description, "parameters": schema}}),
                }
            })
            .collect(),
    )
}

/// The definition of `tool`.
pub(crate) fn def(tool: ManagedTool) -> Option<&'static Def> {
    DEFS.iter().find(|d| d.name == tool.name())
}

/// The argument names a tool accepts (its schema's properties).
pub(crate) fn accepted(d: &Def) -> Vec<String> {
    (d.schema)()["properties"]
        .as_object()
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    // Issue 19 item 3: the definitions and the enum the executor dispatches on cannot drift —
    // every definition parses to a variant (of that name), every variant has exactly one
    // definition, in the same order.
    #[test]
    fn every_definition_parses_to_a_variant_and_every_variant_has_a_definition() {
        for d in DEFS {
            let tool = ManagedTool::from_name(d.name)
                .unwrap_or_else(|| panic!("{} has no ManagedTool variant", d.name));
            assert_eq!(tool.name(), d.name);
        }
        for tool in ManagedTool::ALL {
            assert_eq!(
                DEFS.iter().filter(|d| d.name == tool.name()).count(),
                1,
                "{tool:?} needs exactly one definition"
            );
            assert!(def(*tool).is_some());
        }
        let listed: Vec<&str> = DEFS.iter().map(|d| d.name).collect();
        let variants: Vec<&str> = ManagedTool::ALL.iter().map(|t| t.name()).collect();
        assert_eq!(listed, variants);
        assert_eq!(ManagedTool::from_name("browser_nope"), None);
        assert_eq!(ManagedTool::from_name("BROWSER_CLICK"), None);
    }
}
