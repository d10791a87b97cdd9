//! The channel's JSON frames (R-DEV-CHAN), parsed and built as pure functions.
//!
//! Worker → gateway: `authenticate`, `result`, `ping`, `pong`. Gateway → worker: `ready`,
//! `command`, `cancel`, `pong`, and `status` to a worker that asked for it (`"features":
//! ["status"]` in its authenticate frame). Every frame is one JSON object in one text message.
//!
//! Parsing never panics and never copies a field it does not need; a frame that is not a JSON
//! object with a string `type`, or whose known fields have the wrong types, is
//! [`FrameError::Malformed`]. A well-formed frame of an unknown `type` is
//! [`WorkerFrame::Unknown`] and is ignored (forward compatibility). This module must never log
//! a frame's content.

use serde_json::{json, Map, Value};

/// The path the channel is served at; any other path is answered 404.
pub const CHANNEL_PATH: &str = "/v1/device-worker/channel";

/// The channel protocol version this gateway speaks; browser workers below it are refused.
pub const PROTOCOL_VERSION: u64 = 2;

/// A frame sent by a worker.
#[derive(Debug, Clone, PartialEq)]
pub enum WorkerFrame {
    /// `{"type":"authenticate","authorization":"Device <token>","protocol":2,"features"?:[…]}`.
    Authenticate {
        /// The token after `Device `, or `None` when the header is not of that form.
        token: Option<String>,
        /// The protocol number; `None` when omitted or not a non-negative integer.
        protocol: Option<u64>,
        /// `features` names `"status"`: the worker wants `status` frames. A `features` that is
        /// not an array of strings asks for nothing.
        status: bool,
    },
    /// `{"type":"result","id","success":true,"result"}` or
    /// `{"type":"result","id","success":false,"errorCode","message"}`.
    Result {
        /// The command id it answers.
        id: String,
        /// The outcome.
        outcome: Result<Value, (String, String)>,
    },
    /// `{"type":"ping"}`: answered `{"type":"pong"}`.
    Ping,
    /// `{"type":"unpair"}`: the person unpaired the browser (the extension's *Unpair*): the
    /// gateway forgets the device — its token stops working — and closes the channel with 1008
    /// `DEVICE_UNPAIRED`.
    Unpair,
    /// `{"type":"pong"}`: keepalive answer.
    Pong,
    /// A well-formed frame of a type this gateway does not know (ignored).
    Unknown,
}

/// Why a frame was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameError {
    /// Not a JSON object with a string `type`, or a known frame with wrong field types.
    Malformed,
}

fn str_field<'a>(obj: &'a Map<String, Value>, key: &str) -> Result<Option<&'a str>, FrameError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(FrameError::Malformed),
    }
}

/// Parses one text message from a worker.
///
/// ```
/// use jevgate::unstable::frames::{parse_worker_frame, WorkerFrame};
/// let f = parse_worker_frame(r#"{"type":"authenticate","authorization":"Device abc","protocol":2}"#).unwrap();
/// assert_eq!(f, WorkerFrame::Authenticate { token: Some("abc".into()), protocol: Some(2), status: false });
/// assert!(parse_worker_frame("not json").is_err());
/// ```
pub fn parse_worker_frame(text: &str) -> Result<WorkerFrame, FrameError> {
    let value: Value = serde_json::from_str(text).map_err(|_| FrameError::Malformed)?;
    let Value::Object(mut obj) = value else {
        return Err(FrameError::Malformed);
    };
    let kind = str_field(&obj, "type")?.ok_or(FrameError::Malformed)?;
    match kind {
        "authenticate" => {
            let token = str_field(&obj, "authorization")?
                .and_then(|a| a.strip_prefix("Device "))
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .map(str::to_string);
            let protocol = match obj.get("protocol") {
                None | Some(Value::Null) => None,
                Some(Value::Number(n)) => n.as_u64(),
                Some(_) => None,
            };
            // The first few entries only: linear in nothing a worker chooses.
            let status = obj
                .get("features")
                .and_then(Value::as_array)
                .is_some_and(|f| f.iter().take(32).any(|x| x.as_str() == Some("status")));
            Ok(WorkerFrame::Authenticate {
                token,
                protocol,
                status,
            })
        }
        "result" => {
            let id = str_field(&obj, "id")?
                .ok_or(FrameError::Malformed)?
                .to_string();
            let success = match obj.get("success") {
                Some(Value::Bool(b)) => *b,
                _ => return Err(FrameError::Malformed),
            };
            if success {
                let result = obj.remove("result").unwrap_or(Value::Null);
                Ok(WorkerFrame::Result {
                    id,
                    outcome: Ok(result),
                })
            } else {
                let code = str_field(&obj, "errorCode")?
                    .unwrap_or("execution_failed")
                    .to_string();
                let message = str_field(&obj, "message")?.unwrap_or("").to_string();
                Ok(WorkerFrame::Result {
                    id,
                    outcome: Err((code, message)),
                })
            }
        }
        "ping" => Ok(WorkerFrame::Ping),
        "unpair" => Ok(WorkerFrame::Unpair),
        "pong" => Ok(WorkerFrame::Pong),
        _ => Ok(WorkerFrame::Unknown),
    }
}

