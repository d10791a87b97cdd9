//! What a tab logged, requested and downloaded, kept from DevTools events from the moment the
//! tab is attached (issue 15 part B: `console_messages`, `network_requests`, `downloads`), and
//! the one URL redaction every URL it keeps goes through.
//!
//! This module owns the bounded ring buffers of a tab (console messages and page errors,
//! requests, downloads) and [`redact_url`]. The event handler feeds it on the reader thread: it
//! never calls the browser, never blocks and keeps every entry bounded (count and size), so a
//! page that floods the console costs a fixed amount of memory. It never logs anything it keeps:
//! message text is untrusted page content, and URLs are kept only after redaction.

use std::collections::VecDeque;

use serde_json::Value;

use super::backend::{
    ConsoleLog, ConsoleMessage, DownloadInfo, DownloadList, LogArgs, NetworkLog, NetworkRequest,
};

/// Console messages kept per tab (the latest).
pub(crate) const KEPT_MESSAGES: usize = 500;
/// Requests kept per tab (the latest).
pub(crate) const KEPT_REQUESTS: usize = 500;
/// Downloads kept per tab (the latest).
pub(crate) const KEPT_DOWNLOADS: usize = 100;
/// Characters of one console message kept.
pub(crate) const MESSAGE_CHARS: usize = 2000;
/// Characters of a kept URL (after redaction).
pub(crate) const URL_CHARS: usize = 2048;
/// Entries one answer returns at most.
pub(crate) const MAX_ANSWER: usize = 200;

/// What replaces a token-bearing query value.
pub const REDACTED: &str = "REDACTED";

/// Query keys whose values are treated as secrets: a key (percent-decoded, any case) that
/// contains one of these is redacted. Over-redacting a harmless key (`keyword`) is the price
/// of never showing a secret one.
const SECRET_KEYS: &[&str] = &[
    "token",
    "key",
    "secret",
    "pass",
    "pwd",
    "auth",
    "session",
    "sid",
    "sig",
    "code",
    "credential",
    "jwt",
    "bearer",
    "otp",
    "cookie",
    "ticket",
    "saml",
    "assertion",
    "private",
    "nonce",
];

fn decode_lower(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            let hex = |c: u8| (c as char).to_digit(16);
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(if b[i] == b'+' { b' ' } else { b[i] });
        i += 1;
    }
    String::from_utf8_lossy(&out).to_lowercase()
}

fn secret_key(key: &str) -> bool {
    let k = decode_lower(key);
    SECRET_KEYS.iter().any(|s| k.contains(s))
}

/// `a=1&token=x;sid=y` with every token-bearing value replaced by [`REDACTED`]: pairs are
/// separated by `&` or `;` (both are in use, issue 20 item 6), separators kept as they were.
fn redact_pairs(pairs: &str) -> String {
    let mut out = String::with_capacity(pairs.len());
    let mut rest = pairs;
    loop {
        let end = rest.find(['&', ';']).unwrap_or(rest.len());
        let kv = &rest[..end];
        match kv.split_once('=') {
            Some((k, _)) if secret_key(k) => {
                out.push_str(k);
                out.push('=');
                out.push_str(REDACTED);
            }
            _ => out.push_str(kv),
        }
        match rest[end..].chars().next() {
            Some(sep) => {
                out.push(sep);
                rest = &rest[end + 1..];
            }
            None => return out,
        }
    }
}

