//! Outcome lines and the action log (R-RUN): pure functions from what a command did to the text
//! a person reads (`Done: …`, `Not done: … (hint)`, `Unknown: …`, `Ready: …`).
//!
//! Owns the wording and its bounds. It never sees page text beyond a control's accessible name
//! (shortened), never shows typed text (always `[text]`) and never shows a URL's path or query
//! (a host only).

use super::{ActionLogEntry, ACTION_LOG_ROUNDS};

/// The most characters of a control name or command shown in a line.
const SHOWN: usize = 60;

/// `Ready: …` — the session start with no action (`SESSION_READY`).
pub(crate) const READY: &str = "Ready: the session is open and waits for the next command.";

/// The line of a request a dead process left running.
pub(crate) fn interrupted_line() -> &'static str {
    "Unknown: the gateway stopped while this ran; its last action may have run and is not repeated (BROWSER_EXECUTION_INTERRUPTED)."
}

/// The line of a task whose session a stop closed while nothing was in flight.
pub(crate) fn closed_by_stop_line() -> &'static str {
    "Not done: the gateway stopped; the session closed with nothing in flight and nothing is repeated (BROWSER_EXECUTION_INTERRUPTED)."
}

/// The line of a session that waited too long for its next command.
pub(crate) fn expired_line() -> String {
    "Not done: the session waited too long for a command and closed (SESSION_EXPIRED).".into()
}

/// The line of a session a new spawn for the same target replaced.
pub(crate) fn replaced_line() -> String {
    "Not done: a new task for the same browser replaced this session, which had not acted (REPLACED).".into()
}

/// `s` cut to [`SHOWN`] characters (with `…`), control characters replaced.
pub(crate) fn short(s: &str) -> String {
    let mut out: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(SHOWN)
        .collect();
    if s.chars().count() > SHOWN {
        out.push('…');
    }
    out.trim().to_string()
}

/// The host of a URL only (`https://example.com/a?token=x` → `example.com`).
pub(crate) fn host_of(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = host.rsplit('@').next().unwrap_or(host);
    short(host)
}

/// `Done: what`.
pub(crate) fn done(what: &str) -> String {
    format!("Done: {what}")
}

/// `Not done: what (CODE)`.
pub(crate) fn not_done(what: &str, code: &str) -> String {
    format!("Not done: {what} ({code})")
}

/// The one question a person is asked before a Jev-decided action Jev did not judge routine
/// (issue 26 item 2): naming the chosen control, in Thai when the person's command has Thai
/// script, else in English — `จะกด "Delete account" ใช่ไหม` / `Press "Delete account"?`.
pub(crate) fn confirm_question(thai: bool, action: &str, control: &str) -> String {
    let name = short(control);
    match (thai, action) {
        (true, "type into") => format!("จะพิมพ์ลงใน \"{name}\" ใช่ไหม"),
        (true, _) => format!("จะกด \"{name}\" ใช่ไหม"),
        (false, "type into") => format!("Type into \"{name}\"?"),
        (false, _) => format!("Press \"{name}\"?"),
    }
}

/// The line of a person's command that went to the agent (issue 26 items 3 and 4): nothing is
/// said for it but this, for the record — the agent's reply is the response.
pub(crate) fn handed(code: &str) -> String {
    format!("Handed to the agent ({code})")
}

/// Whether `text` has Thai script (the person's language for a question).
pub(crate) fn has_thai(text: &str) -> bool {
    text.chars().any(|c| ('\u{0E00}'..='\u{0E7F}').contains(&c))
}

/// `Unknown: …` — the action may have run; nothing is repeated.
pub(crate) fn unknown(tool: &str, code: &str) -> String {
    format!("Unknown: {tool} may have run; it is not repeated ({code})")
}

/// Words for a task that stopped before its browser action: the gate's codes, else the
/// browser could not be opened.
pub(crate) fn open_failure_words(code: &str) -> &'static str {
    match code {
        "ORCHESTRATION_DISABLED" => "browser tasks are turned off in the configuration",
        "EXECUTION_DENIED" => "this agent may not run browser tasks",
        "BROWSER_CONTEXT_BUSY" => "the browser profile is in use by another active session",
        _ => "the browser could not be opened",
    }
}

