// One agent tab driven through chrome.debugger: attaching, the DevTools calls (each bounded by
// the running command's cancel signal and deadline), the page's navigation counters read from
// DevTools events, the isolated world holding the one page script (extension/page.js, the
// bytes the local Chromium backend injects), and the generation bookkeeping of R-BRW-OBS.
// A port of the parts of src/browser/actions.rs and tab.rs the nine tools need.
//
// It must never log anything a page or a command carries (values, text, URLs), never read a
// sensitive field (the page script's walk never does), and never attach to a tab that is not
// an agent tab (the caller, tools.js, only hands it those).

import { CODES, ToolFailure } from "./protocol.js";
import { cut } from "./snapshot.js";

const MAX_TITLE = 300;
const MAX_URL = 2048;
/** How long a read waits for a navigation in progress (src/browser/settle.rs). */
const SETTLE_WITHIN_MS = 10000;
/** How long a navigation may take to load. */
const NAVIGATION_TIMEOUT_MS = 30000;
/** How long a click on a link waits for the navigation it usually starts. */
const NAV_GRACE_MS = 300;
const WORLD = "jevgate";

/** @type {Promise<string>|null} */
let pageScript = null;
/** The page script's text, read once from the extension's own files. */
export function pageLibrary() {
  if (!pageScript) {
    pageScript = fetch(chrome.runtime.getURL("page.js")).then((r) => r.text());
  }
  return pageScript;
}

/** A STALE_OBSERVATION failure as BrowserTools words it. @param {string} cause */
export function stale(cause) {
  return new ToolFailure(CODES.EXECUTION_FAILED, `STALE_OBSERVATION: stale observation: ${cause}`);
}

/** @param {string} code @param {string} message */
export function refused(code, message) {
  return new ToolFailure(CODES.EXECUTION_FAILED, `${code}: ${message}`);
}

/**
 * What bounds one command: its cancel signal (Stop, a take-back, a cancel frame) and its
 * deadline on the wall clock.
 */
export class Run {
  /** @param {AbortSignal} signal @param {number} deadline */
  constructor(signal, deadline) {
    this.signal = signal;
    this.deadline = deadline;
  }

  /** Throws the failure the run ended with, if it ended. */
  check() {
    if (this.signal.aborted) throw this.abortFailure();
    if (Date.now() >= this.deadline) throw new ToolFailure(CODES.TIMED_OUT, "the command did not finish before its deadline");
  }

  abortFailure() {
    const r = this.signal.reason;
    return r instanceof ToolFailure ? r : new ToolFailure(CODES.CANCELLED, "the command was cancelled");
  }

  /**
   * `p`, unless the run is cancelled or its deadline passes first.
   * @template T @param {Promise<T>} p @returns {Promise<T>}
   */
  race(p) {
    this.check();
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        clearTimeout(timer);
        reject(this.abortFailure());
      };
      const timer = setTimeout(() => {
        this.signal.removeEventListener("abort", onAbort);
        reject(new ToolFailure(CODES.TIMED_OUT, "the command did not finish before its deadline"));
      }, Math.max(0, this.deadline - Date.now()));
      this.signal.addEventListener("abort", onAbort, { once: true });
      p.then(
        (v) => {
          clearTimeout(timer);
          this.signal.removeEventListener("abort", onAbort);
          resolve(v);
        },
        (e) => {
          clearTimeout(timer);
          this.signal.removeEventListener("abort", onAbort);
          reject(e);
        },
      );
    });
  }

  /** Waits `ms` (bounded by the run). @param {number} ms */
  sleep(ms) {
    return this.race(new Promise((r) => setTimeout(r, ms)));
  }
}

/** @param {string} message */
function debuggerFailure(message) {
  const m = String(message || "");
  if (/no tab with|tab was closed|target closed|no target with/i.test(m)) {
    return new ToolFailure(CODES.TAB_UNAVAILABLE, "the tab is unavailable");
  }
  if (/another debugger|already attached|not attached|detached|cannot access|cannot attach/i.test(m)) {
    return new ToolFailure(CODES.DEBUGGER_UNAVAILABLE,
      "the debugger could not attach to the tab (DevTools or another debugger is open on it, or the page cannot be debugged)");
  }
  return null;
}

/** Whether the tab still exists. @param {number} tabId */
async function tabExists(tabId) {
  try {
    await chrome.tabs.get(tabId);
    return true;
  } catch (_) {
    return false;
  }
}

/**
 * A tab's DevTools connection and page state.
 */
