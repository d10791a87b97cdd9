//! A loopback test server for the Jev providers: the TypeSafe contract (`POST /v1/systemone`,
//! `{model, state, questions}`), the compatible-upstream contract (`POST /v1/jev/evaluate`,
//! `{request_id, model, state, questions}`) and the thinking helper (`/v1/chat/completions`,
//! `/v1/messages`), over plain HTTP or TLS with a test CA, with scripted behaviours.
//!
//! Answers are computed from the submitted questions so they always validate: noul 0.5, the
//! first choice option with probability 1, the first score level with probability 1.

#![allow(dead_code)] // reason: each test binary uses a different part of the support module

use parking_lot::{Condvar, Mutex};
use serde_json::{json, Map, Value};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// What the server does with one request.
#[derive(Debug, Clone)]
pub enum Behaviour {
    /// A valid evaluation for the submitted questions.
    Answer,
    /// A valid evaluation after a delay.
    Delay(Duration),
    /// Wait until [`TestServer::open_gate`], then answer.
    Gate,
    /// This status, these headers, this body.
    Status(u16, Vec<(String, String)>, String),
    /// 200 with a body that is not JSON.
    Malformed,
    /// 200 with an OpenAI chat completion instead of an evaluation.
    ChatCompletion,
    /// 307 to another path of the same server.
    Redirect,
    /// Headers at once, then the body one byte per `Duration`.
    SlowBody(Duration),
    /// A thinking reply whose assistant text is this.
    Think(String),
    /// 200 with exactly this body.
    Raw(String),
    /// A valid evaluation whose answers this rule computes from the request body.
    Rule(Rule),
}

/// Answers computed from a request body (its `answers` object).
#[derive(Clone)]
pub struct Rule(pub Arc<dyn Fn(&Value) -> Value + Send + Sync>);

impl std::fmt::Debug for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Rule")
    }
}

/// One request as the server saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub path: String,
    pub authorization: Option<String>,
    pub x_api_key: Option<String>,
    pub body: Value,
}

struct Shared {
    script: Mutex<VecDeque<Behaviour>>,
    default: Mutex<Behaviour>,
    seen: Mutex<Vec<Seen>>,
    gate: (Mutex<bool>, Condvar),
    in_handler: AtomicUsize,
    max_in_handler: AtomicUsize,
    finished: AtomicUsize,
    stop: AtomicBool,
    tls: Option<Arc<rustls::ServerConfig>>,
}

/// The server. Dropping it stops accepting.
pub struct TestServer {
    shared: Arc<Shared>,
    port: u16,
    /// DER of the test CA, when TLS.
    pub ca_der: Option<Vec<u8>>,
}

impl TestServer {
    /// A plain-HTTP server on 127.0.0.1.
    pub fn start() -> TestServer {
        Self::start_with(None, None)
    }

