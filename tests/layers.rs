//! The modules of every crate in this repository form layers that point one way (issue 13
//! item 1, issue 19 item 2).
//!
//! It reads the sources of four crates from their roots, following `mod` declarations: the
//! library (`src/lib.rs`), the `jevgate` command (`src/main.rs`: `cli/`, `mcp/`, `common.rs`),
//! the `jevgate-worker` command (`src/bin/`) and the Python binding (`bindings/python/src`).
//! Every file is a node, `mod.rs` and the crate roots included; a directory is one node in its
//! parent's graph and a graph of its own files inside. In each file it reads every path that
//! names this crate — `crate::…`, `super::…`, `self::…` and `child::…` in `use` items and in
//! expressions (comments and string literals are skipped) — and follows `use` and `pub use`
//! to the file that defines the name (`crate::Error` is `error.rs`; `super::Tool` in a device
//! file is `device/tools.rs`, re-exported by `device/mod.rs`; a name `device/mod.rs` defines
//! itself is `device/mod.rs`). A `pub use` of a module's own files is the module's façade
//! naming them, not a use.
//!
//! Rules, each a test below:
//! - The top-level modules of a crate sit in the layers written below as data ([`LIBRARY`],
//!   [`COMMAND`], [`PYTHON`]), each layer in tiers, lowest first. A module uses only modules of
//!   earlier tiers: nothing within a layer imports a later one, and two modules of one tier do
//!   not use each other. A name the crate root itself defines is used by no module (the root
//!   declares and re-exports; what modules share lives in a module below them).
//! - Inside every directory, at every depth, the files (`mod.rs` included) use each other
//!   without a circle: what two files need lives in the lower one.
//! - Every `.rs` file under the source directories belongs to one of the crates (no file the
//!   test cannot see), and no path stays unresolved.
//! - README.md's layer diagram is the one this data draws.
//!
//! Must never: read anything outside this repository, or need a build of any crate.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

// ---- The order, as data -------------------------------------------------------------------

/// A layer: its name and its tiers, lowest first.
type Layer = (&'static str, &'static [&'static [&'static str]]);

/// The library's layers, bottom first. `cancel` is the one cancel token (issue 19 item 1).
const LIBRARY: &[Layer] = &[
    (
        "bottom",
        &[
            &[
                "reasons",
                "clock",
                "cancel",
                "observation",
                "untrusted",
                "caps",
            ],
            &["error"],
            &["ids", "args"],
        ],
    ),
    ("state", &[&["config", "store"]]),
    (
        "capabilities",
        &[
            &["grammar", "jev", "lease"],
            &["device"],
            &["browser", "computer"],
            &["task"],
        ],
    ),
    ("façade", &[&["gateway"]]),
    ("top", &[&["ffi", "unstable"]]),
];

/// The `jevgate` command (`src/main.rs`, the root, sits above them all).
const COMMAND: &[Layer] = &[
    ("shared", &[&["common"]]),
    ("commands", &[&["mcp"], &["cli"]]),
];

/// The `jevgate-worker` command: one file.
const WORKER: &[Layer] = &[];

/// The `jevgate-computer` command (the Linux computer helper, feature `computer`): one file.
const COMPUTER: &[Layer] = &[];

/// The Python binding (`bindings/python/src`; `lib.rs`, the `#[pymodule]`, sits above them all).
/// `device.rs` also holds `to_py_json`, which the classes above it share.
const PYTHON: &[Layer] = &[
    ("shared", &[&["errors", "callable"], &["json", "interrupt"]]),
    (
        "classes",
        &[
            &["clock", "config", "grammar", "device"],
            &["browser", "computer", "jev", "lease", "task"],
            &["worker", "gateway"],
        ],
    ),
];

/// The crates: a name, the root file relative to the repository, the layers.
const CRATES: &[(&str, &str, &[Layer])] = &[
    ("the library", "src/lib.rs", LIBRARY),
    ("the jevgate command", "src/main.rs", COMMAND),
    (
        "the jevgate-worker command",
        "src/bin/jevgate-worker.rs",
        WORKER,
    ),
    (
        "the jevgate-computer command",
        "src/bin/jevgate-computer.rs",
        COMPUTER,
    ),
    ("the Python binding", "bindings/python/src/lib.rs", PYTHON),
];

