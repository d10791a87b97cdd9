//! The properties every entry point keeps on any input, shared by the fuzz targets
//! (`tests/fuzz.rs`) and the hostile-input suite (`tests/hostile_input.rs`): no panic, a clear
//! error (an error with a stable code) for input it refuses, and outputs that hold their
//! documented shape. Each function takes raw bytes, so one corpus file feeds it as is.
//!
//! Only pure entry points are called: nothing here opens a socket, a file or a browser.
#![allow(dead_code)] // reason: each test crate including this file uses a subset

#[cfg(feature = "capi")]
use jevgate::ffi::{self, jevgate_status};
use jevgate::grammar::{
    check_model_address, keypad_button, parse_command, resolve, split_parts, split_steps,
    strip_fillers, Adapter, Resolution, MAX_STEPS, MAX_STEP_CHARS,
};
use jevgate::jev::{validate_response, Limits, Questions};
use jevgate::observation::{Control, Observation};
use jevgate::unstable::frames::{
    authenticate, parse_gateway_frame, parse_worker_frame, result_err, GatewayFrame, WorkerFrame,
};
use serde_json::Value;
use std::ffi::CString;
#[cfg(feature = "capi")]
use std::ffi::{c_char, CStr};

/// A question set every answer shape is checked against when the input brings none.
pub const QUESTIONS: &str = r#"{"n":{"type":"noul","instructions":"yes?"},"c":{"type":"choice","instructions":"which?","criteria":{"a":"A","b":"B","c":"C"}},"s":{"type":"score","instructions":"how?","criteria":["low","mid","high"]}}"#;

/// Whether `part` lies inside `whole` (a sub-slice, not a copy).
fn within(whole: &str, part: &str) -> bool {
    let (w, p) = (whole.as_ptr() as usize, part.as_ptr() as usize);
    p >= w && p + part.len() <= w + whole.len()
}

// ---------------------------------------------------------------- grammar

/// Every grammar function on one text (R-GRM-*).
pub fn grammar(text: &str) {
    let intent = parse_command(text);
    let json: Value = serde_json::from_str(&intent.to_json()).expect("intent JSON");
    assert!(json["intent"].is_string(), "intent JSON names the intent");

    if let Some(steps) = split_steps(text) {
        assert!(
            (2..=MAX_STEPS).contains(&steps.len()),
            "{} steps",
            steps.len()
        );
        for s in &steps {
            assert!(!s.is_empty(), "empty step");
            assert!(s.chars().count() <= MAX_STEP_CHARS, "step too long");
            assert!(
                text.contains(s.as_str()),
                "a step is a piece of the message"
            );
        }
    }
    for p in split_parts(text) {
        assert!(!p.is_empty(), "empty part");
        assert!(text.contains(p.as_str()), "a part is a piece of the step");
    }
    assert!(
        within(text, strip_fillers(text)),
        "strip_fillers returns a sub-slice"
    );

    match check_model_address(text) {
        Ok(url) => assert!(
            url.starts_with("https://") || url.starts_with("http://"),
            "an accepted address is http(s)"
        ),
        Err(e) => {
            assert_eq!(e.code(), "NAVIGATION_UNRESOLVED");
            assert_eq!(jevgate::Error::from(e).code(), "NAVIGATION_UNRESOLVED");
        }
    }

    let page = page_from(text);
    let refs: Vec<&str> = page.controls.iter().map(|c| c.reference.as_str()).collect();
    for adapter in [Adapter::Browser, Adapter::Computer] {
        for obs in [&page, &Observation::default()] {
            match resolve(&intent, obs, adapter) {
                Resolution::Decide(d) => {
                    for o in &d.options {
                        assert!(
                            refs.contains(&o.as_str()),
                            "a decision offers observed refs"
                        );
                    }
                }
                Resolution::Act(_) | Resolution::Outcome(_) => {}
            }
        }
    }
    for c in text.chars().take(4).chain(['5', '๕']) {
        if let Some(r) = keypad_button(&page, c) {
            assert!(refs.contains(&r), "a keypad button is an observed ref");
        }
    }
}

