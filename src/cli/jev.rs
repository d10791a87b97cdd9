//! `jevgate validate`: the Jev response validator for scripts (R-VAL).
//!
//! `--jsonl`: each stdin line is `{"questions":{…},"response":{…}}` (other members ignored);
//! each output line is `{"ok":true}` or `{"ok":false,"code":"…","reason":"…","line":N}`, in
//! order; a line that is not such an object (or not UTF-8, or too long) is answered with
//! `INVALID_ARGUMENT` and the stream goes on (its content is never echoed).
//! `--questions Q.json [RESPONSE.json|-]`: one document; prints `{"ok":true,"answers":{…}}` or
//! the failure line. Exit 0 when every document was valid, 1 otherwise.

use super::{read_input, JsonlLines, Usage};
use serde::Deserialize;
use serde_json::json;
use serde_json::value::RawValue;
use std::io::Write;
use std::process::ExitCode;

#[derive(Deserialize)]
struct Line<'a> {
    #[serde(borrow)]
    questions: &'a RawValue,
    #[serde(borrow)]
    response: &'a RawValue,
}

/// `{"ok":false,"code":…,"reason":…}` in that key order.
fn failure(e: &jevgate::Error) -> String {
    let reason = e
        .validation_reason()
        .map(str::to_string)
        .unwrap_or_else(|| e.to_string());
    format!(
        "{{\"ok\":false,\"code\":{},\"reason\":{}}}",
        json!(e.code()),
        json!(reason)
    )
}

/// A failed line of `--jsonl`: the failure line with the line number (never the content).
fn line_failure(number: u64, e: &jevgate::Error) -> String {
    let mut s = failure(e);
    s.pop();
    format!("{s},\"line\":{number}}}")
}

/// The longest `--jsonl` line read: questions and a response of the configuration size limit
/// each, with room for the envelope.
const MAX_LINE_BYTES: usize = 2 * jevgate::config::MAX_CONFIG_BYTES + 1024;

fn check(questions: &[u8], response: &[u8]) -> Result<String, jevgate::Error> {
    jevgate::jev::validate_to_json(questions, response)
}

/// `jevgate validate …`
pub fn validate(args: &[String]) -> Result<ExitCode, Usage> {
    match args {
        [flag] if flag == "--jsonl" => jsonl(),
        [flag, q] if flag == "--questions" => one(q, "-"),
        [flag, q, r] if flag == "--questions" => one(q, r),
        _ => Err(Usage(
            "validate takes --jsonl, or --questions Q.json [RESPONSE.json|-]".into(),
        )),
    }
}

fn one(questions: &str, response: &str) -> Result<ExitCode, Usage> {
    if questions == "-" && response == "-" {
        return Err(Usage(
            "questions and response cannot both come from stdin".into(),
        ));
    }
    let q = read_input(questions)?;
    let r = read_input(response)?;
    match check(&q, &r) {
        Ok(answers) => {
            println!("{{\"ok\":true,\"answers\":{answers}}}");
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            println!("{}", failure(&e));
            Ok(ExitCode::from(1))
        }
    }
}

fn jsonl() -> Result<ExitCode, Usage> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let mut all_ok = true;
    let mut lines = JsonlLines::new(std::io::stdin().lock(), MAX_LINE_BYTES);
    while let Some((number, line)) = lines
        .next_line()
        .map_err(|e| Usage(format!("cannot read stdin: {}", e.kind())))?
    {
        let bad_line = |reason: String| {
            line_failure(
                number,
                &jevgate::Error::InvalidArgument {
                    name: "line",
                    reason,
                },
            )
        };
        let verdict = match &line {
            Err(bad) => bad_line(bad.message(MAX_LINE_BYTES)),
            Ok(text) => match serde_json::from_str::<Line<'_>>(text) {
                Err(_) => bad_line("each line must be {\"questions\":{…},\"response\":{…}}".into()),
                Ok(l) => match check(l.questions.get().as_bytes(), l.response.get().as_bytes()) {
                    Ok(_) => "{\"ok\":true}".to_string(),
                    Err(e) => line_failure(number, &e),
                },
            },
        };
        all_ok &= verdict == "{\"ok\":true}";
        if writeln!(out, "{verdict}").is_err() {
            break;
        }
    }
    Ok(if all_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
