// The nine browser_* tools of R-DEV-TOOLS on the agent's tabs, with the result shapes of
// src/browser/tools.rs (BrowserTools over the local backend), so the extension and
// jevgate-worker answer the same on the same page. Agent tabs are those the extension opened
// for the agent and those the person shared from the popup, kept in one tab group; every other
// tab is invisible here (never listed, never attached to).
//
// It trusts nothing it is sent (the gateway validated the arguments, and every value is still
// read defensively); it never logs page content, typed text, field values or URLs, and never
// reads a sensitive field (the page script's rule). Browser-batch runs are the gateway's.

import { CODES, ToolFailure } from "./protocol.js";
import { TabDriver, Run, refused, stale } from "./driver.js";
import { charEvents, keyEvents, parseKey } from "./keys.js";
import { cut, snapshotText, TEXT_DEFAULT_CHARS, MAX_SNAPSHOT } from "./snapshot.js";

const SCREENSHOT_MAX_BASE64 = 150000;
const JAVASCRIPT_MAX_CHARS = 20000;
const KEYED_CHARS = 256;
const MAX_SCROLL_SCREENS = 5;
const GROUP_TITLE = "Agent";

/** @param {any} args @param {string} key @returns {string|null} */
function str(args, key) {
  return args && typeof args[key] === "string" ? args[key] : null;
}

/** @param {any} args @param {string} key @returns {number|null} */
function uint(args, key) {
  const v = args ? args[key] : undefined;
  return Number.isInteger(v) && v >= 0 ? v : null;
}

/**
 * `back`/`forward`, or the URL to open (a bare domain gets https://).
 * @param {string} url @returns {{history: "back"|"forward"} | {url: string}}
 */
