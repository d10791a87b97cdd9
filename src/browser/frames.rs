//! Out-of-process (cross-site) iframes of a tab (R-BRW-OBS "iframes are included", R-BRW-ACT).
//!
//! Chromium renders a cross-site iframe in another process with its own DevTools target; the
//! page library in the parent cannot reach into it. This module owns what we know of those
//! frames — the attached frame sessions of a tab (fed by `Target.attachedToTarget` /
//! `detachedFromTarget` on the reader thread), the frames an observation covered — and the pure
//! work of splicing a frame's walk into its parent's: refs prefixed `f<N>` (frame N in page
//! order, depth first, so `f1e3` never collides with the main frame's `e3`; container ids the
//! same way, `f1k3`), controls at the frame's position, its containers after the parent's, its
//! text where the parent's NUL marker stands, its tree under the parent's `iframe` node. It never calls the browser and never reads or logs page content.

use std::collections::HashMap;

use serde_json::Value;

/// How deep out-of-process frames are followed (a frame inside a frame inside …).
pub(crate) const MAX_FRAME_DEPTH: usize = 4;

/// One attached out-of-process frame.
#[derive(Debug, Clone)]
pub(crate) struct FrameInfo {
    /// The frame's id, which is also its target id; the key the parent's walk knows it by.
    pub frame_id: String,
    /// The session of the frame that hosts its `<iframe>` element.
    pub parent_session: String,
    /// Auto-attach was asked of this session too (for frames nested in it).
    pub ready: bool,
    /// The isolated world of the page library in this frame.
    pub world: Option<i64>,
    /// The parent's world context this frame's `<iframe>` element was tagged in, and whether
    /// tagging succeeded there.
    pub tagged_in: Option<(i64, bool)>,
}

/// The out-of-process frames of one tab, by session id.
#[derive(Debug, Default)]
pub(crate) struct FrameSet {
    by_session: HashMap<String, FrameInfo>,
}

impl FrameSet {
    pub(crate) fn add(&mut self, session: String, frame_id: String, parent_session: String) {
        self.by_session.insert(
            session,
            FrameInfo {
                frame_id,
                parent_session,
                ready: false,
                world: None,
                tagged_in: None,
            },
        );
    }

    /// Removes `session` and every frame nested in it; returns the sessions removed.
    pub(crate) fn remove_tree(&mut self, session: &str) -> Vec<String> {
        let mut gone = Vec::new();
        if self.by_session.remove(session).is_none() {
            return gone;
        }
        gone.push(session.to_string());
        let mut i = 0;
        while i < gone.len() {
            let parent = gone[i].clone();
            let kids: Vec<String> = self
                .by_session
                .iter()
                .filter(|(_, f)| f.parent_session == parent)
                .map(|(s, _)| s.clone())
                .collect();
            for k in kids {
                self.by_session.remove(&k);
                gone.push(k);
            }
            i += 1;
        }
        gone
    }

    pub(crate) fn get(&self, session: &str) -> Option<&FrameInfo> {
        self.by_session.get(session)
    }

    pub(crate) fn get_mut(&mut self, session: &str) -> Option<&mut FrameInfo> {
        self.by_session.get_mut(session)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.by_session.is_empty()
    }

    /// Sessions whose auto-attach is not set up yet.
    pub(crate) fn not_ready(&self) -> Vec<String> {
        self.by_session
            .iter()
            .filter(|(_, f)| !f.ready)
            .map(|(s, _)| s.clone())
            .collect()
    }

    /// The frames hosted by `parent_session`.
    pub(crate) fn children_of(&self, parent_session: &str) -> Vec<HostedFrame> {
        self.by_session
            .iter()
            .filter(|(_, f)| f.parent_session == parent_session)
            .map(|(s, f)| HostedFrame {
                session: s.clone(),
                frame_id: f.frame_id.clone(),
                tagged_in: f.tagged_in,
            })
            .collect()
    }

