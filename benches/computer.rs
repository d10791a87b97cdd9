//! The computer helper beside the reference worker in one run (issue 25 "Benchmark"; R-PERF):
//! through the same loopback device channel of one gateway, an observation of gnome-calculator's
//! accessibility tree (`ComputerDevice::observe`: the helper walks the tree over AT-SPI) and one
//! press of its "1" button by ref (`ComputerDevice::act`: the receipt written and synced, the
//! AT-SPI action, the answer), beside `jevgate-worker`'s executor (`BrowserTools` on a local
//! Chromium) reading a fixture page and clicking its button by ref through `gw.call_tool`,
//! measured as benches/extension.rs measures it (`support::bench`). p50 and p99 of each, and
//! the helper's p50 over the worker's.
//!
//! Needs the cargo feature `computer` and a desktop (scripts/desktop started as the tests start
//! it: Xvfb, a session bus, the AT-SPI bus, gnome-calculator) and Chromium; without the feature
//! or the desktop it prints why and stops. `JEVGATE_BENCH_ROUNDS` rounds (default 40). Final
//! line: `computer: observe_p50_ms=… observe_p99_ms=… press_p50_ms=… press_p99_ms=…
//! worker_read_p50_ms=… worker_read_p99_ms=… worker_click_p50_ms=… worker_click_p99_ms=…
//! observe_ratio=… press_ratio=…` (ratios: the helper's p50 over the worker's read and click).

#[path = "../tests/support/mod.rs"]
mod support;

#[cfg(not(feature = "computer"))]
fn main() {
    println!(
        "computer: skipped: built without the cargo feature `computer` \
         (cargo bench --features computer --bench computer)"
    );
}

#[cfg(feature = "computer")]
fn main() {
    use jevgate::clock::ManualClock;
    use jevgate::device::computer::{ComputerAction, ComputerCommand};
    use std::time::{Duration, Instant};
    use support::bench::{pct, rounds, worker_baseline};
    use support::computer::{
        approve, button, helper, pair_computer, tab_off_display, wait_buttons,
    };
    use support::desktop::{missing, Desk};
    use support::Server;

    if let Some(why) = missing(&["gnome-calculator"]) {
        println!("computer: skipped: {why} (scripts/test installs the desktop's packages)");
        return;
    }
    let rounds = rounds();
    let t = support::gateway::builder().channel().build();
    let server = Server::start();

    // The baseline: jevgate-worker's executor on Chromium, the same channel.
    let (mut w_clicks, mut w_reads) = worker_baseline(&t, &server, rounds);

    // The helper on gnome-calculator, paired on the same gateway, approved for 30 minutes.
    let mut desk = Desk::start();
    desk.launch("gnome-calculator");
    let paired = pair_computer(&t, "carol", "carol-desk");
    let state = tempfile::tempdir().unwrap();
    let clock = ManualClock::new();
    let _helper = t.device_worker(&paired, helper(state.path(), Some(&desk), &clock));
    approve(state.path(), "gnome-calculator", 30, &clock);
    let pc =
        t.gw.computer_target("carol", "conv-carol", &paired.device)
            .unwrap();
    // Warm: the window shown, the focus off the display (a press then never types).
    wait_buttons(&pc);
    tab_off_display(&pc, "bench-tab");
    let (mut observes, mut presses): (Vec<Duration>, Vec<Duration>) = (Vec::new(), Vec::new());
    let mut controls = 0;
    for i in 0..rounds {
        let t0 = Instant::now();
        let o = pc.observe().expect("observe");
        observes.push(t0.elapsed());
        controls = o.controls.len();
        let reference = button(&o, "1");
        let t0 = Instant::now();
        pc.act(&ComputerCommand {
            operation_id: format!("bench-press-{i}"),
            action: ComputerAction::Press { reference },
        })
        .expect("press");
        presses.push(t0.elapsed());
    }
    t.gw.leases().release_session("conv-carol").unwrap();

    let (o50, o99, p50, p99) = (
        pct(&mut observes, 50),
        pct(&mut observes, 99),
        pct(&mut presses, 50),
        pct(&mut presses, 99),
    );
    let (wr50, wr99, wc50, wc99) = (
        pct(&mut w_reads, 50),
        pct(&mut w_reads, 99),
        pct(&mut w_clicks, 50),
        pct(&mut w_clicks, 99),
    );
    println!(
        "{rounds} rounds each: gnome-calculator ({controls} controls) | /p/buttons on Chromium"
    );
    println!("observe  helper p50 {o50:.2} ms p99 {o99:.2} ms | worker read_page p50 {wr50:.2} ms p99 {wr99:.2} ms");
    println!("press    helper p50 {p50:.2} ms p99 {p99:.2} ms | worker click p50 {wc50:.2} ms p99 {wc99:.2} ms");
    println!(
        "computer: observe_p50_ms={o50:.2} observe_p99_ms={o99:.2} press_p50_ms={p50:.2} press_p99_ms={p99:.2} worker_read_p50_ms={wr50:.2} worker_read_p99_ms={wr99:.2} worker_click_p50_ms={wc50:.2} worker_click_p99_ms={wc99:.2} observe_ratio={:.2} press_ratio={:.2}",
        o50 / wr50,
        p50 / wc50
    );
    t.gw.close();
}
