//! Every configuration rule of SPEC §2 (R-CFG), checked as a whole on a typed [`Config`].
//!
//! Rules run in document order and stop at the first offending value, whose JSON path and a
//! reason written here (never the value itself) become `JEV_INVALID_CONFIGURATION`.

use super::credentials::{valid_env_name, REFUSED_ENV_NAMES};
use super::url::parse_endpoint;
use super::*;
use crate::Error;

type R = crate::Result<()>;

fn fail(path: impl Into<String>, reason: impl Into<String>) -> R {
    Err(Error::config(path, reason))
}

fn range(path: &str, value: u64, min: u64, max: u64) -> R {
    if value < min || value > max {
        return fail(path, format!("must be between {min} and {max}"));
    }
    Ok(())
}

/// Model ids are opaque: any non-empty printable string without whitespace, ≤256 bytes.
fn model_id(path: &str, model: &str) -> R {
    if model.is_empty() {
        return fail(path, "must not be empty");
    }
    if model.len() > 256 {
        return fail(path, "must be at most 256 bytes");
    }
    if model.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return fail(path, "must not contain whitespace or control characters");
    }
    Ok(())
}

/// Identifiers (agent, principal, conversation, binding, scope ids): 1..=256 bytes, no control
/// characters, not only whitespace.
fn ident(path: &str, id: &str) -> R {
    if id.trim().is_empty() {
        return fail(path, "must not be empty");
    }
    if id.len() > 256 {
        return fail(path, "must be at most 256 bytes");
    }
    if id.chars().any(char::is_control) {
        return fail(path, "must not contain control characters");
    }
    Ok(())
}

fn url(path: &str, value: &str) -> R {
    parse_endpoint(value)
        .map(|_| ())
        .or_else(|why| fail(path, why))
}

fn key_file(path: &str, file: &str) -> R {
    if file.is_empty() {
        return fail(path, "must not be empty");
    }
    if !file.starts_with('/') {
        return fail(path, "must be an absolute path");
    }
    if file.len() > 4096 || file.chars().any(char::is_control) {
        return fail(path, "is not a usable path");
    }
    Ok(())
}

/// R-CFG-ENV: a well-formed name that is not a native CLI authentication/control name.
fn key_env(path: &str, name: &str) -> R {
    if !valid_env_name(name) {
        return fail(
            path,
            "must be an environment variable name ([A-Za-z_][A-Za-z0-9_]*)",
        );
    }
    if REFUSED_ENV_NAMES.contains(&name) {
        return fail(
            path,
            "refuses native CLI authentication/control names; use a dedicated name such as PRIVATE_JEV_TOKEN",
        );
    }
    Ok(())
}

/// At most one of a file and an env reference, each well-formed.
fn key_refs(base: &str, file: &Option<String>, env: &Option<String>) -> R {
    if let Some(f) = file {
        key_file(&format!("{base}.apiKeyFile"), f)?;
    }
    if let Some(e) = env {
        if file.is_some() {
            return fail(
                format!("{base}.apiKeyEnv"),
                "apiKeyFile and apiKeyEnv are mutually exclusive; configure one",
            );
        }
        key_env(&format!("{base}.apiKeyEnv"), e)?;
    }
    Ok(())
}

pub(super) fn validate(config: &Config) -> R {
    jev(&config.gateway.jev)?;
    computer_use(&config.gateway.computer_use)?;
    range(
        "gateway.tasks.retentionDays",
        config.gateway.tasks.retention_days,
        1,
        3650,
    )?;
    store(&config.gateway.store)?;
    agents(&config.agents)
}