export class TabDriver {
  /** @param {number} tabId */
  constructor(tabId) {
    this.tabId = tabId;
    this.attached = false;
    this.gone = false;
    /** @type {string|null} */
    this.detachReason = null;
    this.mainFrame = "";
    this.docSeq = 0;
    this.sameDocSeq = 0;
    this.startedSeq = 0;
    this.stopSeq = 0;
    this.stopAtStart = 0;
    this.pendingNav = false;
    this.loadedSinceCommit = true;
    /** @type {{type: string, message: string}|null} */
    this.dialog = null;
    this.generation = 0;
    this.fp = "";
    this.obsDoc = -1;
    /** @type {{ctx: number, doc: number}|null} */
    this.world = null;
    /** @type {Set<() => void>} */
    this.waiters = new Set();
    /** Set once the running operation's first input went out (its record's "sent"). */
    this.sent = false;
  }

  markSent() {
    this.sent = true;
  }

  /** Wakes every waiter (an event changed the state). */
  changed() {
    for (const w of [...this.waiters]) w();
  }

  /**
   * Waits until `cond()` or `ms` pass (bounded by the run); true when `cond()` held.
   * @param {Run} run @param {() => boolean} cond @param {number} ms
   */
  async waitFor(run, cond, ms) {
    const end = Math.min(Date.now() + ms, run.deadline);
    while (!cond()) {
      const left = end - Date.now();
      if (left <= 0) return false;
      await run.race(new Promise((resolve) => {
        const done = () => {
          this.waiters.delete(done);
          clearTimeout(t);
          resolve(undefined);
        };
        const t = setTimeout(done, Math.min(left, 250));
        this.waiters.add(done);
      }));
    }
    return true;
  }

  /** @param {string} method @param {any} params */
  onEvent(method, params) {
    const main = (/** @type {string|undefined} */ frameId) => frameId === this.mainFrame;
    switch (method) {
      case "Page.frameNavigated":
        if (!params.frame.parentId) {
          this.mainFrame = params.frame.id;
          this.docSeq++;
          this.loadedSinceCommit = false;
          this.world = null;
        }
        break;
      case "Page.loadEventFired":
        this.loadedSinceCommit = true;
        break;
      case "Page.frameStartedLoading":
        if (main(params.frameId)) {
          this.startedSeq++;
          this.pendingNav = true;
          this.stopAtStart = this.stopSeq;
        }
        break;
      case "Page.frameStoppedLoading":
        if (main(params.frameId)) {
          this.stopSeq++;
          this.pendingNav = false;
          this.loadedSinceCommit = true;
        }
        break;
      case "Page.navigatedWithinDocument":
        if (main(params.frameId)) this.sameDocSeq++;
        break;
      case "Page.javascriptDialogOpening":
        this.dialog = { type: String(params.type || "alert"), message: cut(String(params.message || ""), 500)[0] };
        break;
      case "Page.javascriptDialogClosed":
        this.dialog = null;
        break;
      default:
        return;
    }
    this.changed();
  }

  /** @param {string} reason */
  onDetach(reason) {
    this.attached = false;
    this.detachReason = reason;
    if (reason === "target_closed") this.gone = true;
    this.world = null;
    this.changed();
  }

  /** The failure a tab that cannot be driven answers, or null. */
  refusal() {
    if (this.gone) return new ToolFailure(CODES.TAB_UNAVAILABLE, "the tab is unavailable");
    if (this.dialog) return refused("DIALOG_OPEN", `a ${this.dialog.type} dialog is open on the page`);
    return null;
  }

  /** Attaches the debugger when it is not attached. @param {Run} run */
  async attach(run) {
    if (this.gone) throw new ToolFailure(CODES.TAB_UNAVAILABLE, "the tab is unavailable");
    if (this.attached) return;
    try {
      await run.race(chrome.debugger.attach({ tabId: this.tabId }, "1.3"));
    } catch (e) {
      if (e instanceof ToolFailure) throw e;
      const f = debuggerFailure(/** @type {Error} */ (e).message);
      throw f || new ToolFailure(CODES.DEBUGGER_UNAVAILABLE, "the debugger could not attach to the tab");
    }
    this.attached = true;
    this.detachReason = null;
    await this.send(run, "Page.enable", {});
    const tree = await this.send(run, "Page.getFrameTree", {});
    this.mainFrame = tree.frameTree.frame.id;
    this.world = null;
  }

