// One agent tab driven through chrome.debugger: attaching, the DevTools calls (each bounded by
// the running command's cancel signal and deadline), the page's navigation counters read from
// DevTools events, the isolated world holding the one page script (extension/page.js, the
// bytes the local Chromium backend injects), and the generation bookkeeping of R-BRW-OBS.
// Cross-origin (out-of-process) iframes are child targets auto-attached as flat sessions and
// driven with `chrome.debugger.sendCommand({tabId, sessionId}, …)`: each gets its own isolated
// world, its `<iframe>` element is named in its parent's world, and its walk is spliced in
// (extension/lib/frames.js), at most MAX_FRAME_DEPTH levels deep, every call bounded by the
// running command. A port of the parts of src/browser/actions.rs, tab.rs and frame_walk.rs the
// nine tools and the primitives need.
//
// It must never log anything a page or a command carries (values, text, URLs), never read a
// sensitive field (the page script's walk never does), and never attach to a tab that is not
// an agent tab (the caller, tools.js, only hands it those).

import { CODES, ToolFailure } from "./protocol.js";
import { cut } from "./snapshot.js";
import { FrameSet, MAX_FRAME_DEPTH, cutToBudget, prefixRefs, splice, splitRef } from "./frames.js";

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
    /** The attached out-of-process frames, by DevTools session. */
    this.frames = new FrameSet();
    /** The main frame's own fingerprint at the last observation. */
    this.mainFp = "";
    /** @type {import("./frames.js").ObservedFrame[]} the frames the last observation covered */
    this.obsFrames = [];
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

  /** @param {string} method @param {any} params @param {string} [session] the child session it came from */
  onEvent(method, params, session) {
    if (method === "Target.attachedToTarget") {
      const info = params.targetInfo || {};
      if (info.type === "iframe" && typeof params.sessionId === "string" && typeof info.targetId === "string") {
        this.frames.add(params.sessionId, info.targetId, session || "");
      }
      return;
    }
    if (method === "Target.detachedFromTarget") {
      if (typeof params.sessionId === "string") this.frames.removeTree(params.sessionId);
      return;
    }
    // A frame's own events are not the page's.
    if (session) return;
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
    this.frames.clear();
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
    this.frames.clear();
    await this.send(run, "Page.enable", {});
    // Cross-origin frames are child targets: attached (flat sessions) so they can be walked.
    try {
      await this.send(run, "Target.setAutoAttach", { autoAttach: true, waitForDebuggerOnStart: false, flatten: true, filter: [{ type: "iframe" }] });
    } catch (e) {
      if (e instanceof ToolFailure) throw e;
      // Without it the main frame is still driven; cross-origin frames stay unwalked.
    }
    const tree = await this.send(run, "Page.getFrameTree", {});
    this.mainFrame = tree.frameTree.frame.id;
    this.world = null;
  }

  /**
   * One DevTools call on this tab.
   * @param {Run} run @param {string} method @param {any} params @returns {Promise<any>}
   */
  async send(run, method, params) {
    return this.sendOn(run, "", method, params);
  }

  /**
   * One DevTools call on the tab (`session` "") or one of its frames' sessions.
   * @param {Run} run @param {string} session @param {string} method @param {any} params @returns {Promise<any>}
   */
  async sendOn(run, session, method, params) {
    if (this.gone) throw new ToolFailure(CODES.TAB_UNAVAILABLE, "the tab is unavailable");
    if (!this.attached) {
      throw new ToolFailure(CODES.DEBUGGER_UNAVAILABLE, "the debugger was detached from the tab");
    }
    const gone = this.whenGone();
    try {
      return await run.race(Promise.race([chrome.debugger.sendCommand(session ? { tabId: this.tabId, sessionId: session } : { tabId: this.tabId }, method, params), gone.promise]));
    } catch (e) {
      if (e instanceof ToolFailure) throw e;
      const message = /** @type {Error} */ (e).message || "";
      if (this.gone || !(await tabExists(this.tabId))) {
        this.gone = true;
        throw new ToolFailure(CODES.TAB_UNAVAILABLE, "the tab is unavailable");
      }
      if (session && (/session|target/i.test(message) || !this.frames.bySession.has(session))) {
        // The frame went away under the call: a changed page.
        throw stale("GENERATION_CHANGED");
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

  /** The page script's world in the frame of `session`, created when missing. @param {Run} run @param {string} session */
  async frameWorld(run, session) {
    const f = this.frames.bySession.get(session);
    if (!f) throw stale("GENERATION_CHANGED");
    if (f.world !== null) return f.world;
    const made = await this.sendOn(run, session, "Page.createIsolatedWorld", { frameId: f.frameId, worldName: WORLD, grantUniveralAccess: false });
    const ctx = made.executionContextId;
    const lib = await pageLibrary();
    const installed = await this.sendOn(run, session, "Runtime.evaluate", { expression: `globalThis.__jevgate = ${lib}; 0`, contextId: ctx });
    if (installed.exceptionDetails) throw new ToolFailure(CODES.EXECUTION_FAILED, "EXECUTION_FAILED: the page library failed to install in a frame");
    const still = this.frames.bySession.get(session);
    if (still) still.world = ctx;
    return ctx;
  }

  /**
   * Calls `__jevgate.<expr>` in the main frame (`session` "") or the frame of `session`.
   * @param {Run} run @param {string} session @param {string} expr
   */
  async pageIn(run, session, expr) {
    if (!session) return this.page(run, expr);
    for (let attempt = 0; attempt < 2; attempt++) {
      const ctx = await this.frameWorld(run, session);
      let res;
      try {
        res = await this.sendOn(run, session, "Runtime.evaluate", { expression: `__jevgate.${expr}`, contextId: ctx, returnByValue: true });
      } catch (e) {
        if (!(e instanceof ToolFailure) && attempt === 0 && /ontext/.test(/** @type {Error} */ (e).message)) {
          // The frame's document changed under us: a new world, once.
          const f = this.frames.bySession.get(session);
          if (f) f.world = null;
          continue;
        }
        if (!(e instanceof ToolFailure) && !this.frames.bySession.has(session)) throw stale("GENERATION_CHANGED");
        throw e;
      }
      if (res.exceptionDetails) throw new ToolFailure(CODES.EXECUTION_FAILED, "EXECUTION_FAILED: the page library threw");
      try {
        return JSON.parse(res.result && typeof res.result.value === "string" ? res.result.value : "null");
      } catch (_) {
        throw new ToolFailure(CODES.EXECUTION_FAILED, "EXECUTION_FAILED: the page library answered malformed JSON");
      }
    }
    throw stale("GENERATION_CHANGED");
  }

  /** Asks every frame session not yet asked to auto-attach its nested frames. @param {Run} run */
  async prepareFrames(run) {
    for (let round = 0; round < MAX_FRAME_DEPTH; round++) {
      const pending = this.frames.notReady();
      if (!pending.length) return;
      for (const session of pending) {
        try {
          await this.sendOn(run, session, "Target.setAutoAttach", { autoAttach: true, waitForDebuggerOnStart: false, flatten: true, filter: [{ type: "iframe" }] });
        } catch (e) {
          // A frame that refuses stays without nested frames; it is still walked.
          if (e instanceof ToolFailure && e.code !== CODES.EXECUTION_FAILED) throw e;
        }
        const f = this.frames.bySession.get(session);
        if (f) f.ready = true;
      }
    }
  }

  /**
   * Names, in the world `ctx` of `session`, the `<iframe>` element of each out-of-process
   * frame it hosts (DOM.getFrameOwner → DOM.resolveNode → the page script's `tag`).
   * @param {Run} run @param {string} session @param {number} ctx
   */
  async tagChildren(run, session, ctx) {
    for (const kid of this.frames.childrenOf(session)) {
      if (kid.taggedIn && kid.taggedIn.ctx === ctx && kid.taggedIn.ok) continue;
      let ok = false;
      try {
        ok = await this.tagOne(run, session, ctx, kid.frameId);
      } catch (e) {
        if (e instanceof ToolFailure && e.code !== CODES.EXECUTION_FAILED) throw e;
      }
      const f = this.frames.bySession.get(kid.session);
      if (f) f.taggedIn = { ctx, ok };
    }
  }

  /** @param {Run} run @param {string} session @param {number} ctx @param {string} frameId */
  async tagOne(run, session, ctx, frameId) {
    const owner = await this.sendOn(run, session, "DOM.getFrameOwner", { frameId });
    if (!Number.isInteger(owner && owner.backendNodeId)) return false;
    const obj = await this.sendOn(run, session, "DOM.resolveNode", { backendNodeId: owner.backendNodeId, executionContextId: ctx });
    const id = obj && obj.object && obj.object.objectId;
    if (typeof id !== "string") return false;
    let tagged;
    try {
      tagged = await this.sendOn(run, session, "Runtime.callFunctionOn", {
        objectId: id, returnByValue: true,
        functionDeclaration: "function (k) { return __jevgate.tag(this, k); }",
        arguments: [{ value: frameId }],
      });
    } finally {
      try {
        await this.sendOn(run, session, "Runtime.releaseObject", { objectId: id });
      } catch (_) { /* released with its world */ }
    }
    return !tagged.exceptionDetails;
  }

  /**
   * The walk of the main frame with every reachable out-of-process frame spliced in, and the
   * composed fingerprint (main's, then each frame's).
   * @param {Run} run @param {any} opts
   * @param {{session: string, inner: string}|null} [region] a snapshot of that ref's subtree
   */
  async observeFrames(run, opts, region = null) {
    if (this.frames.bySession.size) await this.prepareFrames(run);
    /** @type {import("./frames.js").ObservedFrame[]} */
    const frames = [];
    /** @type {{region: {session: string, inner: string}|null, tree: any}} */
    const cx = { region, tree: null };
    const walk = await this.walkFrame(run, "", 0, 0, opts, frames, cx);
    // A region inside a frame: that frame's walk answered its subtree (as the local backend).
    if (region && region.session) walk.tree = cx.tree;
    if (frames.length) cutToBudget(walk, opts);
    let fp = String(walk.fp || "");
    frames.forEach((f, i) => { fp += `|${i + 1}:${f.session}:${f.fp}`; });
    return { walk, frames, fp };
  }

  /**
   * Walks one frame ("" = main, number `n`) and, depth first, the frames it hosts.
   * @param {Run} run @param {string} session @param {number} n @param {number} depth @param {any} opts
   * @param {import("./frames.js").ObservedFrame[]} frames
   * @param {{region: {session: string, inner: string}|null, tree: any}} cx the snapshot region
   * (the frame's session and the ref inside it) and, once walked, its subtree
   * @returns {Promise<any>}
   */
  async walkFrame(run, session, n, depth, opts, frames, cx) {
    if (this.frames.childrenOf(session).length) {
      const ctx = session ? await this.frameWorld(run, session) : await this.worldContext(run);
      await this.tagChildren(run, session, ctx);
    }
    const owner = cx.region !== null && cx.region.session === session;
    const own = owner && cx.region ? { ...opts, region: cx.region.inner } : opts;
    const walk = await this.pageIn(run, session, `observe(${JSON.stringify(own)})`);
    if (!walk || typeof walk !== "object") throw new ToolFailure(CODES.EXECUTION_FAILED, "EXECUTION_FAILED: the page library answered malformed JSON");
    walk.truncated = walk.truncated || {};
    if (n > 0) prefixRefs(walk, n);
    let missed = walk.untagged !== undefined;
    const keys = (Array.isArray(walk.slots) ? walk.slots : []).map((/** @type {any} */ s) => s.key).filter((/** @type {any} */ k) => typeof k === "string");
    const children = [];
    for (const key of keys) {
      const child = this.frames.sessionOf(session, key);
      if (!child || depth >= MAX_FRAME_DEPTH) {
        missed = true;
        continue;
      }
      const at = frames.length;
      frames.push({ session: child, frameId: key, parent: n, fp: "" });
      try {
        const w = await this.walkFrame(run, child, at + 1, depth + 1, opts, frames, cx);
        frames[at].fp = String(w.fp || "");
        children.push({ key, walk: w });
      } catch (e) {
        // Cancelled, timed out, the tab gone: the command ends. A dialog ends the walk too.
        if (e instanceof ToolFailure && e.code !== CODES.EXECUTION_FAILED) throw e;
        if (this.dialog) throw e;
        // Left out: the frames after it are numbered as if it was never there.
        frames.length = at;
        missed = true;
      }
    }
    if (walk.slots !== undefined) splice(walk, children);
    if (missed) walk.truncated.controls = true;
    if (owner && session) {
      cx.tree = walk.tree === undefined ? null : walk.tree;
      walk.tree = null;
    }
    return walk;
  }

  /**
   * Where a ref lives: frame `n` (0 = main), its session, the fingerprint to hold it to, and
   * the ref inside it.
   * @param {{fp: string, frames: import("./frames.js").ObservedFrame[]}} obs @param {string} ref
   */
  scopeOf(obs, ref) {
    const notFound = () => refused("TARGET_NOT_FOUND", "target not found: the ref was not handed out by this generation");
    const split = splitRef(ref);
    if (!split) throw notFound();
    const [n, inner] = split;
    if (n === 0) return { n, session: "", fp: obs.fp, inner };
    const f = obs.frames[n - 1];
    if (!f) throw notFound();
    return { n, session: f.session, fp: f.fp, inner };
  }

  /**
   * Where a snapshot region lives: the main frame ("") or a frame of the last observation, and
   * the ref inside it (src/browser/actions.rs region_scope).
   * @param {string} region @returns {{session: string, inner: string}}
   */
  regionScope(region) {
    const notFound = () => refused("TARGET_NOT_FOUND", "target not found: the region ref is not on the page");
    const split = splitRef(region);
    if (!split) throw notFound();
    const [n, inner] = split;
    if (n === 0) return { session: "", inner };
    const f = this.obsFrames[n - 1];
    if (!f) throw notFound();
    return { session: f.session, inner };
  }

  /**
   * Holds every observed out-of-process frame to its fingerprint; a frame gone or changed is
   * GENERATION_CHANGED.
   * @param {Run} run @param {{fp: string, frames: import("./frames.js").ObservedFrame[]}} obs
   */
  async checkFrames(run, obs) {
    for (const f of obs.frames) {
      if (!this.frames.bySession.has(f.session)) throw stale("GENERATION_CHANGED");
      this.targetStatus(await this.pageIn(run, f.session, `check(${JSON.stringify(f.fp)})`));
    }
  }

  /** The main frame and every observed frame held to their fingerprints. @param {Run} run @param {{fp: string, frames: import("./frames.js").ObservedFrame[]}} obs */
  async checkAll(run, obs) {
    this.targetStatus(await this.page(run, `check(${JSON.stringify(obs.fp)})`));
    await this.checkFrames(run, obs);
  }

  /**
   * The top-level viewport point of the ref `inner` of frame `n`, mapped through each
   * enclosing `<iframe>` (each scrolled into view and hit-tested in its own parent).
   * @param {Run} run @param {{fp: string, frames: import("./frames.js").ObservedFrame[]}} obs @param {number} n @param {string} inner
   */
  async framePoint(run, obs, n, inner) {
    let cur = obs.frames[n - 1];
    if (!cur) throw refused("TARGET_NOT_FOUND", "target not found: the ref was not handed out by this generation");
    const v = await this.pageIn(run, cur.session, `point(...${JSON.stringify([inner, cur.fp])})`);
    this.targetStatus(v);
    let x = Number(v.x) || 0, y = Number(v.y) || 0;
    for (;;) {
      const parent = cur.parent === 0 ? null : obs.frames[cur.parent - 1];
      const session = parent ? parent.session : "";
      const fp = parent ? parent.fp : obs.fp;
      const w = await this.pageIn(run, session, `framePoint(${JSON.stringify(cur.frameId)}, ${x}, ${y}, ${JSON.stringify(fp)})`);
      this.targetStatus(w);
      x = Number(w.x) || 0;
      y = Number(w.y) || 0;
      if (!parent) return { x, y };
      cur = parent;
    }
  }

  /**
   * Evaluates `expression` (awaiting its promise) in our world of `session` ("" = main).
   * @param {Run} run @param {string} session @param {string} expression
   */
  async evalWorld(run, session, expression) {
    const ctx = session ? await this.frameWorld(run, session) : await this.worldContext(run);
    return this.sendOn(run, session, "Runtime.evaluate", { expression, contextId: ctx, awaitPromise: true, returnByValue: true });
  }

  /**
   * Before input to a point inside frame `n`: waits for the frame (four animation frames and
   * 50 ms) and the page (two) to be drawn, so a frame just scrolled into view takes input.
   * @param {Run} run @param {{fp: string, frames: import("./frames.js").ObservedFrame[]}} obs @param {number} n
   */
  async settleFrames(run, obs, n) {
    const f = obs.frames[n - 1];
    if (!f) return;
    await this.evalWorld(run, f.session, "new Promise(r => { const t0 = performance.now(); let n = 0; " +
      "const f = () => (++n >= 4 && performance.now() - t0 >= 50) ? r(true) : requestAnimationFrame(f); requestAnimationFrame(f); })");
    await this.evalWorld(run, "", "new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))");
  }

  /**
   * Before a click at (`x`, `y`) inside frame `n`: moves the mouse there until the frame's own
   * document saw a trusted mousemove (a capture listener in our world), at most 5 s.
   * @param {Run} run @param {{fp: string, frames: import("./frames.js").ObservedFrame[]}} obs @param {number} n @param {number} x @param {number} y
   */
  async awaitFrameInput(run, obs, n, x, y) {
    const f = obs.frames[n - 1];
    if (!f) return;
    await this.evalWorld(run, f.session, "(() => { const g = globalThis; if (!g.__jevgateInput) { " +
      "g.__jevgateInput = { seen: false }; addEventListener('mousemove', e => { " +
      "if (e.isTrusted) g.__jevgateInput.seen = true; }, true); } g.__jevgateInput.seen = false; return true; })()");
    const end = Date.now() + 5000;
    while (Date.now() < end) {
      await this.input(run, "Input.dispatchMouseEvent", { type: "mouseMoved", x, y, button: "none", buttons: 0 });
      if (this.dialog) return;
      const seen = await this.evalWorld(run, f.session, "new Promise(r => { const g = globalThis.__jevgateInput; let n = 0; " +
        "const f = () => (g.seen || ++n > 2) ? r(g.seen) : requestAnimationFrame(f); f(); })");
      if (seen && seen.result && seen.result.value === true) return;
    }
  }

  /** After a field in a frame was focused: waits (at most 1 s) until the frame holds the page's focus. @param {Run} run @param {string} session */
  async waitFrameFocus(run, session) {
    const end = Date.now() + 1000;
    while ((await this.pageIn(run, session, "hasFocus()")) !== true && Date.now() < end) await run.sleep(10);
  }

  /**
   * The viewport point of a ref's element (main frame or a frame), scrolled into view and
   * hit-tested, and whether clicking it usually navigates (main-frame elements only).
   * @param {Run} run @param {{fp: string, frames: import("./frames.js").ObservedFrame[]}} obs @param {string} ref @param {boolean} settle
   */
  async pointOf(run, obs, ref, settle) {
    const scope = this.scopeOf(obs, ref);
    await this.checkFrames(run, obs);
    if (scope.n === 0) {
      const v = await this.page(run, `point(...${JSON.stringify([scope.inner, obs.fp])})`);
      this.targetStatus(v);
      return { x: Number(v.x) || 0, y: Number(v.y) || 0, nav: !!v.nav, n: 0 };
    }
    await this.framePoint(run, obs, scope.n, scope.inner);
    if (settle) await this.settleFrames(run, obs, scope.n);
    const p = await this.framePoint(run, obs, scope.n, scope.inner);
    return { x: p.x, y: p.y, nav: false, n: scope.n };
  }

  /**
   * The walk plus generation bookkeeping. `null` tree unless `tree`.
   * @param {Run} run @param {{maxControls?: number, maxTextChars?: number, tree?: boolean, region?: string}} opts
   * `region`: a snapshot of that ref's subtree only (in the main frame or a frame of the last
   * observation); a ref that cannot be one is TARGET_NOT_FOUND.
   */
  async observe(run, opts) {
    if (this.dialog) {
      return { generation: this.generation, url: "", title: "", walked: { controls: [], text: "", truncated: {}, focus: null }, dialog: this.dialog };
    }
    const refusal = this.refusal();
    if (refusal) throw refusal;
    const docBefore = this.docSeq;
    if (this.pendingNav) throw stale("NAVIGATION_PENDING");
    const region = opts.tree && typeof opts.region === "string" ? this.regionScope(opts.region) : null;
    const composed = await this.observeFrames(run, {
      maxControls: Math.max(1, opts.maxControls ?? 2000),
      maxTextChars: Math.min(opts.maxTextChars ?? 20000, 30000),
      ...(opts.tree ? { tree: true } : {}),
    }, region);
    const walked = composed.walk;
    if (this.pendingNav || this.docSeq !== docBefore) throw stale("NAVIGATION_PENDING");
    if (this.generation === 0 || this.fp !== composed.fp || this.obsDoc !== docBefore) {
      this.generation++;
      this.fp = composed.fp;
      this.obsDoc = docBefore;
    }
    this.mainFp = String(walked.fp || "");
    this.obsFrames = composed.frames;
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

  /**
   * What the generation `generation` holds the page to (the main frame's fingerprint and the
   * observed frames), or a refusal.
   * @param {number} generation @returns {{fp: string, frames: import("./frames.js").ObservedFrame[]}}
   */
  checkGeneration(generation) {
    const refusal = this.refusal();
    if (refusal) throw refusal;
    if (this.generation === 0 || generation !== this.generation || this.obsDoc !== this.docSeq) throw stale("GENERATION_CHANGED");
    return { fp: this.mainFp, frames: this.obsFrames };
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
