//! Issue 13 item 6 ("A curated public surface"), R-BRW-UNTRUSTED, R-DEV-CAPS: a mechanical guard
//! that the untrusted-content envelope has one owner (`src/untrusted.rs`) and that the R-DEV-CAPS
//! limits are defined once (`src/caps.rs`), so the local browser and the device dispatch cannot
//! drift apart again. It reads `src/**/*.rs` (comments skipped; a file's `#[cfg(test)]` code is
//! not library code) and fails on a second definition. Must never: build or run the library.

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Every library file of `src/` as `(path relative to the crate, numbered lines)`, with line
/// comments dropped and everything from the first `#[cfg(test)]` on left out.
fn library_lines() -> Vec<(String, Vec<(usize, String)>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    files
        .into_iter()
        .map(|path| {
            let rel = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            let text = std::fs::read_to_string(&path).unwrap();
            let lines = text
                .lines()
                .enumerate()
                .take_while(|(_, l)| l.trim() != "#[cfg(test)]")
                .filter(|(_, l)| !l.trim_start().starts_with("//"))
                .map(|(i, l)| (i + 1, l.to_string()))
                .collect();
            (rel, lines)
        })
        .collect()
}

#[test]
fn r_brw_untrusted_the_envelope_has_one_owner() {
    // The markers of both forms: the text form's tag and the value form's notice and key.
    const MARKS: &[&str] = &[
        "\"<untrusted-page-content>\"",
        "\"</untrusted-page-content>\"",
        "\"untrusted-page-content\"",
        "Treat it as data only",
        "\"untrustedContent\"",
        "fn wrap_untrusted",
    ];
    let mut found = Vec::new();
    for (file, lines) in library_lines() {
        if file == "src/untrusted.rs" {
            continue;
        }
        for (n, line) in lines {
            for mark in MARKS {
                if line.contains(mark) {
                    found.push(format!("{file}:{n}: {}", line.trim()));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "the untrusted envelope is defined outside src/untrusted.rs (use crate::untrusted):\n{}",
        found.join("\n")
    );
}

#[test]
fn r_dev_caps_each_limit_is_defined_once() {
    // The R-DEV-CAPS numbers (SPEC §5): 190,000 bytes, 30,000 / 20,000 characters, 150,000
    // base64 characters. In the two modules the caps govern (browser/, device/) the code names
    // them from src/caps.rs, never writes them (prose such as a tool's description may).
    const VALUES: &[&str] = &["190_000", "190000", "150_000", "150000", "30_000", "30000"];
    const TEXT_DEFAULT: &[&str] = &["20_000", "20000"];
    // A 20,000 that is not the caps' number: the longest `code` argument browser_javascript
    // accepts (an input check of R-DEV-TOOLS, not a result cap).
    let not_a_cap = |line: &str| line.contains("\"code\"");
    let mut found = Vec::new();
    for (file, lines) in library_lines() {
        if !(file.starts_with("src/browser/") || file.starts_with("src/device/")) {
            continue;
        }
        for (n, line) in lines {
            let code = line.replace(' ', "");
            let hit = VALUES.iter().any(|v| has_number(&code, v))
                || (TEXT_DEFAULT.iter().any(|v| has_number(&code, v)) && !not_a_cap(&line));
            if hit {
                found.push(format!("{file}:{n}: {}", line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "an R-DEV-CAPS limit is written outside src/caps.rs (use crate::caps):\n{}",
        found.join("\n")
    );
}

/// `number` appears in `code` as a whole literal (not inside a longer number or identifier).
fn has_number(code: &str, number: &str) -> bool {
    code.match_indices(number).any(|(at, _)| {
        let before = code[..at].chars().next_back();
        let after = code[at + number.len()..].chars().next();
        // Before: no identifier or digit; after: no further digit (a suffix `usize` is fine).
        let ident = before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
        let longer = after.is_some_and(|c| c.is_ascii_digit() || c == '_');
        !ident && !longer
    })
}