    /// The session of the frame `frame_id` hosted by `parent_session`.
    pub(crate) fn session_of(&self, parent_session: &str, frame_id: &str) -> Option<String> {
        self.by_session
            .iter()
            .find(|(_, f)| f.parent_session == parent_session && f.frame_id == frame_id)
            .map(|(s, _)| s.clone())
    }
}

/// A frame hosted by another: its session, frame id and where its element was tagged.
pub(crate) struct HostedFrame {
    pub session: String,
    pub frame_id: String,
    pub tagged_in: Option<(i64, bool)>,
}

/// One out-of-process frame an observation covered: frame `f<N>` is `frames[N - 1]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ObservedFrame {
    pub session: String,
    pub frame_id: String,
    /// The frame number of the parent (0 = the main frame).
    pub parent: usize,
    /// The frame's own fingerprint at the observation.
    pub fp: String,
}

/// What an action holds the page to: the main frame's fingerprint and the observed frames.
#[derive(Debug, Clone, Default)]
pub(crate) struct Observed {
    pub fp: String,
    pub frames: Vec<ObservedFrame>,
}

/// Splits `f<N>e<M>` into `(N, "e<M>")`; a main-frame ref `e<M>` is frame 0. `None` when the
/// ref has no valid shape.
pub(crate) fn split_ref(reference: &str) -> Option<(usize, &str)> {
    let Some(rest) = reference.strip_prefix('f') else {
        return Some((0, reference));
    };
    let digits = rest.find('e')?;
    let n: usize = rest[..digits].parse().ok()?;
    (n > 0).then_some((n, &rest[digits..]))
}

/// Prefixes the refs of one frame's own walk (controls, tree nodes, focus) and its container
/// ids (each container's `id`, each control's `container`) with `f<N>`.
pub(crate) fn prefix_refs(walk: &mut Value, n: usize) {
    let prefix = format!("f{n}");
    let fix = |v: &mut Value| {
        if let Some(r) = v.as_str() {
            *v = Value::String(format!("{prefix}{r}"));
        }
    };
    if let Some(controls) = walk.get_mut("controls").and_then(Value::as_array_mut) {
        for c in controls {
            if let Some(r) = c.get_mut("ref") {
                fix(r);
            }
            if let Some(k) = c.get_mut("container") {
                fix(k);
            }
        }
    }
    if let Some(boxes) = walk.get_mut("containers").and_then(Value::as_array_mut) {
        for b in boxes {
            if let Some(k) = b.get_mut("id") {
                fix(k);
            }
        }
    }
    if let Some(f) = walk.get_mut("focus") {
        fix(f);
    }
    if let Some(tree) = walk.get_mut("tree") {
        let mut stack = vec![tree];
        while let Some(node) = stack.pop() {
            if let Some(r) = node.get_mut("ref") {
                fix(r);
            }
            if let Some(kids) = node.get_mut("c").and_then(Value::as_array_mut) {
                stack.extend(kids.iter_mut().filter(|k| k.is_object()));
            }
        }
    }
}

/// One frame's composed walk, ready to splice into its parent at `key`'s slot.
pub(crate) struct Child {
    pub key: String,
    pub walk: Value,
}