/// `gateway.store`: SQLite takes no reference; PostgreSQL takes exactly one, well-formed.
fn store(s: &StoreConfig) -> R {
    const P: &str = "gateway.store";
    match s.kind {
        StoreKind::Sqlite => {
            if s.url_env.is_some() {
                return fail(format!("{P}.urlEnv"), "is only for kind \"postgres\"");
            }
            if s.url_file.is_some() {
                return fail(format!("{P}.urlFile"), "is only for kind \"postgres\"");
            }
            Ok(())
        }
        StoreKind::Postgres => match (&s.url_env, &s.url_file) {
            (None, None) => fail(
                P,
                "kind \"postgres\" needs exactly one of urlEnv and urlFile (the URL is a credential)",
            ),
            (Some(_), Some(_)) => fail(
                format!("{P}.urlFile"),
                "urlEnv and urlFile are mutually exclusive; configure one",
            ),
            (Some(name), None) => key_env(&format!("{P}.urlEnv"), name),
            (None, Some(file)) => key_file(&format!("{P}.urlFile"), file),
        },
    }
}

fn jev(j: &JevConfig) -> R {
    const P: &str = "gateway.jev";
    if j.enabled && j.provider.is_none() {
        return fail(format!("{P}.provider"), "is required when enabled is true");
    }
    match &j.model {
        Some(m) => model_id(&format!("{P}.model"), m)?,
        None if j.enabled && j.provider.is_some_and(Provider::is_remote) => {
            return fail(
                format!("{P}.model"),
                "is required for the typesafe and upstream providers",
            );
        }
        None => {}
    }
    key_refs(P, &j.api_key_file, &j.api_key_env)?;
    if let Some(b) = &j.base_url {
        url(&format!("{P}.baseUrl"), b)?;
    }
    match j.provider {
        Some(p @ (Provider::Callback | Provider::Local)) => {
            let name = if p == Provider::Local {
                "local"
            } else {
                "callback"
            };
            for (key, set) in [
                ("apiKeyFile", j.api_key_file.is_some()),
                ("apiKeyEnv", j.api_key_env.is_some()),
                ("baseUrl", j.base_url.is_some()),
            ] {
                if set {
                    return fail(
                        format!("{P}.{key}"),
                        format!("is not used by the {name} provider"),
                    );
                }
            }
        }
        Some(Provider::Upstream) => {
            let has_ref = j.api_key_file.is_some() || j.api_key_env.is_some();
            if j.base_url.is_some() && !has_ref {
                return fail(
                    format!("{P}.baseUrl"),
                    "an explicit upstream baseUrl requires an explicit credential reference (apiKeyFile or apiKeyEnv)",
                );
            }
            if j.base_url.is_none() && has_ref {
                let key = if j.api_key_file.is_some() {
                    "apiKeyFile"
                } else {
                    "apiKeyEnv"
                };
                return fail(
                    format!("{P}.{key}"),
                    "an explicit upstream credential reference requires an explicit baseUrl",
                );
            }
        }
        Some(Provider::Typesafe) | None => {}
    }
    if let Some(ids) = &j.allowed_agent_ids {
        for (i, id) in ids.iter().enumerate() {
            ident(&format!("{P}.allowedAgentIds[{i}]"), id)?;
        }
    }
    range(&format!("{P}.timeoutMs"), j.timeout_ms, 1, 120_000)?;
    range(
        &format!("{P}.maxConcurrentRequests"),
        j.max_concurrent_requests,
        1,
        1024,
    )?;
    range(&format!("{P}.maxQueueSize"), j.max_queue_size, 0, 65_536)?;
    range(
        &format!("{P}.maxInputBytes"),
        j.max_input_bytes,
        1,
        1_048_576,
    )?;
    range(&format!("{P}.maxQuestions"), j.max_questions, 1, 64)?;
    model_id(&format!("{P}.images.model"), &j.images.model)?;
    range(
        &format!("{P}.images.maxImageBytes"),
        j.images.max_image_bytes,
        1,
        16 * 1024 * 1024,
    )?;
    if let Some(t) = &j.thinking {
        thinking(t)?;
    }
    if let Some(b) = &j.browser {
        bindings(&b.bindings)?;
    }
    Ok(())
}

fn thinking(t: &ThinkingConfig) -> R {
    const P: &str = "gateway.jev.thinking";
    url(&format!("{P}.baseUrl"), &t.base_url)?;
    model_id(&format!("{P}.model"), &t.model)?;
    key_refs(P, &t.api_key_file, &t.api_key_env)?;
    if t.api_key_file.is_none() && t.api_key_env.is_none() {
        return fail(P, "requires apiKeyEnv or apiKeyFile");
    }
    Ok(())
}