/// A path with the token-bearing values of its `;` parameters (`/api;jsessionid=…/x;v=1`)
/// redacted; segments without parameters are kept as they are.
fn redact_path_params(path: &str) -> String {
    path.split('/')
        .map(|segment| match segment.split_once(';') {
            Some((name, params)) => format!("{name};{}", redact_pairs(params)),
            None => segment.to_string(),
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// A URL fit to show: userinfo (`user:pass@`) removed, and the value of every query (and
/// fragment) parameter — `&` or `;` separated — and of every path parameter (`/api;jsessionid=…`)
/// whose key looks token-bearing (`token`, `key`, `secret`, `password`,
/// `auth`, `session`, `sig`, `code`, `access_token`, … any case) replaced by `REDACTED`; cut
/// to 2,048 characters. Linear in the input; never fails.
///
/// ```
/// use jevgate::unstable::redact_url;
/// assert_eq!(
///     redact_url("https://u:pw@h.example/api?Access_Token=abc&q=x#id_token=t"),
///     "https://h.example/api?Access_Token=REDACTED&q=x#id_token=REDACTED"
/// );
/// ```
pub fn redact_url(url: &str) -> String {
    // data: and other opaque URLs carry content, not parameters: keep the scheme only.
    let lower_head: String = url
        .chars()
        .take(12)
        .collect::<String>()
        .to_ascii_lowercase();
    if lower_head.starts_with("data:") || lower_head.starts_with("blob:") {
        let scheme = &url[..url.find(':').unwrap_or(0)];
        return format!("{scheme}:…");
    }
    let (before_frag, fragment) = match url.split_once('#') {
        Some((a, f)) => (a, Some(f)),
        None => (url, None),
    };
    let (base, query) = match before_frag.split_once('?') {
        Some((a, q)) => (a, Some(q)),
        None => (before_frag, None),
    };
    // userinfo: between "://" and the first '@' before the path; path parameters after it.
    let base = match base.find("://") {
        Some(i) => {
            let rest = &base[i + 3..];
            let authority_end = rest.find('/').unwrap_or(rest.len());
            let path = redact_path_params(&rest[authority_end..]);
            match rest[..authority_end].rfind('@') {
                Some(at) => format!("{}{}{path}", &base[..i + 3], &rest[at + 1..authority_end]),
                None => format!("{}{path}", &base[..i + 3 + authority_end]),
            }
        }
        None => redact_path_params(base),
    };
    let mut out = base;
    if let Some(q) = query {
        out.push('?');
        out.push_str(&redact_pairs(q));
    }
    if let Some(f) = fragment {
        out.push('#');
        if f.contains('=') {
            out.push_str(&redact_pairs(f));
        } else {
            out.push_str(f);
        }
    }
    if out.chars().count() > URL_CHARS {
        out = out.chars().take(URL_CHARS).collect();
    }
    out
}

fn cut(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => s[..i].to_string(),
        None => s.to_string(),
    }
}

/// A ring of entries with increasing marks.
struct Ring<T> {
    items: VecDeque<(u64, T)>,
    next: u64,
    cap: usize,
}

impl<T: Clone> Ring<T> {
    fn new(cap: usize) -> Ring<T> {
        Ring {
            items: VecDeque::new(),
            next: 0,
            cap,
        }
    }

    fn push(&mut self, item: T) -> u64 {
        let seq = self.next;
        self.next = self.next.saturating_add(1);
        self.items.push_back((seq, item));
        while self.items.len() > self.cap {
            self.items.pop_front();
        }
        seq
    }

    /// The entries at or after `since` (the latest `max`), the next mark, and how many after
    /// `since` are not returned (fell out of the ring, or over `max`).
    fn since(&self, args: &LogArgs) -> (Vec<(u64, T)>, u64, u64) {
        let since = args.since.unwrap_or(0);
        let max = args.max.unwrap_or(MAX_ANSWER).min(MAX_ANSWER);
        let kept: Vec<&(u64, T)> = self.items.iter().filter(|(s, _)| *s >= since).collect();
        let skip = kept.len().saturating_sub(max);
        let out: Vec<(u64, T)> = kept.into_iter().skip(skip).cloned().collect();
        let wanted = self.next.saturating_sub(since);
        let dropped = wanted.saturating_sub(out.len() as u64);
        (out, self.next, dropped)
    }
}

#[derive(Clone)]
struct Request {
    id: String,
    method: String,
    url: String,
    status: Option<u16>,
    resource_type: String,
    failed: bool,
}

#[derive(Clone)]
pub(crate) struct Download {
    pub guid: String,
    pub name: String,
    pub bytes: u64,
    pub state: String,
}

/// The journal of one tab.
pub(crate) struct Journal {
    console: Ring<ConsoleMessage>,
    requests: Ring<Request>,
    downloads: VecDeque<Download>,
}

impl Default for Journal {
    fn default() -> Journal {
        Journal {
            console: Ring::new(KEPT_MESSAGES),
            requests: Ring::new(KEPT_REQUESTS),
            downloads: VecDeque::new(),
        }
    }
}

/// The text of a `Runtime.consoleAPICalled` argument.
fn remote_text(arg: &Value) -> String {
    match arg.get("value") {
        Some(Value::String(s)) => s.clone(),
        Some(v) if !v.is_null() => v.to_string(),
        _ => arg
            .get("description")
            .or_else(|| arg.get("unserializableValue"))
            .and_then(Value::as_str)
            .unwrap_or_else(|| arg.get("type").and_then(Value::as_str).unwrap_or(""))
            .to_string(),
    }
}

fn push_text(out: &mut String, s: &str) {
    let room = MESSAGE_CHARS.saturating_sub(out.chars().count());
    if room > 0 {
        out.push_str(&cut(s, room));
    }
}

fn str_of(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

impl Journal {
    /// Applies one event of the tab's session; `true` when it was one of the journal's.
    pub(crate) fn apply(&mut self, method: &str, p: &Value) -> bool {
        match method {
            "Runtime.consoleAPICalled" => {
                let level = match p["type"].as_str().unwrap_or("log") {
                    "warning" => "warning",
                    "error" | "assert" => "error",
                    "debug" | "trace" => "debug",
                    "info" => "info",
                    _ => "log",
                };
                let mut text = String::new();
                for (i, arg) in p["args"].as_array().into_iter().flatten().enumerate() {
                    if text.chars().count() >= MESSAGE_CHARS {
                        break;
                    }
                    if i > 0 {
                        push_text(&mut text, " ");
                    }
                    push_text(&mut text, &remote_text(arg));
                }
                let url = p["stackTrace"]["callFrames"][0]["url"]
                    .as_str()
                    .filter(|u| !u.is_empty())
                    .map(redact_url);
                self.console.push(ConsoleMessage {
                    seq: 0,
                    level: level.into(),
                    text,
                    url,
                });
            }
            "Runtime.exceptionThrown" => {
                let d = &p["exceptionDetails"];
                let text = d["exception"]["description"]
                    .as_str()
                    .or_else(|| d["text"].as_str())
                    .unwrap_or("Uncaught exception");
                let url = d["url"].as_str().filter(|u| !u.is_empty()).map(redact_url);
                self.console.push(ConsoleMessage {
                    seq: 0,
                    level: "error".into(),
                    text: cut(text, MESSAGE_CHARS),
                    url,
                });
            }
            "Log.entryAdded" => {
                let e = &p["entry"];
                let level = match e["level"].as_str().unwrap_or("info") {
                    "verbose" => "debug",
                    "warning" => "warning",
                    "error" => "error",
                    _ => "info",
                };
                let url = e["url"].as_str().filter(|u| !u.is_empty()).map(redact_url);
                self.console.push(ConsoleMessage {
                    seq: 0,
                    level: level.into(),
                    text: cut(e["text"].as_str().unwrap_or(""), MESSAGE_CHARS),
                    url,
                });
            }
            "Network.requestWillBeSent" => {
                let id = str_of(p, "requestId");
                if let Some(status) = p["redirectResponse"]["status"].as_u64() {
                    self.set_status(&id, status);
                }
                let req = &p["request"];
                self.requests.push(Request {
                    id,
                    method: cut(req["method"].as_str().unwrap_or("GET"), 16),
                    url: redact_url(req["url"].as_str().unwrap_or("")),
                    status: None,
                    resource_type: cut(p["type"].as_str().unwrap_or("Other"), 32),
                    failed: false,
                });
            }
            "Network.responseReceived" => {
                let id = str_of(p, "requestId");
                if let Some(status) = p["response"]["status"].as_u64() {
                    self.set_status(&id, status);
                }
            }
            "Network.loadingFailed" => {
                let id = str_of(p, "requestId");
                if let Some((_, r)) = self
                    .requests
                    .items
                    .iter_mut()
                    .rev()
                    .find(|(_, r)| r.id == id)
                {
                    r.failed = true;
                }
            }
            _ => return false,
        }
        true
    }

    fn set_status(&mut self, id: &str, status: u64) {
        if let Some((_, r)) = self
            .requests
            .items
            .iter_mut()
            .rev()
            .find(|(_, r)| r.id == id && r.status.is_none())
        {
            r.status = u16::try_from(status).ok();
        }
    }

    /// A download this tab started (`Browser.downloadWillBegin`).
    pub(crate) fn download_begins(&mut self, guid: &str, suggested: &str) {
        self.downloads.push_back(Download {
            guid: cut(guid, 64),
            name: safe_name(suggested),
            bytes: 0,
            state: "in_progress".into(),
        });
        while self.downloads.len() > KEPT_DOWNLOADS {
            self.downloads.pop_front();
        }
    }

    /// Progress of one of this tab's downloads; `false` when the guid is not the tab's.
    pub(crate) fn download_progress(&mut self, guid: &str, bytes: u64, state: &str) -> bool {
        let Some(d) = self.downloads.iter_mut().find(|d| d.guid == guid) else {
            return false;
        };
        d.bytes = bytes;
        d.state = match state {
            "completed" => "completed",
            "canceled" => "canceled",
            _ => "in_progress",
        }
        .into();
        true
    }

    /// The completed download named `name` (its guid, the file's name in the downloads
    /// directory).
    pub(crate) fn completed(&self, name: &str) -> Option<Download> {
        self.downloads
            .iter()
            .rev()
            .find(|d| d.name == name && d.state == "completed")
            .cloned()
    }

    pub(crate) fn console(&self, args: &LogArgs) -> ConsoleLog {
        let (items, next, dropped) = self.console.since(args);
        ConsoleLog {
            messages: items
                .into_iter()
                .map(|(seq, mut m)| {
                    m.seq = seq;
                    m
                })
                .collect(),
            next,
            dropped,
        }
    }

    pub(crate) fn network(&self, args: &LogArgs) -> NetworkLog {
        let (items, next, dropped) = self.requests.since(args);
        NetworkLog {
            requests: items
                .into_iter()
                .map(|(seq, r)| NetworkRequest {
                    seq,
                    method: r.method,
                    url: r.url,
                    status: r.status,
                    resource_type: r.resource_type,
                    failed: r.failed,
                })
                .collect(),
            next,
            dropped,
        }
    }

    pub(crate) fn downloads(&self) -> DownloadList {
        DownloadList {
            downloads: self
                .downloads
                .iter()
                .map(|d| DownloadInfo {
                    name: d.name.clone(),
                    bytes: d.bytes,
                    state: d.state.clone(),
                })
                .collect(),
        }
    }
}

/// A page-suggested file name reduced to one safe name: the last path component, no control
/// characters, no leading dots, at most 120 characters; `download` when nothing is left.
pub(crate) fn safe_name(suggested: &str) -> String {
    let last = suggested.rsplit(['/', '\\']).next().unwrap_or("");
    let cleaned: String = last.chars().filter(|c| !c.is_control()).take(120).collect();
    let cleaned = cleaned.trim_start_matches('.').trim().to_string();
    if cleaned.is_empty() {
        "download".into()
    } else {
        cleaned
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    // Issue 15 item 1 (browser_network_requests): token-bearing query values and userinfo
    // never survive redaction; harmless ones do.
    #[test]
    fn redact_url_removes_userinfo_and_token_bearing_values() {
        let cases = [
            ("http://127.0.0.1:9/api?token=SECRET&q=x", "http://127.0.0.1:9/api?token=REDACTED&q=x"),
            ("https://a.b/?ACCESS_TOKEN=s1&api_key=s2&Signature=s3&page=2", "https://a.b/?ACCESS_TOKEN=REDACTED&api_key=REDACTED&Signature=REDACTED&page=2"),
            ("https://user:pw@a.b/p?x=1", "https://a.b/p?x=1"),
            ("https://a.b/cb?code=s&state=ok#access_token=s&type=bearer", "https://a.b/cb?code=REDACTED&state=ok#access_token=REDACTED&type=bearer"),
            ("https://a.b/?pass%77ord=s", "https://a.b/?pass%77ord=REDACTED"),
            ("https://a.b/?sessionid=s&sid=s&auth=s&secret=s&password=s&X-Amz-Signature=s", "https://a.b/?sessionid=REDACTED&sid=REDACTED&auth=REDACTED&secret=REDACTED&password=REDACTED&X-Amz-Signature=REDACTED"),
            ("https://a.b/#section", "https://a.b/#section"),
            ("https://a.b/path@x?q=1", "https://a.b/path@x?q=1"),
            ("data:text/plain;base64,SECRET", "data:…"),
            ("", ""),
            ("?token=s", "?token=REDACTED"),
            // Issue 20 item 6: `;` parameters, in the path and in the query.
            ("https://a.b/api;jsessionid=S1?q=1", "https://a.b/api;jsessionid=REDACTED?q=1"),
            ("https://a.b/api?q=1;token=S2", "https://a.b/api?q=1;token=REDACTED"),
            ("https://a.b/a;v=1;sid=S3/b;x=2/c?k=1&q=2;auth=S4;z", "https://a.b/a;v=1;sid=REDACTED/b;x=2/c?k=1&q=2;auth=REDACTED;z"),
            ("https://u:p@a.b;sid=host/p;Session=S5", "https://a.b;sid=host/p;Session=REDACTED"),
            ("https://a.b/x#a=1;id_token=S6", "https://a.b/x#a=1;id_token=REDACTED"),
            ("/rel;jsessionid=S7", "/rel;jsessionid=REDACTED"),
        ];
        for (input, want) in cases {
            let got = redact_url(input);
            assert_eq!(got, want, "{input}");
        }
        let long = format!("https://a.b/?q={}", "x".repeat(10_000));
        assert_eq!(redact_url(&long).chars().count(), URL_CHARS);
        // Never panics on odd input (multibyte, stray %).
        for odd in ["https://ä@ö/?ü=%E2%82", "%", "a?%=%&&=", "http://@/?=#="] {
            let _ = redact_url(odd);
        }
    }

    // Issue 15 item 1 (browser_console_messages): a flood of 10,000 messages keeps the latest
    // 500, each cut to 2,000 characters, and says how many were dropped.
    #[test]
    fn console_ring_is_bounded_in_count_and_size() {
        let mut j = Journal::default();
        let huge = "y".repeat(50_000);
        for i in 0..10_000 {
            j.apply(
                "Runtime.consoleAPICalled",
                &json!({"type":"log","args":[{"type":"string","value": if i == 9_999 { huge.clone() } else { format!("m{i}") }}]}),
            );
        }
        let all = j.console(&LogArgs {
            since: None,
            max: Some(10_000),
        });
        assert_eq!(all.messages.len(), MAX_ANSWER);
        assert_eq!(all.next, 10_000);
        assert_eq!(all.dropped, 10_000 - MAX_ANSWER as u64);
        assert_eq!(
            all.messages.last().unwrap().text.chars().count(),
            MESSAGE_CHARS
        );
        let recent = j.console(&LogArgs {
            since: Some(9_990),
            max: None,
        });
        assert_eq!(recent.messages.len(), 10);
        assert_eq!(recent.messages[0].text, "m9990");
        assert_eq!(recent.dropped, 0);
        let none = j.console(&LogArgs {
            since: Some(all.next),
            max: None,
        });
        assert!(none.messages.is_empty());
        assert_eq!(j.console.items.len(), KEPT_MESSAGES);
    }

    #[test]
    fn network_entries_take_status_failure_and_redirects() {
        let mut j = Journal::default();
        j.apply("Network.requestWillBeSent", &json!({"requestId":"1","type":"Fetch","request":{"method":"GET","url":"http://h/api?token=S&q=x"}}));
        j.apply("Network.requestWillBeSent", &json!({"requestId":"1","type":"Fetch","redirectResponse":{"status":302},"request":{"method":"GET","url":"http://h/next"}}));
        j.apply(
            "Network.responseReceived",
            &json!({"requestId":"1","response":{"status":200}}),
        );
        j.apply(
            "Network.requestWillBeSent",
            &json!({"requestId":"2","type":"XHR","request":{"method":"POST","url":"http://h/x"}}),
        );
        j.apply("Network.loadingFailed", &json!({"requestId":"2"}));
        let log = j.network(&LogArgs::default());
        let got: Vec<_> = log
            .requests
            .iter()
            .map(|r| (r.url.as_str(), r.status, r.failed))
            .collect();
        assert_eq!(
            got,
            [
                ("http://h/api?token=REDACTED&q=x", Some(302), false),
                ("http://h/next", Some(200), false),
                ("http://h/x", None, true)
            ]
        );
        assert!(!format!("{log:?}").contains("token=S"));
    }

    #[test]
    fn suggested_download_names_are_reduced_to_one_safe_name() {
        assert_eq!(safe_name("../../etc/passwd"), "passwd");
        assert_eq!(safe_name("..\\..\\x.txt"), "x.txt");
        assert_eq!(safe_name(".bashrc"), "bashrc");
        assert_eq!(safe_name(""), "download");
        assert_eq!(safe_name(".."), "download");
        assert_eq!(safe_name("a\u{0}b\n.txt"), "ab.txt");
    }
}
