// Out-of-process (cross-origin) frames of one tab, composed into one walk: a port of
// src/browser/frames.rs. A frame `f<N>` is the N-th frame an observation walked (depth first,
// page order); its refs are `f<N>e<M>`, its container ids `f<N>k<M>`. The parent's walk marks
// each such frame with a slot (its DevTools frame id, the key it was tagged with) and a NUL in
// its text; the frame's own composed walk is spliced in there. Pure data: it never calls the
// browser and never reads or logs page content.

/** How deep out-of-process frames are followed (MAX_FRAME_DEPTH of src/browser/frames.rs). */
export const MAX_FRAME_DEPTH = 4;

/**
 * One attached out-of-process frame, by its DevTools session.
 * @typedef {{frameId: string, parent: string, ready: boolean, world: number|null, taggedIn: {ctx: number, ok: boolean}|null}} FrameInfo
 */

/**
 * One frame an observation covered: `f<N>` is `frames[N - 1]`.
 * @typedef {{session: string, frameId: string, parent: number, fp: string}} ObservedFrame
 */

/** The attached frames of one tab; `""` is the tab's own session (the main frame). */
export class FrameSet {
  constructor() {
    /** @type {Map<string, FrameInfo>} */
    this.bySession = new Map();
  }

  /** @param {string} session @param {string} frameId @param {string} parent */
  add(session, frameId, parent) {
    this.bySession.set(session, { frameId, parent, ready: false, world: null, taggedIn: null });
  }

  /** Removes `session` and every frame nested in it. @param {string} session */
  removeTree(session) {
    if (!this.bySession.delete(session)) return;
    const gone = [session];
    for (let i = 0; i < gone.length; i++) {
      for (const [s, f] of [...this.bySession]) {
        if (f.parent === gone[i]) {
          this.bySession.delete(s);
          gone.push(s);
        }
      }
    }
  }

  clear() {
    this.bySession.clear();
  }

  /** @param {string} parent @returns {Array<{session: string, frameId: string, taggedIn: {ctx: number, ok: boolean}|null}>} */
  childrenOf(parent) {
    const out = [];
    for (const [session, f] of this.bySession) {
      if (f.parent === parent) out.push({ session, frameId: f.frameId, taggedIn: f.taggedIn });
    }
    return out;
  }

  /** @param {string} parent @param {string} frameId */
  sessionOf(parent, frameId) {
    for (const [session, f] of this.bySession) {
      if (f.parent === parent && f.frameId === frameId) return session;
    }
    return null;
  }

  notReady() {
    return [...this.bySession].filter(([, f]) => !f.ready).map(([s]) => s);
  }
}

/**
 * Splits `f<N>e<M>` into `[N, "e<M>"]`; a main-frame ref is frame 0. `null` for a bad shape.
 * @param {string} ref @returns {[number, string]|null}
 */
export function splitRef(ref) {
  if (!ref.startsWith("f")) return [0, ref];
  const m = /^f([0-9]+)(e.*)$/.exec(ref);
  if (!m) return null;
  const n = Number(m[1]);
  return n > 0 && Number.isSafeInteger(n) ? [n, m[2]] : null;
}

/** Prefixes one frame's own refs and container ids with `f<N>`. @param {any} walk @param {number} n */
export function prefixRefs(walk, n) {
  const p = `f${n}`;
  for (const c of Array.isArray(walk.controls) ? walk.controls : []) {
    if (typeof c.ref === "string") c.ref = p + c.ref;
    if (typeof c.container === "string") c.container = p + c.container;
  }
  for (const b of Array.isArray(walk.containers) ? walk.containers : []) {
    if (typeof b.id === "string") b.id = p + b.id;
  }
  if (typeof walk.focus === "string") walk.focus = p + walk.focus;
  if (walk.tree && typeof walk.tree === "object") {
    const stack = [walk.tree];
    while (stack.length) {
      const node = stack.pop();
      if (typeof node.ref === "string") node.ref = p + node.ref;
      if (Array.isArray(node.c)) for (const k of node.c) if (k && typeof k === "object") stack.push(k);
    }
  }
}

/** @param {any} tree @param {string} key @returns {any} */
function findSlot(tree, key) {
  const stack = [tree];
  while (stack.length) {
    const node = stack.pop();
    if (node.slot === key) return node;
    if (Array.isArray(node.c)) for (let i = node.c.length - 1; i >= 0; i--) if (node.c[i] && typeof node.c[i] === "object") stack.push(node.c[i]);
  }
  return null;
}

/**
 * Splices composed child walks into `parent` at its slots (splice of src/browser/frames.rs).
 * @param {any} parent @param {Array<{key: string, walk: any}>} children
 */
export function splice(parent, children) {
  const slots = (Array.isArray(parent.slots) ? parent.slots : [])
    .filter((/** @type {any} */ s) => typeof s.key === "string" && Number.isInteger(s.ci));
  const byKey = new Map(children.map((c) => [c.key, c.walk]));
  const own = Array.isArray(parent.controls) ? parent.controls : [];
  const controls = [];
  let oi = 0;
  const segments = String(parent.text || "").split("\u0000");
  let si = 0;
  let out = segments[si++] ?? "";
  let focus = typeof parent.focus === "string" ? parent.focus : null;
  let tc = false, tt = false, tb = false;
  const boxes = Array.isArray(parent.containers) ? parent.containers : [];
  for (const { key, ci } of slots) {
    while (oi < own.length && oi < ci) controls.push(own[oi++]);
    const child = byKey.get(key);
    if (child) {
      const t = child.truncated || {};
      tc = tc || t.controls === true;
      tt = tt || t.text === true;
      tb = tb || t.containers === true;
      if (Array.isArray(child.containers)) boxes.push(...child.containers);
      if (Array.isArray(child.controls)) controls.push(...child.controls);
    }
    if (si < segments.length) {
      let seg = segments[si++];
      const inner = child && typeof child.text === "string" ? child.text : "";
      out += inner;
      if (inner === "" && out.endsWith("\n") && seg.startsWith("\n")) seg = seg.slice(1);
      out += seg;
    }
    if (focus === null && child && typeof child.focus === "string") focus = child.focus;
    if (child && parent.tree && child.tree) {
      const node = findSlot(parent.tree, key);
      if (node) node.c = Array.isArray(child.tree.c) ? child.tree.c : [];
    }
  }
  while (oi < own.length) controls.push(own[oi++]);
  while (si < segments.length) out += segments[si++];
  parent.controls = controls;
  parent.text = out;
  parent.focus = focus;
  parent.truncated = parent.truncated || {};
  if (tc) parent.truncated.controls = true;
  if (tt) parent.truncated.text = true;
  if (tb) parent.truncated.containers = true;
  if (boxes.length) parent.containers = boxes;
}

/** Cuts a composed walk to the caller's budgets. @param {any} walk @param {any} opts */
export function cutToBudget(walk, opts) {
  const maxControls = Number.isInteger(opts.maxControls) ? opts.maxControls : 2000;
  if (Array.isArray(walk.controls) && walk.controls.length > maxControls) {
    walk.controls.length = maxControls;
    walk.truncated.controls = true;
  }
  const maxText = Number.isInteger(opts.maxTextChars) ? opts.maxTextChars : 20000;
  const chars = [...String(walk.text || "")];
  if (chars.length > maxText) {
    walk.text = chars.slice(0, maxText).join("");
    walk.truncated.text = true;
  }
}
