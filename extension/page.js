// jevgate page library (extension/page.js: the one page script, injected by the browser extension
// and include_str!'d by the local Chromium backend), installed in an isolated world of the main frame
// and of every out-of-process (cross-site) frame, so page scripts can neither see nor tamper
// with it. It owns the walk over the composed tree (open shadow roots, same-origin iframes),
// refs for one walk, hit-testing and focusing. A cross-origin iframe is a slot: the walk marks
// where it sits (controls index, a NUL in the text, a tree node) and the backend splices that
// frame's own walk in; `framePoint` maps a point inside such a frame to this frame's viewport.
// It must NEVER read the value of a sensitive field (password, card, one-time code): the
// sensitivity test runs first and the value property is not touched when it says yes.
// Each listed control names its nearest enclosing container (an open dialog first, else a
// form; ids `k1`, `k2`… per walk, at most 32): the container's name and bounded visible text
// come from text nodes and label elements only, never from a form field (input, textarea,
// select, editable content), so no field value ever reaches them.
(() => {
  const W = { refs: new Map(), fp: "", dirty: true, observers: [], keys: new WeakMap(), slots: new Map() };
  const INTERACTIVE = new Set(["button", "link", "checkbox", "radio", "tab", "menuitem",
    "menuitemcheckbox", "menuitemradio", "switch", "option", "textbox", "searchbox", "combobox",
    "slider", "spinbutton", "listbox", "treeitem", "generic-clickable"]);
  const STRUCT = new Set(["heading", "list", "listitem", "navigation", "main", "banner",
    "contentinfo", "complementary", "form", "dialog", "alertdialog", "table", "row", "cell",
    "columnheader", "img", "iframe", "region", "search", "group", "radiogroup", "menu",
    "menubar", "tablist", "tabpanel", "toolbar", "tree", "grid", "article"]);
  const SKIP = new Set(["script", "style", "noscript", "template", "head", "meta", "link",
    "title", "svg", "math", "object", "embed", "canvas", "video", "audio", "map"]);
  const BLOCK = new Set(["p", "div", "li", "ul", "ol", "h1", "h2", "h3", "h4", "h5", "h6", "tr",
    "br", "section", "article", "header", "footer", "nav", "main", "aside", "form", "table",
    "blockquote", "pre", "dl", "dt", "dd", "fieldset", "figure", "figcaption", "hr", "label"]);
  const TEXTY = new Set(["text", "email", "tel", "url", "search", "password", "number", "",
    "date", "datetime-local", "month", "week", "time"]);
  const SENS_AC = /^(cc-|current-password$|new-password$|one-time-code$)/;
  const SENS_WORDS = /pass(word|wd|code)|pwd|card.?(num|no\b)|cc.?(num|no\b)|cvv|cvc|csc|security.?code|card.?code|\botp\b|one.?time|2fa|mfa|verification.?code|auth.?code|\bpin\b|\biban\b|\bssn\b/i;

  const clip = (s, n) => (s.length > n ? s.slice(0, n - 1) + "\u2026" : s);
  // Containers: how many a walk lists, and the bounds of their name and text.
  const MAX_BOXES = 32;
  const BOX_NAME = 200;
  const BOX_TEXT = 300;
  const squash = (s) => s.replace(/\s+/g, " ").trim();

  function roleOf(el, tag) {
    const explicit = el.getAttribute("role");
    if (explicit) {
      const r = explicit.trim().split(/\s+/)[0].toLowerCase();
      if (r && r !== "presentation" && r !== "none" && r !== "generic") return r;
    }
    switch (tag) {
      case "a": return el.hasAttribute("href") ? "link" : null;
      case "button": case "summary": return "button";
      case "input": {
        const t = (el.getAttribute("type") || "text").toLowerCase();
        if (t === "hidden") return null;
        if (t === "button" || t === "submit" || t === "reset" || t === "image" || t === "file") return "button";
        if (t === "checkbox") return "checkbox";
        if (t === "radio") return "radio";
        if (t === "range") return "slider";
        if (t === "number") return "spinbutton";
        if (t === "search") return "searchbox";
        if (t === "color") return "button";
        return el.hasAttribute("list") ? "combobox" : "textbox";
      }
      case "select": return el.multiple || el.size > 1 ? "listbox" : "combobox";
      case "textarea": return "textbox";
      case "h1": case "h2": case "h3": case "h4": case "h5": case "h6": return "heading";
      case "img": return el.getAttribute("alt") ? "img" : null;
      case "nav": return "navigation";
      case "main": return "main";
      case "header": return "banner";
      case "footer": return "contentinfo";
      case "aside": return "complementary";
      case "form": return "form";
      case "dialog": return el.open ? "dialog" : null;
      case "ul": case "ol": return "list";
      case "li": return "listitem";
      case "table": return "table";
      case "tr": return "row";
      case "td": return "cell";
      case "th": return "columnheader";
      case "iframe": case "frame": return "iframe";
    }
    // The root of an editable region carries the attribute; its descendants inherit it.
    if (el.hasAttribute("contenteditable") && el.isContentEditable && !(el.parentElement && el.parentElement.isContentEditable)) return "textbox";
    if (el.hasAttribute("onclick") || (el.hasAttribute("tabindex") && el.tabIndex >= 0)) return "generic-clickable";
    return null;
  }

  function ownText(node, skip, out) {
    for (let c = node.firstChild; c; c = c.nextSibling) {
      if (c === skip) continue;
      if (c.nodeType === 3) out.push(c.data);
      else if (c.nodeType === 1) {
        const t = c.localName;
        if (t === "select" || t === "textarea" || t === "script" || t === "style") continue;
        if (t === "img" && c.getAttribute("alt")) out.push(c.getAttribute("alt"));
        ownText(c, skip, out);
      }
    }
    return out;
  }

  // Labels by control, indexed once per tree scope of a walk (el.labels is a live query per
  // access, which made big forms quadratic).
  let labelIdx = new Map();
  let labelCache = new Map();
  function indexLabels(root) {
    for (const l of root.querySelectorAll("label")) {
      const c = l.control;
      if (!c) continue;
      let a = labelIdx.get(c);
      if (!a) labelIdx.set(c, (a = []));
      a.push(l);
    }
  }
  function labelsOf(el) {
    return labelIdx.get(el) || (W.indexed ? [] : el.labels || []);
  }
  function labelText(el) {
    const labels = labelsOf(el);
    if (!labels.length) return "";
    let t = labelCache.get(el);
    if (t === undefined) {
      t = squash(Array.from(labels).map((l) => ownText(l, el, []).join(" ")).join(" "));
      labelCache.set(el, t);
    }
    return t;
  }

  function isField(el, tag) {
    if (tag === "textarea" || tag === "select") return true;
    if (tag === "input") return true;
    return el.isContentEditable;
  }

  function isSensitive(el, tag) {
    if (tag === "input" && (el.getAttribute("type") || "").toLowerCase() === "password") return true;
    const ac = (el.getAttribute("autocomplete") || "").toLowerCase().split(/\s+/);
    if (ac.some((a) => SENS_AC.test(a))) return true;
    const hay = [el.getAttribute("name"), el.id, el.getAttribute("aria-label"),
      el.getAttribute("placeholder"), labelText(el)].join(" ");
    return SENS_WORDS.test(hay);
  }

  function nameOf(el, tag, role) {
    let n = el.getAttribute("aria-label");
    if (n && n.trim()) return squash(n);
    const lb = el.getAttribute("aria-labelledby");
    if (lb) {
      const root = el.getRootNode();
      n = lb.split(/\s+/).map((id) => {
        const e = root.getElementById ? root.getElementById(id) : null;
        return e ? e.textContent : "";
      }).join(" ");
      if (n.trim()) return squash(n);
    }
    if (tag === "input") {
      const t = (el.getAttribute("type") || "text").toLowerCase();
      if (t === "submit" || t === "reset" || t === "button") {
        return squash(el.getAttribute("value") || (t === "submit" ? "Submit" : t === "reset" ? "Reset" : ""));
      }
      if (t === "image") return squash(el.getAttribute("alt") || "Submit");
    }
    if (isField(el, tag) && tag !== "button") {
      n = labelText(el);
      if (n) return n;
      return squash(el.getAttribute("placeholder") || el.getAttribute("title") || "");
    }
    if (tag === "img") return squash(el.getAttribute("alt") || "");
    if (tag === "iframe" || tag === "frame") return squash(el.getAttribute("title") || el.getAttribute("name") || "");
    if (role === "heading" || INTERACTIVE.has(role) || role === "cell" || role === "columnheader" || role === "listitem") {
      n = squash(ownText(el, null, []).join(" "));
      if (n) return n;
      const img = el.querySelector && el.querySelector("[aria-label], img[alt], svg title");
      if (img) n = squash(img.getAttribute("aria-label") || img.getAttribute("alt") || img.textContent || "");
      if (n) return n;
    }
    return squash(el.getAttribute("title") || "");
  }

  function visible(el) {
    if (el.checkVisibility) {
      return el.checkVisibility({ visibilityProperty: true, checkVisibilityCSS: true });
    }
    return !!(el.offsetWidth || el.offsetHeight || el.getClientRects().length);
  }

  function fnv(s, h) {
    for (let i = 0; i < s.length; i++) {
      h ^= s.charCodeAt(i);
      h = Math.imul(h, 16777619) >>> 0;
    }
    return h;
  }

  // Text of `root` for a container's name: text nodes only, no form field (input, textarea,
  // select, editable content) and nothing hidden by markup; at most `max` characters and a
  // bounded number of nodes, so a huge or hostile subtree costs a constant.
  function plainText(root, max) {
    let out = "";
    let budget = 2000;
    const stack = [root];
    while (stack.length && out.length <= max && budget-- > 0) {
      const n = stack.pop();
      if (n.nodeType === 3) { out += n.data; continue; }
      if (n.nodeType !== 1) continue;
      const t = n.localName;
      if (SKIP.has(t) || t === "input" || t === "textarea" || t === "select" || t === "option") continue;
      if (n.hasAttribute("contenteditable") && n.isContentEditable) continue;
      if (n.hidden || n.getAttribute("aria-hidden") === "true") continue;
      for (let c = n.lastChild; c; c = c.previousSibling) stack.push(c);
    }
    return squash(out.replace(/\u0000/g, ""));
  }

  // The accessible name of a container: aria-label, aria-labelledby, its first legend, its
  // first heading.
  function boxName(el) {
    let n = el.getAttribute("aria-label");
    if (n && n.trim()) return squash(n);
    const lb = el.getAttribute("aria-labelledby");
    if (lb) {
      const root = el.getRootNode();
      n = lb.split(/\s+/).slice(0, 16).map((id) => {
        const e = id && root.getElementById ? root.getElementById(id) : null;
        return e ? plainText(e, BOX_NAME) : "";
      }).join(" ");
      if (n.trim()) return squash(n);
    }
    const legend = el.querySelector("legend");
    if (legend) { n = plainText(legend, BOX_NAME); if (n) return n; }
    const h = el.querySelector("h1, h2, h3, h4, h5, h6, [role=heading]");
    if (h) { n = plainText(h, BOX_NAME); if (n) return n; }
    return "";
  }

  // Adds page text to a container's bounded text buffer (whitespace squashed as it goes).
  function boxText(rec, d) {
    const room = BOX_TEXT + 1 - rec.buf.length;
    if (room <= 0) return;
    let s = d.length > 4 * BOX_TEXT ? d.slice(0, 4 * BOX_TEXT) : d;
    s = s.replace(/\s+/g, " ");
    if (!rec.buf || rec.buf.endsWith(" ")) s = s.replace(/^ /, "");
    rec.buf += s.length > room ? s.slice(0, room) : s;
  }

  // The walk. Returns {controls, text, fp, tree}; refs are assigned in page order.
  function walk(opts) {
    const maxControls = opts.maxControls || 2000;
    const maxText = opts.maxTextChars || 20000;
    const wantTree = !!opts.tree;
    const regionEl = opts.region ? W.refs.get(opts.region) || null : null;
    const refs = new Map();
    const controls = [];
    const textParts = [];
    let textLen = 0;
    let textTruncated = false;
    let controlsTruncated = false;
    let h1 = 2166136261 >>> 0;
    let count = 0;
    let regionNode = null;
    const roots = [];
    const slots = [];
    const slotEls = new Map();
    let untagged = 0;
    // Containers: one record per container element met (memoized by element), each with its
    // bounded text; an id (`k<N>`) only once a listed control is inside it.
    const boxes = [];
    const boxOf = new Map();
    let boxesTruncated = false;
    const active = deepActive();
    let focus = null;

    function pushText(s) {
      if (textLen >= maxText) { if (s.trim()) textTruncated = true; return; }
      if (textLen + s.length > maxText) { s = s.slice(0, maxText - textLen); textTruncated = true; }
      textParts.push(s);
      textLen += s.length;
    }

    function addTreeText(parent, s) {
      if (!wantTree || !parent) return;
      const last = parent.c[parent.c.length - 1];
      if (typeof last === "string") parent.c[parent.c.length - 1] = last + s;
      else parent.c.push(s);
    }

    function boxId(rec) {
      if (!rec) return undefined;
      if (rec.id) return rec.id;
      if (boxes.length >= MAX_BOXES) { boxesTruncated = true; return undefined; }
      rec.id = "k" + (boxes.length + 1);
      boxes.push(rec);
      return rec.id;
    }

    // `box`: the record of the nearest enclosing container (null: none); `quiet`: inside
    // editable content, whose text is a field's value and never a container's text.
    function visit(node, parent, inControl, box, quiet) {
      if (node.nodeType === 3) {
        let d = node.data;
        // NUL marks a frame slot in the text; a page's own NULs are dropped.
        if (d.indexOf("\u0000") >= 0) d = d.replace(/\u0000/g, "");
        if (box && !quiet && d.length) boxText(box, d);
        if (d.trim()) {
          pushText(d);
          if (!inControl) addTreeText(parent, d);
        } else if (d.length) {
          pushText(" ");
          if (!inControl) addTreeText(parent, " ");
        }
        return;
      }
      if (node.nodeType !== 1 && node.nodeType !== 11) return;
      if (node.nodeType === 11) {
        indexLabels(node);
        for (let c = node.firstChild; c; c = c.nextSibling) visit(c, parent, inControl, box, quiet);
        return;
      }
      const el = node;
      const tag = el.localName;
      if (SKIP.has(tag)) return;
      if (el.hidden || el.getAttribute("aria-hidden") === "true" || el.inert) return;
      if (tag === "slot") {
        const assigned = el.assignedNodes({ flatten: true });
        if (assigned.length) for (const c of assigned) visit(c, parent, inControl, box, quiet);
        else for (let c = el.firstChild; c; c = c.nextSibling) visit(c, parent, inControl, box, quiet);
        return;
      }
      if (!visible(el)) {
        // display:contents and similar have no box but render children.
        if (getComputedStyle(el).display !== "contents") return;
      }
      const block = BLOCK.has(tag);
      if (block) pushText("\n");
      const role = roleOf(el, tag);
      // The nearest open dialog, else the nearest form (a form inside a dialog is the dialog's).
      const kind = role === "dialog" || role === "alertdialog" || el.getAttribute("aria-modal") === "true"
        ? "dialog" : role === "form" ? "form" : null;
      let inner = box;
      if (kind && !(kind === "form" && box && box.kind === "dialog")) {
        inner = boxOf.get(el);
        if (!inner) { inner = { el, kind, buf: "", id: null }; boxOf.set(el, inner); }
      }
      const hush = quiet || tag === "textarea" || tag === "select" ||
        (el.hasAttribute("contenteditable") && el.isContentEditable);
      // Blocks and controls stand apart in a container's text.
      const apart = inner && !hush && (block || (role && INTERACTIVE.has(role)));
      if (apart) boxText(inner, " ");
      let me = parent;
      let childInControl = inControl;
      if (role && INTERACTIVE.has(role)) {
        const r = el.getBoundingClientRect();
        if (r.width > 0 || r.height > 0 || labelsOf(el).length) {
          count++;
          const name = clip(nameOf(el, tag, role), 200);
          h1 = fnv(role + "\u0001" + name + "\u0002", h1);
          // Every interactive element gets its ref, in page order, whatever the budget: a
          // budget cuts what is reported, never which refs hold for this generation.
          const ref = "e" + count;
          refs.set(ref, el);
          if (el === active) focus = ref;
          const listed = controls.length < maxControls;
          if (!listed) controlsTruncated = true;
          if (listed || wantTree) {
            const field = isField(el, tag);
            const t = tag === "input" ? (el.getAttribute("type") || "text").toLowerCase() : "";
            const editable = (tag === "textarea" || (tag === "input" && TEXTY.has(t)) || (el.isContentEditable && tag !== "select")) && !el.disabled && !el.readOnly;
            const sensitive = field && tag !== "select" && t !== "checkbox" && t !== "radio" && isSensitive(el, tag);
            const c = { ref, role: role === "generic-clickable" ? "generic" : role, name, editable,
              searchLike: false, sensitive, actions: [] };
            if (listed && box) { const k = boxId(box); if (k) c.container = k; }
            if (!sensitive) {
              // Values are read only here, after the sensitivity test said no.
              let v = null;
              if (tag === "select") { const o = el.selectedOptions && el.selectedOptions[0]; v = o ? squash(o.textContent) : ""; }
              else if (tag === "textarea" || (tag === "input" && TEXTY.has(t))) v = el.value;
              else if (el.isContentEditable) v = el.textContent;
              if (v !== null && v.length <= 500) c.value = v;
            }
            if (t === "checkbox" || t === "radio") c.checked = !!el.checked;
            else if (el.getAttribute("aria-checked")) c.checked = el.getAttribute("aria-checked") === "true";
            const disabled = el.disabled || el.getAttribute("aria-disabled") === "true";
            if (!disabled) {
              c.actions.push("click");
              if (editable) c.actions.push("type");
              if (tag === "select") c.actions.push("select");
            } else c.disabled = true;
            const hay = (t + " " + (el.getAttribute("name") || "") + " " + el.id + " " + name + " " + (el.getAttribute("placeholder") || "")).toLowerCase();
            c.searchLike = editable && (role === "searchbox" || t === "search" || /search|query|\bq\b|ค้นหา|検索/.test(hay) || !!(el.closest && el.closest("[role=search], search")));
            if (listed) controls.push(c);
            if (wantTree) {
              const n = { r: c.role, n: name, ref, c: [] };
              if (c.value !== undefined && c.value !== "") n.v = clip(squash(c.value), 200);
              if (c.checked) n.checked = true;
              if (disabled) n.disabled = true;
              if (sensitive) n.sensitive = true;
              if (parent) parent.c.push(n);
              me = n;
              if (el === regionEl) regionNode = n;
            }
          }
          childInControl = true;
          if (tag === "select" || tag === "textarea") { if (block) pushText("\n"); return; }
        }
      } else if (wantTree && role && STRUCT.has(role)) {
        const n = { r: role, n: role === "heading" || role === "img" || role === "iframe" || role === "dialog" ? clip(nameOf(el, tag, role), 200) : "", c: [] };
        if (role === "heading") n.level = tag.length === 2 && tag[0] === "h" ? +tag[1] : +(el.getAttribute("aria-level") || 2);
        if (parent) parent.c.push(n);
        me = n;
        if (el === regionEl) regionNode = n;
      } else if (wantTree && el === regionEl) {
        const n = { r: "region", n: "", c: [] };
        if (parent) parent.c.push(n);
        me = n;
        regionNode = n;
      }
      // A heading's text is its name; a label's text is its control's name: not repeated.
      if (wantTree && (role === "heading" || (tag === "label" && el.control))) childInControl = true;
      if (tag === "iframe" || tag === "frame") {
        let doc = null;
        try { doc = el.contentDocument; } catch (e) { doc = null; }
        if (doc && doc.documentElement) {
          roots.push(doc);
          indexLabels(doc);
          // A frame's document is its own: no container of this document encloses its controls
          // (the same as a cross-origin frame's walk).
          visit(doc.documentElement, me, childInControl, null, false);
        } else if (!doc) {
          // Cross-origin: another process renders it. The fingerprint counts the slot, so a
          // frame coming or going changes the generation even when no control here changed.
          h1 = fnv("\u0003frame", h1);
          const key = W.keys.get(el);
          if (key && !slotEls.has(key)) {
            slotEls.set(key, el);
            slots.push({ key, ci: controls.length });
            pushText("\n\u0000\n");
            if (wantTree && me !== parent) me.slot = key;
          } else untagged++;
        }
        return;
      }
      if (el.shadowRoot) {
        roots.push(el.shadowRoot);
        visit(el.shadowRoot, me, childInControl, inner, hush);
      } else {
        for (let c = el.firstChild; c; c = c.nextSibling) visit(c, me, childInControl, inner, hush);
      }
      if (block) pushText("\n");
      if (apart) boxText(inner, " ");
      // A container's text is part of the one around it.
      if (inner !== box && box && !hush && inner.buf) { boxText(box, " "); boxText(box, inner.buf); }
    }

    const top = { r: "root", n: "", c: [] };
    labelCache = new Map();
    labelIdx = new Map();
    indexLabels(document);
    W.indexed = true;
    roots.push(document);
    if (document.documentElement) visit(document.documentElement, top, false, null, false);
    W.indexed = false;
    W.refs = refs;
    W.slots = slotEls;
    const fp = count + ":" + h1.toString(16);
    W.fp = fp;
    W.dirty = false;
    watch(roots);
    const text = textParts.join("").replace(/[ \t\u00a0]+/g, " ").replace(/ *\n[\s]*/g, "\n").trim();
    const se = document.scrollingElement || document.documentElement;
    const res = {
      url: location.href, title: document.title, fp, focus, controls, text,
      truncated: { controls: controlsTruncated, text: textTruncated },
      scroll: scrollState(se),
    };
    if (boxes.length) {
      res.containers = boxes.map((b) => ({ id: b.id, kind: b.kind, name: clip(boxName(b.el), BOX_NAME),
        text: clip(squash(b.buf), BOX_TEXT) }));
    }
    if (boxesTruncated) res.truncated.containers = true;
    if (slots.length) res.slots = slots;
    if (untagged) res.untagged = untagged;
    // Inside a frame, focus counts only when that frame holds the page's focus.
    if (window !== window.top && !document.hasFocus()) res.focus = null;
    if (wantTree) res.tree = opts.region ? regionNode : top;
    return res;
  }

  function scrollState(se) {
    se = se || document.scrollingElement || document.documentElement;
    const top = se.scrollTop;
    const view = window.innerHeight;
    const height = se.scrollHeight;
    return { atTop: top <= 1, atBottom: top + view >= height - 2, top, view, height };
  }

  // A viewport point where a wheel event scrolls the page itself: not over an iframe (which
  // would scroll the frame) nor over an element that scrolls on its own. The centre first.
  function wheelPoint() {
    const w = window.innerWidth, h = window.innerHeight;
    for (const fy of [0.5, 0.25, 0.75, 0.1, 0.9]) {
      for (const fx of [0.5, 0.1, 0.9, 0.02, 0.98]) {
        const x = Math.floor(w * fx), y = Math.floor(h * fy);
        if (scrollsPage(document.elementFromPoint(x, y))) return { x, y };
      }
    }
    return { x: Math.floor(w / 2), y: Math.floor(h / 2) };
  }

  function scrollsPage(el) {
    for (let e = el; e && e !== document.documentElement && e !== document.body;) {
      if (/^(IFRAME|FRAME|EMBED|OBJECT)$/.test(e.tagName)) return false;
      const s = getComputedStyle(e);
      if (/(auto|scroll)/.test(s.overflowY) && e.scrollHeight > e.clientHeight + 1) return false;
      const root = e.getRootNode();
      e = e.parentElement || (root && root.host) || null;
    }
    return true;
  }

  function watch(roots) {
    for (const o of W.observers) o.disconnect();
    W.observers = [];
    for (const r of roots) {
      try {
        const o = new MutationObserver(() => { W.dirty = true; });
        o.observe(r, { subtree: true, childList: true, attributes: true, characterData: true });
        W.observers.push(o);
      } catch (e) { W.dirty = true; }
    }
  }

  function deepActive() {
    let a = document.activeElement;
    for (;;) {
      if (a && a.shadowRoot && a.shadowRoot.activeElement) { a = a.shadowRoot.activeElement; continue; }
      if (a && (a.localName === "iframe" || a.localName === "frame")) {
        let d = null;
        try { d = a.contentDocument; } catch (e) { d = null; }
        if (d && d.activeElement && d.activeElement !== d.body) { a = d.activeElement; continue; }
      }
      return a;
    }
  }

  // Is the page still the one the fingerprint describes? Recomputes only after a mutation.
  function stillSame(fp) {
    for (const o of W.observers) if (o.takeRecords().length) W.dirty = true;
    if (!W.dirty) return W.fp === fp;
    return walk({ maxControls: 1, maxTextChars: 1 }).fp === fp;
  }

  function frameOffset(el) {
    let x = 0, y = 0;
    let win = el.ownerDocument.defaultView;
    while (win && win.frameElement) {
      const fe = win.frameElement;
      const r = fe.getBoundingClientRect();
      const cs = fe.ownerDocument.defaultView.getComputedStyle(fe);
      x += r.left + fe.clientLeft + (parseFloat(cs.paddingLeft) || 0);
      y += r.top + fe.clientTop + (parseFloat(cs.paddingTop) || 0);
      win = fe.ownerDocument.defaultView;
    }
    return { x, y };
  }

  function deepHit(x, y) {
    let hit = document.elementFromPoint(x, y);
    let ox = 0, oy = 0;
    for (let guard = 0; hit && guard < 64; guard++) {
      if (hit.shadowRoot) {
        const inner = hit.shadowRoot.elementFromPoint(x - ox, y - oy);
        if (inner && inner !== hit) { hit = inner; continue; }
      }
      if (hit.localName === "iframe" || hit.localName === "frame") {
        let d = null;
        try { d = hit.contentDocument; } catch (e) { d = null; }
        if (d) {
          const r = hit.getBoundingClientRect();
          const cs = getComputedStyle(hit);
          ox += r.left + hit.clientLeft + (parseFloat(cs.paddingLeft) || 0);
          oy += r.top + hit.clientTop + (parseFloat(cs.paddingTop) || 0);
          const inner = d.elementFromPoint(x - ox, y - oy);
          if (inner) { hit = inner; continue; }
        }
      }
      break;
    }
    return hit;
  }

  function composedParent(n) {
    if (n.parentNode) {
      const p = n.parentNode;
      if (p.nodeType === 11 && p.host) return p.host;
      if (p.nodeType === 9) return p.defaultView && p.defaultView.frameElement ? p.defaultView.frameElement : null;
      return p;
    }
    return n.host || null;
  }

  function reaches(hit, target) {
    for (let n = hit, guard = 0; n && guard < 10000; n = composedParent(n), guard++) {
      if (n === target) return true;
    }
    if (hit && hit.localName === "label" && hit.control === target) return true;
    if (hit && target.labels) for (const l of target.labels) if (reaches(hit, l)) return true;
    return false;
  }

  function lookup(ref, fp) {
    if (!stillSame(fp)) return { status: "changed" };
    const el = W.refs.get(ref);
    if (!el) return { status: "missing" };
    if (!el.isConnected) return { status: "changed" };
    return { el };
  }

  // Scrolls the target into view and hit-tests its centre. {status, x, y}.
  function point(ref, fp) {
    const found = lookup(ref, fp);
    if (!found.el) return found;
    let el = found.el;
    let r = el.getBoundingClientRect();
    if ((r.width === 0 || r.height === 0) && el.labels && el.labels.length) {
      el = el.labels[0];
      r = el.getBoundingClientRect();
    }
    if (r.width === 0 || r.height === 0) return { status: "nobox" };
    el.scrollIntoView({ block: "center", inline: "center", behavior: "instant" });
    r = el.getBoundingClientRect();
    const off = frameOffset(el);
    const x = off.x + r.left + r.width / 2;
    const y = off.y + r.top + r.height / 2;
    if (x < 0 || y < 0 || x > window.innerWidth || y > window.innerHeight) return { status: "obscured" };
    const hit = deepHit(x, y);
    if (!hit || !reaches(hit, found.el)) return { status: "obscured" };
    // A link (or a submit control of a form) usually navigates: the click waits a moment for
    // the navigation to start so its result and the next read see it.
    const nav = !!(found.el.closest && (found.el.closest("a[href]") ||
      found.el.closest("button:not([type=button]):not([type=reset]), input[type=submit], input[type=image]") && found.el.form));
    return { status: "ok", x, y, nav };
  }

  // Maps a point of the cross-origin frame `key` (its own viewport) to this frame's viewport,
  // scrolling the frame element into view when the point is outside, and hit-tests it: the
  // frame element itself must be what is there.
  function framePoint(key, fx, fy, fp) {
    if (!stillSame(fp)) return { status: "changed" };
    const el = W.slots.get(key);
    if (!el || !el.isConnected) return { status: "changed" };
    const at = () => {
      const r = el.getBoundingClientRect();
      const cs = el.ownerDocument.defaultView.getComputedStyle(el);
      const off = frameOffset(el);
      return { x: off.x + r.left + el.clientLeft + (parseFloat(cs.paddingLeft) || 0) + fx,
        y: off.y + r.top + el.clientTop + (parseFloat(cs.paddingTop) || 0) + fy };
    };
    const inView = (p) => p.x >= 0 && p.y >= 0 && p.x <= window.innerWidth && p.y <= window.innerHeight;
    let p = at();
    if (!inView(p)) {
      el.scrollIntoView({ block: "center", inline: "center", behavior: "instant" });
      p = at();
      if (!inView(p)) return { status: "obscured" };
    }
    const hit = deepHit(p.x, p.y);
    if (hit !== el) return { status: "obscured" };
    return { status: "ok", x: p.x, y: p.y };
  }

  // Focuses an editable target and selects its content so typing replaces it.
  function focusField(ref, fp) {
    const found = lookup(ref, fp);
    if (!found.el) return found;
    const el = found.el;
    const tag = el.localName;
    const t = tag === "input" ? (el.getAttribute("type") || "text").toLowerCase() : "";
    const editable = (tag === "textarea" || (tag === "input" && TEXTY.has(t)) || el.isContentEditable) && !el.disabled && !el.readOnly;
    if (!editable) return { status: "unfocusable" };
    el.scrollIntoView({ block: "center", inline: "center", behavior: "instant" });
    el.focus({ preventScroll: true });
    if (deepActive() !== el) return { status: "unfocusable" };
    if (tag === "input" || tag === "textarea") {
      try { el.select(); } catch (e) { /* types without select() keep the caret */ }
    } else {
      const sel = el.ownerDocument.getSelection();
      const range = el.ownerDocument.createRange();
      range.selectNodeContents(el);
      sel.removeAllRanges();
      sel.addRange(range);
    }
    return { status: "ok" };
  }

  // Sets a form control's value the way the extension's form_input does (value + events).
  function setValue(ref, fp, value) {
    const found = lookup(ref, fp);
    if (!found.el) return found;
    const el = found.el;
    const tag = el.localName;
    if (el.disabled) return { status: "unfocusable" };
    const t = tag === "input" ? (el.getAttribute("type") || "text").toLowerCase() : "";
    if (t === "checkbox" || t === "radio") {
      const want = value === "true" || value === "on" || value === "checked" || value === "1";
      if (el.checked !== want) el.checked = want;
    } else if (tag === "select") {
      const opt = Array.from(el.options).find((o) => o.value === value || squash(o.textContent) === value);
      if (!opt) return { status: "nooption" };
      el.value = opt.value;
    } else if (tag === "input" || tag === "textarea") {
      if (el.readOnly) return { status: "unfocusable" };
      const proto = tag === "input" ? HTMLInputElement.prototype : HTMLTextAreaElement.prototype;
      const setter = Object.getOwnPropertyDescriptor(proto, "value").set;
      setter.call(el, value);
    } else if (el.isContentEditable) {
      el.textContent = value;
    } else return { status: "unfocusable" };
    el.dispatchEvent(new Event("input", { bubbles: true, composed: true }));
    el.dispatchEvent(new Event("change", { bubbles: true }));
    return { status: "ok" };
  }

  // The refs (of the last walk) of the interactive elements a CSS selector matches in the
  // main document, in page order; `matched` counts every matched element.
  function cssRefs(sel, fp) {
    if (!stillSame(fp)) return { status: "changed" };
    let matched;
    try { matched = document.querySelectorAll(sel); } catch (e) { return { status: "badselector" }; }
    const set = new Set(matched);
    const refs = [];
    for (const [ref, el] of W.refs) if (set.has(el)) refs.push(ref);
    return { status: "ok", refs: refs.slice(0, 50), count: refs.length, matched: matched.length };
  }

  return {
    observe: (opts) => JSON.stringify(walk(opts)),
    cssRefs: (sel, fp) => JSON.stringify(cssRefs(sel, fp)),
    point: (ref, fp) => JSON.stringify(point(ref, fp)),
    focusField: (ref, fp) => JSON.stringify(focusField(ref, fp)),
    setValue: (ref, fp, v) => JSON.stringify(setValue(ref, fp, v)),
    check: (fp) => JSON.stringify({ status: stillSame(fp) ? "ok" : "changed" }),
    framePoint: (key, x, y, fp) => JSON.stringify(framePoint(key, x, y, fp)),
    // Called by the backend on an <iframe> element (DOM.resolveNode into this world) to name
    // the out-of-process frame it hosts; the key is the frame's DevTools id, never page data.
    tag: (el, key) => { W.keys.set(el, key); W.dirty = true; return "ok"; },
    // The <input type=file> of a ref, as an object (the backend hands it to
    // DOM.setFileInputFiles), or a JSON status when the ref is not one.
    fileTarget: (ref, fp) => {
      const found = lookup(ref, fp);
      if (!found.el) return JSON.stringify(found);
      const el = found.el;
      if (el.localName !== "input" || (el.getAttribute("type") || "").toLowerCase() !== "file") return JSON.stringify({ status: "notfile" });
      if (el.disabled) return JSON.stringify({ status: "unfocusable" });
      return el;
    },
    hasFocus: () => JSON.stringify(document.hasFocus()),
    scroll: () => JSON.stringify(scrollState()),
    wheelPoint: () => JSON.stringify(wheelPoint()),
  };
})()
