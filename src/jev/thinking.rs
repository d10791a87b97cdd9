//! The thinking (text helper) client (R-PRV-THINK): one tool-free completion through the
//! configured `gateway.jev.thinking` connection, `openai-chat` (`POST {baseUrl}/chat/completions`,
//! `Authorization: Bearer`) or `anthropic-messages` (`POST {baseUrl}/messages`, `x-api-key`), at
//! most 4096 output tokens.
//!
//! It returns only `{text: string | null}`; `null` means the information is missing. The model is
//! asked to reply with exactly that JSON object; anything else — a provider failure, a reply that
//! is not that object — is an error and never becomes text. It never logs the prompt, the reply
//! or the credential.

use super::client::JevClient;
use super::context::JevContext;
use super::http::{Auth, Post};
use crate::config::{CredentialRef, ThinkingApi};
use crate::{Error, Result};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Output token cap of every thinking call.
pub const MAX_OUTPUT_TOKENS: u32 = 4096;

/// What the helper is asked. The caller composes `input` (goal, selected field, page context,
/// recent actions); jevgate adds the reply-format instruction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ThinkRequest {
    /// The agent on whose behalf the helper runs (Jev access is checked for it).
    pub agent_id: String,
    /// What to produce (system instructions).
    pub instructions: String,
    /// The material to work from.
    pub input: String,
    /// Deadline in milliseconds (1..=120000); default `gateway.jev.timeoutMs`.
    #[serde(default)]
    pub timeout_ms: Option<u64>,
}

impl ThinkRequest {
    /// Parses `{"agentId","instructions","input","timeoutMs"?}` (the C `request_json`), or
    /// `INVALID_ARGUMENT` (`request_json`). The range of `timeoutMs` is checked by
    /// [`Gateway::think`](crate::Gateway::think) for every surface.
    pub fn from_json(json: &str) -> Result<ThinkRequest> {
        crate::args::from_json(
            "request_json",
            json,
            "{agentId, instructions, input, timeoutMs?}",
        )
    }
}

/// The helper's answer: a text, or `None` when the information is missing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Thought {
    /// The produced text; `None` = missing information.
    pub text: Option<String>,
}

const FORMAT: &str = "\n\nReply with only a JSON object: {\"text\": \"...\"} with the requested text, or {\"text\": null} when the information needed is missing. Never guess missing information.";

pub(crate) fn think(
    ctx: &JevContext<'_>,
    client: &JevClient,
    req: &ThinkRequest,
) -> Result<Thought> {
    ctx.check_open()?;
    let snap = ctx.config();
    let config = &snap.config;
    if !config.jev_allowed(&req.agent_id) {
        return Err(Error::JevAccessDenied {
            reason: "Jev is not enabled for this agent".into(),
        });
    }
    let t = config
        .gateway
        .jev
        .thinking
        .as_ref()
        .ok_or_else(|| Error::config("gateway.jev.thinking", "is not configured"))?;
    let timeout_ms = match req.timeout_ms {
        Some(ms) if (1..=120_000).contains(&ms) => ms,
        Some(_) => {
            return Err(Error::InvalidArgument {
                name: "timeoutMs",
                reason: "must be 1 to 120000".into(),
            })
        }
        None => config.gateway.jev.timeout_ms,
    };
    let clock = ctx.clock();
    let deadline = clock.now() + Duration::from_millis(timeout_ms);
    let cred = match (&t.api_key_file, &t.api_key_env) {
        (Some(f), _) => CredentialRef::File(f.clone()),
        (None, Some(e)) => CredentialRef::Env(e.clone()),
        (None, None) => return Err(Error::config("gateway.jev.thinking", "has no credential")),
    };
    let key = cred.resolve(&|n| std::env::var_os(n))?;
    let base = crate::config::parse_endpoint(&t.base_url)
        .map_err(|why| Error::config("gateway.jev.thinking.baseUrl", why))?;
    let system = format!("{}{FORMAT}", req.instructions);
    let (path, auth, body, headers): (&str, Auth, serde_json::Value, &[(&str, &str)]) = match t.api
    {
        ThinkingApi::OpenAiChat => (
            "/chat/completions",
            Auth::Bearer,
            serde_json::json!({
                "model": t.model,
                "max_tokens": MAX_OUTPUT_TOKENS,
                "messages": [
                    {"role": "system", "content": system},
                    {"role": "user", "content": req.input},
                ],
            }),
            &[],
        ),
        ThinkingApi::AnthropicMessages => (
            "/messages",
            Auth::XApiKey,
            serde_json::json!({
                "model": t.model,
                "max_tokens": MAX_OUTPUT_TOKENS,
                "system": system,
                "messages": [{"role": "user", "content": req.input}],
            }),
            &[("anthropic-version", "2023-06-01")],
        ),
    };
    let url = base.with_path(&format!("{}{path}", base.path));
    let body = serde_json::to_vec(&body).map_err(|_| Error::Internal {
        reason: "cannot encode the thinking request".into(),
    })?;
    let remaining = deadline.saturating_duration_since(clock.now());
    if remaining.is_zero() {
        return Err(Error::Timeout { timeout_ms });
    }
    let bytes = client.http.post_json(&Post {
        url: &url,
        auth,
        key: &key,
        extra_headers: headers,
        body: &body,
        timeout: remaining,
        clock,
        wall: clock.wall(),
        timeout_ms,
        // the thinking helper has no cancel token; Http::close still ends it
        abort: None,
    })?;
    parse_reply(t.api, &bytes)
}