    /// A TLS server for `localhost`, its certificate issued by a fresh test CA.
    pub fn start_tls() -> TestServer {
        let ca_key = rcgen::KeyPair::generate().unwrap();
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "jevgate test CA");
        let ca_cert = ca_params.self_signed(&ca_key).unwrap();
        let leaf_key = rcgen::KeyPair::generate().unwrap();
        let leaf_params = rcgen::CertificateParams::new(vec!["localhost".to_string()]).unwrap();
        let issuer = rcgen::Issuer::from_params(&ca_params, &ca_key);
        let leaf = leaf_params.signed_by(&leaf_key, &issuer).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(
                vec![leaf.der().clone()],
                rustls::pki_types::PrivateKeyDer::Pkcs8(leaf_key.serialize_der().into()),
            )
            .unwrap();
        Self::start_with(Some(Arc::new(config)), Some(ca_cert.der().to_vec()))
    }

    fn start_with(tls: Option<Arc<rustls::ServerConfig>>, ca_der: Option<Vec<u8>>) -> TestServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let shared = Arc::new(Shared {
            script: Mutex::new(VecDeque::new()),
            default: Mutex::new(Behaviour::Answer),
            seen: Mutex::new(Vec::new()),
            gate: (Mutex::new(false), Condvar::new()),
            in_handler: AtomicUsize::new(0),
            max_in_handler: AtomicUsize::new(0),
            finished: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
            tls,
        });
        let s = Arc::clone(&shared);
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if s.stop.load(Ordering::Acquire) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let s = Arc::clone(&s);
                std::thread::spawn(move || serve_connection(&s, conn));
            }
        });
        TestServer {
            shared,
            port,
            ca_der,
        }
    }

    /// `http://127.0.0.1:PORT` (or `https://localhost:PORT` with TLS).
    pub fn base(&self) -> String {
        if self.shared.tls.is_some() {
            format!("https://localhost:{}", self.port)
        } else {
            format!("http://127.0.0.1:{}", self.port)
        }
    }

    /// Queues behaviours for the next requests (then the default applies).
    pub fn script(&self, b: impl IntoIterator<Item = Behaviour>) {
        self.shared.script.lock().extend(b);
    }

    /// Sets the behaviour used when the script is empty.
    pub fn set_default(&self, b: Behaviour) {
        *self.shared.default.lock() = b;
    }

    /// Lets every request waiting at the gate through (and later ones).
    pub fn open_gate(&self) {
        *self.shared.gate.0.lock() = true;
        self.shared.gate.1.notify_all();
    }

    /// Requests seen so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.shared.seen.lock().clone()
    }

    /// Number of requests seen.
    pub fn hits(&self) -> usize {
        self.shared.seen.lock().len()
    }

    /// Requests whose response has been fully written (or abandoned).
    pub fn finished(&self) -> usize {
        self.shared.finished.load(Ordering::Acquire)
    }

    /// Requests being handled right now.
    pub fn in_handler(&self) -> usize {
        self.shared.in_handler.load(Ordering::Acquire)
    }

    /// Most requests handled at the same time.
    pub fn max_in_handler(&self) -> usize {
        self.shared.max_in_handler.load(Ordering::Acquire)
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        self.open_gate();
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

trait Stream: Read + Write {}
impl<T: Read + Write> Stream for T {}

fn serve_connection(s: &Arc<Shared>, conn: TcpStream) {
    let _ = conn.set_nodelay(true);
    let stream: Box<dyn Stream> = match &s.tls {
        None => Box::new(conn),
        Some(cfg) => {
            let Ok(tls) = rustls::ServerConnection::new(Arc::clone(cfg)) else {
                return;
            };
            Box::new(rustls::StreamOwned::new(tls, conn))
        }
    };
    let mut reader = BufReader::new(stream);
    loop {
        let Some((path, headers, body)) = read_request(&mut reader) else {
            return;
        };
        let header = |name: &str| {
            headers
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.clone())
        };
        let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let behaviour = s
            .script
            .lock()
            .pop_front()
            .unwrap_or_else(|| s.default.lock().clone());
        s.seen.lock().push(Seen {
            path: path.clone(),
            authorization: header("authorization"),
            x_api_key: header("x-api-key"),
            body: body.clone(),
        });
        let now = s.in_handler.fetch_add(1, Ordering::AcqRel) + 1;
        s.max_in_handler.fetch_max(now, Ordering::AcqRel);
        let keep = respond(s, reader.get_mut(), &path, &body, behaviour);
        s.in_handler.fetch_sub(1, Ordering::AcqRel);
        s.finished.fetch_add(1, Ordering::AcqRel);
        if !keep {
            return;
        }
    }
}

type Headers = Vec<(String, String)>;

fn read_request(r: &mut impl BufRead) -> Option<(String, Headers, Vec<u8>)> {
    let mut line = String::new();
    if r.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let path = line.split_whitespace().nth(1)?.to_string();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        r.read_line(&mut h).ok()?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        let (k, v) = h.split_once(':')?;
        headers.push((k.trim().to_string(), v.trim().to_string()));
    }
    let len: usize = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; len];
    r.read_exact(&mut body).ok()?;
    Some((path, headers, body))
}