/// The source directories whose every `.rs` file must belong to a crate above.
const SOURCE_DIRS: &[&str] = &["src", "bindings/python/src"];

/// Tangles (strongly connected groups of files) tolerated for now, each with its reason; a
/// tangle not listed, or a file joining one, fails the test, and a listed tangle that is gone
/// must be removed. They became visible when `mod.rs` files became nodes (issue 19 item 2).
const KNOWN_TANGLES: &[&[&str]] = &[
    // `guard` (mod.rs, behind `ffi_boundary!`) writes a `jevgate_error` (error.rs), whose file
    // reads mod.rs through `use super::*`. Fix: move `guard` and the status into error.rs once
    // issue 19 item 5's ffi/mod.rs helpers have landed (another branch edits that file).
    &["ffi/mod.rs", "ffi::error"],
    // One type, `Gateway`, with its `impl` split by topic: mod.rs builds `browsers::ManagedState`
    // and `tasks::Host`, whose files extend `Gateway` and call mod.rs's `check_open`/`config`.
    &["gateway/mod.rs", "gateway::browsers", "gateway::tasks"],
];

/// Global tier of a top-level module (0 is the lowest) and its layer's name.
fn tier_of(layers: &[Layer], module: &str) -> Option<(usize, &'static str)> {
    let mut tier = 0;
    for (name, tiers) in layers {
        for t in *tiers {
            if t.contains(&module) {
                return Some((tier, name));
            }
            tier += 1;
        }
    }
    None
}

/// The library's layers drawn top first, one tier a line: README.md shows exactly this.
fn diagram() -> String {
    let mut lines = Vec::new();
    for (name, tiers) in LIBRARY {
        for (k, tier) in tiers.iter().enumerate() {
            let label = if k + 1 == tiers.len() { *name } else { "" };
            lines.push(
                format!("{label:<14}{}", tier.join(", "))
                    .trim_end()
                    .to_string(),
            );
        }
    }
    lines.reverse();
    lines.join("\n")
}

// ---- Reading a crate ----------------------------------------------------------------------

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Where a use was seen: the file (relative to the repository), the line, the path's text.
#[derive(Debug, Clone)]
struct Site {
    file: String,
    line: usize,
    text: String,
}

impl std::fmt::Display for Site {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{} `{}`", self.file, self.line, self.text)
    }
}

struct SrcFile {
    /// Path relative to the repository (`src/jev/client.rs`).
    rel: String,
    /// Path relative to the crate's source directory (`jev/client.rs`), the file's node label.
    label: String,
    module: Vec<String>,
    code: String,
    defines: BTreeSet<String>,
}

/// A path naming this crate: where, the module it starts from, its leaves (segments and `as`
/// alias), and whether it is inside a `use` item (`Some(true)` for a `pub use`).
struct Ref {
    at: usize,
    base: Vec<String>,
    leaves: Vec<Leaf>,
    in_use: Option<bool>,
    depth: usize,
}

struct Edge {
    from: Vec<String>,
    to: Vec<String>,
    site: Site,
}

type Target = (Vec<String>, Vec<String>);

struct Crate {
    name: &'static str,
    layers: &'static [Layer],
    files: Vec<SrcFile>,
    /// Module path → index into `files`.
    by_module: BTreeMap<Vec<String>, usize>,
    /// Module → name → the path its `use` item (or `#[macro_export]`) names.
    imports: BTreeMap<Vec<String>, BTreeMap<String, Target>>,
    /// Module → the paths of its glob imports (`use x::*`).
    globs: BTreeMap<Vec<String>, Vec<Target>>,
    edges: Vec<Edge>,
    unknown: Vec<Site>,
}

/// Names a file defines (`fn x`, `struct X`, `macro_rules! x`, …), a superset.
fn definitions(code: &str) -> BTreeSet<String> {
    const KEYWORDS: &[&str] = &[
        "fn",
        "struct",
        "enum",
        "trait",
        "const",
        "static",
        "type",
        "union",
        "macro_rules",
        "mod",
    ];
    let words: Vec<&str> = code
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .collect();
    words
        .windows(2)
        .filter(|w| KEYWORDS.contains(&w[0]))
        .map(|w| w[1].to_string())
        .collect()
}

