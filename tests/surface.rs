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

// ---- Issue 19 item 4: a curated public surface -------------------------------------------
//
// The reader below computes what the library lets a user name: the public modules reachable
// from `src/lib.rs` (`pub mod`), the names each exports (`pub use` leaves and top-level `pub`
// items), and the `pub fn`s of inherent `impl` blocks of exported types, wherever they are.
// It pins that the items issue 19 took out of the API stay out, and that `jevgate::unstable`
// holds exactly the listed re-exports and never the store or its secret.

/// Gone from the public API (issue 19 item 4): the store and its secret (the key that keeps
/// hashed identifiers unguessable, R-PROF-1), and test-only helpers (now `jevgate::unstable`).
const REMOVED: &[&str] = &[
    "Store",
    "Gateway::store",
    "Store::gateway_secret",
    "Store::open",
    "browser::confine",
    "browser::confine_upload",
    "browser::save_into",
    "browser::redact_url",
    "browser::REDACTED",
    "Tasks::set_checkpoint_hook",
    "task::ReceiptBench",
    // Issue 21 defect 10: every owner's tasks bypass the owner triple (`unstable::all_tasks`).
    "Tasks::all",
];

/// Everything `jevgate::unstable` exports, sorted. Adding to it is a decision: update this list.
const UNSTABLE: &[&str] = &[
    "Admission",
    "ControlTable",
    "LEDGER_CAPACITY",
    "LEDGER_PER_CALLER",
    "LEDGER_TTL",
    "Ledger",
    "LedgerRefusal",
    "LimiterState",
    // The profile leases' pure state machine, for tests/lease_model.rs (issue 21 item 5).
    "MAX_PINS",
    "REDACTED",
    "ReceiptBench",
    "Refusal",
    "SessionRefusal",
    "SessionRequest",
    "SessionTable",
    // The shared store's test clock and liveness rows (issue 23: tests/fleet_*.rs).
    "advance_store_clock_ms",
    "all_tasks",
    // The Linux computer helper's reader and keys, for jevgate-computer and its tests (issue 25).
    "computer",
    "confine",
    "confine_upload",
    "evidence_record",
    "fleet_processes",
    "frames",
    "private_temp_dir",
    "profile_key_hash",
    // Runs the fleet's cleanup of rows dead processes left, on demand (issue 23: tests/fleet_devices.rs).
    "prune_dead_device_rows",
    // The same for the task control calls dead processes left (issue 23: tests/fleet_tasks.rs).
    "prune_dead_task_calls",
    "redact_url",
    "save_into",
    "set_checkpoint_hook",
];

/// Source with comments and the contents of string and char literals blanked, newlines kept.
fn blank(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    let keep = |c: u8| if c == b'\n' { b'\n' } else { b' ' };
    while i < b.len() {
        let c = b[i];
        let ident_before = i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                out.push(b' ');
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            let mut depth = 0;
            while i < b.len() {
                if b[i..].starts_with(b"/*") {
                    depth += 1;
                    out.extend_from_slice(b"  ");
                    i += 2;
                } else if b[i..].starts_with(b"*/") {
                    depth -= 1;
                    out.extend_from_slice(b"  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(keep(b[i]));
                    i += 1;
                }
            }
        } else if c == b'r' && !ident_before && matches!(b.get(i + 1), Some(b'"' | b'#')) {
            let hashes = b[i + 1..].iter().take_while(|&&x| x == b'#').count();
            if b.get(i + 1 + hashes) != Some(&b'"') {
                out.push(c);
                i += 1;
                continue;
            }
            let mut close = vec![b'"'];
            close.extend(std::iter::repeat_n(b'#', hashes));
            i += 2 + hashes;
            out.extend(std::iter::repeat_n(b' ', 2 + hashes));
            while i < b.len() && !b[i..].starts_with(&close) {
                out.push(keep(b[i]));
                i += 1;
            }
            out.extend(std::iter::repeat_n(b' ', close.len()));
            i += close.len();
        } else if c == b'"' {
            out.push(b' ');
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' {
                    out.push(b' ');
                    i += 1;
                }
                if i < b.len() {
                    out.push(keep(b[i]));
                    i += 1;
                }
            }
            out.push(b' ');
            i += 1;
        } else if c == b'\'' && (b.get(i + 2) == Some(&b'\'') || b.get(i + 1) == Some(&b'\\')) {
            // 'x' or '\n' (a lifetime 'a has no closing quote right after)
            let end = b[i + 2..]
                .iter()
                .position(|&x| x == b'\'')
                .map_or(b.len(), |p| i + 3 + p);
            out.extend(std::iter::repeat_n(b' ', end - i));
            i = end;
        } else {
            out.push(c);
            i += 1;
        }
    }
    out.truncate(b.len());
    String::from_utf8_lossy(&out).into_owned()
}

