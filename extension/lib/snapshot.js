// The snapshot text (R-BRW-SNAP) and the read tools' text bounds, as pure functions: a port of
// src/browser/snapshot.rs (format_tree, cut_lines, truncation_note) and of the local backend's
// `cut`, so the extension answers browser_read_page / browser_get_text with the same text as
// jevgate-worker. Owns the text format only; it never reads a page and never prints a sensitive
// field's value (the walk never reads one; a node marked sensitive is printed without a value).

/** The most characters one snapshot may show (R-DEV-CAPS). */
export const MAX_SNAPSHOT = 30000;
/** read_page / get_text's max_chars when omitted. */
export const TEXT_DEFAULT_CHARS = 20000;
/** How a cut snapshot's last line begins. */
export const NOTE_PREFIX = "[snapshot truncated at ";

const TRANSPARENT_WHEN_SINGLE = ["listitem", "cell", "row", "group", "region", "form"];

/** @param {string} s */
export function charCount(s) {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

/**
 * The first `max` characters (code points) of `s`, and whether anything was cut.
 * @param {string} s @param {number} max @returns {[string, boolean]}
 */
export function cut(s, max) {
  if (charCount(s) <= max) return [s, false];
  let out = "";
  let n = 0;
  for (const c of s) {
    if (n >= max) break;
    out += c;
    n++;
  }
  return [out, true];
}

/**
 * The last line of a cut snapshot, for the browser_read_page tool's reader.
 * @param {number} shown @param {number} total @param {"tool"|"backend"} surface
 */
export function truncationNote(shown, total, surface) {
  let how;
  if (total <= MAX_SNAPSHOT) {
    how = surface === "tool"
      ? `call browser_read_page again with max_chars ${total} to read all of it`
      : `call snapshot again with maxChars ${total} to read all of it`;
  } else {
    how = surface === "tool"
      ? `the whole tree is over the ${MAX_SNAPSHOT}-character maximum: use browser_find with words of what you look for, browser_read_page with filter "interactive" for the controls only, or browser_get_text for the text`
      : `the whole tree is over the ${MAX_SNAPSHOT}-character maximum: read a part with snapshot region set to a ref shown above, or look for a control with find`;
  }
  return `${NOTE_PREFIX}${shown} of ${total} characters; the rest of the page is not shown; ${how}]`;
}

/** @param {string} s */
function squash(s) {
  return s.split(/\s+/).filter((w) => w.length > 0).join(" ");
}

/**
 * @typedef {{r?: string, n?: string, ref?: string, v?: string, level?: number,
 *   checked?: boolean, disabled?: boolean, sensitive?: boolean, c?: Array<TreeNode|string>}} TreeNode
 * @typedef {{text: string} | {node: TreeNode}} Child
 */

/** @param {TreeNode} node @returns {Child[]} */
function visibleChildren(node) {
  /** @type {Child[]} */
  const out = [];
  for (const c of node.c || []) {
    if (typeof c === "string") {
      const t = squash(c);
      if (t) out.push({ text: t });
    } else if (c && typeof c === "object") {
      const h = hoist(c);
      if (h) out.push({ node: h });
    }
  }
  return out;
}

/** @param {TreeNode} node @returns {TreeNode|null} */
function hoist(node) {
  for (;;) {
    if (node.ref !== undefined) return node;
    const role = node.r || "";
    const named = !!node.n;
    const kids = visibleChildren(node);
    if (kids.length === 0 && !named && role !== "img" && role !== "iframe") return null;
    if (!named && kids.length === 1 && TRANSPARENT_WHEN_SINGLE.includes(role)) {
      const only = kids[0];
      if ("node" in only) {
        node = only.node;
        continue;
      }
    }
    return node;
  }
}

class Out {
  /** @param {number} max */
  constructor(max) {
    /** @type {string[]} */
    this.parts = [];
    this.used = 0;
    this.total = 0;
    this.max = max;
    this.truncated = false;
  }
  /** @param {number} indent @param {string} body */
  line(indent, body) {
    const need = indent * 2 + 3 + charCount(body);
    this.total += need;
    if (this.truncated) return;
    if (this.used + need - 1 > this.max) {
      this.truncated = true;
      return;
    }
    this.used += need;
    this.parts.push("  ".repeat(indent) + "- " + body + "\n");
  }
}

/** @param {TreeNode} node0 @param {number} indent @param {Out} out */
function emit(node0, indent, out) {
  const node = hoist(node0);
  if (!node) return;
  let head = node.r || "generic";
  if (node.n) head += " " + JSON.stringify(node.n);
  if (typeof node.ref === "string") head += ` [ref=${node.ref}]`;
  if (typeof node.level === "number" && node.level >= 0) head += ` [level=${node.level}]`;
  for (const flag of /** @type {const} */ (["checked", "disabled", "sensitive"])) {
    if (node[flag] === true) head += ` [${flag}]`;
  }
  const kids = visibleChildren(node);
  const value = typeof node.v === "string" && node.sensitive === undefined ? node.v : null;
  if (value !== null) {
    out.line(indent, head + ": " + value);
  } else if (kids.length === 0) {
    out.line(indent, head);
    return;
  } else if (kids.length === 1 && "text" in kids[0]) {
    out.line(indent, head + ": " + kids[0].text);
    return;
  } else {
    out.line(indent, head + ":");
  }
  for (const kid of kids) {
    if ("text" in kid) out.line(indent + 1, "text: " + kid.text);
    else emit(kid.node, indent + 1, out);
  }
}

/**
 * Formats the walk's tree as snapshot lines under `maxChars` characters (whole lines only).
 * @param {TreeNode} tree @param {number} maxChars @returns {[string, boolean, number]}
 */
export function formatTree(tree, maxChars) {
  const out = new Out(maxChars);
  if (tree.r === "root") {
    for (const child of visibleChildren(tree)) {
      if ("text" in child) out.line(0, "text: " + child.text);
      else emit(child.node, 0, out);
    }
  } else {
    emit(tree, 0, out);
  }
  let text = out.parts.join("");
  if (text.endsWith("\n")) text = text.slice(0, -1);
  return [text, out.truncated, Math.max(0, out.total - 1)];
}

/**
 * The longest run of whole leading lines of `text` that fits `maxChars`.
 * @param {string} text @param {number} maxChars
 */
export function cutLines(text, maxChars) {
  let used = 0;
  const kept = [];
  for (const line of text.split("\n")) {
    const need = charCount(line) + (kept.length > 0 ? 1 : 0);
    if (used + need > maxChars) break;
    used += need;
    kept.push(line);
  }
  return kept.join("\n");
}

/**
 * The snapshot text of a walked tree with the note of `surface` (the tool's, as
 * BrowserTools::snapshot gives it, or the backend's `snapshot` primitive's):
 * `[text, truncated, total]`.
 * @param {TreeNode|null} tree @param {number} max @param {"tool"|"backend"} [surface]
 * @returns {[string, boolean, number]}
 */
export function snapshotText(tree, max, surface = "tool") {
  if (!tree) return ["", false, 0];
  const [text, truncated, total] = formatTree(tree, max);
  if (!truncated) return [text, false, total];
  // Room for the longer of the two surfaces' notes (as the local backend leaves it).
  const room = Math.max(charCount(truncationNote(max, total, "backend")),
    charCount(truncationNote(max, total, "tool"))) + 1;
  const body = cutLines(text, Math.max(0, max - room));
  const note = truncationNote(charCount(body), total, surface);
  return [body ? body + "\n" + note : note, true, total];
}
