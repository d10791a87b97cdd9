//! The channel listener's one plain-HTTP route, `POST /devices/pair` (R-DEV-PAIR, issue 22 item
//! 2), beside the WebSocket upgrade at [`CHANNEL_PATH`](super::frames::CHANNEL_PATH): which
//! head goes where ([`route`]), the request body's shape ([`PairBody`]), CORS for a
//! `chrome-extension://` origin, and the bytes of every answer ([`response`]). Pure: no socket,
//! no store, no clock — the connection state machine reads and writes, the checker thread does
//! the store's part.
//!
//! | answer | when |
//! |---|---|
//! | 200 `{deviceId, token}` | a good code: the device is paired for the code's owner |
//! | 204 | `OPTIONS` preflight (CORS headers only for a `chrome-extension://` origin, with Private Network Access allowed: the gateway is often on loopback or a LAN) |
//! | 400 `INVALID_INPUT` | not one of the JSON shapes (a browser's, or a computer helper's with `capability: "computer"` and no `browser`), a field out of bounds, a bad `Content-Length` |
//! | 401 `PAIRING_CODE_INVALID` | a wrong, used or expired code (one answer for all three) |
//! | 405 | another method (`Allow: POST, OPTIONS`) |
//! | 408 `REQUEST_TIMEOUT` | the head and body did not arrive within the channel's `auth_timeout` |
//! | 411 `LENGTH_REQUIRED` | a `POST` without `Content-Length` (chunked bodies are not taken) |
//! | 413 `PAYLOAD_TOO_LARGE` | a body over [`MAX_PAIR_BODY`] (refused from its header) |
//! | 429 `RATE_LIMITED` + `Retry-After` | [`MAX_FAILURES`](super::pairing::MAX_FAILURES) wrong codes from the address in the window |
//!
//! Every answer closes the connection. This module must never put a pairing code or a token
//! anywhere but the one 200 body, and never echo a request's content in an error.

use super::registry::{BrowserInfo, Capability, PairRequest};
use super::wire;
use serde::Deserialize;

/// The pairing route's path.
pub const PAIR_PATH: &str = "/devices/pair";
/// The largest pairing request body, in bytes.
pub const MAX_PAIR_BODY: usize = 8 * 1024;

/// `{"installationId","name","browser":{"name","version"},"pairingCode"}` (a browser's
/// extension), or `{"installationId","name","capability":"computer","pairingCode"}` (a computer
/// helper, issue 25: `jevgate-computer pair`).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct PairBody {
    pub installation_id: String,
    pub name: String,
    #[serde(default)]
    pub browser: Option<BrowserInfo>,
    #[serde(default)]
    pub capability: Option<String>,
    pub pairing_code: String,
}

/// The shapes a pairing body may take, as an error names them.
const PAIR_SHAPES: &str = "{installationId, name, browser: {name, version}, pairingCode} or \
                           {installationId, name, capability: \"computer\", pairingCode}";

impl PairBody {
    /// The body, or the message of a 400 (the shapes expected; never the input).
    pub fn parse(body: &[u8]) -> Result<PairBody, String> {
        let parsed: PairBody = serde_json::from_slice(body)
            .map_err(|e| crate::Error::invalid_json("body", PAIR_SHAPES, &e).to_string())?;
        let shape_ok = match parsed.capability.as_deref() {
            None | Some("browser") => parsed.browser.is_some(),
            Some("computer") => parsed.browser.is_none(),
            Some(_) => false,
        };
        if !shape_ok {
            return Err(crate::Error::InvalidArgument {
                name: "body",
                reason: format!("must be {PAIR_SHAPES}"),
            }
            .to_string());
        }
        Ok(parsed)
    }

    /// The registry's pairing request and the capability it pairs as (a browser by default).
    pub fn request(&self) -> (PairRequest, Capability) {
        let capability = match self.capability.as_deref() {
            Some("computer") => Capability::Computer,
            _ => Capability::Browser,
        };
        let request = PairRequest {
            installation_id: self.installation_id.clone(),
            name: self.name.clone(),
            browser: self.browser.clone(),
        };
        (request, capability)
    }
}

/// One answer of the route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Reply {
    pub status: u16,
    /// A JSON body (`None`: empty).
    pub body: Option<String>,
    /// `Retry-After`, seconds (429).
    pub retry_after: Option<u64>,
}

impl Reply {
    /// `{"errorCode","message"}` with `status`.
    pub fn error(status: u16, code: &str, message: &str) -> Reply {
        Reply {
            status,
            body: Some(serde_json::json!({"errorCode": code, "message": message}).to_string()),
            retry_after: None,
        }
    }