/// `mod name;` declarations (not inline `mod name { … }`) outside inline modules.
fn mod_declarations(code: &str) -> Vec<String> {
    let inline = inline_mods(code);
    let b = code.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(p) = code[i..].find("mod ") {
        let at = i + p;
        i = at + 4;
        if prev_is_ident(b, at) || depth_at(&inline, at) > 0 {
            continue;
        }
        let rest = code[at + 4..].trim_start();
        let name = ident_at(rest, 0);
        if !name.is_empty() && rest[name.len()..].trim_start().starts_with(';') {
            out.push(name.to_string());
        }
    }
    out
}

/// The byte ranges of the bodies of inline `mod x { … }` blocks.
fn inline_mods(code: &str) -> Vec<(usize, usize)> {
    let b = code.as_bytes();
    let mut open: Vec<(usize, usize)> = Vec::new(); // (brace depth, start)
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut pending = false;
    for i in 0..b.len() {
        if b[i] == b'm' && !prev_is_ident(b, i) && code[i..].starts_with("mod ") {
            let rest = code[i + 4..].trim_start();
            let name = ident_at(rest, 0);
            if !name.is_empty() && rest[name.len()..].trim_start().starts_with('{') {
                pending = true;
            }
        }
        match b[i] {
            b'{' => {
                depth += 1;
                if pending {
                    open.push((depth, i));
                    pending = false;
                }
            }
            b'}' => {
                if open.last().is_some_and(|&(d, _)| d == depth) {
                    let (_, start) = open.pop().expect("checked");
                    out.push((start, i));
                }
                depth = depth.saturating_sub(1);
            }
            _ => {}
        }
    }
    out
}

fn depth_at(inline: &[(usize, usize)], at: usize) -> usize {
    inline.iter().filter(|&&(s, e)| s < at && at < e).count()
}

/// The `use` items of a file: (start, end, is `pub`).
fn use_items(code: &str) -> Vec<(usize, usize, bool)> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(p) = code[i..].find("use") {
        let at = i + p;
        i = at + 3;
        let after = b.get(at + 3).copied().unwrap_or(b' ');
        if prev_is_ident(b, at) || !(after == b' ' || after == b'\n' || after == b':') {
            continue;
        }
        let start = code[..at].rfind([';', '{', '}', ']']).map_or(0, |s| s + 1);
        let end = code[at..].find(';').map_or(code.len(), |e| at + e);
        let pub_ = code[start..at]
            .split_whitespace()
            .any(|w| w.starts_with("pub"));
        out.push((at, end, pub_));
    }
    out
}

/// A path's segments and its `as` alias.
type Leaf = (Vec<String>, Option<String>);

/// The leaves of the path (or `use` tree) starting at `at`: `a::b::{c, d::e as f, g::*}` →
/// `[a,b,c]`, `[a,b,d,e]` (alias `f`), `[a,b,g,*]`. Returns them and the end of the path.
fn path_tree(code: &str, at: usize) -> (Vec<Leaf>, usize) {
    fn skip_ws(b: &[u8], mut i: usize) -> usize {
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        i
    }
    fn tree(code: &str, mut i: usize, prefix: Vec<String>, out: &mut Vec<Leaf>) -> usize {
        let b = code.as_bytes();
        i = skip_ws(b, i);
        match b.get(i) {
            Some(b'{') => {
                i += 1;
                loop {
                    i = skip_ws(b, i);
                    match b.get(i) {
                        Some(b'}') => return i + 1,
                        None => return i,
                        _ => {}
                    }
                    let before = i;
                    i = tree(code, i, prefix.clone(), out);
                    i = skip_ws(b, i);
                    match b.get(i) {
                        Some(b',') => i += 1,
                        Some(b'}') => return i + 1,
                        _ if i == before => return i,
                        _ => return i,
                    }
                }
            }
            Some(b'*') => {
                let mut p = prefix;
                p.push("*".into());
                out.push((p, None));
                i + 1
            }
            _ => {
                let id = ident_at(code, i);
                if id.is_empty() {
                    if !prefix.is_empty() {
                        out.push((prefix, None));
                    }
                    return i;
                }
                let mut p = prefix;
                p.push(id.to_string());
                i += id.len();
                if code[i..].starts_with("::") {
                    return tree(code, i + 2, p, out);
                }
                let j = skip_ws(b, i);
                if code[j..].starts_with("as ") {
                    let k = skip_ws(b, j + 3);
                    let alias = ident_at(code, k);
                    out.push((p, Some(alias.to_string())));
                    return k + alias.len();
                }
                out.push((p, None));
                i
            }
        }
    }
    let mut out = Vec::new();
    let end = tree(code, at, Vec::new(), &mut out);
    (out, end)
}

