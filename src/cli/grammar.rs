//! `jevgate parse` and `jevgate steps`: the step-command grammar for people and scripts.
//!
//! With `--jsonl`, every stdin line is a JSON string and every output line is that line's
//! result JSON, in input order; a line that is not a JSON string (or not UTF-8, or too long)
//! gets `{"error":{"code":"INVALID_ARGUMENT","line":N,"message":…}}` (never its content), the
//! stream goes on, and the run exits 1 at the end.

use super::{JsonlLines, Usage};
use jevgate::grammar::{parse_command, split_parts, split_steps};
use serde_json::json;
use std::io::{Read, Write};
use std::process::ExitCode;

/// The largest command text accepted (one argument, stdin, or one JSONL line).
const MAX_TEXT_BYTES: usize = 1 << 20;
/// The longest JSONL line read: a string of MAX_TEXT_BYTES with every byte escaped (`\u00XX`).
const MAX_LINE_BYTES: usize = 6 * MAX_TEXT_BYTES + 2;

/// A bad line's answer: its number and code, never its content.
fn line_error(number: u64, message: String) -> String {
    json!({"error": {"code": "INVALID_ARGUMENT", "line": number, "message": message}}).to_string()
}

struct Flags {
    jsonl: bool,
    parts: bool,
    text: Option<String>,
}

fn flags(args: &[String], allow_parts: bool) -> Result<Flags, Usage> {
    let mut f = Flags {
        jsonl: false,
        parts: false,
        text: None,
    };
    for a in args {
        match a.as_str() {
            "--jsonl" => f.jsonl = true,
            "--parts" if allow_parts => f.parts = true,
            s if s.starts_with("--") => {
                return Err(Usage(format!("unknown flag `{}`", s.escape_debug())))
            }
            s if f.text.is_none() => f.text = Some(s.to_string()),
            _ => return Err(Usage("give the text as one argument (quote it)".into())),
        }
    }
    if f.jsonl && f.text.is_some() {
        return Err(Usage("--jsonl reads stdin; do not also give TEXT".into()));
    }
    Ok(f)
}

/// The text of a whole input: at most [`MAX_TEXT_BYTES`] plus one line ending (`\n` or `\r\n`).
/// The size is judged before the encoding (issue 20 item 8), so an input cut by the limit in
/// the middle of a character is "too long", not "invalid data"; text after the line ending is
/// never dropped silently.
fn read_text(input: impl Read) -> Result<String, Usage> {
    let too_long = || Usage(format!("text is longer than {MAX_TEXT_BYTES} bytes"));
    // Two bytes for a line ending and one more to see that anything follows it.
    let cap = MAX_TEXT_BYTES + 3;
    let mut buf = Vec::new();
    input
        .take(cap as u64)
        .read_to_end(&mut buf)
        .map_err(|e| Usage(format!("cannot read stdin: {}", e.kind())))?;
    if buf.len() == cap {
        return Err(too_long());
    }
    let end = buf
        .iter()
        .rposition(|&b| b != b'\n' && b != b'\r')
        .map_or(0, |i| i + 1);
    if end > MAX_TEXT_BYTES {
        return Err(too_long());
    }
    buf.truncate(end);
    String::from_utf8(buf).map_err(|_| Usage("stdin is not valid UTF-8".into()))
}

/// The intent JSON as the library writes it (`"intent"` first).
fn parse_one(text: &str) -> String {
    parse_command(text).to_json()
}

fn steps_one(text: &str, parts: bool) -> String {
    if parts {
        json!({ "parts": split_parts(text) }).to_string()
    } else {
        json!({ "steps": split_steps(text) }).to_string()
    }
}

fn run(
    args: &[String],
    allow_parts: bool,
    one: impl Fn(&str, bool) -> String,
) -> Result<ExitCode, Usage> {
    let f = flags(args, allow_parts)?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if !f.jsonl {
        let text = match f.text {
            Some(t) => t,
            None => read_text(std::io::stdin().lock())?,
        };
        if text.len() > MAX_TEXT_BYTES {
            return Err(Usage(format!("text is longer than {MAX_TEXT_BYTES} bytes")));
        }
        let _ = writeln!(out, "{}", one(&text, f.parts));
        return Ok(ExitCode::SUCCESS);
    }
    let mut failed = false;
    let mut lines = JsonlLines::new(std::io::stdin().lock(), MAX_LINE_BYTES);
    while let Some((number, line)) = lines
        .next_line()
        .map_err(|e| Usage(format!("cannot read stdin: {}", e.kind())))?
    {
        let result = match line.map(|l| serde_json::from_str::<String>(&l)) {
            Ok(Ok(text)) if text.len() <= MAX_TEXT_BYTES => one(&text, f.parts),
            Ok(Ok(_)) => line_error(
                number,
                format!("text is longer than {MAX_TEXT_BYTES} bytes"),
            ),
            Ok(Err(_)) => line_error(number, "each line must be one JSON string".into()),
            Err(bad) => line_error(number, bad.message(MAX_LINE_BYTES)),
        };
        failed |= result.starts_with("{\"error\"");
        if writeln!(out, "{result}").is_err() {
            break;
        }
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// `jevgate parse [--jsonl] [TEXT]`: the intent JSON of each command.
pub fn parse(args: &[String]) -> Result<ExitCode, Usage> {
    run(args, false, |text, _| parse_one(text))
}

/// `jevgate steps [--jsonl] [--parts] [TEXT]`: `{"steps":[…]|null}` or `{"parts":[…]}`.
pub fn steps(args: &[String]) -> Result<ExitCode, Usage> {
    run(args, true, steps_one)
}