/// `{"type":"ready","deviceId"}`.
pub fn ready(device_id: &str) -> String {
    json!({"type": "ready", "deviceId": device_id}).to_string()
}

/// `{"type":"command","id","tool","args","deadlineMs"}`.
pub fn command(id: &str, tool: &str, args: &Value, deadline_ms: u64) -> String {
    json!({"type": "command", "id": id, "tool": tool, "args": args, "deadlineMs": deadline_ms})
        .to_string()
}

/// `{"type":"cancel","id"}`.
pub fn cancel(id: &str) -> String {
    json!({"type": "cancel", "id": id}).to_string()
}

/// `{"type":"status","controlled","until","autopilot"}`: whether an agent holds the device's
/// control lease, until when (Unix ms, `null` when not controlled), and the autopilot line
/// (`Autopilot: <goal> — <step>`, `null` when none).
pub fn status(controlled: bool, until: Option<i64>, autopilot: Option<&str>) -> String {
    json!({"type": "status", "controlled": controlled, "until": until, "autopilot": autopilot})
        .to_string()
}

/// `{"type":"pong"}`.
pub fn pong() -> String {
    json!({"type": "pong"}).to_string()
}

/// A frame sent by the gateway, as a worker reads it.
#[derive(Debug, Clone, PartialEq)]
pub enum GatewayFrame {
    /// `{"type":"ready","deviceId"}`: authenticated.
    Ready {
        /// The worker's device id.
        device_id: String,
    },
    /// `{"type":"command","id","tool","args","deadlineMs"}`.
    Command {
        /// The command id its result must carry.
        id: String,
        /// The tool (or primitive) to run.
        tool: String,
        /// Its arguments (`null` when omitted).
        args: Value,
        /// The gateway's deadline for the answer, in milliseconds (`None` when omitted).
        deadline_ms: Option<u64>,
    },
    /// `{"type":"cancel","id"}`: stop that command.
    Cancel {
        /// The command to stop.
        id: String,
    },
    /// `{"type":"pong"}`.
    Pong,
    /// A well-formed frame of a type this worker does not know (ignored).
    Unknown,
}

/// Parses one text message from the gateway (the reference worker's side of the protocol).
///
/// ```
/// use jevgate::unstable::frames::{parse_gateway_frame, GatewayFrame};
/// let f = parse_gateway_frame(r#"{"type":"cancel","id":"c7"}"#).unwrap();
/// assert_eq!(f, GatewayFrame::Cancel { id: "c7".into() });
/// ```
pub fn parse_gateway_frame(text: &str) -> Result<GatewayFrame, FrameError> {
    let value: Value = serde_json::from_str(text).map_err(|_| FrameError::Malformed)?;
    let Value::Object(mut obj) = value else {
        return Err(FrameError::Malformed);
    };
    let kind = str_field(&obj, "type")?.ok_or(FrameError::Malformed)?;
    let required = |obj: &Map<String, Value>, key: &str| -> Result<String, FrameError> {
        Ok(str_field(obj, key)?
            .ok_or(FrameError::Malformed)?
            .to_string())
    };
    match kind {
        "ready" => Ok(GatewayFrame::Ready {
            device_id: required(&obj, "deviceId")?,
        }),
        "command" => {
            let id = required(&obj, "id")?;
            let tool = required(&obj, "tool")?;
            let deadline_ms = match obj.get("deadlineMs") {
                None | Some(Value::Null) => None,
                Some(v) => Some(v.as_u64().ok_or(FrameError::Malformed)?),
            };
            let args = obj.remove("args").unwrap_or(Value::Null);
            Ok(GatewayFrame::Command {
                id,
                tool,
                args,
                deadline_ms,
            })
        }
        "cancel" => Ok(GatewayFrame::Cancel {
            id: required(&obj, "id")?,
        }),
        "pong" => Ok(GatewayFrame::Pong),
        _ => Ok(GatewayFrame::Unknown),
    }
}

/// `{"type":"authenticate","authorization":"Device <token>","protocol":<protocol>}`.
pub fn authenticate(token: &str, protocol: u64) -> String {
    json!({"type": "authenticate", "authorization": format!("Device {token}"), "protocol": protocol})
        .to_string()
}

/// A successful result frame.
pub fn result_ok(id: &str, result: &Value) -> String {
    json!({"type": "result", "id": id, "success": true, "result": result}).to_string()
}