/// Every path of `file` that names its own crate.
fn refs_of(file: &SrcFile, children: &BTreeSet<String>) -> Vec<Ref> {
    let code = file.code.as_str();
    let b = code.as_bytes();
    let inline = inline_mods(code);
    let uses = use_items(code);
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let boundary = !(prev_is_ident(b, i) || (i >= 2 && &b[i - 2..i] == b"::"));
        let c = b[i];
        if !boundary || !(c.is_ascii_alphabetic() || c == b'_') {
            i += 1;
            continue;
        }
        let word = ident_at(code, i);
        let after = i + word.len();
        if !code[after..].starts_with("::") {
            i = after.max(i + 1);
            continue;
        }
        let depth = depth_at(&inline, i);
        let (base, start) = match word {
            "crate" => (Some(Vec::new()), after + 2),
            "super" => {
                let mut k = 0;
                let mut p = i;
                while code[p..].starts_with("super::") {
                    k += 1;
                    p += "super::".len();
                }
                // Within this file's inline modules, or above the crate root: not a module.
                if k <= depth || k - depth > file.module.len() {
                    (None, p)
                } else {
                    (
                        Some(file.module[..file.module.len() - (k - depth)].to_vec()),
                        p,
                    )
                }
            }
            "self" if depth == 0 => (Some(file.module.clone()), after + 2),
            w if depth == 0 && children.contains(w) => (Some(file.module.clone()), i),
            _ => (None, after + 2),
        };
        let Some(base) = base else {
            i = start;
            continue;
        };
        let (leaves, end) = path_tree(code, start);
        let in_use = uses
            .iter()
            .find(|&&(s, e, _)| s < i && i < e)
            .map(|&(_, _, p)| p);
        out.push(Ref {
            at: i,
            base,
            leaves,
            in_use,
            depth,
        });
        i = end.max(i + 1);
    }
    out
}