/// Words for a target that stopped answering (the browser died, the device went offline).
pub(crate) const UNREACHABLE: &str = "the browser is not reachable";

/// A computer task's line (issue 25): `line` made by [`not_done`] for `code` from a browser's
/// words ([`not_done_words`], [`open_failure_words`], [`UNREACHABLE`]), with whatever follows
/// them, said of the computer, its screen and its application instead; any other line as it is.
/// A browser task's lines never pass here.
pub(crate) fn on_computer(code: &str, line: String) -> String {
    for words in [not_done_words(code), open_failure_words(code), UNREACHABLE] {
        let Some(rest) = line.strip_prefix(&not_done(words, code)) else {
            continue;
        };
        let computer = match words {
            "the browser refused the action" => "the computer refused the action",
            "the browser could not be opened" => "the computer could not be reached",
            UNREACHABLE => "the computer is not reachable",
            "nothing on the page matches the command" => {
                "nothing on the screen matches the command"
            }
            "the page kept changing" => "the screen kept changing",
            "the page cannot scroll further that way" => "it cannot scroll further that way",
            "this browser cannot press keys" => "the computer cannot press that key",
            "this command is not for a browser" => "this command cannot be done on the computer",
            "browser tasks are turned off in the configuration" => {
                "computer tasks are turned off in the configuration"
            }
            "this agent may not run browser tasks" => "this agent may not run computer tasks",
            _ => continue,
        };
        return format!("{}{rest}", not_done(computer, code));
    }
    line
}

/// Words for a not-done code.
pub(crate) fn not_done_words(code: &str) -> &'static str {
    match code {
        "STEP_NOT_EXECUTED" => "nothing on the page matches the command",
        "NEW_TAB_OUT_OF_SCOPE" => {
            "a new tab would widen the approved scope; the approved tab is kept"
        }
        "HISTORY_UNAVAILABLE" => "there is no page to go to in that direction",
        "SCROLL_LIMIT" => "the page cannot scroll further that way",
        "KEY_UNSUPPORTED" => "this browser cannot press keys",
        "NAVIGATION_UNRESOLVED" => "the address cannot be opened",
        "LOW_OPERATION_CONFIDENCE" => "the decision was not sure enough",
        "TARGET_OBSCURED" => "something covers the control; handed back",
        "FIELD_TEXT_REQUIRED" => "the command does not say what to type",
        "CONFIRMATION_DECLINED" => "you said no; nothing was done",
        "STALE_OBSERVATION" => "the page kept changing",
        "ACTION_BUDGET" => "the task used all its actions",
        "EVALUATION_BUDGET" => "the task used all its decisions",
        "TIMEOUT" => "the time for the steps ran out",
        "CANCELLED" => "the task was cancelled",
        "UNSUPPORTED_ON_BROWSER" => "this command is not for a browser",
        c if c.starts_with("JEV_") => "the decision could not be made",
        _ => "the browser refused the action",
    }
}

/// The command as the action log shows it: shortened, with `typed` (text the command typed)
/// replaced by `[text]`.
pub(crate) fn log_command(command: &str, typed: Option<&str>) -> String {
    let shown = match typed {
        Some(t) if !t.is_empty() => command.replace(t, "[text]"),
        _ => command.to_string(),
    };
    short(&shown)
}