fn malformed() -> Error {
    Error::MalformedResponse {
        reason: crate::jev::ValidationReason::MalformedJson,
        key: None,
    }
}

/// Extracts the assistant text and parses it as `{text: string|null}`.
pub(crate) fn parse_reply(api: ThinkingApi, bytes: &[u8]) -> Result<Thought> {
    let v: serde_json::Value = serde_json::from_slice(bytes).map_err(|_| malformed())?;
    let content = match api {
        ThinkingApi::OpenAiChat => v
            .pointer("/choices/0/message/content")
            .and_then(|c| c.as_str())
            .map(str::to_owned),
        ThinkingApi::AnthropicMessages => v.get("content").and_then(|c| c.as_array()).map(|a| {
            a.iter()
                .filter(|b| b.get("type").and_then(|t| t.as_str()) == Some("text"))
                .filter_map(|b| b.get("text").and_then(|t| t.as_str()))
                .collect::<String>()
        }),
    }
    .ok_or_else(malformed)?;
    let mut s = content.trim();
    if let Some(rest) = s.strip_prefix("```") {
        s = rest.trim_start_matches("json").trim();
        s = s.strip_suffix("```").ok_or_else(malformed)?.trim();
    }
    serde_json::from_str::<Thought>(s).map_err(|_| malformed())
}

#[cfg(test)]
mod tests {
    use super::*;

    // R-PRV-THINK: only {text: string|null}; anything else is an error, never text.
    #[test]
    fn replies_parse_strictly() {
        let chat = |c: &str| {
            serde_json::json!({"choices": [{"message": {"content": c}}]})
                .to_string()
                .into_bytes()
        };
        assert_eq!(
            parse_reply(ThinkingApi::OpenAiChat, &chat(r#"{"text":"เชียงใหม่"}"#)).unwrap(),
            Thought {
                text: Some("เชียงใหม่".into())
            }
        );
        assert_eq!(
            parse_reply(ThinkingApi::OpenAiChat, &chat(r#"{"text":null}"#))
                .unwrap()
                .text,
            None
        );
        for bad in ["Chiang Mai", r#"{"text":1}"#, r#"{"text":"a","x":1}"#, ""] {
            let err = parse_reply(ThinkingApi::OpenAiChat, &chat(bad)).unwrap_err();
            assert_eq!(err.code(), "JEV_MALFORMED_RESPONSE");
        }
        let anth = serde_json::json!({"content": [{"type": "text", "text": "```json\n{\"text\": \"x\"}\n```"}]});
        assert_eq!(
            parse_reply(ThinkingApi::AnthropicMessages, anth.to_string().as_bytes())
                .unwrap()
                .text
                .as_deref(),
            Some("x")
        );
    }
}
