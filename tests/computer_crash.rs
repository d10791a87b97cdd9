//! Crash safety of computer tasks (issue 25 "SIGKILL of the gateway between checkpoint and
//! result while the helper lives: the helper's receipt settles it, nothing pressed twice;
//! SIGKILL of the helper: unknown, never replayed"; R-TSK-RCPT, R-RUN; seed 003 "Computer
//! helper contract"). Both run the person's step list ห้า, เจ็ด (and บวก) on gnome-calculator
//! through a paired `jevgate-computer` helper (the library's `ComputerHelper` over the device
//! channel, as `jevgate-computer serve` runs it) and count the presses on the calculator's
//! display, read back through AT-SPI.
//!
//! - The gateway dies: a child process of this test binary runs the gateway on a data
//!   directory and the task; the helper lives in this process. The child kills itself by
//!   SIGKILL at the second press's `after_dispatch` boundary (the checkpoint committed, the
//!   helper pressed and answered, the result not recorded). A new gateway on the same SQLite
//!   file recovers the task as `needs_reconciliation` (`BROWSER_EXECUTION_INTERRUPTED`);
//!   `reconcile` asks the still-running helper for its receipt of that press (`completed`), so
//!   the operation settles `done`, resolved by `operation_status`; the display reads 57: 7 was
//!   pressed once and nothing is re-sent.
//! - The helper dies: a child process of this test binary is the helper; it kills itself by
//!   SIGKILL right after it pressed 7 (its receipt written `completed`), before answering. The
//!   task ends `needs_reconciliation` with the press unknown; a new helper process on the same
//!   state directory connects and nothing is re-sent (the display still reads 57, no `+`); its
//!   receipt then settles the press through `reconcile`.
//!
//! The boundaries are reached by the code under test (the checkpoint hook, the executor), never
//! by a sleep; a short quiet window then shows nothing else is pressed. Needs a desktop
//! (scripts/desktop, gnome-calculator): skipped with the reason printed, a failure under
//! `JEVGATE_REQUIRE_DESKTOP=1`.

mod support;

#[cfg(not(feature = "computer"))]
#[test]
fn r_tsk_rcpt_a_gateway_killed_mid_press_is_settled_by_the_helpers_receipt() {
    support::desktop::skip("this test binary was built without the cargo feature `computer`");
}

#[cfg(not(feature = "computer"))]
#[test]
fn r_tsk_rcpt_a_helper_killed_mid_press_leaves_it_unknown_and_never_replayed() {
    support::desktop::skip("this test binary was built without the cargo feature `computer`");
}

#[cfg(feature = "computer")]
mod desktop {
    use crate::support::computer::{
        approve, display, helper, helper_on, on_computer, pair_computer_on, tab_off_display,
        wait_buttons, wait_display, COMPUTER_CONFIG,
    };
    use crate::support::crash::{kill_at, kill_self, say, CrashChild};
    use crate::support::desktop::{missing, skip, Desk};
    use crate::support::gateway::{
        builder, channel_options, device_worker, wait_online, Paired, TestGateway,
    };
    use jevgate::clock::ManualClock;
    use jevgate::device::{DeviceToken, DeviceWorker, ToolExecutor, WorkerFailure, WorkerOptions};
    use jevgate::task::{TaskOwner, TaskState, TaskStatus};
    use jevgate::{CancelToken, Config, Gateway, GatewayOptions};
    use serde_json::Value;
    use std::path::Path;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    const WAIT: Duration = Duration::from_secs(30);
    /// The gateway child: its data directory and the paired computer's id.
    const ENV_GATEWAY_DIR: &str = "JEVGATE_COMPUTER_CRASH_GATEWAY_DIR";
    const ENV_DEVICE: &str = "JEVGATE_COMPUTER_CRASH_DEVICE";
    /// The helper child: its state directory, the channel, the token's file, the desktop, and
    /// after which press it dies (0: never).
    const ENV_HELPER_DIR: &str = "JEVGATE_COMPUTER_CRASH_HELPER_DIR";
    const ENV_URL: &str = "JEVGATE_COMPUTER_CRASH_URL";
    const ENV_TOKEN: &str = "JEVGATE_COMPUTER_CRASH_TOKEN_FILE";
    const ENV_A11Y: &str = "JEVGATE_COMPUTER_CRASH_A11Y_BUS";
    const ENV_DISPLAY: &str = "JEVGATE_COMPUTER_CRASH_DISPLAY";
    const ENV_DIE_AFTER: &str = "JEVGATE_COMPUTER_CRASH_DIE_AFTER_PRESS";
    /// A quiet window after recovery in which nothing may be pressed (longer than a step).
    const QUIET: Duration = Duration::from_millis(700);