/// Splices composed child walks into `parent` (the parent's own walk, refs already prefixed):
/// controls at each slot's index, containers after the parent's (in slot order), text at each
/// NUL marker, tree under the slot's node, focus from a child when the parent has none. Slots
/// without a child and leftover markers vanish. The container count is bounded later, on the
/// observation (`Observation::bound_containers`).
pub(crate) fn splice(parent: &mut Value, children: Vec<Child>) {
    let slots: Vec<(String, usize)> = parent
        .get("slots")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|s| {
                    Some((
                        s.get("key")?.as_str()?.to_string(),
                        s.get("ci")?.as_u64()? as usize,
                    ))
                })
                .collect()
        })
        .unwrap_or_default();
    let mut by_key: HashMap<String, Value> =
        children.into_iter().map(|c| (c.key, c.walk)).collect();

    // Controls, in slot order.
    let own: Vec<Value> = match parent.get_mut("controls").and_then(Value::as_array_mut) {
        Some(a) => std::mem::take(a),
        None => Vec::new(),
    };
    let mut controls = Vec::with_capacity(own.len());
    let mut own = own.into_iter().enumerate().peekable();
    // Text segments between markers.
    let text = parent
        .get("text")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let mut segments = text.split('\u{0}');
    let mut out_text = String::with_capacity(text.len());
    out_text.push_str(segments.next().unwrap_or_default());
    let mut focus = parent.get("focus").cloned().filter(|f| !f.is_null());
    let mut truncated_controls = false;
    let mut truncated_text = false;
    let mut truncated_boxes = false;
    let mut boxes: Vec<Value> = match parent.get_mut("containers").and_then(Value::as_array_mut) {
        Some(a) => std::mem::take(a),
        None => Vec::new(),
    };
    for (key, ci) in &slots {
        while let Some((_, c)) = own.next_if(|(i, _)| i < ci) {
            controls.push(c);
        }
        let mut child = by_key.get_mut(key);
        if let Some(child) = child.as_deref_mut() {
            truncated_controls |= child["truncated"]["controls"].as_bool() == Some(true);
            truncated_text |= child["truncated"]["text"].as_bool() == Some(true);
            truncated_boxes |= child["truncated"]["containers"].as_bool() == Some(true);
            if let Some(a) = child.get_mut("containers").and_then(Value::as_array_mut) {
                boxes.append(a);
            }
        }
        if let Some(a) = child
            .as_deref()
            .and_then(|c| c.get("controls"))
            .and_then(Value::as_array)
        {
            controls.extend(a.iter().cloned());
        }
        let seg = segments.next();
        if let Some(seg) = seg {
            let inner = child
                .as_deref()
                .and_then(|c| c["text"].as_str())
                .unwrap_or_default();
            out_text.push_str(inner);
            // The marker stood on a line of its own: an empty frame leaves one line break.
            let seg = match inner.is_empty() && out_text.ends_with('\n') {
                true => seg.strip_prefix('\n').unwrap_or(seg),
                false => seg,
            };
            out_text.push_str(seg);
        }
        if focus.is_none() {
            focus = child
                .as_deref()
                .and_then(|c| c.get("focus"))
                .filter(|f| f.is_string())
                .cloned();
        }
        if let Some(child) = child {
            if let (Some(tree), Some(sub)) = (parent.get_mut("tree"), child.get_mut("tree")) {
                let kids = sub
                    .get_mut("c")
                    .map(Value::take)
                    .unwrap_or(Value::Array(Vec::new()));
                if let Some(node) = find_slot(tree, key) {
                    node["c"] = kids;
                }
            }
        }
    }
    controls.extend(own.map(|(_, c)| c));
    for seg in segments {
        out_text.push_str(seg);
    }
    parent["controls"] = Value::Array(controls);
    parent["text"] = Value::String(out_text);
    parent["focus"] = focus.unwrap_or(Value::Null);
    if truncated_controls {
        parent["truncated"]["controls"] = Value::Bool(true);
    }
    if truncated_text {
        parent["truncated"]["text"] = Value::Bool(true);
    }
    if truncated_boxes {
        parent["truncated"]["containers"] = Value::Bool(true);
    }
    if !boxes.is_empty() {
        parent["containers"] = Value::Array(boxes);
    }
}

