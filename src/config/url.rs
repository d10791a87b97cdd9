//! Endpoint URLs in configuration (R-CFG-URL, R-CFG-PATH).
//!
//! Owns the one strict reading of a configured URL: `https`, or `http` only on a loopback name,
//! no credentials, no query, no fragment, no whitespace or control characters. It never
//! resolves names or opens connections.

/// A configured endpoint that passed the URL rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointUrl {
    /// `https` or `http` (lower case).
    pub scheme: &'static str,
    /// Host as written, lower-cased (`[::1]` keeps its brackets).
    pub host: String,
    /// Explicit port, if any.
    pub port: Option<u16>,
    /// Path without a trailing `/` (empty for the root).
    pub path: String,
}

impl EndpointUrl {
    /// `scheme://host[:port]` followed by `path`.
    pub fn with_path(&self, path: &str) -> String {
        match self.port {
            Some(p) => format!("{}://{}:{}{}", self.scheme, self.host, p, path),
            None => format!("{}://{}{}", self.scheme, self.host, path),
        }
    }

    /// The URL itself, normalised (lower-case scheme and host, no trailing `/`).
    pub fn as_string(&self) -> String {
        self.with_path(&self.path)
    }
}

const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

/// Checks a configured URL against R-CFG-URL and returns its parts, or the reason it is refused.
/// The reason never repeats the URL (it may carry credentials).
pub fn parse_endpoint(url: &str) -> Result<EndpointUrl, &'static str> {
    if url.is_empty() {
        return Err("must not be empty");
    }
    if url.len() > 2048 {
        return Err("is longer than 2048 bytes");
    }
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("must not contain whitespace or control characters");
    }
    let (scheme, rest) = match url.split_once("://") {
        Some((s, r)) if s.eq_ignore_ascii_case("https") => ("https", r),
        Some((s, r)) if s.eq_ignore_ascii_case("http") => ("http", r),
        Some(_) => return Err("must use https (or http on localhost)"),
        None => return Err("must be an absolute https URL"),
    };
    if rest.contains('?') {
        return Err("must not contain a query string");
    }
    if rest.contains('#') {
        return Err("must not contain a fragment");
    }
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    if authority.contains('@') {
        return Err("must not contain credentials");
    }
    let (host, port) = split_host_port(authority)?;
    let host = host.to_ascii_lowercase();
    if scheme == "http" && !LOOPBACK_HOSTS.contains(&host.as_str()) {
        return Err("must use https; http is allowed only on localhost, 127.0.0.1 or [::1]");
    }
    if path.contains("/../") || path.ends_with("/..") || path.contains("/./") {
        return Err("must not contain dot segments");
    }
    Ok(EndpointUrl {
        scheme,
        host,
        port,
        path: path.trim_end_matches('/').to_string(),
    })
}

/// Splits and checks `host[:port]` (a DNS name, an IPv4 address or a bracketed IPv6 literal;
/// a port 1..=65535); the reason never repeats the input.
pub(crate) fn split_host_port(authority: &str) -> Result<(&str, Option<u16>), &'static str> {
    let (host, port) = if let Some(inner) = authority.strip_prefix('[') {
        let end = inner.find(']').ok_or("has an unterminated IPv6 address")?;
        let literal = &inner[..end];
        if literal.is_empty()
            || !literal
                .chars()
                .all(|c| c.is_ascii_hexdigit() || c == ':' || c == '.')
        {
            return Err("has an invalid IPv6 address");
        }
        let after = &inner[end + 1..];
        let host = &authority[..end + 2];
        match after {
            "" => (host, None),
            p if p.starts_with(':') => (host, Some(&p[1..])),
            _ => return Err("has an invalid host"),
        }
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    if host.is_empty() {
        return Err("has no host");
    }
    if !host.starts_with('[') {
        let valid = host.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        });
        if !valid || host.len() > 253 {
            return Err("has an invalid host");
        }
    }
    let port = match port {
        None => None,
        Some(p) => {
            if p.is_empty() || p.len() > 5 || !p.bytes().all(|b| b.is_ascii_digit()) {
                return Err("has an invalid port");
            }
            match p.parse::<u16>() {
                Ok(0) | Err(_) => return Err("has an invalid port"),
                Ok(n) => Some(n),
            }
        }
    };
    Ok((host, port))
}