    fn owner() -> TaskOwner {
        TaskOwner::new("assistant", "alice", "conv-crash")
    }

    fn config() -> Config {
        Config::from_json_str(COMPUTER_CONFIG).unwrap()
    }

    fn open(dir: &Path) -> Gateway {
        Gateway::open(GatewayOptions::new(dir, config())).unwrap()
    }

    /// The desktop with gnome-calculator, or why not (skipped).
    fn calculator() -> Option<Desk> {
        if let Some(why) = missing(&["gnome-calculator"]) {
            skip(&why);
            return None;
        }
        let mut desk = Desk::start();
        desk.launch("gnome-calculator");
        Some(desk)
    }

    /// The person's setup through the helper: the calculator's buttons shown and the focus off
    /// its display (while a text field has focus, number words are text); the display empty.
    fn setup(gw: &Gateway, paired: &Paired) {
        let pc = gw
            .computer_target("alice", "conv-setup", &paired.device)
            .unwrap();
        wait_buttons(&pc);
        let o = tab_off_display(&pc, "setup-tab");
        assert_eq!(display(&o).1.as_deref(), Some(""));
        gw.leases().release_session("conv-setup").unwrap();
    }

    /// The display read through `gw` now, then again after [`QUIET`]: it must read `want` both
    /// times (nothing pressed in between). Read in the task's conversation: after a restart the
    /// desktop lease the dead gateway recorded is held again by it (R-LEASE, "Gateway
    /// restart"), never handed to another conversation early.
    fn reads_and_stays(gw: &Gateway, paired: &Paired, want: &str) {
        let pc = gw
            .computer_target("alice", &owner().conversation_id, &paired.device)
            .unwrap();
        wait_display(&pc, want);
        std::thread::sleep(QUIET);
        let o = pc.observe().unwrap();
        assert_eq!(
            display(&o).1.as_deref(),
            Some(want),
            "a press after the kill"
        );
        gw.leases()
            .release_session(&owner().conversation_id)
            .unwrap();
    }

    /// The task's one receipt's operations as (tool, status, resolved by).
    fn operations(gw: &Gateway, id: &str) -> Vec<(String, String, Option<String>)> {
        let receipts = gw.tasks().receipts(&owner(), id).unwrap();
        assert_eq!(receipts.len(), 1, "{receipts:#?}");
        receipts[0]
            .operations
            .iter()
            .map(|o| (o.tool.clone(), o.status.clone(), o.resolved_by.clone()))
            .collect()
    }

    fn op(status: &str, by: Option<&str>) -> (String, String, Option<String>) {
        ("page_click".into(), status.into(), by.map(String::from))
    }

    /// The task settles once `reconcile` read the helper's receipt of the press in doubt: it
    /// leaves `needs_reconciliation` (nothing is in doubt any more) and the press is `done`,
    /// resolved by `operation_status`.
    fn reconciled_by_receipt(gw: &Gateway, id: &str, before: &[(String, String, Option<String>)]) {
        let status = gw.tasks().reconcile(&owner(), id).unwrap();
        assert_eq!(
            (status.state, status.reason.as_deref()),
            (TaskState::Failed, Some("RECONCILED")),
            "{status:#?}"
        );
        let mut want = before.to_vec();
        let last = want.last_mut().unwrap();
        *last = op("done", Some("operation_status"));
        assert_eq!(operations(gw, id), want);
    }

    /// The gateway child: returns at once unless a parent started it. Opens the gateway on the
    /// parent's data directory with a channel (says its URL), waits for the helper, runs ห้า,
    /// เจ็ด and dies by SIGKILL at the second press's `after_dispatch`.
    #[test]
    fn computer_crash_gateway_child() {
        let Some(dir) = std::env::var_os(ENV_GATEWAY_DIR) else {
            return;
        };
        let device = std::env::var(ENV_DEVICE).unwrap();
        let gw = open(Path::new(&dir));
        let channel = gw.serve_channel(channel_options()).unwrap();
        say(&format!("channel {}", channel.url()));
        let paired = Paired {
            owner: "alice".into(),
            device: device.clone(),
            token: DeviceToken::new(String::new()),
        };
        wait_online(&gw, &paired, true);
        kill_at(&gw.tasks(), "after_dispatch", 2);
        let id = gw
            .tasks()
            .spawn(&owner(), on_computer("1. ห้า\n2. เจ็ด", &device))
            .unwrap();
        say(&format!("task {id}"));
        let s = gw.tasks().wait(&owner(), &id, WAIT);
        // Never reached when the kill came: the parent sees a normal exit and fails.
        say(&format!("finished {:?}", s.map(|s| s.state)));
    }

