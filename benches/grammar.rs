//! Grammar benchmark (R-PERF): `parse_command` over a mixed corpus of typical commands
//! (Thai and English, fillers, numbers, addresses, decisions), plus `split_steps`.
//! Prints a final machine-readable line:
//! `grammar: ns_per_command=<n> commands_per_s=<n> steps_ns_per_message=<n>`.

use std::hint::black_box;
use std::time::Instant;

use criterion::{criterion_group, Criterion, Throughput};
use jevgate::grammar::{parse_command, split_steps};

const COMMANDS: &[&str] = &[
    "scroll ลง",
    "เลื่อนขึ้น",
    "scroll down",
    "page down",
    "เลื่อนลงครับ",
    "เอาล่ะ กด enter.",
    "กด tab",
    "ลูกศรลง",
    "arrow left",
    "backspace x3",
    "ย้อนกลับไปหน้าก่อนหน้า",
    "go back to the previous page",
    "ไปข้างหน้า",
    "ค้นหา แมว",
    "ค้นหาเที่ยวบิน เชียงใหม่ โอซาก้า",
    "search cheap flights to tokyo",
    "พิมพ์ สวัสดีครับ",
    "type hello world",
    "เข้า google",
    "เปิด youtube",
    "go to example.com",
    "www.google.com",
    "เปิด tab ใหม่",
    "Cmd+T",
    "ปิดแท็บ",
    "ลบๆๆ",
    "delete 3",
    "ห้า",
    "ร้อยห้าสิบ",
    "ห้า ศูนย์",
    "ร้อยห้า",
    "บวก",
    "เท่ากับ",
    "อีก",
    "เข้า link แรก",
    "前のページに戻って",
    "javascript:alert(1)",
    "click the blue sign in button at the top",
];

const MESSAGES: &[&str] = &[
    "เปิด tab ใหม่, เข้า google, ค้นหา แมว, เข้า link แรก, scroll ลงมา",
    "1. go to google 2. search cats",
    "Steps:\n1. go to google\n2. search cats\n3. scroll down",
    "scroll down",
    "ถ้าเจอปุ่ม login ให้กด, ค้นหา แมว",
];

fn ns_per_item(items: &[&str], rounds: usize, f: impl Fn(&str) -> usize) -> f64 {
    let mut sink = 0usize;
    // Warm up.
    for s in items {
        sink = sink.wrapping_add(f(s));
    }
    let start = Instant::now();
    for _ in 0..rounds {
        for s in items {
            sink = sink.wrapping_add(f(black_box(s)));
        }
    }
    let elapsed = start.elapsed();
    black_box(sink);
    elapsed.as_nanos() as f64 / (rounds * items.len()) as f64
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("grammar");
    group.throughput(Throughput::Elements(COMMANDS.len() as u64));
    group.bench_function("parse_command/mixed_corpus", |b| {
        b.iter(|| {
            for s in COMMANDS {
                black_box(parse_command(black_box(s)));
            }
        })
    });
    group.throughput(Throughput::Elements(MESSAGES.len() as u64));
    group.bench_function("split_steps/messages", |b| {
        b.iter(|| {
            for s in MESSAGES {
                black_box(split_steps(black_box(s)));
            }
        })
    });
    group.finish();
}

criterion_group!(benches, bench);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    let parse_ns = ns_per_item(COMMANDS, 20_000, |s| match parse_command(s) {
        jevgate::grammar::Intent::Decide { .. } => 1,
        _ => 2,
    });
    let steps_ns = ns_per_item(MESSAGES, 20_000, |s| split_steps(s).map_or(0, |v| v.len()));
    println!(
        "grammar: ns_per_command={:.0} commands_per_s={:.0} steps_ns_per_message={:.0}",
        parse_ns,
        1e9 / parse_ns,
        steps_ns
    );
}
