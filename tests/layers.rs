//! The library's modules form layers without cycles (issue 13 item 1).
//!
//! Reads every `.rs` file under `src/`, collects the `crate::…` paths in its code (in `use`
//! lines and in expressions; comments and string literals are skipped), and builds the graph
//! between the top-level modules of the library (`error`, `clock`, `jev`, `gateway`, …). A name
//! re-exported at the root (`crate::Error`) counts as its defining module. The test fails on any
//! cycle, printing it with the file and line of each edge, and checks the intended order:
//!
//! ```text
//! error, clock, cancel, ids, reasons, observation, args, untrusted, caps (bottom: shared value types)
//! config, store
//! grammar, jev, lease, browser, device    (capabilities)
//! gateway                                 (the façade: every `impl Gateway`)
//! ffi, cli, mcp, main, unstable           (bindings, the command line, the MCP server, test-only re-exports)
//! ```
//!
//! A module may use modules of its own layer too, as long as no circle forms. Inside a module
//! directory the same holds between its files (`jev/client.rs` may use `jev/usage.rs`, not both
//! ways): what two files need lives in the lower one. Must never: read anything outside this
//! repository's `src/`, or need a build of the library.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The layers, bottom first. Every top-level module of `src/` must be listed.
const LAYERS: &[&[&str]] = &[
    &[
        "error",
        "clock",
        "cancel",
        "ids",
        "reasons",
        "observation",
        "args",
        "untrusted",
        "caps",
    ],
    &["config", "store"],
    &["grammar", "jev", "lease", "browser", "device", "task"],
    &["gateway"],
    &["ffi", "cli", "mcp", "main", "bin", "unstable"],
];

/// Where a dependency was seen: the file and line of the `crate::` path.
#[derive(Debug, Clone)]
struct Site {
    file: String,
    line: usize,
    path: String,
}

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = fs::read_dir(dir)
        .expect("read src dir")
        .map(|e| e.expect("dir entry").path())
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

/// The top-level module a file belongs to: `src/jev/client.rs` → `jev`, `src/error.rs` →
/// `error`; `lib.rs` is the root (`""`), `main.rs` and `bin/` are outside the library.
fn module_of(rel: &Path) -> String {
    let first = rel
        .components()
        .next()
        .expect("non-empty path")
        .as_os_str()
        .to_string_lossy()
        .into_owned();
    match first.strip_suffix(".rs") {
        Some("lib") => String::new(),
        Some(stem) => stem.to_string(),
        None => first,
    }
}