    /// 200 `{"deviceId","token"}`.
    pub fn paired(device_id: &str, token: &str) -> Reply {
        Reply {
            status: 200,
            body: Some(serde_json::json!({"deviceId": device_id, "token": token}).to_string()),
            retry_after: None,
        }
    }

    /// 401 `PAIRING_CODE_INVALID`: wrong, used and expired are one answer.
    pub fn code_invalid() -> Reply {
        Reply::error(
            401,
            "PAIRING_CODE_INVALID",
            "the pairing code is wrong, already used or expired; ask for a new code",
        )
    }

    /// 429 `RATE_LIMITED` with `Retry-After` (whole seconds, at least 1).
    pub fn rate_limited(retry_after: std::time::Duration) -> Reply {
        let secs = retry_after.as_secs() + u64::from(retry_after.subsec_nanos() > 0);
        let secs = secs.max(1);
        let mut r = Reply::error(
            429,
            "RATE_LIMITED",
            &format!("too many wrong pairing codes from this address; try again in {secs} s"),
        );
        r.retry_after = Some(secs);
        r
    }

    /// 408: the request did not arrive in time.
    pub fn timed_out() -> Reply {
        Reply::error(408, "REQUEST_TIMEOUT", "the request did not arrive in time")
    }
}

/// Where a complete request head goes.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Route {
    /// The WebSocket upgrade: this 101 answer, then the channel.
    Upgrade(String),
    /// Not the channel and not the pairing route: [`wire::refusal`] with this status.
    Refuse(u16),
    /// An answer of the pairing route that needs no body (preflight, 405, 411, 413, 400), and
    /// the allowed CORS origin.
    Reply(Reply, Option<String>),
    /// A pairing request: read `length` body bytes, then pair.
    Body {
        length: usize,
        origin: Option<String>,
    },
}

/// The CORS origin to echo: a `chrome-extension://<id>` origin (the id 1..=64 ASCII letters and
/// digits), else `None` (no CORS header at all).
pub(crate) fn allowed_origin(origin: Option<&str>) -> Option<String> {
    let id = origin?.strip_prefix("chrome-extension://")?;
    let ok = !id.is_empty() && id.len() <= 64 && id.bytes().all(|b| b.is_ascii_alphanumeric());
    ok.then(|| format!("chrome-extension://{id}"))
}

/// Routes a complete request head (its bytes up to and including the blank line): the
/// WebSocket upgrade at `channel_path` ([`wire::upgrade_answer`]), the pairing route at
/// [`PAIR_PATH`], or a refusal. Pure; linear in the head.
pub(crate) fn route(head: &[u8], channel_path: &str) -> Route {
    let Some(request) = wire::parse_head(head) else {
        return Route::Refuse(400);
    };
    let mut parts = request.first.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Route::Refuse(400);
    };
    if target.split('?').next() != Some(PAIR_PATH) {
        return match wire::upgrade_answer(head, channel_path) {
            Ok(response) => Route::Upgrade(response),
            Err(status) => Route::Refuse(status),
        };
    }
    if version != "HTTP/1.1" && version != "HTTP/1.0" {
        return Route::Refuse(400);
    }
    let origin = allowed_origin(request.header("origin"));
    let bad = |message: &str| Route::Reply(Reply::error(400, "INVALID_INPUT", message), None);
    match method {
        "OPTIONS" => Route::Reply(
            Reply {
                status: 204,
                body: None,
                retry_after: None,
            },
            origin,
        ),
        "POST" => {
            if request.header("transfer-encoding").is_some() {
                let r = Reply::error(
                    411,
                    "LENGTH_REQUIRED",
                    "send the body with a Content-Length (no chunked encoding)",
                );
                return Route::Reply(r, origin);
            }
            let lengths: Vec<&str> = request
                .headers
                .iter()
                .filter(|(n, _)| n == "content-length")
                .map(|(_, v)| *v)
                .collect();
            let Some(first) = lengths.first() else {
                let r = Reply::error(411, "LENGTH_REQUIRED", "send a Content-Length");
                return Route::Reply(r, origin);
            };
            if lengths.iter().any(|l| l != first)
                || first.is_empty()
                || first.len() > 19
                || !first.bytes().all(|b| b.is_ascii_digit())
            {
                return bad("the Content-Length is not one decimal number");
            }
            let length = first.parse::<u64>().unwrap_or(u64::MAX);
            if length > MAX_PAIR_BODY as u64 {
                let r = Reply::error(
                    413,
                    "PAYLOAD_TOO_LARGE",
                    &format!("the body is over {MAX_PAIR_BODY} bytes"),
                );
                return Route::Reply(r, origin);
            }
            Route::Body {
                length: length as usize,
                origin,
            }
        }
        _ => Route::Reply(
            Reply::error(405, "METHOD_NOT_ALLOWED", "use POST (or OPTIONS)"),
            origin,
        ),
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        204 => "No Content",
        400 => "Bad Request",
        401 => "Unauthorized",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        411 => "Length Required",
        413 => "Payload Too Large",
        429 => "Too Many Requests",
        503 => "Service Unavailable",
        _ => "Internal Server Error",
    }
}

