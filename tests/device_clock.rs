//! R-CLK with the device channel (issue 13 item 5, "One clock"): a batch's time budget and
//! overall timeout and a command's timeout run on the gateway's injected clock. A gateway on a
//! `ManualClock` talks to a scripted worker over loopback; the test moves the clock, never
//! sleeps through a deadline, and each call ends with the right code as soon as the clock passes
//! its deadline (the old code read `std::time::Instant` and ignored the manual clock: the
//! budget never ran out and the timeouts waited 60 s and more of real time).

mod support;

use jevgate::clock::{Clock, ManualClock, SystemClock};
use jevgate::device::{DeviceLimits, ToolCall};
use jevgate::Gateway;
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;
use support::worker::{silent, wait_until, Cmd, Handler, Out, Worker};

/// A gateway on a manual clock, its channel and a scripted worker paired for "alice".
struct Setup {
    _dir: tempfile::TempDir,
    gw: Arc<Gateway>,
    clock: ManualClock,
    worker: Worker,
}

fn setup(limits: DeviceLimits, handler: impl FnOnce(ManualClock) -> Handler) -> Setup {
    let clock = ManualClock::new();
    let t = support::gateway::builder()
        .clock(&clock)
        .limits(limits)
        .channel()
        .build();
    let (_, worker) = t.scripted_worker("alice", "i1", handler(clock.clone()));
    Setup {
        _dir: t.dir,
        gw: Arc::new(t.gw),
        clock,
        worker,
    }
}

fn batch(queries: &[&str]) -> Value {
    json!({"actions": queries.iter().map(|q| json!({"tool": "browser_find", "args": {"query": q}})).collect::<Vec<_>>()})
}

fn statuses(v: &Value) -> Vec<String> {
    v["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["status"].as_str().unwrap().to_string())
        .collect()
}

/// Real time, only to show that nothing waited for a deadline's length of it.
fn real() -> SystemClock {
    SystemClock::new()
}

// R-CLK, R-DEV-CAPS: the 30 s batch budget is 30 s of the gateway's clock. Each action takes
// 15 s of it: after two the batch is at its budget exactly (not over it, it goes on), after the
// third it is over and the rest is not run.
#[test]
fn r_clk_batch_time_budget_of_30_s_runs_on_the_gateway_clock() {
    assert_eq!(
        DeviceLimits::default().batch_time_budget,
        Duration::from_secs(30)
    );
    let s = setup(DeviceLimits::default(), |clock| {
        Box::new(move |cmd: &Cmd| {
            clock.advance(Duration::from_secs(15));
            vec![Out::Ok(cmd.id.clone(), json!({}))]
        })
    });
    let real = real();
    let started = real.now();
    let r = s.gw.call_tool(&ToolCall::new(
        "alice",
        "s1",
        "browser_batch",
        batch(&["q0", "q1", "q2", "q3", "q4"]),
    ));
    let v = r.result().unwrap_or_else(|| panic!("failed: {r:?}"));
    assert_eq!(v["stoppedEarly"], "time_limit", "{v}");
    assert_eq!(v["completed"], 3);
    assert_eq!(v["notRun"], 2);
    assert_eq!(statuses(v), ["ok", "ok", "ok", "not_run", "not_run"], "{v}");
    assert_eq!(s.worker.log.commands().len(), 3);
    assert!(real.now() - started < Duration::from_secs(10));
    s.gw.close();
}

// R-CLK, R-DEV-CAPS: the 90 s batch timeout is on the gateway's clock. The first action takes
// 29 s (inside the 30 s budget); the second hangs, is sent with what is left of the batch
// (61 s, less than the command timeout raised to 120 s here) and ends `timed_out` the moment
// the clock passes the batch's end: the batch stops `batch_timeout`, the rest not run.
#[test]
fn r_clk_batch_timeout_of_90_s_ends_the_action_in_flight_on_the_gateway_clock() {
    assert_eq!(
        DeviceLimits::default().batch_timeout,
        Duration::from_secs(90)
    );
    let s = setup(
        DeviceLimits {
            command_timeout: Duration::from_secs(120),
            ..Default::default()
        },
        |clock| {
            Box::new(move |cmd: &Cmd| match cmd.args["query"].as_str() {
                Some("q0") => {
                    clock.advance(Duration::from_secs(29));
                    vec![Out::Ok(cmd.id.clone(), json!({}))]
                }
                Some("hang") => Vec::new(),
                _ => vec![Out::Ok(cmd.id.clone(), json!({}))],
            })
        },
    );
    let real = real();
    let started = real.now();
    let call = {
        let gw = Arc::clone(&s.gw);
        std::thread::spawn(move || {
            gw.call_tool(&ToolCall::new(
                "alice",
                "s1",
                "browser_batch",
                batch(&["q0", "hang", "q2"]),
            ))
        })
    };
    wait_until("the hanging action reaches the worker", || {
        s.worker.log.commands().len() == 2
    });
    let hang = s.worker.log.commands()[1].clone();
    assert_eq!(hang.deadline_ms, 61_000, "what is left of the batch");
    s.clock.advance(Duration::from_secs(61));
    let r = call.join().unwrap();
    let v = r.result().unwrap_or_else(|| panic!("failed: {r:?}"));
    assert_eq!(v["stoppedEarly"], "batch_timeout", "{v}");
    assert_eq!(v["actions"][1]["errorCode"], "timed_out");
    assert_eq!(statuses(v), ["ok", "failed", "not_run"], "{v}");
    wait_until("the worker is told to cancel", || {
        s.worker.log.cancels() == vec![hang.id.clone()]
    });
    assert!(real.now() - started < Duration::from_secs(10));
    s.gw.close();
}

// R-CLK, R-DEV-CAPS: a single command's 60 s timeout is 60 s of the gateway's clock: sent with
// `deadlineMs: 60000`, it ends `timed_out` (and is cancelled on the worker) once the clock
// reaches it, with no minute of real time spent.
#[test]
fn r_clk_command_timeout_of_60_s_runs_on_the_gateway_clock() {
    assert_eq!(
        DeviceLimits::default().command_timeout,
        Duration::from_secs(60)
    );
    let s = setup(DeviceLimits::default(), |_| silent());
    let real = real();
    let started = real.now();
    let call = {
        let gw = Arc::clone(&s.gw);
        std::thread::spawn(move || {
            gw.call_tool(&ToolCall::new("alice", "s1", "browser_get_text", json!({})))
        })
    };
    wait_until("the command reaches the worker", || {
        s.worker.log.commands().len() == 1
    });
    let cmd = s.worker.log.commands()[0].clone();
    assert_eq!(cmd.deadline_ms, 60_000);
    s.clock.advance(Duration::from_secs(59));
    assert!(!call.is_finished(), "ended before its deadline");
    s.clock.advance(Duration::from_secs(1));
    let r = call.join().unwrap();
    assert_eq!(r.error_code(), Some("timed_out"), "{r:?}");
    wait_until("the worker is told to cancel", || {
        s.worker.log.cancels() == vec![cmd.id.clone()]
    });
    // The connection outlived the jump of the clock past the idle timeout: the gateway probed
    // the worker at the new instant and it answered.
    assert!(s.gw.devices("alice").unwrap()[0].online);
    assert!(real.now() - started < Duration::from_secs(10));
    s.gw.close();
}
