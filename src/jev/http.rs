//! HTTP transport for the `typesafe` and `upstream` providers and the thinking helper (ureq +
//! rustls): one JSON POST, bounded by the evaluation's remaining time, never following a
//! redirect, no automatic retry.
//!
//! Status mapping (R-JEV-ERRMAP) happens here, keeping only typed metadata (Retry-After, reset
//! time). It must never surface or log a provider's response body, the request body or the
//! credential: error reasons are statuses and error kinds written by jevgate.

use crate::config::Secret;
use crate::error::RetryInfo;
use crate::{Error, Result};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Largest provider response read, in bytes; more is a provider failure.
pub(crate) const MAX_RESPONSE_BYTES: u64 = 8 * 1024 * 1024;

/// How the credential is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Auth {
    /// `Authorization: Bearer <key>`.
    Bearer,
    /// `x-api-key: <key>` (Anthropic Messages).
    XApiKey,
}

/// One JSON POST.
#[derive(Clone, Copy)]
pub(crate) struct Post<'a> {
    /// Full URL.
    pub url: &'a str,
    /// How the key is sent.
    pub auth: Auth,
    /// The key.
    pub key: &'a Secret,
    /// More headers.
    pub extra_headers: &'a [(&'a str, &'a str)],
    /// The JSON body.
    pub body: &'a [u8],
    /// Time left before the caller's deadline (nothing is sent when it is zero).
    pub timeout: Duration,
    /// Wall clock now, to convert HTTP dates.
    pub wall: SystemTime,
    /// The configured deadline, for `JEV_TIMEOUT`.
    pub timeout_ms: u64,
}

/// A pooled HTTP client. Cheap to clone.
///
/// ureq applies a per-request timeout by copying the whole configuration for that request,
/// which costs more than the rest of an evaluation; so the client keeps one agent (and one
/// connection pool) per configured `timeoutMs` instead, with that bound on each phase (connect,
/// send the body, receive headers, receive the body). The caller still stops waiting at its exact
/// deadline; the I/O thread's call ends within a few `timeoutMs` at worst, holding its
/// concurrency slot until then.
#[derive(Debug, Clone)]
pub(crate) struct Http {
    roots: Arc<ureq::tls::RootCerts>,
    agents: Arc<Mutex<HashMap<u64, ureq::Agent>>>,
}

/// Most distinct agents kept (one per `timeoutMs` value seen); more clears the cache.
const MAX_AGENTS: usize = 8;