fn find_slot<'a>(tree: &'a mut Value, key: &str) -> Option<&'a mut Value> {
    if tree.get("slot").and_then(Value::as_str) == Some(key) {
        return Some(tree);
    }
    tree.get_mut("c")
        .and_then(Value::as_array_mut)?
        .iter_mut()
        .filter(|k| k.is_object())
        .find_map(|k| find_slot(k, key))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn r_brw_obs_frame_refs_split_and_never_collide_with_main_refs() {
        assert_eq!(split_ref("e3"), Some((0, "e3")));
        assert_eq!(split_ref("f2e13"), Some((2, "e13")));
        assert_eq!(split_ref("f0e1"), None);
        assert_eq!(split_ref("fxe1"), None);
        assert_eq!(split_ref("f3"), None);
        let mut walk = json!({"controls":[{"ref":"e1","container":"k1"}],"focus":"e1",
            "containers":[{"id":"k1","kind":"form"}],
            "tree":{"r":"root","c":[{"r":"button","ref":"e1","c":[]},"text"]}});
        prefix_refs(&mut walk, 4);
        assert_eq!(walk["controls"][0]["ref"], "f4e1");
        assert_eq!(walk["controls"][0]["container"], "f4k1");
        assert_eq!(walk["containers"][0]["id"], "f4k1");
        assert_eq!(walk["focus"], "f4e1");
        assert_eq!(walk["tree"]["c"][0]["ref"], "f4e1");
    }

    #[test]
    fn r_brw_obs_frame_walk_is_spliced_at_the_iframe_position() {
        let mut main = json!({
            "controls":[{"ref":"e1"},{"ref":"e2"},{"ref":"e3"}],
            "text":"before\n\u{0}\nafter",
            "focus":null,
            "truncated":{"controls":false,"text":false},
            "slots":[{"key":"K","ci":2}],
            "tree":{"r":"root","c":[{"r":"iframe","n":"X","slot":"K","c":[]}]},
        });
        let child = json!({
            "controls":[{"ref":"f1e1","container":"f1k1"}],"text":"inside","focus":"f1e1",
            "containers":[{"id":"f1k1","kind":"dialog"}],
            "truncated":{"controls":true,"text":false,"containers":true},
            "tree":{"r":"root","c":[{"r":"button","ref":"f1e1","c":[]}]},
        });
        splice(
            &mut main,
            vec![Child {
                key: "K".into(),
                walk: child,
            }],
        );
        let refs: Vec<&str> = main["controls"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["ref"].as_str().unwrap())
            .collect();
        assert_eq!(refs, ["e1", "e2", "f1e1", "e3"]);
        assert_eq!(main["text"], "before\ninside\nafter");
        assert_eq!(main["focus"], "f1e1");
        assert_eq!(main["truncated"]["controls"], true);
        assert_eq!(main["truncated"]["containers"], true);
        assert_eq!(main["containers"][0]["id"], "f1k1");
        assert_eq!(main["controls"][2]["container"], "f1k1");
        assert_eq!(main["tree"]["c"][0]["c"][0]["ref"], "f1e1");
    }

    #[test]
    fn r_brw_obs_a_slot_without_its_frame_leaves_no_marker() {
        let mut main = json!({"controls":[],"text":"a\n\u{0}\nb","focus":"e1",
            "truncated":{"controls":false},"slots":[{"key":"K","ci":0}]});
        splice(&mut main, Vec::new());
        assert_eq!(main["text"], "a\nb");
        assert_eq!(main["focus"], "e1");
    }

    #[test]
    fn r_brw_obs_removing_a_frame_removes_the_frames_nested_in_it() {
        let mut set = FrameSet::default();
        set.add("A".into(), "fa".into(), "main".into());
        set.add("B".into(), "fb".into(), "A".into());
        set.add("C".into(), "fc".into(), "main".into());
        let mut gone = set.remove_tree("A");
        gone.sort();
        assert_eq!(gone, ["A", "B"]);
        assert!(set.get("C").is_some());
        assert_eq!(set.session_of("main", "fc").as_deref(), Some("C"));
        assert!(set.remove_tree("A").is_empty());
    }
}