/// The source with comments and the contents of string and char literals blanked (newlines
/// kept, so line numbers stay right).
fn code_only(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    let blank = |out: &mut Vec<u8>, c: u8| out.push(if c == b'\n' { b'\n' } else { b' ' });
    while i < b.len() {
        let c = b[i];
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                out.push(b' ');
                i += 1;
            }
        } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
            let mut depth = 0usize;
            while i < b.len() {
                if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                    depth += 1;
                    out.extend_from_slice(b"  ");
                    i += 2;
                } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                    depth -= 1;
                    out.extend_from_slice(b"  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(&mut out, b[i]);
                    i += 1;
                }
            }
        } else if (c == b'r' || c == b'b')
            && !prev_is_ident(b, i)
            && raw_string_start(b, i).is_some()
        {
            let (hashes, body) = raw_string_start(b, i).expect("checked");
            out.extend(std::iter::repeat_n(b' ', body - i));
            i = body;
            let mut closing = vec![b'"'];
            closing.extend(std::iter::repeat_n(b'#', hashes));
            while i < b.len() && !b[i..].starts_with(&closing) {
                blank(&mut out, b[i]);
                i += 1;
            }
            out.extend(std::iter::repeat_n(b' ', closing.len().min(b.len() - i)));
            i += closing.len();
        } else if c == b'"' {
            out.push(b' ');
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' {
                    out.push(b' ');
                    i += 1;
                }
                if i < b.len() {
                    blank(&mut out, b[i]);
                    i += 1;
                }
            }
            out.push(b' ');
            i += 1;
        } else if c == b'\'' {
            // A char literal ('x', '\n', '\u{..}') or a lifetime ('a): only the former is blanked.
            let end = if b.get(i + 1) == Some(&b'\\') {
                b[i + 2..]
                    .iter()
                    .position(|&x| x == b'\'')
                    .map(|p| i + 2 + p)
            } else {
                let ch_len = std::str::from_utf8(&b[i + 1..])
                    .ok()
                    .or_else(|| std::str::from_utf8(&b[i + 1..(i + 5).min(b.len())]).ok())
                    .and_then(|s| s.chars().next())
                    .map_or(1, char::len_utf8);
                (b.get(i + 1 + ch_len) == Some(&b'\'')).then_some(i + 1 + ch_len)
            };
            match end {
                Some(end) => {
                    out.extend(std::iter::repeat_n(b' ', end + 1 - i));
                    i = end + 1;
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out.truncate(b.len());
    String::from_utf8_lossy(&out).into_owned()
}

fn prev_is_ident(b: &[u8], i: usize) -> bool {
    i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_')
}

/// At `r"`, `r#"`, `br"`, `br#"`: the number of `#` and the index after the opening quote.
fn raw_string_start(b: &[u8], i: usize) -> Option<(usize, usize)> {
    let mut j = i;
    if b[j] == b'b' {
        j += 1;
    }
    if b.get(j) != Some(&b'r') {
        return None;
    }
    j += 1;
    let hashes = b[j..].iter().take_while(|&&x| x == b'#').count();
    j += hashes;
    (b.get(j) == Some(&b'"')).then_some((hashes, j + 1))
}

fn ident_at(s: &str, at: usize) -> &str {
    let end = s[at..]
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .map_or(s.len(), |p| at + p);
    &s[at..end]
}

/// The first segments named by a `crate::` path starting at `at` (just after `crate::`):
/// `jev::X` → `[jev]`; `{error::E, jev::{A, B}, Result}` → `[error, jev, Result]`.
fn first_segments(code: &str, at: usize) -> Vec<String> {
    let rest = &code[at..];
    let rest_trim = rest.trim_start();
    if !rest_trim.starts_with('{') {
        let id = ident_at(rest_trim, 0);
        return if id.is_empty() {
            vec![]
        } else {
            vec![id.to_string()]
        };
    }
    let mut names = Vec::new();
    let mut depth = 0usize;
    let mut expect_name = false;
    for (k, ch) in rest_trim.char_indices() {
        match ch {
            '{' => {
                depth += 1;
                expect_name = depth == 1;
            }
            '}' => {
                if depth == 1 {
                    break;
                }
                depth -= 1;
            }
            ',' if depth == 1 => expect_name = true,
            c if expect_name && (c.is_ascii_alphabetic() || c == '_') => {
                names.push(ident_at(rest_trim, k).to_string());
                expect_name = false;
            }
            _ => {}
        }
    }
    names
}

struct Crate {
    /// Top-level modules of the library (declared in lib.rs) plus `main` and `bin`.
    modules: BTreeSet<String>,
    /// Root names (`Error`, `Gateway`, exported macros) → their module.
    root_names: BTreeMap<String, String>,
    /// module → module it depends on → where.
    edges: BTreeMap<String, BTreeMap<String, Vec<Site>>>,
    /// Paths the test could not place (a new root re-export form, say).
    unknown: Vec<Site>,
    /// Every file: its path under `src/`, its top-level module, its code (comments and
    /// literals blanked).
    files: Vec<(PathBuf, String, String)>,
}

fn read_crate() -> Crate {
    let src = src_dir();
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let lib = code_only(&fs::read_to_string(src.join("lib.rs")).expect("lib.rs"));
    let mut modules: BTreeSet<String> = BTreeSet::new();
    let mut root_names = BTreeMap::new();
    for line in lib.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        if let Some(k) = words.iter().position(|w| *w == "mod") {
            if let Some(name) = words.get(k + 1) {
                modules.insert(name.trim_end_matches(';').to_string());
            }
        }
    }
    // `pub use module::{A, B};` and `pub use module::A;` at the root.
    for stmt in lib.split(';') {
        let stmt = stmt.trim();
        let Some(path) = stmt
            .strip_prefix("pub use ")
            .or_else(|| stmt.strip_prefix("pub(crate) use "))
        else {
            continue;
        };
        let path = path.trim().trim_start_matches("crate::");
        let module = ident_at(path, 0).to_string();
        let after = &path[module.len()..];
        let after = after.trim_start_matches("::");
        let names: Vec<String> = if after.trim_start().starts_with('{') {
            after
                .trim()
                .trim_start_matches('{')
                .trim_end_matches('}')
                .split(',')
                .filter_map(|n| {
                    let n = n.trim();
                    let n = n.rsplit(" as ").next().unwrap_or(n).trim();
                    let n = n.rsplit("::").next().unwrap_or(n).trim();
                    (!n.is_empty()).then(|| n.to_string())
                })
                .collect()
        } else {
            let n = after.rsplit(" as ").next().unwrap_or(after).trim();
            vec![n.rsplit("::").next().unwrap_or(n).to_string()]
        };
        for n in names {
            root_names.insert(n, module.clone());
        }
    }
    // `#[macro_export] macro_rules! name` lands at the root as `crate::name!`.
    let mut codes = Vec::new();
    for path in &files {
        let rel = path.strip_prefix(&src).expect("under src").to_path_buf();
        let code = code_only(&fs::read_to_string(path).expect("read source"));
        let module = module_of(&rel);
        let mut rest = code.as_str();
        while let Some(p) = rest.find("macro_rules!") {
            rest = &rest[p + "macro_rules!".len()..];
            let name = ident_at(rest.trim_start(), 0).to_string();
            root_names.insert(name, module.clone());
        }
        codes.push((rel, module, code));
    }
    modules.insert("main".into());
    modules.insert("bin".into());

    let mut edges: BTreeMap<String, BTreeMap<String, Vec<Site>>> = BTreeMap::new();
    let mut unknown = Vec::new();
    for (rel, module, code) in &codes {
        if module == "main" || module == "bin" || module == "cli" || module == "mcp" {
            // The command line (and its MCP server) is a separate crate using `jevgate::`; its
            // `crate::` paths name its own modules. It sits on top; nothing in the library can reach it.
            continue;
        }
        let mut search = 0;
        while let Some(p) = code[search..].find("crate::") {
            let at = search + p;
            search = at + "crate::".len();
            let before = code[..at].chars().next_back();
            if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
                continue; // `jevgate_crate::` or the like
            }
            let line = code[..at].matches('\n').count() + 1;
            let text = code[at..]
                .lines()
                .next()
                .unwrap_or("")
                .trim()
                .chars()
                .take(80)
                .collect::<String>();
            for first in first_segments(code, search) {
                let site = Site {
                    file: rel.display().to_string(),
                    line,
                    path: text.clone(),
                };
                let target = if modules.contains(&first) {
                    first
                } else if let Some(m) = root_names.get(&first) {
                    m.clone()
                } else if first == "self" || first == "super" {
                    continue;
                } else {
                    unknown.push(site);
                    continue;
                };
                if target == *module || target.is_empty() {
                    continue;
                }
                edges
                    .entry(module.clone())
                    .or_default()
                    .entry(target)
                    .or_default()
                    .push(site);
            }
        }
    }
    Crate {
        modules,
        root_names,
        edges,
        unknown,
        files: codes,
    }
}

