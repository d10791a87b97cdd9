//! The snapshot view (R-BRW-SNAP): the seed-001 compact YAML-like tree with `[ref=eN]` per
//! interactive element, built from the tree the page walk returns.
//!
//! This module owns the text format only: which nodes are shown, how they nest and how they
//! are cut to a character budget. It never reads a page and never shows a sensitive field's
//! value (the walk never reads one; a node marked sensitive is printed without any value).
//!
//! ```text
//! - heading "Sign in" [level=1]
//! - navigation:
//!   - link "Home" [ref=e1]
//! - textbox "Email" [ref=e2]: ann@example.com
//! - textbox "Password" [ref=e3] [sensitive]
//! - checkbox "Remember me" [ref=e4] [checked]
//! - button "Continue" [ref=e5]
//! - text: By continuing you accept the terms.
//! ```

use serde_json::Value;

/// Roles that are dropped when they have no name and hand their single child up.
const TRANSPARENT_WHEN_SINGLE: &[&str] = &["listitem", "cell", "row", "group", "region", "form"];

/// The most characters one snapshot may show (R-DEV-CAPS: read_page ≤ 30,000 characters).
pub(crate) const MAX_SNAPSHOT: usize = crate::caps::TEXT_MAX_CHARS;

/// How a cut snapshot's last line begins (never a tree line: those begin with `- `).
pub(crate) const NOTE_PREFIX: &str = "[snapshot truncated at ";

/// Who reads the note: the backend's `snapshot` command or the `browser_read_page` tool (each
/// is told the options it really has).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Surface {
    Backend,
    Tool,
}

/// The last line of a cut snapshot: how much is shown, how much there is, and how to get the
/// rest with the options that exist (a larger budget when the whole tree fits the maximum;
/// otherwise a narrower read).
pub(crate) fn truncation_note(shown: usize, total: usize, surface: Surface) -> String {
    let how = match (surface, total <= MAX_SNAPSHOT) {
        (Surface::Backend, true) => {
            format!("call snapshot again with maxChars {total} to read all of it")
        }
        (Surface::Tool, true) => {
            format!("call browser_read_page again with max_chars {total} to read all of it")
        }
        (Surface::Backend, false) => format!(
            "the whole tree is over the {MAX_SNAPSHOT}-character maximum: read a part with \
             snapshot region set to a ref shown above, or look for a control with find"
        ),
        (Surface::Tool, false) => format!(
            "the whole tree is over the {MAX_SNAPSHOT}-character maximum: use browser_find with \
             words of what you look for, browser_read_page with filter \"interactive\" for the \
             controls only, or browser_get_text for the text"
        ),
    };
    format!("{NOTE_PREFIX}{shown} of {total} characters; the rest of the page is not shown; {how}]")
}

/// Formats the walk's tree (`{r, n, ref?, v?, checked?, disabled?, sensitive?, level?, c}`) as
/// snapshot lines under `max_chars` characters (whole lines only). Returns the text, whether
/// it was cut, and the length in characters of the whole tree text (counted, never built:
/// linear in the tree).
pub(crate) fn format_tree(tree: &Value, max_chars: usize) -> (String, bool, usize) {
    let mut out = Out {
        text: String::new(),
        used: 0,
        total: 0,
        max: max_chars,
        truncated: false,
    };
    if tree.get("r").and_then(Value::as_str) == Some("root") {
        for child in visible_children(tree) {
            match child {
                Child::Text(t) => {
                    out.line(0, &format!("text: {t}"));
                }
                Child::Node(n) => emit(n, 0, &mut out),
            }
        }
    } else {
        emit(tree, 0, &mut out);
    }
    if out.text.ends_with('\n') {
        out.text.pop();
    }
    (out.text, out.truncated, out.total.saturating_sub(1))
}

/// The longest run of whole leading lines of `text` (a [`format_tree`] result) that fits
/// `max_chars` — what `format_tree` would give with that smaller budget, without walking the
/// tree again.
pub(crate) fn cut_lines(text: String, max_chars: usize) -> String {
    let mut used = 0usize;
    let mut end = 0usize;
    for line in text.split_inclusive('\n') {
        let body = line.strip_suffix('\n').unwrap_or(line);
        // A line costs its characters plus the break before it (none for the first).
        let need = body.chars().count() + usize::from(end > 0);
        if used + need > max_chars {
            break;
        }
        used += need;
        end += line.len();
    }
    let mut text = text;
    text.truncate(end);
    if text.ends_with('\n') {
        text.pop();
    }
    text
}