fn bindings(list: &[BindingConfig]) -> R {
    // A set of the ids seen so far: a duplicate check over the earlier entries was quadratic
    // in the list's length (issue 12 item 4).
    let mut seen = std::collections::HashSet::with_capacity(list.len());
    for (i, b) in list.iter().enumerate() {
        let p = format!("gateway.jev.browser.bindings[{i}]");
        ident(&format!("{p}.id"), &b.id)?;
        if !seen.insert(b.id.as_str()) {
            return fail(format!("{p}.id"), "duplicates an earlier binding id");
        }
        if let Some(name) = &b.name {
            ident(&format!("{p}.name"), name)?;
        }
        ident(&format!("{p}.agentId"), &b.agent_id)?;
        ident(&format!("{p}.principalId"), &b.principal_id)?;
        ident(&format!("{p}.conversationId"), &b.conversation_id)?;
        match (&b.endpoint, &b.connector_id) {
            (Some(_), Some(_)) => {
                return fail(
                    format!("{p}.connectorId"),
                    "is mutually exclusive with endpoint",
                );
            }
            (None, None) => return fail(p, "requires endpoint or connectorId"),
            (Some(endpoint), None) => {
                url(&format!("{p}.endpoint"), endpoint)?;
                key_refs(&p, &b.api_key_file, &b.api_key_env)?;
                if b.api_key_file.is_none() && b.api_key_env.is_none() {
                    return fail(p, "an endpoint requires apiKeyFile or apiKeyEnv");
                }
            }
            (None, Some(connector)) => {
                ident(&format!("{p}.connectorId"), connector)?;
                for (key, set) in [
                    ("apiKeyFile", b.api_key_file.is_some()),
                    ("apiKeyEnv", b.api_key_env.is_some()),
                ] {
                    if set {
                        return fail(
                            format!("{p}.{key}"),
                            "is not allowed with connectorId (the connector holds its credential)",
                        );
                    }
                }
            }
        }
        ident(&format!("{p}.scope.device_id"), &b.scope.device_id)?;
        ident(&format!("{p}.scope.grant_id"), &b.scope.grant_id)?;
        ident(&format!("{p}.scope.tab_id"), &b.scope.tab_id)?;
        for (k, f) in b.fields.iter().enumerate() {
            ident(&format!("{p}.fields[{k}].label"), &f.label)?;
            let n = f.text.chars().count();
            if n == 0 || n > 2000 {
                return fail(
                    format!("{p}.fields[{k}].text"),
                    "must be 1 to 2000 characters",
                );
            }
        }
        range(&format!("{p}.budget.maxSteps"), b.budget.max_steps, 1, 200)?;
        range(
            &format!("{p}.budget.maxEvaluations"),
            b.budget.max_evaluations,
            1,
            500,
        )?;
        range(
            &format!("{p}.budget.timeoutMs"),
            b.budget.timeout_ms,
            1000,
            3_600_000,
        )?;
    }
    Ok(())
}

fn computer_use(c: &ComputerUseConfig) -> R {
    const P: &str = "gateway.computerUse";
    model_id(&format!("{P}.model"), &c.model)?;
    range(&format!("{P}.timeoutMs"), c.timeout_ms, 1000, 120_000)?;
    if !(c.min_confidence.is_finite() && (0.55..=1.0).contains(&c.min_confidence)) {
        return fail(format!("{P}.minConfidence"), "must be between 0.55 and 1");
    }
    model_id(&format!("{P}.visionModel"), &c.vision_model)
}

fn agents(list: &[AgentConfig]) -> R {
    let mut seen = std::collections::HashSet::with_capacity(list.len());
    for (i, a) in list.iter().enumerate() {
        ident(&format!("agents[{i}].id"), &a.id)?;
        if !seen.insert(a.id.as_str()) {
            return fail(format!("agents[{i}].id"), "duplicates an earlier agent id");
        }
    }
    Ok(())
}
