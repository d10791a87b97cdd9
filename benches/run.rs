//! Run-loop overhead per step (R-RUN), browser time excluded: tasks run through
//! `gw.tasks().spawn_with_backend` on an in-memory fake page (a search field, a few links and
//! buttons; every action bumps the generation and changes what is visible; instant), with the
//! local Jev provider for decisions.
//!
//! (a) fast path: a 12-step list of grammar fast-path commands (scroll down / search / scroll
//!     up / search …, alternating so nothing hits the top or the bottom);
//! (b) decision path: a 12-step list of `press Bravo` over named buttons (one Jev decision each).
//!
//! Per-step overhead = (the task's wall time, spawn to settled − the time spent inside the fake
//! backend) / steps; medians over `JEVGATE_BENCH_TASKS` tasks (default 15). That time includes
//! every receipt write of a step — one synchronous commit (the checkpoint, a real fsync) that
//! also carries the previous action's result and kept observation (group commit) — so the same
//! run measures a bare receipt commit (`ReceiptBench`) between the tasks, for comparison. `JEVGATE_BENCH_DIR` puts the files elsewhere (a tmpfs: no disk).
//! Goal (issue 14): < 1 ms each. Final line: `run: fast_path_us=… decision_path_us=…`.

use jevgate::browser::{ActionResult, BrowserBackend, Command, Response};
use jevgate::grammar::ScrollDirection;
use jevgate::observation::{Control, Observation, ScrollPosition};
use jevgate::task::{Budget, SpawnRequest, TaskOwner, TaskState};
use jevgate::unstable::ReceiptBench;
use jevgate::{Config, Gateway, GatewayOptions};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const CONFIG: &str = r#"{"gateway":{"jev":{"enabled":true,"provider":"local"}}}"#;
const STEPS: usize = 12;
const BOTTOM: u32 = 10;

#[derive(Default)]
struct Page {
    generation: u64,
    scroll: u32,
    query: String,
    pressed: Vec<String>,
    actions: u64,
}

/// The fake page: instant, consistent, and it counts the time spent inside it.
#[derive(Default)]
struct FakePage {
    page: Mutex<Page>,
    inside_ns: AtomicU64,
}

impl FakePage {
    fn observation(p: &Page) -> Observation {
        let mut search = Control::new("e1", "searchbox", "Search");
        search.editable = true;
        search.search_like = true;
        search.actions = vec!["type".into()];
        search.value = Some(p.query.clone());
        let mut controls = vec![search];
        for (i, name) in ["Home", "News", "About"].iter().enumerate() {
            controls.push(Control::new(&format!("e{}", i + 2), "link", name));
        }
        for (i, name) in ["Alpha", "Bravo", "Charlie"].iter().enumerate() {
            controls.push(Control::new(&format!("e{}", i + 5), "button", name));
        }
        Observation {
            generation: p.generation,
            url: format!("https://fake.test/?q={}", p.query),
            title: "Fake page".into(),
            scroll: ScrollPosition {
                at_top: p.scroll == 0,
                at_bottom: p.scroll >= BOTTOM,
            },
            controls,
            text: format!(
                "Fake page at {} of {BOTTOM}; {} presses, last {}",
                p.scroll,
                p.pressed.len(),
                p.pressed.last().map_or("none", String::as_str)
            ),
            ..Observation::default()
        }
    }

    fn act(p: &mut Page, op: &str, tool: &str) -> Response {
        let before = p.generation;
        p.generation += 1;
        p.actions += 1;
        Response::Action(ActionResult {
            operation_id: op.to_string(),
            tool: tool.to_string(),
            generation_before: before,
            navigation_started: false,
            settled: true,
            dialog: None,
            notes: Vec::new(),
        })
    }

    fn answer(&self, command: &Command) -> jevgate::Result<Response> {
        let mut p = self.page.lock();
        let stale = |g: u64, p: &Page| {
            if g != p.generation {
                Err(jevgate::Error::StaleObservation {
                    cause: jevgate::browser::StaleCause::GenerationChanged,
                })
            } else {
                Ok(())
            }
        };
        match command {
            Command::Observe(_) => Ok(Response::Observation(Self::observation(&p))),
            Command::PageScroll(a) => {
                stale(a.generation, &p)?;
                p.scroll = match a.direction {
                    ScrollDirection::Down => (p.scroll + 1).min(BOTTOM),
                    ScrollDirection::Up => p.scroll.saturating_sub(1),
                };
                Ok(Self::act(&mut p, &a.operation_id, command.tool()))
            }
            Command::PageType(a) => {
                stale(a.generation, &p)?;
                p.query = a.text.clone();
                Ok(Self::act(&mut p, &a.operation_id, command.tool()))
            }
            Command::PageClick(a) => {
                stale(a.generation, &p)?;
                let name = Self::observation(&p)
                    .controls
                    .into_iter()
                    .find(|c| c.reference == a.reference)
                    .map(|c| c.name)
                    .unwrap_or_default();
                p.pressed.push(name);
                Ok(Self::act(&mut p, &a.operation_id, command.tool()))
            }
            other => Err(jevgate::Error::InvalidArgument {
                name: "command",
                reason: format!("the fake page has no {}", other.tool()),
            }),
        }
    }
}

