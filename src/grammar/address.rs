//! Address safety (R-GRM-URL): which typed addresses a `Navigate` accepts, and the stricter
//! check for addresses a model or text helper produced.
//!
//! This module owns reading an address as text. It never resolves a host name, never fetches
//! anything and never repairs an address: whatever it cannot read plainly is refused.

use std::fmt;

/// Why an address was refused; every refusal reports as `NAVIGATION_UNRESOLVED`.
///
/// ```
/// use jevgate::grammar::{check_model_address, AddressRefused};
/// assert_eq!(check_model_address("javascript:alert(1)"), Err(AddressRefused::Scheme));
/// assert_eq!(AddressRefused::Scheme.code(), "NAVIGATION_UNRESOLVED");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AddressRefused {
    /// Nothing to open.
    Empty,
    /// A scheme other than http or https (`javascript:`, `data:`, `file:` …).
    Scheme,
    /// The address carries credentials (`user:pass@host`), a classic disguise.
    Credentials,
    /// The host is an IP address literal.
    IpLiteral,
    /// The host is `localhost` or under `.localhost`.
    Localhost,
    /// The host has a single label (`intranet`), or its last label is not a name.
    SingleLabel,
    /// Spaces, control characters, backslashes or characters no host name has.
    Malformed,
}

impl AddressRefused {
    /// The outcome code every refusal reports: `NAVIGATION_UNRESOLVED`.
    ///
    /// ```
    /// assert_eq!(jevgate::grammar::AddressRefused::Localhost.code(), "NAVIGATION_UNRESOLVED");
    /// ```
    pub fn code(self) -> &'static str {
        "NAVIGATION_UNRESOLVED"
    }
}

impl fmt::Display for AddressRefused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let why = match self {
            AddressRefused::Empty => "no address",
            AddressRefused::Scheme => "only http and https addresses are opened",
            AddressRefused::Credentials => "addresses with credentials are not opened",
            AddressRefused::IpLiteral => "IP address literals are not opened",
            AddressRefused::Localhost => "localhost is not opened",
            AddressRefused::SingleLabel => "the host is not a full domain name",
            AddressRefused::Malformed => "the address is malformed",
        };
        write!(f, "NAVIGATION_UNRESOLVED: {why}")
    }
}

impl std::error::Error for AddressRefused {}

/// An address split into its parts (all sub-slices of the input).
struct Parts<'a> {
    /// `Some("https")` when typed with a scheme.
    scheme: Option<&'a str>,
    host: &'a str,
    /// `:port/path?query#fragment`, whatever follows the host.
    rest: &'a str,
}

fn split(s: &str) -> Result<Parts<'_>, AddressRefused> {
    if s.is_empty() {
        return Err(AddressRefused::Empty);
    }
    if s.chars()
        .any(|c| c.is_whitespace() || c.is_control() || c == '\\' || c == '\u{200b}')
    {
        return Err(AddressRefused::Malformed);
    }
    let (scheme, after) = match s.find("://") {
        Some(i) if !s[..i].contains(['/', '?', '#']) => (Some(&s[..i]), &s[i + 3..]),
        _ => (None, s),
    };
    match scheme {
        Some(sc) if sc.eq_ignore_ascii_case("http") || sc.eq_ignore_ascii_case("https") => {}
        Some(_) => return Err(AddressRefused::Scheme),
        None => {
            // `name:` before any `/` is a scheme (javascript:, data:, mailto:) unless what
            // follows the colon is a port number.
            let head_end = after.find(['/', '?', '#']).unwrap_or(after.len());
            let head = &after[..head_end];
            if let Some(c) = head.find(':') {
                let port = &head[c + 1..];
                if port.is_empty() || !port.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(AddressRefused::Scheme);
                }
            }
        }
    }
    let auth_end = after.find(['/', '?', '#']).unwrap_or(after.len());
    let authority = &after[..auth_end];
    if authority.contains('@') {
        return Err(AddressRefused::Credentials);
    }
    let (host, port_len) = if authority.starts_with('[') {
        match authority.find(']') {
            Some(i) => (&authority[..=i], authority.len() - i - 1),
            None => return Err(AddressRefused::Malformed),
        }
    } else {
        match authority.rfind(':') {
            Some(i) => (&authority[..i], authority.len() - i),
            None => (authority, 0),
        }
    };
    let port = &authority[host.len()..host.len() + port_len];
    if !port.is_empty() {
        let Some(digits) = port.strip_prefix(':') else {
            return Err(AddressRefused::Malformed);
        };
        if digits.is_empty() || digits.len() > 5 || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(AddressRefused::Malformed);
        }
    }
    if host.is_empty() {
        return Err(AddressRefused::Empty);
    }
    Ok(Parts {
        scheme,
        host,
        rest: &after[host.len()..],
    })
}