fn read_crate(name: &'static str, root: &str, layers: &'static [Layer]) -> Crate {
    let repo = repo();
    let root_path = repo.join(root);
    let src_dir = root_path.parent().expect("root in a dir").to_path_buf();
    let mut files = Vec::new();
    // (path, module, dir its `mod x;` declarations resolve in)
    let mut todo = vec![(root_path.clone(), Vec::<String>::new(), src_dir.clone())];
    while let Some((path, module, dir)) = todo.pop() {
        let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let code = code_only(&text);
        for child in mod_declarations(&code) {
            let flat = dir.join(format!("{child}.rs"));
            let nested = dir.join(&child).join("mod.rs");
            let (file, child_dir) = if flat.is_file() {
                (flat, dir.join(&child))
            } else if nested.is_file() {
                (nested, dir.join(&child))
            } else {
                panic!("{}: `mod {child};` has no file", path.display());
            };
            let mut m = module.clone();
            m.push(child);
            todo.push((file, m, child_dir));
        }
        let rel = path
            .strip_prefix(&repo)
            .expect("in repo")
            .to_string_lossy()
            .replace('\\', "/");
        let label = path
            .strip_prefix(&src_dir)
            .expect("in src dir")
            .to_string_lossy()
            .replace('\\', "/");
        files.push(SrcFile {
            rel,
            label,
            module,
            defines: definitions(&code),
            code,
        });
    }
    files.sort_by(|a, b| a.module.cmp(&b.module));
    let by_module: BTreeMap<Vec<String>, usize> = files
        .iter()
        .enumerate()
        .map(|(k, f)| (f.module.clone(), k))
        .collect();
    let mut krate = Crate {
        name,
        layers,
        files,
        by_module,
        imports: BTreeMap::new(),
        globs: BTreeMap::new(),
        edges: Vec::new(),
        unknown: Vec::new(),
    };
    // Pass 1: what each module's `use` items name; exported macros at the root.
    let mut all_refs = Vec::new();
    for (k, file) in krate.files.iter().enumerate() {
        let children: BTreeSet<String> = krate
            .by_module
            .keys()
            .filter(|m| m.len() == file.module.len() + 1 && m.starts_with(&file.module))
            .map(|m| m.last().expect("non-empty").clone())
            .collect();
        let refs = refs_of(file, &children);
        for r in &refs {
            if r.in_use.is_none() || r.depth > 0 {
                continue;
            }
            for (segs, alias) in &r.leaves {
                let last = segs.last().map(String::as_str);
                if last == Some("*") {
                    let path = segs[..segs.len() - 1].to_vec();
                    krate
                        .globs
                        .entry(file.module.clone())
                        .or_default()
                        .push((r.base.clone(), path));
                    continue;
                }
                let name = match (alias, last) {
                    (Some(a), _) => a.clone(),
                    (None, Some("self")) if segs.len() >= 2 => segs[segs.len() - 2].clone(),
                    (None, Some("self")) => continue,
                    (None, Some(l)) => l.to_string(),
                    (None, None) => continue,
                };
                krate
                    .imports
                    .entry(file.module.clone())
                    .or_default()
                    .insert(name, (r.base.clone(), segs.clone()));
            }
        }
        let mut rest = file.code.as_str();
        while let Some(p) = rest.find("macro_rules!") {
            let exported = rest[..p].trim_end().ends_with("#[macro_export]");
            rest = &rest[p + "macro_rules!".len()..];
            if exported {
                let name = ident_at(rest.trim_start(), 0).to_string();
                krate
                    .imports
                    .entry(Vec::new())
                    .or_default()
                    .insert(name, (file.module.clone(), Vec::new()));
            }
        }
        all_refs.push((k, refs));
    }
    // Pass 2: every path to the module that defines what it names.
    for (k, refs) in all_refs {
        let file = &krate.files[k];
        let newlines: Vec<usize> = file.code.match_indices('\n').map(|(p, _)| p).collect();
        for r in refs {
            let line = newlines.partition_point(|&p| p < r.at) + 1;
            let text: String = file.code[r.at..]
                .lines()
                .next()
                .unwrap_or("")
                .trim()
                .chars()
                .take(80)
                .collect();
            let site = Site {
                file: file.rel.clone(),
                line,
                text,
            };
            for (segs, _) in &r.leaves {
                match krate.resolve(&r.base, segs, 0) {
                    None => krate.unknown.push(site.clone()),
                    Some(to) => {
                        let naming = r.in_use == Some(true)
                            && to.len() > file.module.len()
                            && to.starts_with(&file.module);
                        if to != file.module && !naming {
                            krate.edges.push(Edge {
                                from: file.module.clone(),
                                to,
                                site: site.clone(),
                            });
                        }
                    }
                }
            }
        }
    }
    krate
}

impl Crate {
    /// The module whose file defines what `segs`, read from module `base`, names.
    fn resolve(&self, base: &[String], segs: &[String], depth: usize) -> Option<Vec<String>> {
        if depth > 16 {
            return None;
        }
        let mut cur = base.to_vec();
        for seg in segs {
            match seg.as_str() {
                "self" => continue,
                "super" => {
                    cur.pop()?;
                    continue;
                }
                "*" => return Some(cur),
                _ => {}
            }
            let mut child = cur.clone();
            child.push(seg.clone());
            if self.by_module.contains_key(&child) {
                cur = child;
                continue;
            }
            let file = &self.files[*self.by_module.get(&cur)?];
            if file.defines.contains(seg) {
                return Some(cur);
            }
            if let Some((b, s)) = self.imports.get(&cur).and_then(|m| m.get(seg)) {
                return self.resolve(b, s, depth + 1);
            }
            for (b, s) in self.globs.get(&cur).into_iter().flatten() {
                if let Some(m) = self.resolve(b, s, depth + 1) {
                    if self.files[self.by_module[&m]].defines.contains(seg) {
                        return Some(m);
                    }
                }
            }
            return None;
        }
        Some(cur)
    }