/// A page whose controls are named after the words of `text` (hostile names included).
pub fn page_from(text: &str) -> Observation {
    let mut obs = Observation::default();
    for (i, word) in text.split(' ').take(24).enumerate() {
        let role = [
            "button",
            "textbox",
            "searchbox",
            "StaticText",
            "AXButton",
            word,
        ][i % 6];
        let value = (i % 2 == 1).then_some(word);
        let mut c = Control::field(&format!("e{i}"), role, word, value);
        c.editable = i % 2 == 1;
        c.search_like = i % 4 == 1;
        c.sensitive = i % 5 == 3;
        obs.controls.push(c);
    }
    obs.focus = obs.controls.get(1).map(|c| c.reference.clone());
    obs.navigation = Some(jevgate::observation::Navigation {
        can_go_back: text.len().is_multiple_of(2),
        can_go_forward: text.len().is_multiple_of(3),
    });
    obs
}

/// [`grammar`] on bytes as a host would pass them (invalid UTF-8 replaced).
pub fn grammar_bytes(bytes: &[u8]) {
    grammar(&String::from_utf8_lossy(bytes));
}

// ---------------------------------------------------------------- validator and questions

/// The validator (R-VAL) and question parsing (R-JEV-REQ). A `{"questions","response"}`
/// document is checked as that pair; any input is also checked as a response to
/// [`QUESTIONS`] and as a question set.
pub fn validator(bytes: &[u8]) {
    #[derive(serde::Deserialize)]
    struct Pair<'a> {
        #[serde(borrow)]
        questions: &'a serde_json::value::RawValue,
        #[serde(borrow)]
        response: &'a serde_json::value::RawValue,
    }
    if let Ok(p) = serde_json::from_slice::<Pair<'_>>(bytes) {
        pair(p.questions.get().as_bytes(), p.response.get().as_bytes());
    }
    pair(QUESTIONS.as_bytes(), bytes);
    pair(
        bytes,
        br#"{"model":"m","answers":{},"usage":{"input_tokens":1,"output_tokens":1}}"#,
    );
}

/// One questions / response pair through every validator entry point.
pub fn pair(questions: &[u8], response: &[u8]) {
    let q = match Questions::from_json(questions, &Limits::default()) {
        Ok(q) => q,
        Err(e) => {
            assert!(!e.message().is_empty(), "a question error says why");
            assert_eq!(jevgate::Error::from(e).code(), "JEV_INVALID_REQUEST");
            let e = jevgate::jev::validate_to_json(questions, response).unwrap_err();
            assert_eq!(e.code(), "JEV_INVALID_REQUEST");
            let e = jevgate::jev::answer_schema_json(questions).unwrap_err();
            assert_eq!(e.code(), "JEV_INVALID_REQUEST");
            return;
        }
    };
    let schema: Value =
        serde_json::from_str(&jevgate::jev::answer_schema_json(questions).unwrap()).unwrap();
    assert!(schema.is_object(), "the answer schema is an object");
    match validate_response(&q, response) {
        Err(e) => {
            assert_eq!(e.code(), "JEV_MALFORMED_RESPONSE");
            let code = e.reason().as_str();
            let err = jevgate::Error::from(e);
            assert_eq!(err.code(), "JEV_MALFORMED_RESPONSE");
            assert_eq!(err.validation_reason(), Some(code));
            let again = jevgate::jev::validate_to_json(questions, response).unwrap_err();
            assert_eq!(again.validation_reason(), Some(code), "one verdict");
        }
        Ok(r) => {
            let answers = serde_json::to_string(&r.answers()).expect("answers encode");
            assert_eq!(
                jevgate::jev::validate_to_json(questions, response).unwrap(),
                answers,
                "one verdict"
            );
            let value: Value = serde_json::from_str(&answers).unwrap();
            let keys: Vec<&str> = value
                .as_object()
                .unwrap()
                .keys()
                .map(|k| k.as_str())
                .collect();
            let mut want: Vec<&str> = q.iter().map(|q| q.key()).collect();
            let mut got = keys.clone();
            want.sort_unstable();
            got.sort_unstable();
            assert_eq!(got, want, "one answer per question");
            // Validated answers validate again, to the same answers (numbers exactly kept).
            let envelope = format!(
                r#"{{"model":"m","answers":{answers},"usage":{{"input_tokens":0,"output_tokens":0}}}}"#
            );
            let again = validate_response(&q, envelope.as_bytes())
                .unwrap_or_else(|e| panic!("validated answers are valid: {e}"));
            assert_eq!(serde_json::to_string(&again.answers()).unwrap(), answers);
        }
    }
}

// ---------------------------------------------------------------- configuration

