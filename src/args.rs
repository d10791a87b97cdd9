//! Argument parsing shared by every surface (R-C, issue 13 item 2): JSON text into a core
//! request type, with one classification of what was wrong. The Rust API, the C ABI and the
//! Python binding all reach a request's `from_json` constructor, which calls [`from_json`]
//! here, so one wrong argument is one `INVALID_ARGUMENT` with one message in every language.
//!
//! Owns: turning a `serde_json` failure into `Error::InvalidArgument` naming the argument and
//! its expected shape, in the words of the one classifier of JSON failures,
//! [`Error::json_problem`] (through [`Error::invalid_json`], which the Python binding calls too).
//! Never: has words of its own for a JSON failure, echoes the input (it may hold a secret or
//! page text), or knows any request type.

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
    serde_json::from_str(json).map_err(|e| Error::invalid_json(name, shape, &e))
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
            ("{", "truncated JSON"),
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

    // Issue 19 item 5: one wording for a JSON document that cannot be read, whichever surface
    // parses it — the request parsers here, `Error::invalid_json` (Python, C) and the
    // configuration (through `Error::json_problem`). Before, this module had words of its own
    // and called a truncated document "not JSON" where `Error::json_problem` said "truncated
    // JSON".
    #[test]
    fn one_wording_for_truncated_malformed_wrong_type_and_too_deep_documents() {
        #[derive(serde::Deserialize, Debug)]
        #[serde(deny_unknown_fields)]
        struct Doc {
            #[allow(dead_code)] // reason: only its type is tested
            a: u8,
            #[allow(dead_code)] // reason: only its depth is tested
            #[serde(default)]
            b: Option<serde_json::Value>,
        }
        let deep = format!("{{\"b\": {}{}}}", "[".repeat(200), "]".repeat(200));
        for (json, problem) in [
            ("{\"a\": 1", "truncated JSON"),
            ("", "truncated JSON"),
            ("{\"a\": 1,}", "not JSON"),
            ("{a: 1}", "not JSON"),
            ("{\"a\": \"one\"}", "wrong or unknown members"),
            ("{\"a\": 1, \"c\": 2}", "wrong or unknown members"),
            ("7", "wrong or unknown members"),
            (deep.as_str(), "nested too deeply"),
        ] {
            let serde = serde_json::from_str::<Doc>(json).unwrap_err();
            assert_eq!(Error::json_problem(&serde), problem, "{json:.20}");
            let want = format!("invalid argument `thing_json`: must be {{a, b?}} ({problem})");
            let ours = from_json::<Doc>("thing_json", json, "{a, b?}").unwrap_err();
            assert_eq!(ours.to_string(), want);
            let theirs = Error::invalid_json("thing_json", "{a, b?}", &serde);
            assert_eq!(theirs.to_string(), want);
        }
    }
}