    // R-TSK-RCPT, R-RUN (issue 25): the gateway is SIGKILLed between a press's checkpoint and
    // its result while the helper lives; the helper's receipt settles it, nothing is pressed
    // twice.
    #[test]
    fn r_tsk_rcpt_a_gateway_killed_mid_press_is_settled_by_the_helpers_receipt() {
        let Some(desk) = calculator() else { return };
        let t0 = Instant::now();
        let state = tempfile::tempdir().unwrap();
        let clock = ManualClock::new();
        let helper = helper(state.path(), Some(&desk), &clock);
        approve(state.path(), "gnome-calculator", 30, &clock);
        let data = tempfile::tempdir().unwrap();
        // The person pairs the computer on the gateway of this data directory and shows the
        // calculator; that gateway closes before the child opens the directory.
        let paired = {
            let gw = open(data.path());
            let channel = gw.serve_channel(channel_options()).unwrap();
            let paired = pair_computer_on(&gw, "alice", "desk-1");
            let worker = device_worker(&gw, &channel.url(), &paired, helper.clone());
            setup(&gw, &paired);
            drop(worker);
            channel.stop();
            gw.close();
            paired
        };
        let mut child = CrashChild::spawn(
            "desktop::computer_crash_gateway_child",
            &[
                (ENV_GATEWAY_DIR, data.path().as_os_str()),
                (ENV_DEVICE, paired.device.as_ref()),
            ],
        );
        let url = child.expect("channel ", WAIT);
        // The helper of this process serves the child's gateway …
        let worker = DeviceWorker::connect(
            WorkerOptions::new(url, paired.token.clone()),
            helper.clone(),
        )
        .unwrap();
        let said = child.killed(WAIT);
        drop(worker);
        let id = said
            .iter()
            .find_map(|l| l.strip_prefix("task "))
            .expect("the child's task")
            .to_string();

        // … and of the new gateway on the same SQLite file: the task recovered unknown.
        let gw = open(data.path());
        let channel = gw.serve_channel(channel_options()).unwrap();
        let _worker = device_worker(&gw, &channel.url(), &paired, helper.clone());
        let status = gw.tasks().status(&owner(), &id).unwrap();
        assert_eq!(
            (status.state, status.reason.as_deref()),
            (
                TaskState::NeedsReconciliation,
                Some("BROWSER_EXECUTION_INTERRUPTED")
            ),
            "{status:#?}"
        );
        let before = operations(&gw, &id);
        assert_eq!(before.len(), 2, "{before:#?}");
        assert_eq!(before[0], op("done", None));
        assert_ne!(before[1].1, "done", "the second press is in doubt");
        reads_and_stays(&gw, &paired, "57");
        reconciled_by_receipt(&gw, &id, &before);
        reads_and_stays(&gw, &paired, "57");
        channel.stop();
        gw.close();
        eprintln!(
            "computer_crash: gateway killed mid-press, settled by the receipt in {} ms",
            t0.elapsed().as_millis()
        );
    }

    /// The helper child's executor: the library helper, killed right after its `die_after`-th
    /// press ran (its receipt written `completed`), before it answers.
    struct DiesAfterPress {
        helper: Arc<dyn ToolExecutor>,
        presses: AtomicU32,
        die_after: u32,
    }

    impl ToolExecutor for DiesAfterPress {
        fn execute(
            &self,
            tool: &str,
            args: &Value,
            deadline: Duration,
            cancel: &CancelToken,
        ) -> Result<Value, WorkerFailure> {
            let answer = self.helper.execute(tool, args, deadline, cancel);
            if tool == "computer_action"
                && args["kind"] == "press"
                && self.presses.fetch_add(1, Ordering::SeqCst) + 1 == self.die_after
            {
                kill_self();
            }
            answer
        }
    }