impl BrowserBackend for FakePage {
    fn execute(&self, command: &Command) -> jevgate::Result<Response> {
        let start = Instant::now();
        let r = self.answer(command);
        let ns = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.inside_ns.fetch_add(ns, Ordering::Relaxed);
        r
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

/// Runs one task of `goal` on a fresh fake page; the per-step overhead in µs.
fn one_task(gw: &Gateway, owner: &TaskOwner, goal: &str, check: &dyn Fn(&Page)) -> f64 {
    let page = Arc::new(FakePage::default());
    let mut request = SpawnRequest::from_person(goal);
    request.budget = Budget {
        max_steps: 100,
        max_evaluations: 100,
        timeout_ms: 60_000,
    };
    let start = Instant::now();
    let id = gw
        .tasks()
        .spawn_with_backend(owner, request, page.clone())
        .unwrap();
    let status = gw
        .tasks()
        .wait(owner, &id, Duration::from_secs(60))
        .unwrap();
    let wall = start.elapsed();
    let run = status.step_run.clone();
    assert_eq!(status.state, TaskState::Completed, "{status:#?}");
    assert_eq!(
        run.as_ref().map(|r| r.done_parts.len()),
        Some(STEPS),
        "{run:?}"
    );
    let p = page.page.lock();
    assert_eq!(p.actions, STEPS as u64, "one action per step");
    check(&p);
    let inside = Duration::from_nanos(page.inside_ns.load(Ordering::Relaxed));
    wall.saturating_sub(inside).as_secs_f64() * 1e6 / STEPS as f64
}

/// A temporary directory, under `JEVGATE_BENCH_DIR` when set (a tmpfs shows the cost without
/// the disk).
fn tempdir() -> tempfile::TempDir {
    match std::env::var_os("JEVGATE_BENCH_DIR") {
        Some(d) => tempfile::tempdir_in(d).unwrap(),
        None => tempfile::tempdir().unwrap(),
    }
}

fn main() {
    let tasks: usize = std::env::var("JEVGATE_BENCH_TASKS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(15)
        .max(1);
    let dir = tempdir();
    let gw = Gateway::open(GatewayOptions::new(
        dir.path(),
        Config::from_json_str(CONFIG).unwrap(),
    ))
    .unwrap();
    let owner = TaskOwner::new("bench", "bench", "conv");

    let fast_goal = (0..STEPS)
        .map(|i| {
            let step = match i % 4 {
                0 => "scroll down".to_string(),
                2 => "scroll up".to_string(),
                _ => format!("search term{i}"),
            };
            format!("{}. {step}", i + 1)
        })
        .collect::<Vec<_>>()
        .join("\n");
    let decision_goal = (0..STEPS)
        .map(|i| format!("{}. press Bravo", i + 1))
        .collect::<Vec<_>>()
        .join("\n");

    // The receipt floor, measured between the tasks so it sees the same disk: one checkpoint
    // commit through the writer (its own store, in the same parent directory).
    let rdir = tempdir();
    let bench = ReceiptBench::open(rdir.path()).unwrap();
    let mut op = 0usize;
    let mut commit_round = || {
        let samples: Vec<f64> = (0..20)
            .map(|_| {
                op += 1;
                let t = Instant::now();
                bench.checkpoint(&format!("c{op}")).unwrap();
                t.elapsed().as_secs_f64() * 1e6
            })
            .collect();
        median(samples)
    };
    commit_round();

    let (mut fast, mut decision, mut commits) = (Vec::new(), Vec::new(), Vec::new());
    let (mut fast_bare, mut decision_bare) = (Vec::new(), Vec::new());
    for round in 0..tasks {
        let f = one_task(&gw, &owner, &fast_goal, &|p| {
            assert_eq!(p.scroll, 0, "down and up alternate");
            assert_eq!(p.query, format!("term{}", STEPS - 1));
        });
        let d = one_task(&gw, &owner, &decision_goal, &|p| {
            assert!(p.pressed.iter().all(|n| n == "Bravo"), "{:?}", p.pressed);
        });
        let c = commit_round();
        println!(
            "task {round}: fast_path={f:.0}us/step decision_path={d:.0}us/step (one receipt commit now {c:.0}us)"
        );
        fast.push(f);
        decision.push(d);
        commits.push(c);
        fast_bare.push(f - c);
        decision_bare.push(d - c);
    }
    gw.close();
    bench.close();
    let (f, d, c) = (median(fast), median(decision), median(commits));
    println!(
        "per step: 1 synchronous receipt commit (the checkpoint; result and observation ride with the next), one commit p50 {c:.0}us; per step minus it: fast_path ~{:.0}us decision_path ~{:.0}us",
        median(fast_bare),
        median(decision_bare)
    );
    println!("run: fast_path_us={f:.0} decision_path_us={d:.0}");
}