/// Checks that `host` is a domain name of two or more labels whose last label is a name.
fn check_domain(host: &str) -> Result<(), AddressRefused> {
    if host.starts_with('[') {
        return Err(AddressRefused::IpLiteral);
    }
    let lower_is = |name: &str| host.eq_ignore_ascii_case(name);
    if lower_is("localhost") || lower_is("localhost.") {
        return Err(AddressRefused::Localhost);
    }
    let host = host.strip_suffix('.').unwrap_or(host);
    if host.len() > 253 {
        return Err(AddressRefused::Malformed);
    }
    if !host.contains('.') {
        // One label: a number (an IP in decimal or hex) or a single-label name.
        let ip_like = host.bytes().all(|b| b.is_ascii_digit())
            || host.get(..2).is_some_and(|p| p.eq_ignore_ascii_case("0x"));
        return Err(if ip_like {
            AddressRefused::IpLiteral
        } else if host.eq_ignore_ascii_case("localhost") {
            AddressRefused::Localhost
        } else {
            AddressRefused::SingleLabel
        });
    }
    let mut labels = 0usize;
    let mut ip_like = true;
    let mut last = "";
    for label in host.split('.') {
        labels += 1;
        if label.is_empty() || label.len() > 63 || label.starts_with('-') || label.ends_with('-') {
            return Err(AddressRefused::Malformed);
        }
        if !label.chars().all(|c| c.is_alphanumeric() || c == '-') {
            return Err(AddressRefused::Malformed);
        }
        let hex = label
            .get(..2)
            .filter(|p| p.eq_ignore_ascii_case("0x"))
            .and_then(|_| label.get(2..))
            .is_some_and(|h| h.bytes().all(|b| b.is_ascii_hexdigit()));
        ip_like &= hex || label.bytes().all(|b| b.is_ascii_digit());
        last = label;
    }
    if ip_like {
        return Err(AddressRefused::IpLiteral);
    }
    if last.eq_ignore_ascii_case("localhost") {
        return Err(AddressRefused::Localhost);
    }
    if labels == 1 || last.chars().count() < 2 || !last.chars().all(char::is_alphabetic) {
        return Err(AddressRefused::SingleLabel);
    }
    Ok(())
}

/// `https://` + the bare address with its host in lower case.
fn https_of(parts: &Parts<'_>) -> String {
    let mut url = String::with_capacity(8 + parts.host.len() + parts.rest.len());
    url.push_str("https://");
    for c in parts.host.chars() {
        url.push(c.to_ascii_lowercase());
    }
    url.push_str(parts.rest);
    url
}

/// The URL a typed address opens (R-GRM-URL, first half): a typed `http(s)://` URL is kept as
/// typed; a bare domain with a dot becomes `https://<domain>`. Every other scheme is refused.
pub(crate) fn typed_address(s: &str) -> Option<String> {
    let parts = split(s).ok()?;
    match parts.scheme {
        Some(_) => {
            let host = parts.host;
            let plain = host
                .chars()
                .all(|c| c.is_alphanumeric() || matches!(c, '-' | '.'));
            let bracketed = host.starts_with('[') && host.ends_with(']');
            (plain || bracketed).then(|| s.to_string())
        }
        None => check_domain(parts.host).ok().map(|()| https_of(&parts)),
    }
}