    /// The helper child: returns at once unless a parent started it. Serves the channel as the
    /// paired computer with the helper on the parent's desktop and state directory until the
    /// gateway closes the channel (or its press kills it).
    #[test]
    fn computer_crash_helper_child() {
        let Some(dir) = std::env::var_os(ENV_HELPER_DIR) else {
            return;
        };
        let var = |k: &str| std::env::var(k).unwrap();
        let token = std::fs::read_to_string(var(ENV_TOKEN)).unwrap();
        let clock = ManualClock::new();
        let executor = Arc::new(DiesAfterPress {
            helper: helper_on(
                Path::new(&dir),
                Some(var(ENV_A11Y)),
                Some(var(ENV_DISPLAY)),
                &clock,
            ),
            presses: AtomicU32::new(0),
            die_after: var(ENV_DIE_AFTER).parse().unwrap(),
        });
        let worker = DeviceWorker::connect(
            WorkerOptions::new(var(ENV_URL), DeviceToken::new(token)),
            executor,
        )
        .unwrap();
        say("serving");
        let _ = worker.wait();
    }

    /// A helper child process for `tg`'s paired computer, dying after press `die_after`.
    fn helper_child(
        tg: &TestGateway,
        paired: &Paired,
        desk: &Desk,
        state: &Path,
        die_after: u32,
    ) -> CrashChild {
        let token = state.join("token-for-test");
        std::fs::write(&token, paired.token_text()).unwrap();
        let mut child = CrashChild::spawn(
            "desktop::computer_crash_helper_child",
            &[
                (ENV_HELPER_DIR, state.as_os_str()),
                (ENV_URL, tg.channel().url().as_ref()),
                (ENV_TOKEN, token.as_os_str()),
                (ENV_A11Y, desk.a11y_bus().as_ref()),
                (ENV_DISPLAY, desk.var("DISPLAY").as_ref()),
                (ENV_DIE_AFTER, die_after.to_string().as_ref()),
            ],
        );
        child.expect("serving", WAIT);
        tg.wait_online(paired, true);
        child
    }

    // R-TSK-RCPT, R-RUN (issue 25): the helper is SIGKILLed right after a press ran, before it
    // answered: the task ends needs_reconciliation with the press unknown, and nothing is sent
    // again once a new helper process connects; its receipt then settles the press.
    #[test]
    fn r_tsk_rcpt_a_helper_killed_mid_press_leaves_it_unknown_and_never_replayed() {
        let Some(desk) = calculator() else { return };
        let t0 = Instant::now();
        let state = tempfile::tempdir().unwrap();
        let clock = ManualClock::new();
        approve(state.path(), "gnome-calculator", 30, &clock);
        let tg = builder().config(config()).channel().build();
        let paired = pair_computer_on(&tg.gw, "alice", "desk-1");
        let child = helper_child(&tg, &paired, &desk, state.path(), 2);
        setup(&tg.gw, &paired);
        let id = tg
            .gw
            .tasks()
            .spawn(
                &owner(),
                on_computer("1. ห้า\n2. เจ็ด\n3. บวก", &paired.device),
            )
            .unwrap();
        child.killed(WAIT);
        let status: TaskStatus = tg.gw.tasks().wait(&owner(), &id, WAIT).unwrap();
        assert_eq!(
            (status.state, status.reason.as_deref(), status.actions),
            (TaskState::NeedsReconciliation, Some("OUTCOME_UNKNOWN"), 2),
            "{status:#?}"
        );
        let before = operations(&tg.gw, &id);
        assert_eq!(before.len(), 2, "{before:#?}");
        assert_eq!(before[0], op("done", None));
        assert_eq!(before[1].1, "unknown", "{before:#?}");
        tg.wait_online(&paired, false);
        // A new helper process on the same state directory: nothing is re-sent.
        let _again = helper_child(&tg, &paired, &desk, state.path(), 0);
        reads_and_stays(&tg.gw, &paired, "57");
        let still = tg.gw.tasks().status(&owner(), &id).unwrap();
        assert_eq!(
            (still.state, still.actions),
            (TaskState::NeedsReconciliation, 2)
        );
        assert_eq!(operations(&tg.gw, &id), before);
        reconciled_by_receipt(&tg.gw, &id, &before);
        reads_and_stays(&tg.gw, &paired, "57");
        eprintln!(
            "computer_crash: helper killed mid-press, unknown and not replayed, in {} ms",
            t0.elapsed().as_millis()
        );
    }
}