/// The valid answer set for the questions of `req`.
pub fn answers_for(req: &Value) -> Value {
    let mut answers = Map::new();
    if let Some(qs) = req.get("questions").and_then(Value::as_object) {
        for (k, q) in qs {
            let a = match q["type"].as_str() {
                Some("noul") => json!({"type": "noul", "noul": 0.5}),
                Some("choice") => {
                    let opts = q["criteria"].as_object().cloned().unwrap_or_default();
                    let mut probs = Map::new();
                    for (i, o) in opts.keys().enumerate() {
                        probs.insert(o.clone(), json!(if i == 0 { 1.0 } else { 0.0 }));
                    }
                    let first = opts.keys().next().cloned().unwrap_or_default();
                    json!({"type": "choice", "choice": first, "probabilities": probs,
                           "confidence": 0.9})
                }
                _ => {
                    let levels = q["criteria"].as_array().cloned().unwrap_or_default();
                    let ps: Vec<f64> = (0..levels.len())
                        .map(|i| if i == 0 { 1.0 } else { 0.0 })
                        .collect();
                    json!({"type": "score", "score": 0.0, "levels": ps, "legend": levels,
                           "confidence": 0.8})
                }
            };
            answers.insert(k.clone(), a);
        }
    }
    Value::Object(answers)
}

fn evaluation(path: &str, req: &Value) -> Value {
    let mut body = json!({
        "model": "jev-1.13.0",
        "answers": answers_for(req),
        "usage": {"input_tokens": 120, "output_tokens": 8},
    });
    if path.ends_with("/jev/evaluate") {
        body["request_id"] = req["request_id"].clone();
        body["requested_model"] = req["model"].clone();
        body["billing"] = json!({"charged_credits": 0.25, "rate_version": "2026-01"});
    }
    body
}

fn write_response(
    w: &mut dyn Stream,
    status: u16,
    headers: &[(String, String)],
    body: &[u8],
) -> bool {
    let mut head = format!(
        "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    w.write_all(head.as_bytes()).is_ok() && w.write_all(body).is_ok() && w.flush().is_ok()
}

fn respond(s: &Shared, w: &mut dyn Stream, path: &str, req: &Value, b: Behaviour) -> bool {
    let ok = |w: &mut dyn Stream| {
        let body = evaluation(path, req).to_string();
        write_response(w, 200, &[], body.as_bytes())
    };
    match b {
        Behaviour::Answer => ok(w),
        Behaviour::Delay(d) => {
            std::thread::sleep(d);
            ok(w)
        }
        Behaviour::Gate => {
            let mut open = s.gate.0.lock();
            while !*open {
                s.gate.1.wait(&mut open);
            }
            drop(open);
            ok(w)
        }
        Behaviour::Status(code, headers, body) => {
            write_response(w, code, &headers, body.as_bytes())
        }
        Behaviour::Malformed => write_response(w, 200, &[], b"{\"model\": \"jev-1.13.0\", \"answ"),
        Behaviour::ChatCompletion => {
            let body = json!({"id": "chatcmpl-1", "object": "chat.completion",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": "yes"}}],
                "usage": {"prompt_tokens": 5, "completion_tokens": 1}});
            write_response(w, 200, &[], body.to_string().as_bytes())
        }
        Behaviour::Redirect => write_response(
            w,
            307,
            &[("location".into(), "/elsewhere/v1/jev/evaluate".into())],
            b"",
        ),
        Behaviour::SlowBody(per_byte) => {
            let body = evaluation(path, req).to_string();
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                body.len()
            );
            if w.write_all(head.as_bytes()).is_err() || w.flush().is_err() {
                return false;
            }
            for b in body.as_bytes() {
                std::thread::sleep(per_byte);
                if w.write_all(&[*b]).is_err() || w.flush().is_err() {
                    return false;
                }
            }
            true
        }
        Behaviour::Think(text) => {
            let body = if path.ends_with("/messages") {
                json!({"content": [{"type": "text", "text": text}], "stop_reason": "end_turn"})
            } else {
                json!({"choices": [{"message": {"role": "assistant", "content": text}}]})
            };
            write_response(w, 200, &[], body.to_string().as_bytes())
        }
        Behaviour::Raw(body) => write_response(w, 200, &[], body.as_bytes()),
        Behaviour::Rule(rule) => {
            let mut body = evaluation(path, req);
            body["answers"] = (rule.0)(req);
            write_response(w, 200, &[], body.to_string().as_bytes())
        }
    }
}