/// A failed result frame.
pub fn result_err(id: &str, code: &str, message: &str) -> String {
    json!({"type": "result", "id": id, "success": false, "errorCode": code, "message": message})
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    // R-DEV-CHAN: frame shapes.
    #[test]
    fn parses_results_and_refuses_malformed_frames() {
        assert_eq!(
            parse_worker_frame(r#"{"type":"result","id":"c1","success":true,"result":{"a":1}}"#),
            Ok(WorkerFrame::Result {
                id: "c1".into(),
                outcome: Ok(json!({"a": 1}))
            })
        );
        assert_eq!(
            parse_worker_frame(
                r#"{"type":"result","id":"c1","success":false,"errorCode":"tab_unavailable","message":"m"}"#
            ),
            Ok(WorkerFrame::Result {
                id: "c1".into(),
                outcome: Err(("tab_unavailable".into(), "m".into()))
            })
        );
        for bad in [
            "",
            "[]",
            "{}",
            r#"{"type":3}"#,
            r#"{"type":"result","success":true}"#,
            r#"{"type":"result","id":"c","success":"yes"}"#,
            r#"{"type":"authenticate","authorization":5}"#,
        ] {
            assert_eq!(parse_worker_frame(bad), Err(FrameError::Malformed), "{bad}");
        }
        assert_eq!(
            parse_gateway_frame(
                r#"{"type":"command","id":"c1","tool":"t","args":{"a":1},"deadlineMs":5}"#
            ),
            Ok(GatewayFrame::Command {
                id: "c1".into(),
                tool: "t".into(),
                args: json!({"a": 1}),
                deadline_ms: Some(5)
            })
        );
        for bad in [
            "",
            "{}",
            r#"{"type":"command","tool":"t"}"#,
            r#"{"type":"command","id":"c","tool":"t","deadlineMs":-1}"#,
            r#"{"type":"ready"}"#,
            r#"{"type":"cancel","id":7}"#,
        ] {
            assert_eq!(
                parse_gateway_frame(bad),
                Err(FrameError::Malformed),
                "{bad}"
            );
        }
        assert_eq!(
            parse_gateway_frame(r#"{"type":"later"}"#),
            Ok(GatewayFrame::Unknown)
        );
        assert_eq!(
            parse_worker_frame(&result_err("c1", "timed_out", "m")),
            Ok(WorkerFrame::Result {
                id: "c1".into(),
                outcome: Err(("timed_out".into(), "m".into()))
            })
        );
        assert_eq!(
            parse_worker_frame(&authenticate("tok", 2)),
            Ok(WorkerFrame::Authenticate {
                token: Some("tok".into()),
                protocol: Some(2),
                status: false
            })
        );
        assert_eq!(
            parse_worker_frame(r#"{"type":"progress"}"#),
            Ok(WorkerFrame::Unknown)
        );
    }

    // R-DEV-VER: protocol missing, 1, or not a number all read as "not 2".
    #[test]
    fn authenticate_reads_token_and_protocol() {
        let f = parse_worker_frame(r#"{"type":"authenticate","authorization":"Bearer x"}"#);
        assert_eq!(
            f,
            Ok(WorkerFrame::Authenticate {
                token: None,
                protocol: None,
                status: false
            })
        );
        let f = parse_worker_frame(
            r#"{"type":"authenticate","authorization":"Device t","protocol":"2"}"#,
        );
        assert_eq!(
            f,
            Ok(WorkerFrame::Authenticate {
                token: Some("t".into()),
                protocol: None,
                status: false
            })
        );
        for (features, status) in [
            (r#"["status"]"#, true),
            (r#"["later", "status"]"#, true),
            (r#"[]"#, false),
            (r#""status""#, false),
            (r#"[{"status": true}]"#, false),
            (r#"null"#, false),
        ] {
            let f = parse_worker_frame(&format!(
                r#"{{"type":"authenticate","authorization":"Device t","protocol":2,"features":{features}}}"#
            ));
            assert_eq!(
                f,
                Ok(WorkerFrame::Authenticate {
                    token: Some("t".into()),
                    protocol: Some(2),
                    status
                }),
                "{features}"
            );
        }
        let v: Value = serde_json::from_str(&status(true, Some(5), None)).unwrap();
        assert_eq!(
            v,
            json!({"type": "status", "controlled": true, "until": 5, "autopilot": null})
        );
        assert_eq!(
            parse_gateway_frame(&status(false, None, None)),
            Ok(GatewayFrame::Unknown),
            "a worker that does not know it ignores it"
        );
    }
}

#[cfg(test)]
mod props {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        // R-DEV-CHAN: no input makes frame parsing panic.
        #[test]
        fn parsing_never_panics(text in ".{0,200}") {
            let _ = parse_worker_frame(&text);
        }

        #[test]
        fn json_shaped_input_never_panics(kind in "(authenticate|result|ping|pong|x)", id in proptest::option::of(".{0,8}"), success in proptest::option::of(any::<bool>()), protocol in proptest::option::of(any::<i64>())) {
            let mut v = json!({"type": kind});
            if let Some(id) = id { v["id"] = json!(id); }
            if let Some(s) = success { v["success"] = json!(s); }
            if let Some(p) = protocol { v["protocol"] = json!(p); v["authorization"] = json!("Device t"); }
            let _ = parse_worker_frame(&v.to_string());
        }
    }
}