fn word_at(s: &str, at: usize) -> &str {
    let end = s[at..]
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .map_or(s.len(), |p| at + p);
    &s[at..end]
}

/// The items of a file at brace depth 0 and, for inherent `impl X {` blocks, their `pub fn`s:
/// (`pub` item names, `pub use` statements' text, (type, method) pairs, `pub mod` names).
struct FileSurface {
    items: Vec<String>,
    uses: Vec<String>,
    methods: Vec<(String, String)>,
    mods: Vec<String>,
}

fn file_surface(code: &str) -> FileSurface {
    const KINDS: &[&str] = &[
        "fn", "struct", "enum", "trait", "const", "static", "type", "union",
    ];
    let mut s = FileSurface {
        items: vec![],
        uses: vec![],
        methods: vec![],
        mods: vec![],
    };
    let b = code.as_bytes();
    let mut depth = 0usize;
    let mut impl_type: Option<(String, usize)> = None; // (type, depth of its body)
    let mut pending_impl: Option<String> = None;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'{' => {
                depth += 1;
                if let Some(t) = pending_impl.take() {
                    impl_type = Some((t, depth));
                }
                i += 1;
                continue;
            }
            b'}' => {
                if impl_type.as_ref().is_some_and(|(_, d)| *d == depth) {
                    impl_type = None;
                }
                depth = depth.saturating_sub(1);
                i += 1;
                continue;
            }
            b';' => {
                pending_impl = None;
            }
            _ => {}
        }
        let boundary = i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
        if !boundary || !b[i].is_ascii_alphabetic() {
            i += 1;
            continue;
        }
        let w = word_at(code, i);
        if depth == 0 && w == "impl" {
            // `impl<…> Type<…> {` (inherent) or `impl<…> Trait for Type {` (skipped).
            let head_end = code[i..].find('{').map_or(code.len(), |p| i + p);
            let head = &code[i + 4..head_end];
            if !head.contains(" for ") {
                let head = head.trim_start();
                let head = if head.starts_with('<') {
                    let mut d = 0;
                    let close = head
                        .char_indices()
                        .find(|&(_, c)| {
                            d += (c == '<') as i32 - (c == '>') as i32;
                            d == 0
                        })
                        .map_or(0, |(k, _)| k + 1);
                    head[close..].trim_start()
                } else {
                    head
                };
                let name = word_at(head, 0);
                if !name.is_empty() {
                    pending_impl = Some(name.to_string());
                }
            }
        }
        if w == "pub" && !code[i + 3..].starts_with('(') {
            let rest = code[i + 3..].trim_start();
            let kind = word_at(rest, 0);
            let after = rest[kind.len()..].trim_start();
            let name = word_at(after, 0).to_string();
            let in_impl = impl_type.as_ref().is_some_and(|(_, d)| *d == depth);
            if depth == 0 {
                if kind == "use" {
                    let end = rest.find(';').unwrap_or(rest.len());
                    s.uses.push(rest[3..end].to_string());
                } else if kind == "mod" {
                    s.mods.push(name);
                } else if KINDS.contains(&kind) {
                    s.items.push(name);
                }
            } else if in_impl && kind == "fn" {
                let t = impl_type.as_ref().expect("in impl").0.clone();
                s.methods.push((t, name));
            }
        }
        i += w.len();
    }
    s
}

/// The names a `pub use` statement exports: the last segment (or alias) of each leaf; a glob
/// exports `*`.
fn use_names(stmt: &str) -> Vec<String> {
    let mut names = Vec::new();
    let flat: String = stmt.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut leaf = String::new();
    let mut flush = |leaf: &mut String| {
        let l = leaf.trim().to_string();
        leaf.clear();
        if l.is_empty() {
            return;
        }
        let l = l.rsplit(" as ").next().unwrap_or(&l).to_string();
        let last = l.rsplit("::").next().unwrap_or(&l).trim().to_string();
        if !last.is_empty() {
            names.push(last);
        }
    };
    for c in flat.chars() {
        match c {
            '{' => leaf.clear(),
            ',' | '}' => flush(&mut leaf),
            _ => leaf.push(c),
        }
    }
    flush(&mut leaf);
    names
}

