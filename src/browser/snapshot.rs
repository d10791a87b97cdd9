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

/// Formats the walk's tree (`{r, n, ref?, v?, checked?, disabled?, sensitive?, level?, c}`) as
/// snapshot lines under `max_chars`. Returns the text and whether it was cut.
pub(crate) fn format_tree(tree: &Value, max_chars: usize) -> (String, bool) {
    let mut out = Out {
        text: String::new(),
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
    (out.text, out.truncated)
}

struct Out {
    text: String,
    max: usize,
    truncated: bool,
}

impl Out {
    fn line(&mut self, indent: usize, body: &str) -> bool {
        if self.truncated {
            return false;
        }
        let need = indent * 2 + 3 + body.len();
        if self.text.len() + need > self.max {
            self.truncated = true;
            return false;
        }
        for _ in 0..indent {
            self.text.push_str("  ");
        }
        self.text.push_str("- ");
        self.text.push_str(body);
        self.text.push('\n');
        true
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
        if !out.line(indent, &head) {
            return;
        }
    } else if kids.is_empty() {
        if !out.line(indent, &head) {
            return;
        }
        return;
    } else if let [Child::Text(t)] = kids.as_slice() {
        head.push_str(": ");
        head.push_str(t);
        out.line(indent, &head);
        return;
    } else {
        head.push(':');
        if !out.line(indent, &head) {
            return;
        }
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
        let (text, cut) = format_tree(&tree, 10_000);
        assert!(!cut);
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
        let (text, cut) = format_tree(&json!({"r":"root","n":"","c":kids}), 200);
        assert!(cut);
        assert!(text.len() <= 200);
        assert!(text.lines().all(|l| l.ends_with(']')));
    }
}
