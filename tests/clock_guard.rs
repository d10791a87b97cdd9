//! R-CLK, issue 13 item 5 ("One clock"): a mechanical guard that the library reads time only
//! through `src/clock.rs`. Every deadline, timeout, lease expiry, retention and reaper uses the
//! injected `Clock`; a direct `Instant::now()` or `SystemTime::now()` anywhere else in `src/`
//! (or a `std::time::Instant` import, which shadows `clock::Instant` and invites one) is a
//! deadline a `ManualClock` cannot drive. This test reads every `src/**/*.rs` and fails on such a
//! line outside the allow-list below, each entry with its reason.

use std::path::{Path, PathBuf};

/// Files allowed to read the system clock directly, and why.
const ALLOWED: &[(&str, &str)] = &[(
    "src/clock.rs",
    "the one place that reads the system clock (SystemClock)",
)];

/// What a line must not contain (whitespace removed first).
const FORBIDDEN: &[&str] = &[
    "Instant::now(",
    "SystemTime::now(",
    "std::time::Instant",
    "UNIX_EPOCH.elapsed(",
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The forbidden reads in `text`, as `(line number, line)`. Comment lines are skipped; a
/// `std::time::{…}` import is checked for `Instant` as one piece.
fn offences(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let squeezed: String = line.chars().filter(|c| !c.is_whitespace()).collect();
        if squeezed.starts_with("//") {
            continue;
        }
        let import_of_instant = squeezed.contains("std::time::{")
            && squeezed
                .split_once("std::time::{")
                .is_some_and(|(_, rest)| {
                    rest.split(['}', ','])
                        .any(|item| item == "Instant" || item.starts_with("Instantas"))
                });
        if import_of_instant || FORBIDDEN.iter().any(|f| squeezed.contains(f)) {
            found.push((i + 1, line.trim().to_string()));
        }
    }
    found
}

#[test]
fn r_clk_no_direct_system_time_outside_the_clock_module() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    assert!(files.len() > 20, "src/ was not found");
    let mut report = Vec::new();
    for file in files {
        let rel = file
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        if ALLOWED.iter().any(|(allowed, _)| *allowed == rel) {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        for (line, code) in offences(&text) {
            report.push(format!("{rel}:{line}: {code}"));
        }
    }
    assert!(
        report.is_empty(),
        "R-CLK: read time through the injected Clock (src/clock.rs), not the system clock:\n{}",
        report.join("\n")
    );
}

// The guard itself can fail: each forbidden form is caught, comments and the clock's own types
// are not.
#[test]
fn the_guard_catches_every_form_and_only_those() {
    for bad in [
        "let t = Instant::now();",
        "let t = std::time::Instant::now();",
        "let w = std::time::SystemTime::now()",
        "let t = Instant :: now ();",
        "use std::time::Instant;",
        "use std::time::{Duration, Instant};",
        "use std::time::{Instant as StdInstant, Duration};",
        "let d = UNIX_EPOCH.elapsed();",
    ] {
        assert_eq!(offences(bad).len(), 1, "{bad}");
    }
    for fine in [
        "// Instant::now() is not read here",
        "use crate::clock::{Clock, Instant};",
        "use std::time::{Duration, SystemTime, UNIX_EPOCH};",
        "let deadline = clock.now() + timeout;",
        "let t: InstantLike = x;",
    ] {
        assert!(offences(fine).is_empty(), "{fine}");
    }
}

#[test]
fn every_allowed_file_exists_and_says_why() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for (file, why) in ALLOWED {
        assert!(root.join(file).is_file(), "{file} is allowed but gone");
        assert!(why.len() > 20, "{file}: give the reason");
    }
}