impl Http {
    /// A client trusting the Mozilla roots, or only `extra_roots` (DER certificates; tests and
    /// private CAs) when any are given.
    pub(crate) fn new(extra_roots: &[Vec<u8>]) -> Http {
        use ureq::tls::{Certificate, RootCerts};
        let roots = if extra_roots.is_empty() {
            RootCerts::WebPki
        } else {
            let certs: Vec<Certificate<'static>> = extra_roots
                .iter()
                .map(|der| Certificate::from_der(der).to_owned())
                .collect();
            RootCerts::new_with_certs(&certs)
        };
        Http {
            roots: Arc::new(roots),
            agents: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    fn agent(&self, timeout_ms: u64) -> ureq::Agent {
        let mut agents = self.agents.lock();
        if let Some(a) = agents.get(&timeout_ms) {
            return a.clone();
        }
        if agents.len() >= MAX_AGENTS {
            agents.clear();
        }
        let bound = Some(Duration::from_millis(timeout_ms.max(1)));
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .max_redirects_will_error(false)
            .proxy(None)
            // Per-phase bounds. ureq's global and per-call timeouts, and its resolve and
            // send-request ones, each cost tens of µs per request on loopback (measured with
            // benches/client.rs); these four do not. Name resolution keeps the OS resolver's
            // own timeouts; request headers are small enough for the socket buffer.
            .timeout_connect(bound)
            .timeout_send_body(bound)
            .timeout_recv_response(bound)
            .timeout_recv_body(bound)
            .user_agent(concat!("jevgate/", env!("CARGO_PKG_VERSION")))
            .tls_config(
                ureq::tls::TlsConfig::builder()
                    .root_certs((*self.roots).clone())
                    .build(),
            )
            .build()
            .into();
        agents.insert(timeout_ms, agent.clone());
        agent
    }

    /// POSTs `body` as JSON to `url` and returns the 2xx body. Other statuses map per
    /// R-JEV-ERRMAP; `wall` converts HTTP dates.
    pub(crate) fn post_json(&self, p: &Post<'_>) -> Result<Vec<u8>> {
        let Post {
            url,
            auth,
            key,
            extra_headers,
            body,
            timeout,
            wall,
            timeout_ms,
        } = *p;
        if timeout.is_zero() {
            return Err(Error::Timeout { timeout_ms });
        }
        let mut req = self
            .agent(timeout_ms)
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "application/json");
        req = match auth {
            Auth::Bearer => req.header("authorization", format!("Bearer {}", key.expose())),
            Auth::XApiKey => req.header("x-api-key", key.expose()),
        };
        for (k, v) in extra_headers {
            req = req.header(*k, *v);
        }
        let result = req.send(body);
        let mut resp = match result {
            Ok(r) => r,
            Err(e) => return Err(transport_error(&e, timeout_ms)),
        };
        let status = resp.status().as_u16();
        if (200..300).contains(&status) {
            return resp
                .body_mut()
                .with_config()
                .limit(MAX_RESPONSE_BYTES)
                .read_to_vec()
                .map_err(|e| transport_error(&e, timeout_ms));
        }
        let retry = retry_info(resp.headers(), wall);
        // The body is dropped unread: it may echo state or credentials.
        Err(map_status(status, retry))
    }
}

fn transport_error(e: &ureq::Error, timeout_ms: u64) -> Error {
    use ureq::Error as E;
    let reason = match e {
        E::Timeout(_) => return Error::Timeout { timeout_ms },
        E::Io(io) if io.kind() == std::io::ErrorKind::TimedOut => {
            return Error::Timeout { timeout_ms }
        }
        // rustls reports a refused certificate as an I/O error of kind InvalidData
        E::Io(io) if io.kind() == std::io::ErrorKind::InvalidData => {
            "TLS error or invalid data from the provider".into()
        }
        E::Io(io) => format!("transport error ({:?})", io.kind()),
        E::HostNotFound => "host not found".into(),
        E::ConnectionFailed => "connection failed".into(),
        E::BodyExceedsLimit(_) => "response larger than the limit".into(),
        E::Tls(_) | E::Rustls(_) => "TLS error".into(),
        E::Protocol(_) => "HTTP protocol error".into(),
        E::TooManyRedirects | E::RedirectFailed => "redirect (not followed)".into(),
        _ => "transport error".into(),
    };
    Error::ProviderFailure { reason }
}

/// R-JEV-ERRMAP for a non-2xx status.
pub(crate) fn map_status(status: u16, retry: RetryInfo) -> Error {
    match status {
        400 => Error::InvalidRequest {
            path: String::new(),
            reason: "the provider rejected the request (HTTP 400)".into(),
        },
        401 => Error::AuthenticationFailed,
        402 => Error::QuotaExceeded { retry },
        403 => Error::JevAccessDenied {
            reason: "the provider denied access (HTTP 403)".into(),
        },
        404 => Error::UnsupportedModel,
        409 => Error::RequestConflict {
            reason: "the provider reports a conflicting request id (HTTP 409)".into(),
        },
        429 => Error::RateLimited {
            reason: "the provider is rate limiting (HTTP 429)".into(),
            retry,
        },
        300..=399 => Error::ProviderFailure {
            reason: format!("HTTP {status} redirect (not followed)"),
        },
        s => Error::ProviderFailure {
            reason: format!("HTTP {s}"),
        },
    }
}

fn header<'h>(headers: &'h ureq::http::HeaderMap, name: &str) -> Option<&'h str> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
}

/// Longest `Retry-After` kept: a provider (or anything between it and us) may send any date or
/// number; beyond a year the advice is meaningless and only risks overflow downstream.
pub(crate) const MAX_RETRY_AFTER: Duration = Duration::from_secs(86_400 * 365);

/// Retry-After (delta-seconds or IMF-fixdate) and `RateLimit-Reset` / `X-RateLimit-Reset`.
/// Every value is peer-supplied: arithmetic saturates and `retry_after` is clamped to
/// [`MAX_RETRY_AFTER`]; a reset time that cannot be represented is dropped.
pub(crate) fn retry_info(headers: &ureq::http::HeaderMap, wall: SystemTime) -> RetryInfo {
    let retry_after = header(headers, "retry-after").and_then(|v| {
        if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) {
            // all digits: delta-seconds, however many (an overflowing number is "very long")
            let secs = v.parse::<u64>().unwrap_or(u64::MAX);
            return Some(Duration::from_secs(secs).min(MAX_RETRY_AFTER));
        }
        let at = parse_http_date(v)?;
        Some(
            at.duration_since(wall)
                .unwrap_or(Duration::ZERO)
                .min(MAX_RETRY_AFTER),
        )
    });
    let reset_at = header(headers, "ratelimit-reset")
        .or_else(|| header(headers, "x-ratelimit-reset"))
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|v| v.is_finite() && *v >= 0.0 && *v < 1e11)
        .and_then(|v| {
            let d = Duration::try_from_secs_f64(v).ok()?;
            if v > 1e9 {
                UNIX_EPOCH.checked_add(d)
            } else {
                wall.checked_add(d)
            }
        });
    RetryInfo {
        retry_after,
        reset_at,
    }
}