/// Configuration parsing and validation (R-CFG): refused with `JEV_INVALID_CONFIGURATION`, or
/// accepted and then stable through its own serialization.
pub fn config(bytes: &[u8]) {
    match jevgate::Config::from_json_slice(bytes) {
        Err(e) => {
            assert_eq!(e.code(), "JEV_INVALID_CONFIGURATION", "{e}");
            assert!(!e.to_string().is_empty());
        }
        Ok(cfg) => {
            cfg.validate().expect("a parsed configuration is valid");
            let text = serde_json::to_string(&cfg).expect("a configuration serializes");
            let back = jevgate::Config::from_json_str(&text)
                .unwrap_or_else(|e| panic!("a configuration reads back its own JSON: {e}"));
            assert_eq!(back, cfg, "serialize then parse is the same configuration");
        }
    }
    if let Ok(text) = std::str::from_utf8(bytes) {
        if let Err(e) = jevgate::Config::from_json_str(text) {
            assert_eq!(e.code(), "JEV_INVALID_CONFIGURATION");
        }
    }
}

// ---------------------------------------------------------------- device channel frames

/// The channel frames in both directions (R-DEV-CHAN): malformed or a frame, never a panic;
/// what the builders write, the parsers read back.
pub fn frames(bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    if let Ok(WorkerFrame::Authenticate { token: Some(t), .. }) = parse_worker_frame(&text) {
        assert!(
            !t.is_empty() && t.trim() == t,
            "a token is trimmed and non-empty"
        );
    }
    let _ = parse_gateway_frame(&text);
    // Builders and parsers agree on any strings, hostile ones included.
    let token = text.get(..text.len().min(64)).unwrap_or("");
    match parse_worker_frame(&authenticate(token, 2)) {
        Ok(WorkerFrame::Authenticate {
            token: got,
            protocol,
            status,
        }) => {
            assert!(!status, "the builder asks for no feature");
            assert_eq!(protocol, Some(2));
            let want = token.trim();
            assert_eq!(got.as_deref(), (!want.is_empty()).then_some(want));
        }
        other => panic!("authenticate frame read back as {other:?}"),
    }
    match parse_worker_frame(&result_err(token, &text, token)) {
        Ok(WorkerFrame::Result {
            id,
            outcome: Err((code, message)),
        }) => {
            assert_eq!(
                (id.as_str(), code.as_str(), message.as_str()),
                (token, &*text, token)
            );
        }
        other => panic!("result frame read back as {other:?}"),
    }
    match parse_gateway_frame(&jevgate::unstable::frames::cancel(token)) {
        Ok(GatewayFrame::Cancel { id }) => assert_eq!(id, token),
        other => panic!("cancel frame read back as {other:?}"),
    }
}

// ---------------------------------------------------------------- the C ABI
// (`jevgate::ffi` is built with the `capi` feature; scripts/test runs `cargo test --features capi`)

/// A string for C: the bytes up to the first NUL (as C would see them).
pub fn c_string(bytes: &[u8]) -> CString {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    CString::new(&bytes[..end]).expect("no NUL before end")
}

/// Checks one C call's outcome and frees what it returned. `utf8` says whether every string
/// argument was UTF-8 (otherwise the call must refuse with INVALID_ARGUMENT).
#[cfg(feature = "capi")]
fn c_outcome(status: jevgate_status, out: *mut c_char, err: *mut ffi::jevgate_error, utf8: bool) {
    assert_ne!(
        status,
        jevgate_status::JEVGATE_PANIC,
        "a panic reached the C boundary"
    );
    if !utf8 {
        assert_eq!(status, jevgate_status::JEVGATE_INVALID_ARGUMENT);
    }
    // SAFETY: `out` and `err` were written by the library (or left NULL); each is freed once.
    unsafe {
        if status == jevgate_status::JEVGATE_OK {
            assert!(err.is_null());
            if !out.is_null() {
                let s = CStr::from_ptr(out).to_str().expect("outputs are UTF-8");
                serde_json::from_str::<Value>(s).expect("outputs are JSON");
                ffi::jevgate_string_free(out);
            }
        } else {
            assert!(out.is_null(), "no output on failure");
            assert!(!err.is_null(), "a failure has an error object");
            let code = CStr::from_ptr(ffi::jevgate_error_code(err))
                .to_str()
                .unwrap();
            assert!(!code.is_empty(), "the error has a code");
            let msg = CStr::from_ptr(ffi::jevgate_error_message(err));
            assert!(msg.to_str().is_ok(), "the message is UTF-8");
            ffi::jevgate_error_free(err);
        }
    }
}

