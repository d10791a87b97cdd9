//! R-LEASE-8 (state-machine test): random sequences of acquire / renew / take-back /
//! session-end / status / clock jumps of up to 300 s, run against the device control lease and
//! against a reference model written from SPEC §4.1; every answer must agree.

use jevgate::clock::Instant;
use jevgate::unstable::{ControlTable, Refusal};
use proptest::prelude::*;
use std::time::Duration;

const DEVICES: [&str; 2] = ["d0", "d1"];
const SESSIONS: [&str; 3] = ["s0", "s1", "s2"];
const TTL: u64 = 120;
const RETENTION: u64 = 3600;

#[derive(Debug, Clone)]
enum Op {
    Acquire(usize, usize),
    Renew(usize, usize),
    TakeBack(usize),
    EndSession(usize),
    Status(usize, usize),
    Advance(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..2usize, 0..3usize).prop_map(|(d, s)| Op::Acquire(d, s)),
        2 => (0..2usize, 0..3usize).prop_map(|(d, s)| Op::Renew(d, s)),
        2 => (0..2usize).prop_map(Op::TakeBack),
        1 => (0..3usize).prop_map(Op::EndSession),
        2 => (0..2usize, 0..3usize).prop_map(|(d, s)| Op::Status(d, s)),
        3 => (0..=300u64).prop_map(Op::Advance),
    ]
}

/// The reference: holders with the time of their last renewing call, and owed notices with
/// the time of the takeover. Time in whole seconds.
#[derive(Default, Clone)]
struct Model {
    holder: [Option<(usize, u64)>; 2],
    owed: [Vec<(usize, u64)>; 2],
}

#[derive(Debug, PartialEq)]
enum Answer {
    Granted {
        acquired: bool,
        expires: u64,
    },
    Refused(&'static str),
    TookBack(Option<usize>),
    Status {
        held: bool,
        mine: bool,
        expires: Option<u64>,
        revoked: bool,
    },
    Ended,
}

impl Model {
    fn live_holder(&self, d: usize, now: u64) -> Option<usize> {
        self.holder[d]
            .filter(|(_, at)| now < at + TTL)
            .map(|(s, _)| s)
    }
    fn owed(&mut self, d: usize, now: u64) -> &mut Vec<(usize, u64)> {
        self.owed[d].retain(|(_, at)| now < at + RETENTION);
        &mut self.owed[d]
    }
    fn window(&self, d: usize, now: u64) -> Option<u64> {
        self.owed[d]
            .iter()
            .filter(|(_, at)| now < at + TTL)
            .map(|(_, at)| at + TTL)
            .max()
    }
    fn call(&mut self, d: usize, s: usize, now: u64, may_acquire: bool) -> Answer {
        let owed = self.owed(d, now);
        if let Some(i) = owed.iter().position(|(o, _)| *o == s) {
            owed.remove(i);
            return Answer::Refused("revoked");
        }
        match self.live_holder(d, now) {
            Some(h) if h == s => {
                self.holder[d] = Some((s, now));
                Answer::Granted {
                    acquired: false,
                    expires: now + TTL,
                }
            }
            Some(_) => Answer::Refused("elsewhere"),
            None if !may_acquire => Answer::Refused("not_held"),
            None if self.window(d, now).is_some() => Answer::Refused("elsewhere"),
            None => {
                self.holder[d] = Some((s, now));
                Answer::Granted {
                    acquired: true,
                    expires: now + TTL,
                }
            }
        }
    }
    fn apply(&mut self, op: &Op, now: u64) -> Answer {
        match *op {
            Op::Acquire(d, s) => self.call(d, s, now, true),
            Op::Renew(d, s) => self.call(d, s, now, false),
            Op::TakeBack(d) => {
                let h = self.live_holder(d, now);
                if let Some(h) = h {
                    self.holder[d] = None;
                    let owed = self.owed(d, now);
                    owed.retain(|(o, _)| *o != h);
                    owed.push((h, now));
                }
                Answer::TookBack(h)
            }
            Op::EndSession(s) => {
                for d in 0..2 {
                    if self.live_holder(d, now) == Some(s) {
                        self.holder[d] = None;
                    }
                    self.owed(d, now).retain(|(o, _)| *o != s);
                }
                Answer::Ended
            }
            Op::Status(d, s) => match self.live_holder(d, now) {
                Some(h) => Answer::Status {
                    held: true,
                    mine: h == s,
                    expires: Some(self.holder[d].unwrap().1 + TTL),
                    revoked: false,
                },
                None => {
                    self.owed(d, now);
                    match self.window(d, now) {
                        Some(end) => Answer::Status {
                            held: true,
                            mine: false,
                            expires: Some(end),
                            revoked: true,
                        },
                        None => Answer::Status {
                            held: false,
                            mine: false,
                            expires: None,
                            revoked: false,
                        },
                    }
                }
            },
            Op::Advance(_) => Answer::Ended,
        }
    }
}

fn real(table: &mut ControlTable, op: &Op, now: Instant) -> Answer {
    let secs = |i: Instant| i.since_origin().as_secs();
    let refusal = |r: Refusal| {
        Answer::Refused(match r {
            Refusal::Elsewhere => "elsewhere",
            Refusal::Revoked => "revoked",
            Refusal::NotHeld => "not_held",
        })
    };
    match *op {
        Op::Acquire(d, s) => match table.device(DEVICES[d]).touch(SESSIONS[s], now) {
            Ok(g) => Answer::Granted {
                acquired: g.acquired,
                expires: secs(g.expires_at),
            },
            Err(r) => refusal(r),
        },
        Op::Renew(d, s) => match table.device(DEVICES[d]).renew(SESSIONS[s], now) {
            Ok(g) => Answer::Granted {
                acquired: g.acquired,
                expires: secs(g.expires_at),
            },
            Err(r) => refusal(r),
        },
        Op::TakeBack(d) => Answer::TookBack(
            table
                .device(DEVICES[d])
                .take_back(now)
                .map(|s| SESSIONS.iter().position(|x| *x == s).unwrap()),
        ),
        Op::EndSession(s) => {
            for d in DEVICES {
                table.device(d).release_session(SESSIONS[s], now);
            }
            Answer::Ended
        }
        Op::Status(d, s) => {
            let st = table.device(DEVICES[d]).status(Some(SESSIONS[s]), now);
            Answer::Status {
                held: st.held,
                mine: st.held_by_root_session.is_some(),
                expires: st.expires_at.map(secs),
                revoked: st.revoked,
            }
        }
        Op::Advance(_) => Answer::Ended,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn control_lease_agrees_with_the_reference_model(ops in prop::collection::vec(op(), 1..80)) {
        let mut model = Model::default();
        let mut table = ControlTable::default();
        let mut now = 0u64;
        for (i, op) in ops.iter().enumerate() {
            if let Op::Advance(s) = op {
                now += s;
            }
            let at = Instant::from_origin(Duration::from_secs(now));
            let want = model.apply(op, now);
            let got = real(&mut table, op, at);
            prop_assert_eq!(&got, &want, "step {} {:?} at {}s", i, op, now);
            // At most one holder per device at any instant (R-LEASE-8).
            for d in DEVICES {
                let n = SESSIONS.iter().filter(|s| table.get(d).and_then(|l| l.holder(at)) == Some(**s)).count();
                prop_assert!(n <= 1);
            }
            if i % 10 == 9 {
                table.prune(at);
            }
        }
    }
}