  /**
   * One DevTools call on this tab.
   * @param {Run} run @param {string} method @param {any} params @returns {Promise<any>}
   */
  async send(run, method, params) {
    if (this.gone) throw new ToolFailure(CODES.TAB_UNAVAILABLE, "the tab is unavailable");
    if (!this.attached) {
      throw new ToolFailure(CODES.DEBUGGER_UNAVAILABLE, "the debugger was detached from the tab");
    }
    const gone = this.whenGone();
    try {
      return await run.race(Promise.race([chrome.debugger.sendCommand({ tabId: this.tabId }, method, params), gone.promise]));
    } catch (e) {
      if (e instanceof ToolFailure) throw e;
      const message = /** @type {Error} */ (e).message || "";
      if (this.gone || !(await tabExists(this.tabId))) {
        this.gone = true;
        throw new ToolFailure(CODES.TAB_UNAVAILABLE, "the tab is unavailable");
      }
      const f = debuggerFailure(message);
      if (f) throw f;
      // DevTools' own message names the method's failure, never page content.
      const err = new Error(message.slice(0, 200));
      /** @type {any} */ (err).devtools = true;
      throw err;
    } finally {
      gone.cancel();
    }
  }

  /** Rejects with tab_unavailable once the tab is gone (closed while a call waits). */
  whenGone() {
    /** @type {() => void} */
    let check = () => {};
    /** @type {Promise<never>} */
    const promise = new Promise((_, reject) => {
      check = () => {
        if (!this.gone) return;
        this.waiters.delete(check);
        reject(new ToolFailure(CODES.TAB_UNAVAILABLE, "the tab is unavailable"));
      };
      this.waiters.add(check);
      check();
    });
    return { promise, cancel: () => this.waiters.delete(check) };
  }

  /** Input that a dialog it opens does not fail. @param {Run} run @param {string} method @param {any} params */
  async input(run, method, params) {
    this.sent = true;
    // A dialog the input opens blocks the page, and DevTools answers the input only once the
    // dialog is closed: the input was delivered, so its opening ends the wait (as the local
    // backend's interruptible call does).
    /** @type {() => void} */
    let check = () => {};
    const opened = new Promise((resolve) => {
      check = () => {
        if (!this.dialog) return;
        this.waiters.delete(check);
        resolve(undefined);
      };
      this.waiters.add(check);
      check();
    });
    try {
      await Promise.race([this.send(run, method, params), opened]);
    } finally {
      this.waiters.delete(check);
    }
  }

  /** The isolated world's context (the page script installed). @param {Run} run */
  async worldContext(run) {
    if (this.world && this.world.doc === this.docSeq) return this.world.ctx;
    const doc = this.docSeq;
    const made = await this.send(run, "Page.createIsolatedWorld", { frameId: this.mainFrame, worldName: WORLD, grantUniveralAccess: false });
    const ctx = made.executionContextId;
    const lib = await pageLibrary();
    const installed = await this.send(run, "Runtime.evaluate", { expression: `globalThis.__jevgate = ${lib}; 0`, contextId: ctx });
    if (installed.exceptionDetails) throw new ToolFailure(CODES.EXECUTION_FAILED, "EXECUTION_FAILED: the page library failed to install");
    this.world = { ctx, doc };
    return ctx;
  }

  /** Calls `__jevgate.<expr>` and parses its JSON answer. @param {Run} run @param {string} expr */
  async page(run, expr) {
    for (let attempt = 0; attempt < 2; attempt++) {
      const ctx = await this.worldContext(run);
      let res;
      try {
        res = await this.send(run, "Runtime.evaluate", { expression: `__jevgate.${expr}`, contextId: ctx, returnByValue: true });
      } catch (e) {
        if (!(e instanceof ToolFailure) && attempt === 0 && /ontext/.test(/** @type {Error} */ (e).message)) {
          this.world = null;
          continue;
        }
        throw e;
      }
      if (res.exceptionDetails) {
        if (this.docSeq !== this.obsDoc) throw stale("GENERATION_CHANGED");
        throw new ToolFailure(CODES.EXECUTION_FAILED, "EXECUTION_FAILED: the page library threw");
      }
      try {
        return JSON.parse(res.result && typeof res.result.value === "string" ? res.result.value : "null");
      } catch (_) {
        throw new ToolFailure(CODES.EXECUTION_FAILED, "EXECUTION_FAILED: the page library answered malformed JSON");
      }
    }
    throw stale("GENERATION_CHANGED");
  }

  /**
   * The walk plus generation bookkeeping. `null` tree unless `tree`.
   * @param {Run} run @param {{maxControls?: number, maxTextChars?: number, tree?: boolean}} opts
   */
  async observe(run, opts) {
    if (this.dialog) {
      return { generation: this.generation, url: "", title: "", walked: { controls: [], text: "", truncated: {}, focus: null }, dialog: this.dialog };
    }
    const refusal = this.refusal();
    if (refusal) throw refusal;
    const docBefore = this.docSeq;
    if (this.pendingNav) throw stale("NAVIGATION_PENDING");
    const walked = await this.page(run, `observe(${JSON.stringify({
      maxControls: Math.max(1, opts.maxControls ?? 2000),
      maxTextChars: Math.min(opts.maxTextChars ?? 20000, 30000),
      ...(opts.tree ? { tree: true } : {}),
    })})`);
    if (this.pendingNav || this.docSeq !== docBefore) throw stale("NAVIGATION_PENDING");
    if (this.generation === 0 || this.fp !== walked.fp || this.obsDoc !== docBefore) {
      this.generation++;
      this.fp = walked.fp;
      this.obsDoc = docBefore;
    }
    return {
      generation: this.generation,
      url: cut(String(walked.url || ""), MAX_URL)[0],
      title: cut(String(walked.title || ""), MAX_TITLE)[0],
      walked,
      dialog: null,
    };
  }