/// Resolves the full request URL for a base and an API path (R-CFG-PATH).
///
/// `version` is the version segment (`/v1`) and `rest` the path under it (`/jev/evaluate`).
/// A base already ending in the full path is used as is; a base ending in `version` gets `rest`;
/// any other base (including one with a deployment path) gets `version` + `rest` appended.
///
/// ```
/// use jevgate::config::{parse_endpoint, resolve_api_url};
/// let u = |b| resolve_api_url(&parse_endpoint(b).unwrap(), "/v1", "/jev/evaluate");
/// assert_eq!(u("https://h"), "https://h/v1/jev/evaluate");
/// assert_eq!(u("https://h/v1"), "https://h/v1/jev/evaluate");
/// assert_eq!(u("https://h/v1/jev/evaluate"), "https://h/v1/jev/evaluate");
/// assert_eq!(u("https://h/deploy"), "https://h/deploy/v1/jev/evaluate");
/// ```
pub fn resolve_api_url(base: &EndpointUrl, version: &str, rest: &str) -> String {
    let full = format!("{version}{rest}");
    let path = &base.path;
    if path.ends_with(&full) {
        base.with_path(path)
    } else if path.ends_with(version) {
        base.with_path(&format!("{path}{rest}"))
    } else {
        base.with_path(&format!("{path}{full}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // R-CFG-URL: table of accepted and refused URLs.
    #[test]
    fn url_rules_accept_https_and_loopback_http_only() {
        let ok = [
            "https://api.typesafe.ai",
            "https://inference.example.com/",
            "https://h.example:8443/deploy/v1",
            "HTTPS://Example.COM/x",
            "http://localhost:8080",
            "http://127.0.0.1:1/v1",
            "http://[::1]:9000/x",
            "https://[2001:db8::1]/v1",
        ];
        for u in ok {
            assert!(parse_endpoint(u).is_ok(), "{u} should be accepted");
        }
        let refused = [
            ("", "must not be empty"),
            (
                "http://example.com",
                "must use https; http is allowed only on localhost, 127.0.0.1 or [::1]",
            ),
            (
                "http://localhost.evil.com",
                "must use https; http is allowed only on localhost, 127.0.0.1 or [::1]",
            ),
            (
                "http://10.0.0.1",
                "must use https; http is allowed only on localhost, 127.0.0.1 or [::1]",
            ),
            ("ftp://example.com", "must use https (or http on localhost)"),
            ("javascript:alert(1)", "must be an absolute https URL"),
            ("example.com", "must be an absolute https URL"),
            (
                "https://user:pw@example.com",
                "must not contain credentials",
            ),
            ("https://token@example.com", "must not contain credentials"),
            (
                "https://example.com/?a=1",
                "must not contain a query string",
            ),
            ("https://example.com/#x", "must not contain a fragment"),
            (
                "https://exa mple.com",
                "must not contain whitespace or control characters",
            ),
            (
                "https://example.com/\n",
                "must not contain whitespace or control characters",
            ),
            ("https://", "has no host"),
            ("https://:443", "has no host"),
            ("https://example.com:0", "has an invalid port"),
            ("https://example.com:70000", "has an invalid port"),
            ("https://example.com:", "has an invalid port"),
            ("https://exa_mple.com", "has an invalid host"),
            ("https://-a.com", "has an invalid host"),
            ("https://a..com", "has an invalid host"),
            ("https://[::1", "has an unterminated IPv6 address"),
            ("https://[zz]", "has an invalid IPv6 address"),
            (
                "https://example.com/a/../b",
                "must not contain dot segments",
            ),
        ];
        for (u, why) in refused {
            assert_eq!(parse_endpoint(u), Err(why), "{u:?}");
        }
    }

    // R-CFG-PATH: default path, /v1 base, full path, deployment prefix, trailing slash.
    #[test]
    fn evaluation_path_resolution() {
        let cases = [
            ("https://h", "https://h/v1/jev/evaluate"),
            ("https://h/", "https://h/v1/jev/evaluate"),
            ("https://h/v1", "https://h/v1/jev/evaluate"),
            ("https://h/v1/", "https://h/v1/jev/evaluate"),
            ("https://h/v1/jev/evaluate", "https://h/v1/jev/evaluate"),
            ("https://h/deploy", "https://h/deploy/v1/jev/evaluate"),
            ("https://h/deploy/v1", "https://h/deploy/v1/jev/evaluate"),
            (
                "http://127.0.0.1:8080/a/b/v1/jev/evaluate",
                "http://127.0.0.1:8080/a/b/v1/jev/evaluate",
            ),
        ];
        for (base, want) in cases {
            let b = parse_endpoint(base).unwrap();
            assert_eq!(resolve_api_url(&b, "/v1", "/jev/evaluate"), want, "{base}");
        }
        let ts = parse_endpoint("https://api.typesafe.ai").unwrap();
        assert_eq!(
            resolve_api_url(&ts, "/v1", "/systemone"),
            "https://api.typesafe.ai/v1/systemone"
        );
    }
}