    fn label(&self, module: &[String]) -> &str {
        &self.files[self.by_module[module]].label
    }

    /// The graph of every directory (module with files below it), keyed by its module path:
    /// nodes are its own file (labelled by its file, `jev/mod.rs`) and its children
    /// (`jev::client`, `jev::tests` for a whole directory).
    fn graphs(&self) -> BTreeMap<Vec<String>, Graph> {
        let mut graphs: BTreeMap<Vec<String>, Graph> = BTreeMap::new();
        for e in &self.edges {
            let common = e.from.iter().zip(&e.to).take_while(|(a, b)| a == b).count();
            let lca = e.from[..common].to_vec();
            let node = |m: &[String]| -> String {
                if m.len() == common {
                    self.label(&lca).to_string()
                } else {
                    m[..common + 1].join("::")
                }
            };
            let (from, to) = (node(&e.from), node(&e.to));
            if from == to {
                continue;
            }
            graphs
                .entry(lca)
                .or_default()
                .entry(from)
                .or_default()
                .entry(to)
                .or_default()
                .push(e.site.clone());
        }
        graphs
    }
}

type Graph = BTreeMap<String, BTreeMap<String, Vec<Site>>>;

// ---- The reader: comments and literals blanked ---------------------------------------------
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

// ---- Circles ------------------------------------------------------------------------------

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

/// Every crate, read once per test binary.
fn read_all() -> &'static [Crate] {
    static CRATES_READ: std::sync::OnceLock<Vec<Crate>> = std::sync::OnceLock::new();
    CRATES_READ.get_or_init(|| {
        CRATES
            .iter()
            .map(|&(name, root, layers)| read_crate(name, root, layers))
            .collect()
    })
}

fn describe_tangle(group: &[String], graph: &Graph) -> String {
    let mut s = format!("tangle: {}\n", group.join(", "));
    for from in group {
        for (to, sites) in graph.get(from).into_iter().flatten() {
            if group.contains(to) {
                s.push_str(&format!("  {from} -> {to}: {}\n", sites[0]));
            }
        }
    }
    s
}

#[test]
fn every_path_is_resolved_and_every_file_is_read() {
    let crates = read_all();
    let mut unknown = String::new();
    for c in crates {
        for site in &c.unknown {
            unknown.push_str(&format!("  {}: {site}\n", c.name));
        }
    }
    assert!(
        unknown.is_empty(),
        "paths the layer test cannot place (teach its reader the form):\n{unknown}"
    );
    let read: BTreeSet<String> = crates
        .iter()
        .flat_map(|c| c.files.iter().map(|f| f.rel.clone()))
        .collect();
    let mut on_disk = Vec::new();
    for dir in SOURCE_DIRS {
        rust_files(&repo().join(dir), &mut on_disk);
    }
    let unseen: Vec<String> = on_disk
        .iter()
        .map(|p| {
            p.strip_prefix(repo())
                .expect("in repo")
                .to_string_lossy()
                .replace('\\', "/")
        })
        .filter(|p| !read.contains(p))
        .collect();
    assert!(
        unseen.is_empty(),
        "files no crate root reaches through `mod` (declare them, or remove them): {unseen:?}"
    );
}

