//! R-LEASE-8 (stress): 64 threads, each a root session, hammer 4 devices with random acquire /
//! renew / take-back / status calls through the gateway while the manual clock jumps between
//! phases. Checked: within a phase (frozen time) a device's successful grants come from at most
//! one session plus one more per take-back, and `DEVICE_CONTROL_REVOKED` is delivered at most
//! once per take-back.

use jevgate::clock::ManualClock;
use jevgate::lease::ControlCaller;
use jevgate::{Config, Gateway, GatewayOptions};
use parking_lot::Mutex;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Barrier};
use std::time::Duration;

const THREADS: usize = 64;
const DEVICES: usize = 4;
const PHASES: usize = 12;
const OPS_PER_PHASE: usize = 25;

#[derive(Default)]
struct PhaseLog {
    granted: Vec<HashSet<usize>>,
    take_backs: Vec<usize>,
    revoked: Vec<usize>,
}

/// A tiny deterministic generator per thread (no shared RNG state).
struct Rng(u64);
impl Rng {
    fn next(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

#[test]
fn sixty_four_threads_never_see_two_holders_and_revocations_are_delivered_once() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new();
    let gw = Gateway::open(
        GatewayOptions::new(dir.path(), Config::default()).with_clock(Arc::new(clock.clone())),
    )
    .unwrap();
    for d in 0..DEVICES {
        gw.leases()
            .set_device_owner(&format!("device-{d}"), "person")
            .unwrap();
    }
    let logs: Arc<Vec<Mutex<PhaseLog>>> = Arc::new(
        (0..PHASES)
            .map(|_| {
                Mutex::new(PhaseLog {
                    granted: vec![HashSet::new(); DEVICES],
                    take_backs: vec![0; DEVICES],
                    revoked: vec![0; DEVICES],
                })
            })
            .collect(),
    );
    let barrier = Arc::new(Barrier::new(THREADS + 1));
    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            let gw = gw.clone();
            let logs = Arc::clone(&logs);
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                let mut rng =
                    Rng(0x9E37_79B9_7F4A_7C15 ^ (t as u64 + 1).wrapping_mul(0x1234_5678_9ABC));
                let session = format!("session-{t}");
                let owner = ControlCaller::owner("person");
                for phase in 0..PHASES {
                    barrier.wait();
                    for _ in 0..OPS_PER_PHASE {
                        let d = rng.next(DEVICES as u64) as usize;
                        let device = format!("device-{d}");
                        match rng.next(20) {
                            0 => {
                                if gw.leases().take_back(&device, &owner).unwrap() {
                                    logs[phase].lock().take_backs[d] += 1;
                                }
                            }
                            1 | 2 => {
                                gw.leases().status(&device, &owner).unwrap();
                            }
                            k => {
                                let r = if k < 15 {
                                    gw.leases().acquire(&device, &session)
                                } else {
                                    gw.leases().renew(&device, &session)
                                };
                                match r {
                                    Ok(_) => {
                                        logs[phase].lock().granted[d].insert(t);
                                    }
                                    Err(e) if e.code() == "DEVICE_CONTROL_REVOKED" => {
                                        logs[phase].lock().revoked[d] += 1
                                    }
                                    Err(e) => assert!(
                                        matches!(
                                            e.code(),
                                            "DEVICE_CONTROL_ELSEWHERE" | "DEVICE_CONTROL_NOT_HELD"
                                        ),
                                        "{e}"
                                    ),
                                }
                            }
                        }
                    }
                    barrier.wait();
                }
            })
        })
        .collect();
    let mut rng = Rng(42);
    for _ in 0..PHASES {
        barrier.wait(); // phase starts
        barrier.wait(); // phase ends
        clock.advance(Duration::from_secs(rng.next(150)));
    }
    for w in workers {
        w.join().unwrap();
    }
    let mut total_take_backs = 0;
    let mut total_revoked = 0;
    let mut per_device: HashMap<usize, (usize, usize)> = HashMap::new();
    for (phase, log) in logs.iter().enumerate() {
        let log = log.lock();
        for d in 0..DEVICES {
            assert!(
                log.granted[d].len() <= 1 + log.take_backs[d],
                "phase {phase} device {d}: {} sessions granted with {} take-backs",
                log.granted[d].len(),
                log.take_backs[d]
            );
            let e = per_device.entry(d).or_default();
            e.0 += log.take_backs[d];
            e.1 += log.revoked[d];
        }
        total_take_backs += log.take_backs.iter().sum::<usize>();
        total_revoked += log.revoked.iter().sum::<usize>();
    }
    for (d, (takes, revoked)) in per_device {
        assert!(
            revoked <= takes,
            "device {d}: {revoked} REVOKED for {takes} take-backs"
        );
    }
    assert!(
        total_take_backs > 0 && total_revoked > 0,
        "the run exercised take-backs ({total_take_backs}) and notices ({total_revoked})"
    );
    gw.close();
}