/// Every elementary cycle found by a depth-first search (each reported once, from its
/// smallest node).
fn cycles(edges: &BTreeMap<String, BTreeMap<String, Vec<Site>>>) -> Vec<Vec<String>> {
    fn walk(
        start: &str,
        node: &str,
        edges: &BTreeMap<String, BTreeMap<String, Vec<Site>>>,
        path: &mut Vec<String>,
        found: &mut Vec<Vec<String>>,
    ) {
        for next in edges.get(node).into_iter().flat_map(|m| m.keys()) {
            if next == start {
                found.push(path.clone());
            } else if next.as_str() > start && !path.contains(next) {
                path.push(next.clone());
                walk(start, next, edges, path, found);
                path.pop();
            }
        }
    }
    let mut found = Vec::new();
    for start in edges.keys() {
        walk(start, start, edges, &mut vec![start.clone()], &mut found);
    }
    found
}

fn describe(cycle: &[String], edges: &BTreeMap<String, BTreeMap<String, Vec<Site>>>) -> String {
    let mut s = format!("cycle: {} -> {}\n", cycle.join(" -> "), cycle[0]);
    for (k, from) in cycle.iter().enumerate() {
        let to = &cycle[(k + 1) % cycle.len()];
        let sites = &edges[from][to];
        let site = &sites[0];
        s.push_str(&format!(
            "  {from} -> {to}: src/{}:{} `{}`{}\n",
            site.file,
            site.line,
            site.path,
            if sites.len() > 1 {
                format!(" (and {} more)", sites.len() - 1)
            } else {
                String::new()
            }
        ));
    }
    s
}

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