/// Parses an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`). Years outside 1970..=9999 are
/// refused (`None`), so the arithmetic below cannot overflow.
pub(crate) fn parse_http_date(s: &str) -> Option<SystemTime> {
    let rest = s.split_once(", ")?.1;
    let mut parts = rest.split(' ');
    let day: u32 = parts.next()?.parse().ok()?;
    let month = match parts.next()? {
        "Jan" => 1,
        "Feb" => 2,
        "Mar" => 3,
        "Apr" => 4,
        "May" => 5,
        "Jun" => 6,
        "Jul" => 7,
        "Aug" => 8,
        "Sep" => 9,
        "Oct" => 10,
        "Nov" => 11,
        "Dec" => 12,
        _ => return None,
    };
    let year: i64 = parts.next()?.parse().ok()?;
    let mut hms = parts.next()?.split(':');
    let h: u64 = hms.next()?.parse().ok()?;
    let m: u64 = hms.next()?.parse().ok()?;
    let sec: u64 = hms.next()?.parse().ok()?;
    if parts.next()? != "GMT"
        || parts.next().is_some()
        || !(1..=31).contains(&day)
        || !(1970..=9999).contains(&year)
        || h > 23
        || m > 59
        || sec > 60
    {
        return None;
    }
    // days from civil (Howard Hinnant); bounded by the year check above
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (i64::from(month) + 9) % 12;
    let doy = (153 * mp + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = u64::try_from(days).ok()? * 86_400 + h * 3600 + m * 60 + sec;
    UNIX_EPOCH.checked_add(Duration::from_secs(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_dates_parse() {
        let t = parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT").unwrap();
        assert_eq!(t.duration_since(UNIX_EPOCH).unwrap().as_secs(), 784_111_777);
        assert!(parse_http_date("Sunday, 06-Nov-94 08:49:37 GMT").is_none());
        // peer-supplied years far out of range are refused, never an overflow (issue 12 item 6)
        for y in ["10000", "99999999999999999", "-99999999999999999", "1969"] {
            assert!(parse_http_date(&format!("Fri, 31 Dec {y} 23:59:59 GMT")).is_none());
        }
        assert!(parse_http_date("Fri, 31 Dec 9999 23:59:59 GMT").is_some());
    }

    // R-JEV-ERRMAP, issue 12 item 6: every Retry-After / reset value a peer can send is
    // clamped or dropped; none panics, whatever the wall clock.
    #[test]
    fn retry_headers_saturate() {
        let mut h = ureq::http::HeaderMap::new();
        let far_wall = UNIX_EPOCH + Duration::from_secs(i64::MAX as u64 / 2);
        for (ra, reset) in [
            ("Fri, 31 Dec 9999 23:59:59 GMT", "99999999999"),
            ("18446744073709551616000", "5e10"),
            ("7", "30"),
        ] {
            h.insert("retry-after", ra.parse().unwrap());
            h.insert("x-ratelimit-reset", reset.parse().unwrap());
            for wall in [UNIX_EPOCH, far_wall, SystemTime::now()] {
                let r = retry_info(&h, wall);
                assert!(r.retry_after.unwrap() <= MAX_RETRY_AFTER, "{ra}");
            }
        }
        h.insert("retry-after", "7".parse().unwrap());
        assert_eq!(
            retry_info(&h, UNIX_EPOCH).retry_after,
            Some(Duration::from_secs(7))
        );
    }

    // R-JEV-ERRMAP: every documented status.
    #[test]
    fn statuses_map_to_documented_codes() {
        let cases = [
            (400, "JEV_INVALID_REQUEST"),
            (401, "JEV_AUTHENTICATION_FAILED"),
            (402, "JEV_QUOTA_EXCEEDED"),
            (403, "JEV_ACCESS_DENIED"),
            (404, "JEV_UNSUPPORTED_MODEL"),
            (409, "JEV_REQUEST_CONFLICT"),
            (429, "JEV_RATE_LIMITED"),
            (500, "JEV_PROVIDER_FAILURE"),
            (503, "JEV_PROVIDER_FAILURE"),
            (302, "JEV_PROVIDER_FAILURE"),
            (418, "JEV_PROVIDER_FAILURE"),
        ];
        for (status, code) in cases {
            assert_eq!(map_status(status, RetryInfo::default()).code(), code);
        }
    }
}