#[test]
fn every_module_has_a_tier_and_uses_only_earlier_tiers() {
    let mut wrong = Vec::new();
    for c in read_all() {
        for m in c.by_module.keys().filter(|m| m.len() == 1) {
            assert!(
                tier_of(c.layers, &m[0]).is_some(),
                "{}: top-level module `{}` is in no layer of tests/layers.rs: place it",
                c.name,
                m[0]
            );
        }
        let root = c.label(&[]).to_string();
        let graphs = c.graphs();
        for (from, targets) in graphs.get(&Vec::new()).into_iter().flatten() {
            for (to, sites) in targets {
                let site = &sites[0];
                if *to == root {
                    wrong.push(format!(
                        "{}: `{from}` uses a name the crate root {root} defines (move it into \
                         a module below both): {site}",
                        c.name
                    ));
                    continue;
                }
                if *from == root {
                    continue; // the root sits above every module it declares
                }
                let (tf, lf) = tier_of(c.layers, from).expect("placed");
                let (tt, lt) = tier_of(c.layers, to).expect("placed");
                if tt >= tf {
                    let how = if tt == tf {
                        "of its own tier"
                    } else {
                        "of a later tier"
                    };
                    wrong.push(format!(
                        "{}: `{from}` ({lf}) uses `{to}` ({lt}), a module {how}: {site}",
                        c.name
                    ));
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "modules using a module that is not below them (move what both need down, or change \
         the order in tests/layers.rs on purpose):\n{}",
        wrong.join("\n")
    );
}

#[test]
fn no_circle_between_the_files_of_any_directory() {
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
    for c in read_all() {
        for graph in c.graphs().values() {
            for group in tangles(graph) {
                if !known.contains(&group) {
                    report.push_str(&format!("{}: {}", c.name, describe_tangle(&group, graph)));
                }
                found.insert(group);
            }
        }
    }
    assert!(
        report.is_empty(),
        "files that use each other in a circle (move what both need into a lower file):\n{report}"
    );
    let gone: Vec<_> = known.difference(&found).collect();
    assert!(
        gone.is_empty(),
        "these tangles are gone: remove them from KNOWN_TANGLES in tests/layers.rs: {gone:?}"
    );
}

#[test]
fn readme_draws_these_layers() {
    let readme = fs::read_to_string(repo().join("README.md")).expect("README.md");
    let expected = diagram();
    assert!(
        readme.contains(&expected),
        "README.md's layer diagram is stale; it should hold these lines (top first):\n{expected}"
    );
}

#[test]
fn the_reader_sees_known_edges() {
    // Anchors the reader: edges that exist today and that a broken parser would miss.
    let crates = read_all();
    let has = |krate: &str, dir: &[&str], from: &str, to: &str| {
        let c = crates.iter().find(|c| c.name == krate).expect("crate");
        let dir: Vec<String> = dir.iter().map(|s| s.to_string()).collect();
        c.graphs()
            .get(&dir)
            .and_then(|g| g.get(from))
            .is_some_and(|t| t.contains_key(to))
    };
    let lib = "the library";
    assert!(has(lib, &[], "jev", "error"), "crate::Error is error.rs");
    assert!(has(lib, &[], "task", "browser"));
    assert!(has(lib, &["jev"], "jev::client", "jev::validate"));
    assert!(
        has(lib, &["jev"], "jev::tests", "jev::question"),
        "a directory is a node"
    );
    assert!(
        has(lib, &["gateway"], "gateway::browsers", "gateway/mod.rs"),
        "mod.rs is a node"
    );
    assert!(has("the jevgate command", &[], "main.rs", "cli"));
    assert!(has("the jevgate command", &[], "cli", "mcp"));
    assert!(has("the Python binding", &[], "lib.rs", "gateway"));
    assert!(has("the Python binding", &[], "gateway", "lease"));
}

#[test]
fn the_reader_skips_comments_and_strings_and_reads_use_trees() {
    let code = code_only(
        "let a = \"crate::x\"; // crate::y\n/* crate::z */ let b = r#\"crate::w\"#; let c = '\"'; use crate::v;\n",
    );
    assert_eq!(code.matches("crate::").count(), 1, "{code}");
    assert_eq!(code.lines().count(), 2);
    let (leaves, _) = path_tree("{error::E, jev::{A, b::C as D}, *}", 0);
    let leaves: Vec<String> = leaves
        .into_iter()
        .map(|(s, a)| {
            format!(
                "{}{}",
                s.join("::"),
                a.map(|a| format!(" as {a}")).unwrap_or_default()
            )
        })
        .collect();
    assert_eq!(leaves, ["error::E", "jev::A", "jev::b::C as D", "*"]);
    // An inline `mod tests { … }` is the file itself, not a module of its own.
    let code = "use super::a;\nmod tests {\n use super::*;\n}\nmod b;\n";
    assert_eq!(inline_mods(code).len(), 1);
    assert_eq!(mod_declarations(code), ["b"]);
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = fs::read_dir(dir)
        .expect("read source dir")
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