#[test]
fn no_cycle_between_top_level_modules() {
    let krate = read_crate();
    assert!(
        krate.unknown.is_empty(),
        "crate:: paths the layer check cannot place (add the root re-export form to the test): {:#?}",
        krate.unknown
    );
    let found = cycles(&krate.edges);
    let report: String = found.iter().map(|c| describe(c, &krate.edges)).collect();
    assert!(
        found.is_empty(),
        "{} cycle(s) between the top-level modules of src/:\n{report}",
        found.len()
    );
}

#[test]
fn every_module_has_a_layer_and_uses_only_its_layer_or_below() {
    let krate = read_crate();
    for module in &krate.modules {
        assert!(
            layer_of(module).is_some(),
            "top-level module `{module}` is in no layer of tests/layers.rs: place it"
        );
    }
    let mut wrong = Vec::new();
    for (from, targets) in &krate.edges {
        let Some(lf) = layer_of(from) else { continue };
        for (to, sites) in targets {
            let lt = layer_of(to).expect("every module has a layer");
            if lt > lf {
                let s = &sites[0];
                wrong.push(format!(
                    "{from} (layer {lf}) uses {to} (layer {lt}): src/{}:{} `{}`",
                    s.file, s.line, s.path
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "modules reaching up a layer:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_top_is_imported_by_nothing_in_the_core() {
    let krate = read_crate();
    for (from, targets) in &krate.edges {
        for top in ["ffi", "cli", "main", "bin"] {
            assert!(
                !targets.contains_key(top),
                "`{from}` uses `{top}`, which sits above the core: {:?}",
                targets[top][0]
            );
        }
        if from != "ffi" {
            assert!(
                !targets.contains_key("gateway"),
                "`{from}` uses `gateway`; only ffi and the command line sit above it: {:?}",
                targets["gateway"][0]
            );
        }
    }
    // The test's own reader sees the root re-exports it relies on.
    assert_eq!(
        krate.root_names.get("Gateway").map(String::as_str),
        Some("gateway")
    );
    assert_eq!(
        krate.root_names.get("Error").map(String::as_str),
        Some("error")
    );
}

#[test]
fn the_reader_skips_comments_and_strings() {
    let code = code_only(
        "let a = \"crate::x\"; // crate::y\n/* crate::z */ let b = r#\"crate::w\"#; let c = '\"'; use crate::v;\n",
    );
    assert_eq!(code.matches("crate::").count(), 1, "{code}");
    assert_eq!(code.lines().count(), 2);
    assert_eq!(
        first_segments("{error::E, jev::{A, B}, Result}", 0),
        vec!["error", "jev", "Result"]
    );
    assert_eq!(first_segments("jev::client::X", 0), vec!["jev"]);
}

// ---- Inside a module: the graph between its files ----------------------------------------
//
// Nodes are the files of one top-level module directory (`jev::client`, `jev::usage`, …; a
// nested directory is one node, `jev::tests`). `mod.rs` is the module's façade and not a node:
// a name it re-exports (`pub use usage::UsageLog`) counts as the file that defines it, a name it
// defines itself is skipped. Edges come from `super::…` paths (inline `mod tests { use
// super::* }` counted as the file itself) and `crate::<module>::…` paths.

/// Tangles (strongly connected groups of files) tolerated for now: none since issue 13 item 1.
/// Should one ever be accepted for a while, list it here (sorted names); a tangle not listed, or
/// a file joining one, fails the test, and a listed tangle that is gone must be removed.
const KNOWN_TANGLES: &[&[&str]] = &[];

/// Within `module`, the file node of `rel` (`jev/client.rs` → `jev::client`, `jev/tests/x.rs`
/// → `jev::tests`); `None` for `mod.rs` and single-file modules.
fn file_node(rel: &Path) -> Option<String> {
    let parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    match parts.as_slice() {
        [m, f] if f != "mod.rs" => Some(format!("{m}::{}", f.trim_end_matches(".rs"))),
        [m, d, ..] if parts.len() > 2 => Some(format!("{m}::{d}")),
        _ => None,
    }
}

/// For each byte offset that starts `super::`, how many inline `mod x { … }` blocks enclose it.
fn inline_mod_depths(code: &str) -> BTreeMap<usize, usize> {
    let b = code.as_bytes();
    let mut depth = 0usize;
    let mut mods: Vec<usize> = Vec::new();
    let mut pending = false;
    let mut out = BTreeMap::new();
    let mut i = 0;
    while i < b.len() {
        let boundary = !prev_is_ident(b, i) && (i == 0 || b[i - 1] != b':');
        if boundary && code[i..].starts_with("mod ") {
            let rest = code[i + 4..].trim_start();
            let name = ident_at(rest, 0);
            if !name.is_empty() && rest[name.len()..].trim_start().starts_with('{') {
                pending = true;
            }
        } else if boundary && code[i..].starts_with("super::") {
            out.insert(i, mods.len());
        }
        match b[i] {
            b'{' => {
                depth += 1;
                if pending {
                    mods.push(depth);
                    pending = false;
                }
            }
            b'}' => {
                if mods.last() == Some(&depth) {
                    mods.pop();
                }
                depth = depth.saturating_sub(1);
            }
            _ => {}
        }
        i += 1;
    }
    out
}

type Graph = BTreeMap<String, BTreeMap<String, Vec<Site>>>;

/// The file graph of every module directory: module → (file → file → sites).
fn file_graphs(krate: &Crate) -> BTreeMap<String, Graph> {
    // Files of each module and the names each mod.rs re-exports from its files.
    let mut nodes: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut reexports: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for (rel, module, code) in &krate.files {
        if let Some(node) = file_node(rel) {
            nodes.entry(module.clone()).or_default().insert(node);
        }
        if rel.file_name().is_some_and(|f| f == "mod.rs") && rel.components().count() == 2 {
            let map = reexports.entry(module.clone()).or_default();
            for stmt in code.split(';') {
                let stmt = stmt.trim();
                let Some(at) = stmt.find("use ") else {
                    continue;
                };
                if !stmt[..at].trim().starts_with("pub") {
                    continue;
                }
                let path = stmt[at + 4..].trim().trim_start_matches("self::");
                let file = ident_at(path, 0).to_string();
                let after = path[file.len()..].trim_start_matches("::").trim();
                let names: Vec<&str> = if after.starts_with('{') {
                    after
                        .trim_start_matches('{')
                        .trim_end_matches('}')
                        .split(',')
                        .collect()
                } else {
                    vec![after]
                };
                for n in names {
                    let n = n.trim();
                    let n = n.rsplit(" as ").next().unwrap_or(n).trim();
                    let n = n.rsplit("::").next().unwrap_or(n).trim();
                    if !n.is_empty() {
                        map.insert(n.to_string(), format!("{module}::{file}"));
                    }
                }
            }
        }
    }
    let resolve = |module: &str, name: &str| -> Option<String> {
        let direct = format!("{module}::{name}");
        if nodes.get(module).is_some_and(|n| n.contains(&direct)) {
            return Some(direct);
        }
        reexports.get(module).and_then(|m| m.get(name)).cloned()
    };
    let mut graphs: BTreeMap<String, Graph> = BTreeMap::new();
    for (rel, module, code) in &krate.files {
        let Some(from) = file_node(rel) else { continue };
        let nested = rel.components().count() > 2;
        let mut add = |to: String, at: usize| {
            if to == from {
                return;
            }
            let line = code[..at].matches('\n').count() + 1;
            let text = code[at..].lines().next().unwrap_or("").trim();
            graphs
                .entry(module.clone())
                .or_default()
                .entry(from.clone())
                .or_default()
                .entry(to)
                .or_default()
                .push(Site {
                    file: rel.display().to_string(),
                    line,
                    path: text.chars().take(80).collect(),
                });
        };
        // super:: paths
        for (at, inline) in inline_mod_depths(code) {
            let mut supers = 0;
            let mut p = at;
            while code[p..].starts_with("super::") {
                supers += 1;
                p += "super::".len();
            }
            let up = supers - inline.min(supers);
            // A file directly in the module dir reaches the module with one `super`; a file in
            // a nested dir with two.
            if up == (if nested { 2 } else { 1 }) {
                for name in first_segments(code, p) {
                    if let Some(to) = resolve(module, &name) {
                        add(to, at);
                    }
                }
            }
        }
        // crate::<module>:: paths
        let prefix = format!("crate::{module}::");
        let mut search = 0;
        while let Some(q) = code[search..].find(&prefix) {
            let at = search + q;
            search = at + prefix.len();
            if prev_is_ident(code.as_bytes(), at) {
                continue;
            }
            for name in first_segments(code, search) {
                if let Some(to) = resolve(module, &name) {
                    add(to, at);
                }
            }
        }
    }
    graphs
}

/// The strongly connected groups of more than one node (Tarjan), each sorted.
fn tangles(graph: &Graph) -> Vec<Vec<String>> {
    struct State<'a> {
        graph: &'a Graph,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        next: usize,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        s.index.insert(v, s.next);
        s.low.insert(v, s.next);
        s.next += 1;
        s.stack.push(v);
        s.on_stack.insert(v);
        let graph = s.graph;
        for w in graph.get(v).into_iter().flat_map(|m| m.keys()) {
            let w = w.as_str();
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).expect("visited");
                *lv = (*lv).min(lw);
            } else if s.on_stack.contains(w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).expect("visited");
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut group = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                group.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if group.len() > 1 {
                group.sort();
                s.out.push(group);
            }
        }
    }
    let mut s = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.out.sort();
    s.out
}

fn describe_tangle(group: &[String], graph: &Graph) -> String {
    let mut s = format!("tangle: {}\n", group.join(", "));
    for from in group {
        for (to, sites) in graph.get(from).into_iter().flatten() {
            if group.contains(to) {
                let site = &sites[0];
                s.push_str(&format!(
                    "  {from} -> {to}: src/{}:{} `{}`\n",
                    site.file, site.line, site.path
                ));
            }
        }
    }
    s
}

#[test]
fn no_new_cycle_between_the_files_of_a_module() {
    let krate = read_crate();
    let graphs = file_graphs(&krate);
    let known: BTreeSet<Vec<String>> = KNOWN_TANGLES
        .iter()
        .map(|t| {
            let mut v: Vec<String> = t.iter().map(|s| s.to_string()).collect();
            v.sort();
            v
        })
        .collect();
    let mut found = BTreeSet::new();
    let mut report = String::new();
    for graph in graphs.values() {
        for group in tangles(graph) {
            if !known.contains(&group) {
                report.push_str(&describe_tangle(&group, graph));
            }
            found.insert(group);
        }
    }
    assert!(
        report.is_empty(),
        "files of a module that use each other in a circle (move what both need into the \
         lower file):\n{report}"
    );
    let gone: Vec<_> = known.difference(&found).collect();
    assert!(
        gone.is_empty(),
        "these tangles are gone: remove them from KNOWN_TANGLES in tests/layers.rs: {gone:?}"
    );
}

#[test]
fn the_file_reader_sees_known_edges() {
    // Anchors the reader: edges that exist today and that a broken parser would miss.
    let krate = read_crate();
    let graphs = file_graphs(&krate);
    let has = |m: &str, from: &str, to: &str| {
        graphs
            .get(m)
            .and_then(|g| g.get(from))
            .is_some_and(|t| t.contains_key(to))
    };
    assert!(has("jev", "jev::client", "jev::validate"));
    assert!(has("jev", "jev::validate", "jev::question"));
    // An inline `mod tests { use super::* }` is the file itself, not the module.
    let depths = inline_mod_depths("use super::a;\nmod tests {\n use super::*;\n}\n");
    assert_eq!(depths.values().copied().collect::<Vec<_>>(), vec![0, 1]);
}