/// Checks an address a model or text helper produced (R-GRM-URL, second half) and returns the
/// URL to open: `http`/`https` or a bare domain (which becomes `https://<domain>`), with no
/// credentials, no IP address literal, no `localhost` and no single-label host. Anything else
/// is refused and reports `NAVIGATION_UNRESOLVED`; nothing is opened.
///
/// ```
/// use jevgate::grammar::{check_model_address, AddressRefused};
/// assert_eq!(check_model_address("yahoo.com").unwrap(), "https://yahoo.com");
/// assert_eq!(check_model_address("https://www.yahoo.co.jp/").unwrap(), "https://www.yahoo.co.jp/");
/// assert_eq!(check_model_address("http://127.0.0.1/"), Err(AddressRefused::IpLiteral));
/// assert_eq!(check_model_address("https://user:pw@bank.com"), Err(AddressRefused::Credentials));
/// assert_eq!(check_model_address("http://localhost:8080"), Err(AddressRefused::Localhost));
/// assert_eq!(check_model_address("intranet"), Err(AddressRefused::SingleLabel));
/// assert_eq!(check_model_address("file:///etc/passwd"), Err(AddressRefused::Scheme));
/// ```
pub fn check_model_address(address: &str) -> Result<String, AddressRefused> {
    let s = address.trim();
    let parts = split(s)?;
    check_domain(parts.host)?;
    Ok(match parts.scheme {
        Some(_) => s.to_string(),
        None => https_of(&parts),
    })
}

impl From<AddressRefused> for crate::Error {
    fn from(r: AddressRefused) -> crate::Error {
        let text = r.to_string();
        crate::Error::NavigationUnresolved {
            reason: text
                .strip_prefix("NAVIGATION_UNRESOLVED: ")
                .unwrap_or(&text)
                .to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn r_grm_url_typed_addresses_keep_http_urls_and_upgrade_bare_domains() {
        assert_eq!(
            typed_address("example.com").as_deref(),
            Some("https://example.com")
        );
        assert_eq!(
            typed_address("WWW.Google.com/Maps").as_deref(),
            Some("https://www.google.com/Maps")
        );
        assert_eq!(
            typed_address("http://Example.com/A").as_deref(),
            Some("http://Example.com/A")
        );
        assert_eq!(
            typed_address("example.com:8080/x").as_deref(),
            Some("https://example.com:8080/x")
        );
        assert_eq!(
            typed_address("http://localhost:3000").as_deref(),
            Some("http://localhost:3000")
        );
    }

    #[test]
    fn r_grm_url_typed_addresses_refuse_other_schemes_and_non_domains() {
        for s in [
            "javascript:alert(1)",
            "JavaScript://alert(1)",
            "data:text/html,hi",
            "file:///etc/passwd",
            "mailto:a@b.com",
            "chrome://settings",
            "google",
            "3.14",
            "192.168.1.1",
            "a b.com",
            "https://user@evil.com",
            "https://google.com@evil.com",
            "https://",
            "example.com:",
            "example.com:99999999",
            "-a.com",
            "a..com",
            "http:\\\\evil.com",
        ] {
            assert_eq!(typed_address(s), None, "{s}");
        }
    }

    #[test]
    fn r_grm_url_model_addresses_refuse_ip_literals_in_every_spelling() {
        for s in [
            "http://127.0.0.1",
            "127.1",
            "http://0x7f000001/",
            "http://2130706433/",
            "http://[::1]/",
            "https://10.0.0.1:443/admin",
        ] {
            assert!(check_model_address(s).is_err(), "{s}");
        }
    }

    #[test]
    fn r_grm_url_model_addresses_refuse_localhost_and_single_labels() {
        assert_eq!(
            check_model_address("app.localhost"),
            Err(AddressRefused::Localhost)
        );
        assert_eq!(
            check_model_address("https://router/"),
            Err(AddressRefused::SingleLabel)
        );
        assert_eq!(check_model_address(""), Err(AddressRefused::Empty));
        assert_eq!(
            check_model_address("ไทย.com").as_deref(),
            Ok("https://ไทย.com")
        );
    }
}