export function navigationTarget(url) {
  if (url === "back" || url === "forward") return { history: url };
  const t = url.trim();
  const colon = t.indexOf(":");
  if (colon > 0) {
    const scheme = t.slice(0, colon);
    const after = t.slice(colon + 1).split(/[/?#]/)[0];
    const port = after.length > 0 && /^[0-9]+$/.test(after);
    if (/^[A-Za-z][A-Za-z0-9+.-]*$/.test(scheme) && !port) return { url };
  }
  return { url: `https://${url}` };
}

/** Whether a URL may be opened in an agent tab. @param {string} url */
function openable(url) {
  return /^https?:\/\//i.test(url) || url === "about:blank";
}

/**
 * The agent's tabs (persisted in chrome.storage.session so a suspended worker finds them
 * again) and their drivers.
 */
export class AgentTabs {
  constructor() {
    /** @type {number[]} */
    this.ids = [];
    /** @type {number|null} */
    this.current = null;
    /** @type {number|null} */
    this.groupId = null;
    /** @type {Map<number, TabDriver>} */
    this.drivers = new Map();
    this.loaded = false;
  }

  async load() {
    if (this.loaded) return;
    const s = await chrome.storage.session.get("agentTabs");
    /** @type {any} */
    const v = s.agentTabs;
    if (v && Array.isArray(v.ids)) {
      this.ids = v.ids.filter((/** @type {unknown} */ n) => Number.isInteger(n));
      this.current = Number.isInteger(v.current) ? v.current : null;
      this.groupId = Number.isInteger(v.groupId) ? v.groupId : null;
    }
    this.loaded = true;
  }

  async save() {
    await chrome.storage.session.set({ agentTabs: { ids: this.ids, current: this.current, groupId: this.groupId } });
  }

  /** @param {number} tabId */
  has(tabId) {
    return this.ids.includes(tabId);
  }

  /** @param {number} tabId */
  driver(tabId) {
    let d = this.drivers.get(tabId);
    if (!d) {
      d = new TabDriver(tabId);
      this.drivers.set(tabId, d);
    }
    return d;
  }

  /** Adds a tab to the agent's set and group. @param {number} tabId */
  async add(tabId) {
    await this.load();
    if (!this.ids.includes(tabId)) this.ids.push(tabId);
    this.current = tabId;
    try {
      const groupId = await chrome.tabs.group(this.groupId !== null ? { tabIds: [tabId], groupId: this.groupId } : { tabIds: [tabId] });
      if (this.groupId !== groupId) {
        this.groupId = groupId;
        await chrome.tabGroups.update(groupId, { title: GROUP_TITLE, color: "blue" });
      }
    } catch (_) {
      // The group may be gone (the person ungrouped it) or unsupported: start a new one next
      // time; the tab is an agent tab either way.
      this.groupId = null;
    }
    await this.save();
  }

  /** A tab closed or no longer the agent's. @param {number} tabId */
  async remove(tabId) {
    await this.load();
    const d = this.drivers.get(tabId);
    if (d) {
      d.gone = true;
      d.changed();
      this.drivers.delete(tabId);
    }
    if (!this.ids.includes(tabId)) return;
    this.ids = this.ids.filter((id) => id !== tabId);
    if (this.current === tabId) this.current = null;
    await this.save();
  }

  /** The agent's live tabs, in order, with their URL and title. */
  async list() {
    await this.load();
    const out = [];
    for (const id of [...this.ids]) {
      try {
        const t = await chrome.tabs.get(id);
        out.push({ id, url: t.url || t.pendingUrl || "", title: t.title || "" });
      } catch (_) {
        await this.remove(id);
      }
    }
    return out;
  }

  /** Opens a new agent tab. @param {string} url */
  async create(url) {
    // Active: a background tab is not rendered, and input that needs a frame (the wheel) would
    // wait for one; the person sees the agent work in its own tab.
    const t = await chrome.tabs.create({ url, active: true });
    if (t.id === undefined) throw new ToolFailure(CODES.EXECUTION_FAILED, "the tab could not be opened");
    await this.add(t.id);
    return t.id;
  }

  /** The current agent tab's driver, opening a blank agent tab when there is none. */
  async currentDriver() {
    await this.load();
    if (this.current === null || !this.ids.includes(this.current)) {
      const live = await this.list();
      this.current = live.length ? live[live.length - 1].id : await this.create("about:blank");
      await this.save();
    }
    return this.driver(this.current);
  }
}

/**
 * Serves the nine tools from the agent's tabs.
 */
export class Tools {
  /** @param {AgentTabs} tabs */
  constructor(tabs) {
    this.tabs = tabs;
    /** @type {number|null} the generation whose refs were handed out last */
    this.handedOut = null;
    this.opCount = 0;
    this.ops = new OperationLog();
    /** @type {string|null} the tab lease's id (tab_lease) */
    this.lease = null;
  }

  op() {
    this.opCount += 1;
    return `ext-${Date.now().toString(36)}-${this.opCount}`;
  }

  /** @param {Run} run */
  async tab(run) {
    const d = await this.tabs.currentDriver();
    await d.attach(run);
    return d;
  }

  refGeneration() {
    if (this.handedOut === null) {
      throw new ToolFailure(CODES.EXECUTION_FAILED, "no refs handed out yet: read the page first (browser_read_page or browser_find)");
    }
    return this.handedOut;
  }

  /** @param {Run} run @param {TabDriver} d */
  async currentGeneration(run, d) {
    const o = await d.settled(run, () => d.observe(run, { maxControls: 1, maxTextChars: 1 }));
    return { generation: o.generation, focus: /** @type {string|null} */ (o.walked.focus ?? null) };
  }

  /** @param {Run} run @param {TabDriver} d @param {number|null} maxChars */
  async snapshot(run, d, maxChars) {
    const o = await d.settled(run, () => d.observe(run, { maxControls: 1, maxTextChars: 1, tree: true }));
    const max = Math.min(maxChars ?? TEXT_DEFAULT_CHARS, MAX_SNAPSHOT);
    let text, truncated;
    if (o.dialog) {
      [text, truncated] = [`- dialog ${JSON.stringify(o.dialog.type)}: ${o.dialog.message}`, false];
    } else {
      [text, truncated] = snapshotText(o.walked.tree || null, max);
    }
    this.handedOut = o.generation;
    return { generation: o.generation, url: o.url, title: o.title, text, truncated };
  }

  /** A mutating tool's answer with the fresh snapshot. @param {Run} run @param {TabDriver} d @param {ReturnType<TabDriver["result"]>} action */
  async afterAction(run, d, action) {
    /** @type {any} */
    const out = { operationId: action.operationId, navigationStarted: action.navigationStarted, settled: action.settled };
    if (action.notes.length) out.notes = action.notes;
    if (action.dialog) {
      out.dialog = action.dialog;
      return out;
    }
    try {
      out.snapshot = await this.snapshot(run, d, null);
    } catch (e) {
      if (!(e instanceof ToolFailure) || e.code !== CODES.EXECUTION_FAILED) throw e;
      out.snapshotError = e.message;
    }
    return out;
  }

  /** Makes the agent tab at `index` current. @param {number} index */
  async selectTab(index) {
    const list = await this.tabs.list();
    const t = list[index];
    if (!t) throw new ToolFailure(CODES.TAB_UNAVAILABLE, "no tab with that tabId");
    if (this.tabs.current !== t.id) {
      this.tabs.current = t.id;
      await this.tabs.save();
      this.handedOut = null;
    }
  }

  /** @param {Run} run @param {any} args */
  async browserTabs(run, args) {
    const action = str(args, "action") || "list";
    const list = await this.tabs.list();
    const byIndex = () => {
      const i = uint(args, "tabId");
      if (i === null) throw new ToolFailure(CODES.EXECUTION_FAILED, "`tabId` is required to switch or close a tab");
      const t = list[i];
      if (!t) throw new ToolFailure(CODES.TAB_UNAVAILABLE, "no tab with that tabId");
      return t.id;
    };
    switch (action) {
      case "list":
        break;
      case "create": {
        const u = str(args, "url");
        let url = "about:blank";
        if (u !== null) {
          const target = navigationTarget(u);
          if ("url" in target) url = target.url;
        }
        if (!openable(url)) throw refused("NAVIGATION_FAILED", "navigation failed: only http(s) addresses open in an agent tab");
        await run.race(this.tabs.create(url));
        break;
      }
      case "switch": {
        this.tabs.current = byIndex();
        await this.tabs.save();
        break;
      }
      case "close": {
        const id = byIndex();
        await run.race(chrome.tabs.remove(id));
        await this.tabs.remove(id);
        break;
      }
      default:
        throw new ToolFailure(CODES.EXECUTION_FAILED, "unknown action: one of list, create, switch, close");
    }
    if (action !== "list") this.handedOut = null;
    const after = await this.tabs.list();
    return { tabs: after.map((t, i) => ({ tabId: i, url: t.url, title: t.title, current: t.id === this.tabs.current })) };
  }

  // ---- The backend's primitives (SPEC §6; the shapes of src/browser/backend.rs), on which
  // ---- the tools are built as BrowserTools builds them on the local backend.

  /** @param {Run} run @param {TabDriver} d @param {string} operationId @param {string} url */
  async tabNavigate(run, d, operationId, url) {
    if (!openable(url)) throw refused("NAVIGATION_FAILED", "navigation failed: only http(s) addresses open in an agent tab");
    if (d.dialog) {
      // Navigating away always works: the page's dialog is dismissed first.
      try {
        await d.send(run, "Page.handleJavaScriptDialog", { accept: d.dialog.type === "beforeunload" });
      } catch (_) { /* closed meanwhile */ }
      d.dialog = null;
    }
    const marks = d.marks();
    d.markSent();
    const res = await d.send(run, "Page.navigate", { url });
    if (res && typeof res.errorText === "string" && res.errorText) {
      const cls = res.errorText.replace(/[^A-Za-z0-9_:]/g, "").slice(0, 80);
      throw refused("NAVIGATION_FAILED", `navigation failed: ${cls}`);
    }
    const settled = await d.waitSettled(run, marks);
    const r = d.result(operationId, "tab_navigate", marks.started);
    r.navigationStarted = true;
    r.settled = settled;
    return r;
  }

  /** @param {Run} run @param {TabDriver} d @param {string} operationId @param {number} generation @param {"back"|"forward"} direction */
  async tabHistory(run, d, operationId, generation, direction) {
    d.checkGeneration(generation);
    const h = await d.send(run, "Page.getNavigationHistory", {});
    const entry = h.entries[h.currentIndex + (direction === "back" ? -1 : 1)];
    if (!entry) throw refused("HISTORY_UNAVAILABLE", "no history entry in that direction; nothing was sent");
    const marks = d.marks();
    d.markSent();
    await d.send(run, "Page.navigateToHistoryEntry", { entryId: entry.id });
    const settled = await d.waitSettled(run, marks);
    const r = d.result(operationId, "tab_history", marks.started);
    r.navigationStarted = true;
    r.settled = settled;
    return r;
  }

  /** @param {Run} run @param {TabDriver} d @param {string} operationId @param {number} generation @param {string} reference */
  async pageClick(run, d, operationId, generation, reference) {
    const obs = d.checkGeneration(generation);
    const v = await d.pointOf(run, obs, reference, false);
    const before = d.startedSeq;
    if (v.n > 0) {
      // Delivery, not timing: the frame acknowledges the mouse at the point first.
      d.markSent();
      await d.awaitFrameInput(run, obs, v.n, v.x, v.y);
    }
    await d.clickAt(run, v.x, v.y);
    if (v.nav) await d.navGrace(run, before);
    return d.result(operationId, "page_click", before);
  }

  /** @param {Run} run @param {TabDriver} d @param {string} operationId @param {number} generation @param {number} x @param {number} y */
  async mouseClick(run, d, operationId, generation, x, y) {
    const obs = d.checkGeneration(generation);
    await d.checkAll(run, obs);
    const before = d.startedSeq;
    await d.clickAt(run, x, y);
    return d.result(operationId, "mouse_click", before);
  }

  /**
   * @param {Run} run @param {TabDriver} d @param {string} operationId @param {number} generation
   * @param {string} reference @param {string} text @param {boolean} submit
   */
  async pageType(run, d, operationId, generation, reference, text, submit) {
    const obs = d.checkGeneration(generation);
    const scope = d.scopeOf(obs, reference);
    if (scope.n > 0) d.targetStatus(await d.page(run, `check(${JSON.stringify(obs.fp)})`));
    await d.checkFrames(run, obs);
    d.targetStatus(await d.pageIn(run, scope.session, `focusField(...${JSON.stringify([scope.inner, scope.fp])})`));
    if (scope.session) await d.waitFrameFocus(run, scope.session);
    const before = d.startedSeq;
    d.markSent();
    const chars = [...text];
    let pending = "";
    for (const c of chars.slice(0, KEYED_CHARS)) {
      const events = charEvents(c);
      if (events) {
        if (pending) {
          await d.input(run, "Input.insertText", { text: pending });
          pending = "";
        }
        for (const ev of events) await d.input(run, "Input.dispatchKeyEvent", ev);
      } else pending += c;
      if (d.dialog) return d.result(operationId, "page_type", before);
    }
    pending += chars.slice(KEYED_CHARS).join("");
    if (pending) await d.input(run, "Input.insertText", { text: pending });
    if (submit && !d.dialog) await this.press(run, d, "Enter");
    return d.result(operationId, "page_type", before);
  }

  /** @param {Run} run @param {TabDriver} d @param {string} operationId @param {number} generation @param {string} key @param {number} count */
  async pageKeypress(run, d, operationId, generation, key, count) {
    if (!(count >= 1 && count <= 20)) throw refused("INVALID_ARGUMENT", "invalid argument `count`: must be 1 to 20");
    await d.checkAll(run, d.checkGeneration(generation));
    const before = d.startedSeq;
    for (let i = 0; i < count; i++) {
      await this.press(run, d, key);
      if (d.dialog) break;
    }
    return d.result(operationId, "page_keypress", before);
  }

  /** One screen. @param {Run} run @param {TabDriver} d @param {string} operationId @param {number} generation @param {string} dir */
  async pageScroll(run, d, operationId, generation, dir) {
    await d.checkAll(run, d.checkGeneration(generation));
    const s = await d.page(run, "scroll()");
    const atLimit = dir === "up" ? s.atTop !== false : s.atBottom !== false;
    if (atLimit) throw refused("SCROLL_LIMIT", "the page is already scrolled to that limit; nothing was sent");
    const top = Number(s.top) || 0;
    const view = Number(s.view) || 600;
    const at = await d.page(run, "wheelPoint()");
    const delta = Math.max(view * 0.8, 40);
    const before = d.startedSeq;
    await d.input(run, "Input.dispatchMouseEvent", {
      type: "mouseWheel", x: Number(at.x) || 0, y: Number(at.y) || 0, deltaX: 0, deltaY: dir === "up" ? -delta : delta,
    });
    // Wheel scrolling is asynchronous: done when it moved and then held still for one poll.
    const end = Date.now() + 2000;
    let prev = top, moved = false;
    while (Date.now() < end) {
      await run.sleep(15);
      const now = Number((await d.page(run, "scroll()")).top);
      const cur = Number.isFinite(now) ? now : prev;
      if (moved && Math.abs(cur - prev) < 0.5) break;
      moved = moved || Math.abs(cur - top) >= 1;
      prev = cur;
    }
    return d.result(operationId, "page_scroll", before);
  }

  /** @param {Run} run @param {TabDriver} d @param {string} operationId @param {number} generation @param {string} reference @param {string} value */
  async formInput(run, d, operationId, generation, reference, value) {
    const obs = d.checkGeneration(generation);
    const scope = d.scopeOf(obs, reference);
    if (scope.n > 0) d.targetStatus(await d.page(run, `check(${JSON.stringify(obs.fp)})`));
    await d.checkFrames(run, obs);
    const before = d.startedSeq;
    const v = await d.pageIn(run, scope.session, `setValue(...${JSON.stringify([scope.inner, scope.fp, value])})`);
    if (v && v.status === "ok") d.markSent();
    d.targetStatus(v);
    return d.result(operationId, "form_input", before);
  }

  /** The script's JSON value as text, cut. @param {Run} run @param {TabDriver} d @param {string} code */
  async javascript(run, d, code) {
    const refusal = d.refusal();
    if (refusal) throw refusal;
    d.markSent();
    const res = await d.send(run, "Runtime.evaluate", {
      expression: code, returnByValue: true, awaitPromise: true, userGesture: true,
      timeout: Math.max(1, Math.min(60000, run.deadline - Date.now())),
    });
    if (res.exceptionDetails) throw new ToolFailure(CODES.JAVASCRIPT_ERROR, "the script failed: the script threw an exception");
    const value = res.result && "value" in res.result ? res.result.value : null;
    let json;
    try {
      json = JSON.stringify(value === undefined ? null : value);
    } catch (_) {
      throw new ToolFailure(CODES.JAVASCRIPT_ERROR, "the script failed: the result is not serializable");
    }
    return cut(json, JAVASCRIPT_MAX_CHARS);
  }

  // ---- The nine tools.

  /** @param {Run} run @param {any} args */
  async navigate(run, args) {
    const d = await this.tab(run);
    const target = navigationTarget(str(args, "url") || "");
    if ("history" in target) {
      const { generation } = await this.currentGeneration(run, d);
      return this.afterAction(run, d, await this.tabHistory(run, d, this.op(), generation, target.history));
    }
    return this.afterAction(run, d, await this.tabNavigate(run, d, this.op(), target.url));
  }

  /** @param {Run} run @param {TabDriver} d @param {string} key */
  async press(run, d, key) {
    d.markSent();
    for (const ev of keyEvents(key)) {
      await d.input(run, "Input.dispatchKeyEvent", ev);
      if (d.dialog) break;
    }
  }

  /** @param {Run} run @param {any} args */
  async computer(run, args) {
    const d = await this.tab(run);
    switch (str(args, "action") || "") {
      case "click": {
        const reference = str(args, "ref");
        const coordinate = args && Array.isArray(args.coordinate) && args.coordinate.length === 2 ? args.coordinate : null;
        if (reference !== null) {
          return this.afterAction(run, d, await this.pageClick(run, d, this.op(), this.refGeneration(), reference));
        }
        if (coordinate) {
          const { generation } = await this.currentGeneration(run, d);
          const [x, y] = coordinate.map((/** @type {unknown} */ n) => (typeof n === "number" ? n : -1));
          return this.afterAction(run, d, await this.mouseClick(run, d, this.op(), generation, x, y));
        }
        throw new ToolFailure(CODES.EXECUTION_FAILED, "click needs a `ref` or a `coordinate`");
      }
      case "type": {
        let generation, reference = str(args, "ref");
        if (reference !== null) generation = this.refGeneration();
        else {
          const g = await this.currentGeneration(run, d);
          if (!g.focus) throw new ToolFailure(CODES.EXECUTION_FAILED, "FOCUS_REQUIRED: no field has keyboard focus; pass the field's `ref`");
          [generation, reference] = [g.generation, g.focus];
        }
        return this.afterAction(run, d, await this.pageType(run, d, this.op(), generation, reference, str(args, "text") || "", false));
      }
      case "key": {
        const key = parseKey(str(args, "text") || "");
        if (!key) {
          throw new ToolFailure(CODES.EXECUTION_FAILED,
            "unsupported key: one of Enter, Tab, Escape, Backspace, ArrowUp, ArrowDown, ArrowLeft, ArrowRight (no combinations)");
        }
        const { generation } = await this.currentGeneration(run, d);
        return this.afterAction(run, d, await this.pageKeypress(run, d, this.op(), generation, key, 1));
      }
      case "scroll": {
        const dir = str(args, "scroll_direction") || "down";
        if (dir !== "up" && dir !== "down") throw new ToolFailure(CODES.EXECUTION_FAILED, "only up and down scrolling is supported");
        const screens = Math.min(Math.max(uint(args, "scroll_amount") ?? 1, 1), MAX_SCROLL_SCREENS);
        let last = null;
        for (let n = 0; n < screens; n++) {
          const { generation } = await this.currentGeneration(run, d);
          try {
            last = await this.pageScroll(run, d, this.op(), generation, dir);
          } catch (e) {
            // Reaching the end after moving is not a failure.
            if (n > 0 && e instanceof ToolFailure && e.message.startsWith("SCROLL_LIMIT")) break;
            throw e;
          }
        }
        if (!last) throw new ToolFailure(CODES.EXECUTION_FAILED, "nothing scrolled");
        return this.afterAction(run, d, last);
      }
      case "screenshot":
      case "zoom": {
        let region = null;
        if (args.action === "zoom") {
          const r = Array.isArray(args.region) ? args.region.filter((/** @type {unknown} */ n) => typeof n === "number") : [];
          if (r.length !== 4 || !(r[2] > r[0] && r[3] > r[1])) {
            throw new ToolFailure(CODES.EXECUTION_FAILED, "zoom needs a `region` [x0, y0, x1, y1] with x1 > x0 and y1 > y0");
          }
          region = { x: r[0], y: r[1], width: r[2] - r[0], height: r[3] - r[1] };
        }
        const shot = await this.screenshot(run, d, region);
        return { image: shot.data, mediaType: `image/${shot.format}`, width: shot.width, height: shot.height, generation: shot.generation };
      }
      default:
        throw new ToolFailure(CODES.EXECUTION_FAILED, "unknown action: one of click, type, key, scroll, screenshot, zoom");
    }
  }

  /**
   * A JPEG of the viewport (or a region), downscaled here until it fits 150,000 base64
   * characters before it is ever sent (seed 000).
   * @param {Run} run @param {TabDriver} d @param {{x: number, y: number, width: number, height: number}|null} region
   */
  async screenshot(run, d, region) {
    const refusal = d.refusal();
    if (refusal) throw refusal;
    const generation = d.generation;
    const metrics = await d.send(run, "Page.getLayoutMetrics", {});
    const view = metrics.cssLayoutViewport || {};
    const vw = view.clientWidth || 1280, vh = view.clientHeight || 800;
    const rect = region
      ? { x: Math.max(0, region.x), y: Math.max(0, region.y), width: Math.min(Math.max(region.width, 1), 16000), height: Math.min(Math.max(region.height, 1), 16000) }
      : { x: view.pageX || 0, y: view.pageY || 0, width: vw, height: vh };
    let quality = 80, scale = 1;
    for (let i = 0; i < 12; i++) {
      const shot = await d.send(run, "Page.captureScreenshot", {
        format: "jpeg", quality, captureBeyondViewport: false,
        clip: { x: rect.x, y: rect.y, width: rect.width, height: rect.height, scale },
      });
      const data = typeof shot.data === "string" ? shot.data : "";
      if (data && data.length <= SCREENSHOT_MAX_BASE64) {
        return {
          format: "jpeg", data, width: Math.round(rect.width * scale), height: Math.round(rect.height * scale),
          quality, scale, generation,
        };
      }
      const over = Math.max(data.length, 1) / SCREENSHOT_MAX_BASE64;
      if (quality > 30) quality = over > 2.5 ? 30 : quality === 80 ? 60 : quality === 60 ? 45 : 30;
      else scale = Math.max(scale / Math.sqrt(over) * 0.9, 0.02);
    }
    throw new ToolFailure(CODES.EXECUTION_FAILED, "EXECUTION_FAILED: the screenshot stays over the size cap at the smallest scale");
  }

  /**
   * Runs one tool; the result has the shape jevgate-worker's has.
   * @param {string} tool @param {any} args @param {Run} run
   */
  async run(tool, args, run) {
    args = args && typeof args === "object" && !Array.isArray(args) ? args : {};
    const tabIndex = uint(args, "tabId");
    if (tabIndex !== null && tool !== "browser_tabs") await this.selectTab(tabIndex);
    switch (tool) {
      case "browser_navigate":
        return this.navigate(run, args);
      case "browser_read_page": {
        const d = await this.tab(run);
        if (str(args, "filter") === "interactive") {
          const o = await d.settled(run, () => d.observe(run, {}));
          this.handedOut = o.generation;
          const lines = (o.walked.controls || []).map((/** @type {any} */ c) => `- ${c.role} ${JSON.stringify(c.name)} [ref=${c.ref}]`);
          return { generation: o.generation, url: o.url, title: o.title, text: lines.join("\n"), truncated: !!(o.walked.truncated && o.walked.truncated.controls) };
        }
        return this.snapshot(run, d, uint(args, "max_chars"));
      }
      case "browser_get_text": {
        const d = await this.tab(run);
        const max = Math.min(uint(args, "max_chars") ?? TEXT_DEFAULT_CHARS, MAX_SNAPSHOT);
        const o = await d.settled(run, () => d.observe(run, { maxControls: 1, maxTextChars: max + 1 }));
        const [text, cutHere] = cut(String(o.walked.text || ""), max);
        return { generation: o.generation, text, truncated: cutHere || !!(o.walked.truncated && o.walked.truncated.text) };
      }
      case "browser_find": {
        const d = await this.tab(run);
        const words = (str(args, "query") || "").split(/\s+/).filter((w) => w).map((w) => w.toLowerCase());
        const o = await d.settled(run, () => d.observe(run, {}));
        const matches = (o.walked.controls || []).filter((/** @type {any} */ c) => {
          const hay = `${c.role} ${c.name}`.toLowerCase();
          return words.every((w) => hay.includes(w));
        }).slice(0, 20);
        this.handedOut = o.generation;
        return { generation: o.generation, matches };
      }
      case "browser_computer":
        return this.computer(run, args);
      case "browser_form_input": {
        const v = args.value;
        let value;
        if (typeof v === "string") value = v;
        else if (typeof v === "boolean" || typeof v === "number") value = String(v);
        else throw new ToolFailure(CODES.EXECUTION_FAILED, "`value` must be a string, boolean or number");
        const d = await this.tab(run);
        const generation = this.refGeneration();
        return this.afterAction(run, d, await this.formInput(run, d, this.op(), generation, str(args, "ref") || "", value));
      }
      case "browser_javascript": {
        const d = await this.tab(run);
        const [text] = await this.javascript(run, d, str(args, "code") || "");
        let out;
        try {
          out = JSON.parse(text);
        } catch (_) {
          out = text;
        }
        return { value: out };
      }
      case "browser_tabs":
        return this.browserTabs(run, args);
      case "browser_batch":
        throw new ToolFailure(CODES.EXECUTION_FAILED, "browser_batch is run by the gateway one action at a time");
      default:
        return this.primitive(tool, args, run);
    }
  }

  /**
   * One backend primitive (SPEC §6) in the local backend's result shapes, for a task whose
   * target is this device. A mutation's operationId is recorded (chrome.storage.session) so
   * `operation_status` answers what became of it; an id is used once.
   * @param {string} tool @param {any} args @param {Run} run
   */
  async primitive(tool, args, run) {
    const bad = (/** @type {string} */ name, /** @type {string} */ why) => refused("INVALID_ARGUMENT", `invalid argument \`${name}\`: ${why}`);
    const gen = () => {
      const g = uint(args, "generation");
      if (g === null) throw bad("command", "`generation` must be a non-negative integer");
      return g;
    };
    const need = (/** @type {string} */ k) => {
      const v = str(args, k);
      if (v === null) throw bad("command", `\`${k}\` must be a string`);
      return v;
    };
    switch (tool) {
      case "operation_status": {
        const id = str(args, "operationId") || "";
        if (!id || id.length > 200) throw bad("operationId", "must be 1 to 200 characters");
        return this.ops.status(id);
      }
      case "tab_lease": {
        const action = str(args, "action");
        if (action === "acquire") {
          if (this.lease) throw refused("TAB_LEASE_HELD", "the tab is leased by another holder");
          this.lease = `lease-${Date.now().toString(36)}-${++this.ops.seq}`;
          return { held: true, leaseId: this.lease };
        }
        if (action === "release") {
          if (this.lease && this.lease !== str(args, "leaseId")) throw refused("TAB_LEASE_HELD", "the tab is leased by another holder");
          this.lease = null;
          return { held: false };
        }
        throw bad("command", "`action` must be acquire or release");
      }
      default:
        break;
    }
    const d = await this.tab(run);
    const read = async (/** @type {{maxControls?: number, maxTextChars?: number, tree?: boolean, region?: string}} */ opts) =>
      d.settled(run, () => d.observe(run, opts));
    switch (tool) {
      case "observe": {
        const o = await read({ maxControls: uint(args, "maxControls") ?? 2000, maxTextChars: uint(args, "maxTextChars") ?? TEXT_DEFAULT_CHARS });
        return this.observation(run, d, o);
      }
      case "snapshot": {
        const region = typeof args.region === "string" ? args.region : undefined;
        const o = await read({ maxControls: 1, maxTextChars: 1, tree: true, region });
        const max = Math.min(uint(args, "maxChars") ?? TEXT_DEFAULT_CHARS, MAX_SNAPSHOT);
        if (!o.dialog && region !== undefined && !o.walked.tree) {
          throw refused("TARGET_NOT_FOUND", "target not found: the region ref is not on the page");
        }
        const [text, truncated, total] = o.dialog
          ? [`- dialog ${JSON.stringify(o.dialog.type)}: ${o.dialog.message}`, false, 0]
          : snapshotText(o.walked.tree || null, max, "backend");
        /** @type {any} */
        const out = { generation: o.generation, url: o.url, title: o.title, text: wrapText(text), truncated };
        if (truncated) out.totalChars = total;
        return out;
      }
      case "get_text": {
        const max = Math.min(uint(args, "maxChars") ?? TEXT_DEFAULT_CHARS, MAX_SNAPSHOT);
        const o = await read({ maxControls: 1, maxTextChars: max + 1 });
        const [text, cutHere] = cut(String(o.walked.text || ""), max);
        return { generation: o.generation, text: wrapText(text), truncated: cutHere || !!(o.walked.truncated && o.walked.truncated.text) };
      }
      case "find": {
        const words = need("query").split(/\s+/).filter((w) => w).map((w) => w.toLowerCase());
        const o = await read({});
        const controls = (o.walked.controls || []).filter((/** @type {any} */ c) =>
          words.every((w) => `${c.role} ${c.name}`.toLowerCase().includes(w))).slice(0, uint(args, "maxResults") ?? 20);
        return { generation: o.generation, controls };
      }
      default:
        break;
    }
    if (tool === "handle_dialog") {
      if (!d.dialog) throw refused("NO_DIALOG", "no dialog is open");
      if (typeof args.accept !== "boolean") throw bad("command", "`accept` must be a boolean");
      /** @type {any} */
      const params = { accept: args.accept };
      const promptText = str(args, "promptText");
      if (promptText !== null) params.promptText = promptText;
      const before = d.startedSeq;
      await d.send(run, "Page.handleJavaScriptDialog", params);
      await d.waitFor(run, () => !d.dialog || d.gone, 10000);
      const r = d.result("", "handle_dialog", before);
      return r.dialog ? { ...r, notes: undefined } : { ...r, dialog: undefined, notes: undefined };
    }
    const operationId = str(args, "operationId");
    if (tool === "page_screenshot") {
      const r = args.region;
      const region = r && typeof r === "object" ? { x: Number(r.x) || 0, y: Number(r.y) || 0, width: Number(r.width) || 1, height: Number(r.height) || 1 } : null;
      return this.screenshot(run, d, region);
    }
    /** @type {Record<string, () => Promise<any>>} */
    const mutations = {
      page_click: () => this.pageClick(run, d, operationId || "", gen(), need("ref")),
      mouse_click: () => this.mouseClick(run, d, operationId || "", gen(), Number(args.x), Number(args.y)),
      page_type: () => this.pageType(run, d, operationId || "", gen(), need("ref"), need("text"), args.submit === true),
      page_keypress: () => {
        const key = parseKey(need("key"));
        if (!key) throw bad("command", "`key` must be a named key");
        return this.pageKeypress(run, d, operationId || "", gen(), key, uint(args, "count") ?? 1);
      },
      page_scroll: () => this.pageScroll(run, d, operationId || "", gen(), need("direction")),
      tab_navigate: () => this.tabNavigate(run, d, operationId || "", need("url")),
      tab_history: () => {
        const dir = need("direction");
        if (dir !== "back" && dir !== "forward") throw bad("command", "`direction` must be back or forward");
        return this.tabHistory(run, d, operationId || "", gen(), dir);
      },
      form_input: () => this.formInput(run, d, operationId || "", gen(), need("ref"), need("value")),
      javascript: async () => {
        const [json, truncated] = await this.javascript(run, d, need("code"));
        return { operationId: operationId || "", value: wrapText(json), truncated };
      },
    };
    const go = mutations[tool];
    if (!go) throw new ToolFailure(CODES.EXECUTION_FAILED, "EXECUTION_FAILED: this device does not serve that primitive");
    if (!operationId || operationId.length > 200) throw bad("operationId", "must be 1 to 200 characters");
    if (!(await this.ops.begin(operationId, tool))) {
      throw bad("operationId", "already used on this browser; read operation_status instead (nothing was sent)");
    }
    d.sent = false;
    try {
      const out = await go();
      await this.ops.finish(operationId, "completed", null);
      if (out && typeof out === "object" && Array.isArray(out.notes) && out.notes.length === 0) delete out.notes;
      if (out && out.dialog === null) delete out.dialog;
      return out;
    } catch (e) {
      const message = e instanceof Error ? e.message : "";
      const code = /^([A-Z_]+): /.exec(message)?.[1] || (e instanceof ToolFailure ? e.code.toUpperCase() : "EXECUTION_FAILED");
      const outcome = !d.sent ? "refused" : code === "JAVASCRIPT_ERROR" || code === "NAVIGATION_FAILED" ? "failed" : "lost";
      await this.ops.finish(operationId, outcome, code);
      throw e;
    }
  }

  /** An observation in the backend's shape. @param {Run} run @param {TabDriver} d @param {any} o */
  async observation(run, d, o) {
    const w = o.walked;
    /** @type {any} */
    const out = {
      generation: o.generation, url: o.url, title: o.title,
      truncated: {
        controls: !!(w.truncated && w.truncated.controls),
        title: [...String(w.title || "")].length > 300,
        url: [...String(w.url || "")].length > 2048,
      },
      focus: w.focus ?? null,
      scroll: { atTop: w.scroll ? w.scroll.atTop !== false : true, atBottom: w.scroll ? w.scroll.atBottom !== false : true },
      controls: w.controls || [],
      text: String(w.text || ""),
    };
    if (w.truncated && w.truncated.text) out.truncated.text = true;
    if (w.truncated && w.truncated.containers) out.truncated.containers = true;
    if (Array.isArray(w.containers) && w.containers.length) out.containers = w.containers;
    if (o.dialog) out.dialog = o.dialog;
    try {
      const h = await d.send(run, "Page.getNavigationHistory", {});
      out.navigation = { canGoBack: h.currentIndex > 0, canGoForward: h.currentIndex + 1 < h.entries.length };
    } catch (e) {
      if (!(e instanceof ToolFailure) || e.code !== CODES.EXECUTION_FAILED) throw e;
    }
    return out;
  }
}

/** The untrusted envelope of src/untrusted.rs (wrap_text), around page text. @param {string} text */
export function wrapText(text) {
  const neutral = text.replace(/<(\/?)(untrusted-page-content)/gi, "&lt;$1$2");
  return `<untrusted-page-content>\n${neutral}\n</untrusted-page-content>`;
}

/**
 * The record of operations by id (chrome.storage.session, bounded): what `operation_status`
 * answers, as the local backend's oplog does. Read from storage once per service worker life
 * and kept here (this worker is its only writer); every change is written before the command
 * goes on — a mutation's record before its first input — so a suspended worker finds it.
 */
export class OperationLog {
  constructor() {
    this.seq = 0;
    /** @type {Record<string, {tool: string, outcome: string, errorCode: string|null, at: number}>|null} */
    this.cache = null;
  }

  /** @returns {Promise<Record<string, {tool: string, outcome: string, errorCode: string|null, at: number}>>} */
  async all() {
    if (this.cache === null) {
      const s = await chrome.storage.session.get("operations");
      if (this.cache === null) {
        this.cache = s.operations && typeof s.operations === "object" ? /** @type {any} */ (s.operations) : {};
      }
    }
    return /** @type {Record<string, {tool: string, outcome: string, errorCode: string|null, at: number}>} */ (this.cache);
  }

  /** Writes the record; after a failed write it is read again from storage (as it was). */
  async write() {
    try {
      await chrome.storage.session.set({ operations: this.cache });
    } catch (e) {
      this.cache = null;
      throw e;
    }
  }

  /** @param {string} id @param {string} tool */
  async begin(id, tool) {
    const all = await this.all();
    if (all[id]) return false;
    all[id] = { tool, outcome: "running", errorCode: null, at: Date.now() };
    const keys = Object.keys(all);
    for (const k of keys.slice(0, Math.max(0, keys.length - 1000))) delete all[k];
    await this.write();
    return true;
  }

  /** @param {string} id @param {string} outcome @param {string|null} errorCode */
  async finish(id, outcome, errorCode) {
    const all = await this.all();
    const before = all[id];
    if (!before) return;
    all[id] = { ...before, outcome, errorCode, at: Date.now() };
    await this.write();
  }

  /** @param {string} id */
  async status(id) {
    const e = (await this.all())[id];
    if (!e) return { operationId: id, status: "unknown", outcome: "not_recorded" };
    const status = e.outcome === "completed" || e.outcome === "failed" ? "executed" : e.outcome === "refused" ? "not_executed" : "unknown";
    /** @type {any} */
    const out = { operationId: id, status, outcome: e.outcome, tool: e.tool, atMs: e.at };
    if (e.errorCode) out.errorCode = e.errorCode;
    return out;
  }
}

export { Run, stale };
