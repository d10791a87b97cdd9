//! Argument parsing shared by every surface (R-C, issue 13 item 2): JSON text into a core
//! request type, with one classification of what was wrong. The Rust API, the C ABI and the
//! Python binding all reach a request's `from_json` constructor, which calls [`from_json`]
//! here, so one wrong argument is one `INVALID_ARGUMENT` with one message in every language.
//!
//! Owns: turning a `serde_json` failure into `Error::InvalidArgument` naming the argument and
//! its expected shape. Never: echoes the input (it may hold a secret or page text), or knows
//! any request type.

use crate::Error;
use serde::de::DeserializeOwned;

/// Parses the argument `name` (JSON text) as a `T` whose JSON shape is described by `shape`
/// (e.g. `{threadId, organization, mode?}`), or `INVALID_ARGUMENT` saying why — without
/// the input.
pub(crate) fn from_json<T: DeserializeOwned>(
    name: &'static str,
    json: &str,
    shape: &str,
) -> Result<T, Error> {
    serde_json::from_str(json).map_err(|e| Error::InvalidArgument {
        name,
        reason: format!("must be {shape} ({})", json_problem(&e)),
    })
}

/// What kind of JSON failure `e` is, in words that never quote the input.
fn json_problem(e: &serde_json::Error) -> &'static str {
    match e.classify() {
        serde_json::error::Category::Io => "unreadable",
        serde_json::error::Category::Syntax | serde_json::error::Category::Eof => "not JSON",
        serde_json::error::Category::Data => "wrong or unknown members",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, Debug)]
    #[serde(deny_unknown_fields)]
    struct Shape {
        #[allow(dead_code)] // reason: only its presence is tested
        a: u8,
    }

    #[test]
    fn failures_name_the_argument_and_never_echo_the_input() {
        for (json, problem) in [
            ("{", "not JSON"),
            ("sk-secret", "not JSON"),
            ("{\"a\":1,\"sk-secret\":2}", "wrong or unknown members"),
            ("{\"a\":\"sk-secret\"}", "wrong or unknown members"),
        ] {
            let e = from_json::<Shape>("thing_json", json, "{a}").unwrap_err();
            assert_eq!(e.code(), "INVALID_ARGUMENT");
            let text = e.to_string();
            assert!(
                text.contains("thing_json") && text.contains(problem),
                "{text}"
            );
            assert!(!text.contains("sk-secret"), "{text}");
        }
        assert!(from_json::<Shape>("thing_json", "{\"a\":1}", "{a}").is_ok());
    }
}