struct Out {
    text: String,
    /// Characters in `text`.
    used: usize,
    /// Characters of every line, shown or not.
    total: usize,
    max: usize,
    truncated: bool,
}

impl Out {
    /// Adds a line while it fits the budget; after the first one that does not, only counts.
    fn line(&mut self, indent: usize, body: &str) {
        let need = indent * 2 + 3 + body.chars().count();
        self.total = self.total.saturating_add(need);
        if self.truncated {
            return;
        }
        // The last line's newline is dropped at the end, so it does not count.
        if self.used + need - 1 > self.max {
            self.truncated = true;
            return;
        }
        self.used += need;
        for _ in 0..indent {
            self.text.push_str("  ");
        }
        self.text.push_str("- ");
        self.text.push_str(body);
        self.text.push('\n');
    }
}

fn children(node: &Value) -> &[Value] {
    node.get("c")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

fn squash(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Children with blank texts dropped, texts squashed, and empty anonymous structure removed.
fn visible_children(node: &Value) -> Vec<Child<'_>> {
    let mut out = Vec::new();
    for c in children(node) {
        match c {
            Value::String(s) => {
                let t = squash(s);
                if !t.is_empty() {
                    out.push(Child::Text(t));
                }
            }
            Value::Object(_) => {
                if let Some(node) = hoist(c) {
                    out.push(Child::Node(node));
                }
            }
            _ => {}
        }
    }
    out
}

enum Child<'a> {
    Text(String),
    Node(&'a Value),
}

/// Skips nameless transparent wrappers with a single node child; drops empty anonymous
/// structure. `None` when nothing of `node` would be shown.
fn hoist(mut node: &Value) -> Option<&Value> {
    loop {
        let is_control = node.get("ref").is_some();
        if is_control {
            return Some(node);
        }
        let role = node.get("r").and_then(Value::as_str).unwrap_or_default();
        let named = !node
            .get("n")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .is_empty();
        let kids = visible_children(node);
        if kids.is_empty() && !named && role != "img" && role != "iframe" {
            return None;
        }
        if !named && kids.len() == 1 && TRANSPARENT_WHEN_SINGLE.contains(&role) {
            if let Child::Node(only) = kids[0] {
                node = only;
                continue;
            }
        }
        return Some(node);
    }
}

fn emit(node: &Value, indent: usize, out: &mut Out) {
    let Some(node) = hoist(node) else { return };
    let role = node.get("r").and_then(Value::as_str).unwrap_or("generic");
    let mut head = role.to_string();
    if let Some(name) = node
        .get("n")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
    {
        head.push(' ');
        head.push_str(&serde_json::to_string(name).unwrap_or_default());
    }
    if let Some(r) = node.get("ref").and_then(Value::as_str) {
        head.push_str(" [ref=");
        head.push_str(r);
        head.push(']');
    }
    if let Some(level) = node.get("level").and_then(Value::as_u64) {
        head.push_str(&format!(" [level={level}]"));
    }
    for flag in ["checked", "disabled", "sensitive"] {
        if node.get(flag).and_then(Value::as_bool) == Some(true) {
            head.push_str(&format!(" [{flag}]"));
        }
    }
    let kids = visible_children(node);
    let value = node
        .get("v")
        .and_then(Value::as_str)
        .filter(|_| node.get("sensitive").is_none());
    if let Some(v) = value {
        head.push_str(": ");
        head.push_str(v);
        out.line(indent, &head);
    } else if kids.is_empty() {
        out.line(indent, &head);
        return;
    } else if let [Child::Text(t)] = kids.as_slice() {
        head.push_str(": ");
        head.push_str(t);
        out.line(indent, &head);
        return;
    } else {
        head.push(':');
        out.line(indent, &head);
    }
    for kid in kids {
        match kid {
            Child::Text(t) => {
                out.line(indent + 1, &format!("text: {t}"));
            }
            Child::Node(n) => emit(n, indent + 1, out),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn r_brw_snap_compact_tree_with_refs_and_no_sensitive_values() {
        let tree = json!({"r":"root","n":"","c":[
            {"r":"heading","n":"Sign in","level":1,"c":[]},
            {"r":"navigation","n":"","c":[{"r":"list","n":"","c":[
                {"r":"listitem","n":"","c":[{"r":"link","n":"Home","ref":"e1","c":[]}]}]}]},
            "  Welcome   back ",
            {"r":"textbox","n":"Email","ref":"e2","v":"ann@example.com","c":[]},
            {"r":"textbox","n":"Password","ref":"e3","sensitive":true,"c":[]},
            {"r":"checkbox","n":"Remember","ref":"e4","checked":true,"c":[]},
            {"r":"listitem","n":"","c":[]},
            " Footer   text "
        ]});
        let (text, cut, total) = format_tree(&tree, 10_000);
        assert!(!cut);
        assert_eq!(total, text.chars().count());
        assert_eq!(
            text,
            "- heading \"Sign in\" [level=1]\n- navigation:\n  - list:\n    - link \"Home\" [ref=e1]\n- text: Welcome back\n- textbox \"Email\" [ref=e2]: ann@example.com\n- textbox \"Password\" [ref=e3] [sensitive]\n- checkbox \"Remember\" [ref=e4] [checked]\n- text: Footer text"
        );
    }

    #[test]
    fn r_brw_snap_budget_cuts_whole_lines() {
        let kids: Vec<Value> = (1..=100)
            .map(|i| json!({"r":"button","n":format!("B{i}"),"ref":format!("e{i}"),"c":[]}))
            .collect();
        let tree = json!({"r":"root","n":"","c":kids});
        let (text, cut, total) = format_tree(&tree, 200);
        assert!(cut);
        assert!(text.len() <= 200);
        assert_eq!(
            format_tree(&tree, total).0.chars().count(),
            total,
            "a budget of the total reads it all"
        );
        assert!(format_tree(&tree, total - 1).1);
        assert!(text.lines().all(|l| l.ends_with(']')));
        let (whole, cut, whole_total) = format_tree(&tree, 1_000_000);
        assert!(!cut);
        assert_eq!(
            total,
            whole.chars().count(),
            "the whole length is counted past the cut"
        );
        assert_eq!(whole_total, total);
        // The budget counts characters, not bytes.
        let wide = json!({"r":"root","n":"","c":["ไทย".repeat(10)]});
        let (text, cut, total) = format_tree(&wide, 39);
        assert!(!cut, "{text}");
        assert_eq!(total, 38);
    }

    #[test]
    fn issue19_cutting_a_cut_text_again_equals_formatting_with_the_smaller_budget() {
        let kids: Vec<Value> = (1..=300)
            .map(|i| {
                json!({"r":"button","n":format!("ปุ่ม {i}"),"ref":format!("e{i}"),"c":[
                    {"r":"link","n":"x".repeat(i % 7),"ref":format!("f{i}"),"c":[]}]})
            })
            .collect();
        let tree = json!({"r":"root","n":"","c":kids});
        let (first, cut, _) = format_tree(&tree, 5_000);
        assert!(cut);
        for smaller in (0..5_000).step_by(37).chain([4_999, 1, 2, 3]) {
            assert_eq!(
                cut_lines(first.clone(), smaller),
                format_tree(&tree, smaller).0,
                "budget {smaller}"
            );
        }
        assert_eq!(cut_lines(first.clone(), 5_000), first);
    }

    #[test]
    fn issue12_the_truncation_note_offers_what_exists() {
        let fits = truncation_note(20_000, 25_000, Surface::Tool);
        assert!(fits.starts_with(NOTE_PREFIX), "{fits}");
        assert!(fits.contains("20000 of 25000 characters"));
        assert!(fits.contains("max_chars 25000"));
        let over = truncation_note(20_000, 90_000, Surface::Backend);
        assert!(
            over.contains("region") && !over.contains("maxChars"),
            "{over}"
        );
    }
}