/// The bytes of `reply`, with CORS headers when `origin` is an allowed one. Every answer closes
/// the connection and is never cached.
pub(crate) fn response(reply: &Reply, origin: Option<&str>) -> String {
    let mut out = format!("HTTP/1.1 {} {}\r\n", reply.status, reason(reply.status));
    if let Some(origin) = origin {
        out.push_str(&format!(
            "Access-Control-Allow-Origin: {origin}\r\nVary: Origin\r\n"
        ));
        if reply.status == 204 {
            out.push_str(
                "Access-Control-Allow-Methods: POST\r\nAccess-Control-Allow-Headers: content-type\r\nAccess-Control-Allow-Private-Network: true\r\nAccess-Control-Max-Age: 600\r\n",
            );
        }
        if reply.retry_after.is_some() {
            // Not a CORS-safelisted header: the extension's options page reads the wait only
            // when it is exposed (issue 22).
            out.push_str("Access-Control-Expose-Headers: Retry-After\r\n");
        }
    }
    if reply.status == 405 {
        out.push_str("Allow: POST, OPTIONS\r\n");
    }
    if let Some(secs) = reply.retry_after {
        out.push_str(&format!("Retry-After: {secs}\r\n"));
    }
    let body = reply.body.as_deref().unwrap_or("");
    if !body.is_empty() {
        out.push_str("Content-Type: application/json\r\n");
    }
    out.push_str(&format!(
        "Content-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n{body}",
        body.len()
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(text: &str) -> Vec<u8> {
        format!("{text}\r\n\r\n").into_bytes()
    }

    const CH: &str = "/v1/device-worker/channel";
    const EXT: &str = "chrome-extension://abcdefghijklmnopabcdefghijklmnop";

    #[test]
    fn r_dev_pair_routes_heads() {
        let post = |extra: &str| head(&format!("POST /devices/pair HTTP/1.1\r\nHost: h{extra}"));
        assert_eq!(
            route(&post("\r\nContent-Length: 12"), CH),
            Route::Body {
                length: 12,
                origin: None
            }
        );
        assert_eq!(
            route(
                &post(&format!("\r\ncontent-length: 0\r\nOrigin: {EXT}")),
                CH
            ),
            Route::Body {
                length: 0,
                origin: Some(EXT.into())
            }
        );
        let status = |r: Route| match r {
            Route::Reply(reply, _) => reply.status,
            Route::Refuse(s) => s,
            other => panic!("{other:?}"),
        };
        assert_eq!(status(route(&post(""), CH)), 411);
        assert_eq!(
            status(route(&post("\r\nTransfer-Encoding: chunked"), CH)),
            411
        );
        assert_eq!(status(route(&post("\r\nContent-Length: 8193"), CH)), 413);
        assert_eq!(
            status(route(&post("\r\nContent-Length: 99999999999999999999"), CH)),
            400
        );
        assert_eq!(status(route(&post("\r\nContent-Length: -1"), CH)), 400);
        assert_eq!(status(route(&post("\r\nContent-Length: 1e3"), CH)), 400);
        assert_eq!(
            status(route(
                &post("\r\nContent-Length: 5\r\nContent-Length: 6"),
                CH
            )),
            400
        );
        assert_eq!(
            route(
                &post("\r\nContent-Length: 8192\r\nContent-Length: 8192"),
                CH
            ),
            Route::Body {
                length: 8192,
                origin: None
            }
        );
        assert_eq!(
            status(route(&head("GET /devices/pair HTTP/1.1\r\nHost: h"), CH)),
            405
        );
        assert_eq!(
            status(route(&head("POST /devices/pair HTTP/2\r\nHost: h"), CH)),
            400
        );
        assert_eq!(
            route(
                &head(&format!("OPTIONS /devices/pair HTTP/1.1\r\nOrigin: {EXT}")),
                CH
            ),
            Route::Reply(
                Reply {
                    status: 204,
                    body: None,
                    retry_after: None
                },
                Some(EXT.into())
            )
        );
        // Everything else is the WebSocket's business, as before.
        assert_eq!(
            status(route(&head("GET /other HTTP/1.1\r\nHost: h"), CH)),
            404
        );
        assert_eq!(
            status(route(
                &head("GET /v1/device-worker/channel HTTP/1.1\r\nHost: h"),
                CH
            )),
            426
        );
        assert_eq!(status(route(b"garbage\r\n\r\n", CH)), 400);
    }

    #[test]
    fn r_dev_pair_cors_only_for_extension_origins() {
        assert_eq!(allowed_origin(Some(EXT)).as_deref(), Some(EXT));
        for other in [
            None,
            Some("https://evil.example"),
            Some("chrome-extension://"),
            Some("chrome-extension://abc/def"),
            Some("chrome-extension://abc\u{0}"),
            Some("moz-extension://abc"),
            Some("null"),
        ] {
            assert_eq!(allowed_origin(other), None, "{other:?}");
        }
        let r = response(&Reply::paired("dev_1", "tok"), Some(EXT));
        assert!(r.starts_with("HTTP/1.1 200 OK\r\n"));
        assert!(r.contains(&format!(
            "Access-Control-Allow-Origin: {EXT}\r\nVary: Origin\r\n"
        )));
        assert!(!r.contains("Allow-Methods"));
        assert!(r.ends_with("\r\n\r\n{\"deviceId\":\"dev_1\",\"token\":\"tok\"}"));
        let pre = response(
            &Reply {
                status: 204,
                body: None,
                retry_after: None,
            },
            Some(EXT),
        );
        assert!(pre.contains("Access-Control-Allow-Methods: POST\r\n"));
        assert!(pre.contains("Access-Control-Allow-Headers: content-type\r\n"));
        assert!(pre.contains("Access-Control-Allow-Private-Network: true\r\n"));
        assert!(pre.contains("Content-Length: 0\r\n"));
        let plain = response(&Reply::code_invalid(), None);
        assert!(!plain.contains("Access-Control"));
        assert!(plain.starts_with("HTTP/1.1 401 Unauthorized\r\n"));
        let limited = response(
            &Reply::rate_limited(std::time::Duration::from_millis(1500)),
            None,
        );
        assert!(limited.contains("Retry-After: 2\r\n"), "{limited}");
        assert!(!limited.contains("Access-Control"), "{limited}");
        let exposed = response(
            &Reply::rate_limited(std::time::Duration::from_secs(3)),
            Some(EXT),
        );
        assert!(
            exposed.contains("Access-Control-Expose-Headers: Retry-After\r\n"),
            "{exposed}"
        );
    }

    #[test]
    fn r_dev_pair_body_shape() {
        let ok = br#"{"installationId":"i","name":"n","browser":{"name":"Chrome","version":"131"},"pairingCode":"ABCD-EFGH"}"#;
        let b = PairBody::parse(ok).unwrap();
        assert_eq!(b.pairing_code, "ABCD-EFGH");
        assert!(b.request().0.browser.is_some());
        assert_eq!(b.request().1, Capability::Browser);
        // A computer helper (issue 25) pairs without a browser.
        let computer = br#"{"installationId":"i","name":"n","capability":"computer","pairingCode":"ABCD-EFGH"}"#;
        let b = PairBody::parse(computer).unwrap();
        assert_eq!(b.request().1, Capability::Computer);
        assert!(b.request().0.browser.is_none());
        for bad in [
            &b"{"[..],
            b"[]",
            br#"{"installationId":"i","name":"n","browser":{"name":"C","version":"1"}}"#,
            br#"{"installationId":"i","name":"n","pairingCode":"SECRETCODE"}"#,
            br#"{"installationId":1,"name":"n","browser":{"name":"C","version":"1"},"pairingCode":"SECRETCODE"}"#,
            br#"{"installationId":"i","name":"n","capability":"computer","browser":{"name":"C","version":"1"},"pairingCode":"SECRETCODE"}"#,
            br#"{"installationId":"i","name":"n","capability":"toaster","pairingCode":"SECRETCODE"}"#,
            b"\xff\xfe",
        ] {
            let message = PairBody::parse(bad).unwrap_err();
            assert!(message.contains("pairingCode}"), "{message}");
            assert!(!message.contains("SECRETCODE"), "{message}");
        }
    }
}