/// Steps as one step list the grammar splits back into the same steps (`1. …` per line); one
/// step stays a direct command.
pub(crate) fn join_steps(steps: &[String]) -> String {
    if steps.len() == 1 {
        return steps[0].clone();
    }
    steps
        .iter()
        .enumerate()
        .map(|(i, s)| format!("{}. {}", i + 1, s.trim()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A short digest of a guidance text (the replan chain compares them; the text itself is not
/// kept there).
pub(crate) fn digest(text: &str) -> String {
    let norm: String = text
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase();
    let d = ring::digest::digest(&ring::digest::SHA256, norm.as_bytes());
    d.as_ref()[..12]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A command as status shows it: shortened, the text it types as `[text]`.
pub(crate) fn summary(command: &str) -> String {
    match crate::grammar::split_steps(command.trim()) {
        Some(steps) => short(
            &steps
                .iter()
                .map(|s| summary_one(s))
                .collect::<Vec<_>>()
                .join("; "),
        ),
        None => summary_one(command),
    }
}

fn summary_one(command: &str) -> String {
    let typed = match crate::grammar::parse_command(command) {
        crate::grammar::Intent::Type { text } | crate::grammar::Intent::Search { text } => {
            Some(text)
        }
        crate::grammar::Intent::Decide { text_offer } => text_offer,
        _ => None,
    };
    log_command(command, typed.as_deref())
}

/// Appends a round, keeping the last [`ACTION_LOG_ROUNDS`].
pub(crate) fn push_log(log: &mut Vec<ActionLogEntry>, command: String, outcome: String) {
    log.push(ActionLogEntry { command, outcome });
    if log.len() > ACTION_LOG_ROUNDS {
        let extra = log.len() - ACTION_LOG_ROUNDS;
        log.drain(..extra);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn r_run_lines_hide_typed_text_paths_and_long_names() {
        assert_eq!(
            log_command("type hunter2 please", Some("hunter2")),
            "type [text] please"
        );
        assert_eq!(host_of("https://u:p@example.com/a?token=x"), "example.com");
        assert_eq!(short(&"x".repeat(100)).chars().count(), SHOWN + 1);
        assert_eq!(
            not_done(not_done_words("SCROLL_LIMIT"), "SCROLL_LIMIT"),
            "Not done: the page cannot scroll further that way (SCROLL_LIMIT)"
        );
        assert!(unknown("page_click", "OUTCOME_UNKNOWN").starts_with("Unknown: "));
    }

    // Issue 25: a computer task's lines name the computer, its screen and its application, not
    // the browser; what follows the words is kept; a line of other words stays as it is.
    #[test]
    fn r_run_a_computer_tasks_lines_do_not_say_browser() {
        let line = |words: &str, code: &str| on_computer(code, not_done(words, code));
        assert_eq!(
            line(
                open_failure_words("COMPUTER_TOOL_FAILED"),
                "COMPUTER_TOOL_FAILED"
            ),
            "Not done: the computer could not be reached (COMPUTER_TOOL_FAILED)"
        );
        assert_eq!(
            on_computer(
                "CONSENT_REQUIRED",
                format!(
                    "{}. Device tool errors (most recent first): page_click CONSENT_REQUIRED",
                    not_done(not_done_words("CONSENT_REQUIRED"), "CONSENT_REQUIRED")
                )
            ),
            "Not done: the computer refused the action (CONSENT_REQUIRED). Device tool errors \
             (most recent first): page_click CONSENT_REQUIRED"
        );
        assert_eq!(
            line(UNREACHABLE, "DEVICE_OFFLINE"),
            "Not done: the computer is not reachable (DEVICE_OFFLINE)"
        );
        assert_eq!(
            line(not_done_words("STEP_NOT_EXECUTED"), "STEP_NOT_EXECUTED"),
            "Not done: nothing on the screen matches the command (STEP_NOT_EXECUTED)"
        );
        for code in [
            "STEP_NOT_EXECUTED",
            "STALE_OBSERVATION",
            "SCROLL_LIMIT",
            "KEY_UNSUPPORTED",
            "UNSUPPORTED_ON_BROWSER",
            "COMPUTER_TOOL_FAILED",
            "EXECUTION_DENIED",
            "ORCHESTRATION_DISABLED",
        ] {
            for words in [not_done_words(code), open_failure_words(code), UNREACHABLE] {
                let l = line(words, code);
                assert!(!l.contains("browser") && !l.contains("page"), "{l}");
            }
        }
        // Other words, and other lines, as they are.
        assert_eq!(
            line("the task was cancelled", "CANCELLED"),
            "Not done: the task was cancelled (CANCELLED)"
        );
        assert_eq!(on_computer("DONE", done("x")), "Done: x");
    }

    #[test]
    fn r_tsk_action_log_keeps_the_last_twelve_rounds() {
        let mut log = Vec::new();
        for i in 0..20 {
            push_log(&mut log, format!("c{i}"), "Done: x".into());
        }
        assert_eq!(log.len(), ACTION_LOG_ROUNDS);
        assert_eq!(log[0].command, "c8");
    }
}