/// The library's public surface: `path::Name` for exported names (the root's as `Name`),
/// `Type::method` for the public methods of exported types; `unstable` kept apart.
fn public_surface() -> (std::collections::BTreeSet<String>, Vec<String>) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let read = |rel: &str| blank(&std::fs::read_to_string(root.join(rel)).unwrap());
    let module_file = |path: &[String]| -> String {
        let joined = path.join("/");
        if path.is_empty() {
            "lib.rs".into()
        } else if root.join(format!("{joined}.rs")).is_file() {
            format!("{joined}.rs")
        } else {
            format!("{joined}/mod.rs")
        }
    };
    let mut surface = std::collections::BTreeSet::new();
    let mut unstable = Vec::new();
    let mut todo: Vec<Vec<String>> = vec![vec![]];
    while let Some(path) = todo.pop() {
        let code = read(&module_file(&path));
        let fs = file_surface(&code);
        let prefix = if path.is_empty() {
            String::new()
        } else {
            format!("{}::", path.join("::"))
        };
        let mut names = fs.items.clone();
        for u in &fs.uses {
            names.extend(use_names(u));
        }
        for m in &fs.mods {
            let mut p = path.clone();
            p.push(m.clone());
            names.push(m.clone());
            if path.is_empty() && m == "unstable" {
                let code = read("unstable.rs");
                let us = file_surface(&code);
                unstable.extend(us.mods.iter().cloned());
                unstable.extend(us.items.iter().cloned());
                for u in &us.uses {
                    unstable.extend(use_names(u));
                }
                continue;
            }
            todo.push(p);
        }
        for n in names {
            surface.insert(format!("{prefix}{n}"));
        }
    }
    // Methods: inherent impls anywhere in the crate, of types some public path exports.
    let exported: std::collections::BTreeSet<String> = surface
        .iter()
        .map(|p| p.rsplit("::").next().unwrap_or(p).to_string())
        .collect();
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        // Library code only: a file's `#[cfg(test)]` tail is not part of the API.
        let text = text
            .split("#[cfg(test)]\nmod tests")
            .next()
            .unwrap_or(&text);
        for (t, m) in file_surface(&blank(text)).methods {
            if exported.contains(&t) {
                surface.insert(format!("{t}::{m}"));
            }
        }
    }
    unstable.sort();
    (surface, unstable)
}

#[test]
fn issue19_the_public_surface_leaves_out_the_store_its_secret_and_test_helpers() {
    let (surface, _) = public_surface();
    // Anchors: the reader sees the surface it guards.
    for seen in [
        "Gateway",
        "Gateway::open",
        "Gateway::data_dir",
        "Gateway::tasks",
        "Error",
        "browser::LocalBrowser",
        "browser::managed::ManagedBrowser",
        "task::Tasks",
        "Tasks::spawn",
        "device::ToolCall",
        "unstable",
    ] {
        assert!(surface.contains(seen), "the surface reader misses `{seen}`");
    }
    let back: Vec<&&str> = REMOVED.iter().filter(|r| surface.contains(**r)).collect();
    assert!(
        back.is_empty(),
        "removed from the public API by issue 19 item 4, and back: {back:?} (the store and its \
         secret stay crate-private; test helpers live in `jevgate::unstable`)"
    );
    let secret: Vec<&String> = surface
        .iter()
        .filter(|p| p.ends_with("gateway_secret") || p.rsplit("::").next() == Some("Store"))
        .collect();
    assert!(
        secret.is_empty(),
        "the store or its secret is public: {secret:?}"
    );
    // The compiler keeps it so: the type and its secret are crate-private, and a crate-private
    // type in a public signature is an error.
    let store =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/store/mod.rs"))
            .unwrap();
    assert!(store.contains("pub(crate) struct Store"));
    assert!(store.contains("pub(crate) fn gateway_secret"));
    let lib =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs")).unwrap();
    assert!(lib.contains("#![deny(private_interfaces, private_bounds)]"));
}

#[test]
fn issue19_unstable_holds_exactly_the_listed_reexports() {
    let (_, unstable) = public_surface();
    assert_eq!(
        unstable, UNSTABLE,
        "jevgate::unstable changed: update UNSTABLE in tests/surface.rs on purpose (it must \
         never hold the store or its secret)"
    );
    assert!(!unstable
        .iter()
        .any(|n| n == "Store" || n.contains("secret")));
    // It only re-exports (its top comment): no definition of its own.
    let code = blank(
        &std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/unstable.rs"))
            .unwrap(),
    );
    let fs = file_surface(&code);
    assert!(fs.items.is_empty(), "unstable.rs defines {:?}", fs.items);
    assert!(fs.methods.is_empty());
}

#[test]
fn issue19_the_surface_reader_reads_use_trees_and_impls() {
    assert_eq!(
        use_names(" a::{B, c::D as E,\n F}"),
        ["B", "E", "F"],
        "leaves and aliases"
    );
    let fs = file_surface(&blank(
        "pub struct S;\nimpl<T: X> S<T> { pub fn m(&self) {} fn p() {} }\nimpl Tr for S { pub fn n() {} }\npub(crate) fn q() {}\npub mod k;\nconst C: &str = \"pub fn r\";\n",
    ));
    assert_eq!(fs.items, ["S"]);
    assert_eq!(fs.methods, [("S".to_string(), "m".to_string())]);
    assert_eq!(fs.mods, ["k"]);
}