  /**
   * A read, re-read while a navigation is pending (src/browser/settle.rs).
   * @template T @param {Run} run @param {() => Promise<T>} read @returns {Promise<T>}
   */
  async settled(run, read) {
    const end = Date.now() + SETTLE_WITHIN_MS;
    let pause = 25;
    for (;;) {
      try {
        return await read();
      } catch (e) {
        const pending = e instanceof ToolFailure && e.message.endsWith("NAVIGATION_PENDING");
        if (!pending || Date.now() >= end) throw e;
      }
      await this.waitFor(run, () => !this.pendingNav, Math.min(pause, end - Date.now()));
      pause = Math.min(pause * 2, 400);
    }
  }

  /** The fingerprint of the generation `generation`, or a refusal. @param {number} generation */
  checkGeneration(generation) {
    const refusal = this.refusal();
    if (refusal) throw refusal;
    if (this.generation === 0 || generation !== this.generation || this.obsDoc !== this.docSeq) throw stale("GENERATION_CHANGED");
    return this.fp;
  }

  /** Maps the page library's status to its refusal. @param {any} v */
  targetStatus(v) {
    switch (v && v.status) {
      case "ok": return;
      case "changed": throw stale("GENERATION_CHANGED");
      case "obscured": throw stale("TARGET_OBSCURED");
      case "unfocusable": throw refused("FOCUS_REQUIRED", "the target cannot take keyboard focus; nothing was typed");
      case "missing": throw refused("TARGET_NOT_FOUND", "target not found: the ref was not handed out by this generation");
      case "nobox": throw refused("TARGET_NOT_FOUND", "target not found: the target has no box on the page (hidden or empty)");
      case "nooption": throw refused("INVALID_ARGUMENT", "invalid argument `value`: matches no option of the select");
      default: throw new ToolFailure(CODES.EXECUTION_FAILED, "EXECUTION_FAILED: the page library answered an unknown status");
    }
  }

  /** A left click at a viewport point. @param {Run} run @param {number} x @param {number} y */
  async clickAt(run, x, y) {
    await this.input(run, "Input.dispatchMouseEvent", { type: "mouseMoved", x, y, button: "none", buttons: 0 });
    if (this.dialog) return;
    await this.input(run, "Input.dispatchMouseEvent", { type: "mousePressed", x, y, button: "left", buttons: 1, clickCount: 1 });
    if (this.dialog) return;
    await this.input(run, "Input.dispatchMouseEvent", { type: "mouseReleased", x, y, button: "left", buttons: 0, clickCount: 1 });
  }

  /** Waits a moment for the navigation a link click usually starts. @param {Run} run @param {number} before */
  async navGrace(run, before) {
    await this.waitFor(run, () => this.startedSeq > before || this.pendingNav || !!this.dialog || this.gone, NAV_GRACE_MS);
  }

  marks() {
    return { doc: this.docSeq, sameDoc: this.sameDocSeq, started: this.startedSeq };
  }

  /** Waits until the navigation started after `marks` settled. @param {Run} run @param {{doc: number, sameDoc: number, started: number}} marks */
  async waitSettled(run, marks) {
    const done = () => !this.pendingNav && (
      (this.docSeq > marks.doc && this.loadedSinceCommit) ||
      this.sameDocSeq > marks.sameDoc ||
      (this.startedSeq > marks.started && this.stopSeq > this.stopAtStart && this.docSeq === marks.doc));
    await this.waitFor(run, () => this.gone || !!this.dialog || done(), NAVIGATION_TIMEOUT_MS);
    return !this.gone && !this.dialog && done();
  }

  /**
   * An action's answer (ActionResult of the backend).
   * @param {string} operationId @param {string} tool @param {number} before
   */
  result(operationId, tool, before) {
    return {
      operationId,
      tool,
      generationBefore: this.generation,
      navigationStarted: this.startedSeq > before || this.pendingNav,
      settled: false,
      dialog: this.dialog,
      notes: /** @type {string[]} */ ([]),
    };
  }
}