/// Every C function taking text (grammar, validator, schema, configuration) on `bytes` as a
/// C string: bad UTF-8 is `INVALID_ARGUMENT`, never a panic or undefined behaviour.
#[cfg(feature = "capi")]
pub fn c_abi(bytes: &[u8]) {
    let arg = c_string(bytes);
    let utf8 = arg.to_str().is_ok();
    let q = CString::new(QUESTIONS).unwrap();
    type TextFn = unsafe extern "C" fn(
        *const c_char,
        *mut *mut c_char,
        *mut *mut ffi::jevgate_error,
    ) -> jevgate_status;
    let text_fns: [TextFn; 5] = [
        ffi::jevgate_parse_command,
        ffi::jevgate_split_steps,
        ffi::jevgate_split_parts,
        ffi::jevgate_check_model_address,
        ffi::jevgate_answer_schema,
    ];
    // SAFETY: every pointer is a live NUL-terminated string or a writable local.
    unsafe {
        for f in text_fns {
            let (mut out, mut err) = (std::ptr::null_mut(), std::ptr::null_mut());
            let status = f(arg.as_ptr(), &mut out, &mut err);
            c_outcome(status, out, err, utf8);
        }
        for (questions, response) in [(q.as_ptr(), arg.as_ptr()), (arg.as_ptr(), arg.as_ptr())] {
            let (mut out, mut err) = (std::ptr::null_mut(), std::ptr::null_mut());
            let status = ffi::jevgate_validate_response(questions, response, &mut out, &mut err);
            c_outcome(status, out, err, utf8);
        }
        let mut err = std::ptr::null_mut();
        let status = ffi::jevgate_config_validate(arg.as_ptr(), &mut err);
        c_outcome(status, std::ptr::null_mut(), err, utf8);
    }
}

/// Every text-taking C function with NULL in each pointer position: INVALID_ARGUMENT, and a
/// NULL `err_out` is accepted.
#[cfg(feature = "capi")]
pub fn c_abi_nulls() {
    let text = CString::new("scroll down").unwrap();
    let null_s: *const c_char = std::ptr::null();
    let null_out: *mut *mut c_char = std::ptr::null_mut();
    type TextFn = unsafe extern "C" fn(
        *const c_char,
        *mut *mut c_char,
        *mut *mut ffi::jevgate_error,
    ) -> jevgate_status;
    let text_fns: [TextFn; 5] = [
        ffi::jevgate_parse_command,
        ffi::jevgate_split_steps,
        ffi::jevgate_split_parts,
        ffi::jevgate_check_model_address,
        ffi::jevgate_answer_schema,
    ];
    // SAFETY: NULLs are part of every function's contract; the rest are live locals.
    unsafe {
        for f in text_fns {
            for (s, with_out) in [(null_s, true), (text.as_ptr(), false), (null_s, false)] {
                let (mut out, mut err) = (std::ptr::null_mut(), std::ptr::null_mut());
                let out_ptr = if with_out {
                    &mut out as *mut _
                } else {
                    null_out
                };
                let status = f(s, out_ptr, &mut err);
                assert_eq!(status, jevgate_status::JEVGATE_INVALID_ARGUMENT);
                c_outcome(status, out, err, true);
                let status = f(s, out_ptr, std::ptr::null_mut());
                assert_eq!(status, jevgate_status::JEVGATE_INVALID_ARGUMENT);
            }
        }
        let (mut out, mut err) = (std::ptr::null_mut(), std::ptr::null_mut());
        let status = ffi::jevgate_validate_response(null_s, text.as_ptr(), &mut out, &mut err);
        assert_eq!(status, jevgate_status::JEVGATE_INVALID_ARGUMENT);
        c_outcome(status, out, err, true);
        let (mut out, mut err) = (std::ptr::null_mut(), std::ptr::null_mut());
        let status = ffi::jevgate_validate_response(text.as_ptr(), null_s, &mut out, &mut err);
        assert_eq!(status, jevgate_status::JEVGATE_INVALID_ARGUMENT);
        c_outcome(status, out, err, true);
        let mut err = std::ptr::null_mut();
        let status = ffi::jevgate_config_validate(null_s, &mut err);
        assert_eq!(status, jevgate_status::JEVGATE_INVALID_ARGUMENT);
        c_outcome(status, std::ptr::null_mut(), err, true);
    }
}
