// The extension's service worker: the device channel (protocol 2, R-DEV-CHAN) to the paired
// gateway, the command queue that runs the browser tools on the agent's tabs one at a time,
// the person's brake (Stop / Resume) and the state the popup and the options page show.
//
// State that must outlive a suspended worker lives in chrome.storage.session (the Stop state,
// the agent's tabs, operation records, the last lease status); the pairing (gateway address,
// device id and the device token) lives in chrome.storage.local only — never sync — and the
// token is never logged, never shown and never sent anywhere but the channel's first frame.
// Nothing here logs a frame, a command's arguments or a result.

import {
  KEEPALIVE_MS, CODES, ToolFailure, authenticateFrame, backoffMs, closeIsFinal, gatewayUrls,
  parseGatewayFrame, pingFrame, resultErr, resultOk,
} from "./lib/protocol.js";
import { AgentTabs, Tools, Run } from "./lib/tools.js";

/** The protocol sent in `authenticate`; the test harness builds a copy with 1 to see the
 * gateway's refusal (never changed at run time). */
const PROTOCOL = 2;
/** The alarm that reconnects a worker that was suspended or lost its socket. */
const ALARM = "jevgate-reconnect";
/** The most operation records kept. */
const MAX_OPS = 200;
/** The longest a command may run, whatever deadline it carries. */
const MAX_BUDGET_MS = 10 * 60 * 1000;
/** Answer a command this long before the gateway's own deadline. */
const DEADLINE_MARGIN_MS = 500;

const tabs = new AgentTabs();
const tools = new Tools(tabs);

/** @type {WebSocket|null} */
let ws = null;
/** @typedef {"unpaired"|"connecting"|"online"|"offline"|"upgrade_required"} Conn */
/** @type {Conn} */
let conn = "unpaired";
let failures = 0;
/** @type {ReturnType<typeof setTimeout>|null} */
let retryTimer = null;
/** @type {ReturnType<typeof setInterval>|null} */
let keepaliveTimer = null;
/** @type {string|null} */
let deviceId = null;
/** @type {{id: string, tool: string, args: any, deadlineMs: number|null}[]} */
const queue = [];
/** @type {{id: string, controller: AbortController}|null} */
let running = null;
let pumping = false;
/** @type {{controlled: boolean, until: number|null, autopilot: string|null}} */
let status = { controlled: false, until: null, autopilot: null };

/** The Stop state: chrome.storage.session is its record (it outlives a suspended worker);
 * this copy saves a storage read per command. @type {boolean|null} */
let halted = null;

async function stopped() {
  if (halted === null) {
    const s = await chrome.storage.session.get("stopped");
    halted = s.stopped === true;
  }
  return halted;
}

/** What the badge shows now, null when unknown (set only when it changes: a lease renewal
 * changes nothing there). @type {{text: string, color: string, title: string}|null} */
let shown = null;

async function updateBadge() {
  const halted = await stopped();
  const want = {
    text: halted ? "STOP" : status.controlled ? "AI" : "",
    color: halted ? "#b00020" : "#1a73e8",
    title: status.autopilot ? `jevgate — ${status.autopilot}` : "jevgate",
  };
  const was = shown;
  shown = want;
  try {
    if (!was || want.text !== was.text) await chrome.action.setBadgeText({ text: want.text });
    if (!was || want.color !== was.color) await chrome.action.setBadgeBackgroundColor({ color: want.color });
    if (!was || want.title !== was.title) await chrome.action.setTitle({ title: want.title });
  } catch (_) {
    // No action surface (headless): tried again in full next time.
    shown = null;
  }
}

/** @param {Conn} next */
function setConn(next) {
  conn = next;
  chrome.storage.session.set({ conn }).catch(() => {});
}

/** How long the commands must pause before deferred state is written (chrome.storage.session). */
const FLUSH_IDLE_MS = 50;
/** The longest deferred state waits to be written while commands keep coming. */
const FLUSH_MAX_MS = 500;

/** Values waiting to be written to chrome.storage.session, by key (the latest of each). @type {Record<string, unknown>} */
let unwritten = {};
/** @type {ReturnType<typeof setTimeout>|null} */
let flushTimer = null;
/** When the oldest unwritten value was set (0: none). */
let unwrittenSince = 0;

/**
 * Writes `value` under `key` in chrome.storage.session soon, off the command path: every
 * storage call is a round trip through the browser process, the same process every DevTools
 * call of a command goes through, so writes made between back-to-back commands (a record per
 * command, a status frame per lease renewal) held each command's calls up (issue 22
 * "Benchmark": read_page was ~2–4× the reference worker). Written once the commands pause
 * for FLUSH_IDLE_MS, at the latest FLUSH_MAX_MS after the first unwritten value — long before
 * an idle service worker can be suspended (30 s).
 * @param {string} key @param {unknown} value
 */
function persistSoon(key, value) {
  unwritten[key] = value;
  const now = Date.now();
  if (!unwrittenSince) unwrittenSince = now;
  if (flushTimer !== null) clearTimeout(flushTimer);
  const wait = Math.max(0, Math.min(FLUSH_IDLE_MS, unwrittenSince + FLUSH_MAX_MS - now));
  flushTimer = setTimeout(flush, wait);
}

/** Writes every unwritten value now. */
function flush() {
  if (flushTimer !== null) clearTimeout(flushTimer);
  flushTimer = null;
  unwrittenSince = 0;
  const values = unwritten;
  unwritten = {};
  if (Object.keys(values).length) chrome.storage.session.set(values).catch(() => {});
}

/** The operation records (chrome.storage.session "ops"), read once per service worker life.
 * @type {{id: string, tool: string, outcome: string, at: number, ms: number|null}[]|null} */
let ops = null;
/** @type {Promise<void>|null} */
let opsLoading = null;

/** Records what became of a command (bounded; chrome.storage.session), in order, without
 * holding the command up; `ms` is how long it ran here.
 * @param {string} id @param {string} tool @param {string} outcome @param {number|null} [ms] */
async function record(id, tool, outcome, ms = null) {
  if (ops === null) {
    opsLoading = opsLoading || chrome.storage.session.get("ops").then((s) => {
      if (ops === null) ops = Array.isArray(s.ops) ? s.ops : [];
    }, () => {
      if (ops === null) ops = [];
    });
    await opsLoading;
  }
  const list = ops || [];
  const i = list.findIndex((o) => o.id === id);
  const entry = { id, tool, outcome, at: Date.now(), ms };
  if (i >= 0) list[i] = entry;
  else list.push(entry);
  if (list.length > MAX_OPS) list.splice(0, list.length - MAX_OPS);
  ops = list;
  persistSoon("ops", list.slice());
}

/** @param {string} text */
function send(text) {
  if (ws && ws.readyState === WebSocket.OPEN) ws.send(text);
}

function clearTimers() {
  if (keepaliveTimer !== null) clearInterval(keepaliveTimer);
  keepaliveTimer = null;
  if (retryTimer !== null) clearTimeout(retryTimer);
  retryTimer = null;
}

/** Connects when paired and not connected (idempotent). */
async function ensureConnected() {
  const { token, gateway } = await chrome.storage.local.get(["token", "gateway"]);
  if (typeof token !== "string" || !token || typeof gateway !== "string") {
    setConn("unpaired");
    return;
  }
  if (conn === "upgrade_required") return;
  if (ws && (ws.readyState === WebSocket.CONNECTING || ws.readyState === WebSocket.OPEN)) return;
  const urls = gatewayUrls(gateway);
  if (!urls) {
    setConn("unpaired");
    return;
  }
  if (retryTimer !== null) clearTimeout(retryTimer);
  retryTimer = null;
  setConn("connecting");
  let sock;
  try {
    sock = new WebSocket(urls.ws);
  } catch (_) {
    scheduleRetry();
    return;
  }
  ws = sock;
  sock.onopen = () => sock.send(authenticateFrame(token, PROTOCOL));
  sock.onmessage = (ev) => {
    if (sock === ws && typeof ev.data === "string") onFrame(ev.data);
  };
  sock.onclose = (ev) => {
    if (sock === ws) onClose(ev.code, ev.reason);
  };
}

function scheduleRetry() {
  if (retryTimer !== null) return;
  const delay = backoffMs(failures, Math.random());
  failures += 1;
  retryTimer = setTimeout(() => {
    retryTimer = null;
    ensureConnected();
  }, delay);
}

/** @param {number} code @param {string} reason */
async function onClose(code, reason) {
  ws = null;
  clearTimers();
  status = { controlled: false, until: null, autopilot: null };
  // The command in flight cannot be answered on a new socket: the gateway reports its outcome
  // as unknown and never replays it; it is stopped here and nothing queued runs.
  abortAll(new ToolFailure(CODES.CANCELLED, "the channel closed"), false);
  if (closeIsFinal(code, reason)) {
    if (reason === "UPGRADE_REQUIRED") {
      setConn("upgrade_required");
    } else {
      // Unpaired, or the token is no longer valid: forget it.
      await chrome.storage.local.remove(["token", "deviceId"]);
      setConn("unpaired");
    }
  } else {
    setConn("offline");
    scheduleRetry();
  }
  updateBadge();
}

/**
 * Ends the running command and empties the queue; answers each with `failure` when `answer`.
 * @param {ToolFailure} failure @param {boolean} answer
 */
function abortAll(failure, answer) {
  if (running) running.controller.abort(failure);
  for (const c of queue.splice(0)) {
    if (answer) send(resultErr(c.id, failure.code, failure.message));
    record(c.id, c.tool, "not_run").catch(() => {});
  }
}

/** @param {string} text */
async function onFrame(text) {
  const f = parseGatewayFrame(text);
  switch (f.type) {
    case "ready":
      deviceId = f.deviceId;
      failures = 0;
      setConn("online");
      chrome.storage.local.set({ deviceId: f.deviceId }).catch(() => {});
      if (keepaliveTimer !== null) clearInterval(keepaliveTimer);
      keepaliveTimer = setInterval(() => send(pingFrame()), KEEPALIVE_MS - 5000);
      break;
    case "command":
      if (await stopped()) {
        send(resultErr(f.id, CODES.BLOCKED_BY_USER, "the person pressed Stop in the extension; nothing was run"));
        record(f.id, f.tool, "blocked").catch(() => {});
        return;
      }
      queue.push({ id: f.id, tool: f.tool, args: f.args, deadlineMs: f.deadlineMs });
      pump();
      break;
    case "cancel": {
      const failure = new ToolFailure(CODES.CANCELLED, "the command was cancelled");
      if (running && running.id === f.id) running.controller.abort(failure);
      const i = queue.findIndex((c) => c.id === f.id);
      if (i >= 0) {
        const [c] = queue.splice(i, 1);
        send(resultErr(c.id, failure.code, failure.message));
        record(c.id, c.tool, "not_run").catch(() => {});
      }
      break;
    }
    case "status":
      // One per lease renewal, so one before most commands: kept off their path.
      status = { controlled: f.controlled, until: f.until, autopilot: f.autopilot };
      persistSoon("status", status);
      updateBadge();
      break;
    default:
      break;
  }
}

/** Runs queued commands one at a time, in order. */
async function pump() {
  if (pumping) return;
  pumping = true;
  try {
    for (;;) {
      const c = queue.shift();
      if (!c) break;
      const controller = new AbortController();
      const started = performance.now();
      running = { id: c.id, controller };
      // The gateway's deadline, bounded (a timer past 2^31 ms would fire at once).
      const budget = Math.min(c.deadlineMs ?? 60000, MAX_BUDGET_MS);
      const run = new Run(controller.signal, Date.now() + Math.max(0, budget - DEADLINE_MARGIN_MS));
      let frame, outcome;
      try {
        const result = await run.race(tools.run(c.tool, c.args, run));
        frame = resultOk(c.id, result);
        outcome = "completed";
      } catch (e) {
        const f = e instanceof ToolFailure ? e
          : new ToolFailure(CODES.EXECUTION_FAILED, `EXECUTION_FAILED: ${/** @type {Error} */ (e).message || "the tool failed"}`);
        frame = resultErr(c.id, f.code, f.message);
        outcome = f.code;
      }
      running = null;
      send(frame);
      record(c.id, c.tool, outcome, Math.round((performance.now() - started) * 100) / 100);
    }
  } finally {
    pumping = false;
  }
}

/** The person's Stop: cancels the command in flight and refuses new ones until Resume. */
async function stop() {
  halted = true;
  await chrome.storage.session.set({ stopped: true });
  abortAll(new ToolFailure(CODES.BLOCKED_BY_USER, "the person pressed Stop in the extension"), true);
  updateBadge();
}

async function resume() {
  halted = false;
  await chrome.storage.session.set({ stopped: false });
  updateBadge();
}

async function unpair() {
  const sock = ws;
  if (sock && sock.readyState === WebSocket.OPEN && conn === "online") {
    // The gateway forgets the device too (its token stops working there) and closes the
    // channel with 1008 DEVICE_UNPAIRED; the token is removed here whatever it answers.
    const closed = new Promise((resolve) => {
      sock.addEventListener("close", () => resolve(undefined), { once: true });
      setTimeout(() => resolve(undefined), 3000);
    });
    try {
      sock.send(JSON.stringify({ type: "unpair" }));
      await closed;
    } catch (_) { /* closed already */ }
  }
  await chrome.storage.local.remove(["token", "deviceId"]);
  ws = null;
  clearTimers();
  abortAll(new ToolFailure(CODES.CANCELLED, "the extension was unpaired"), true);
  if (sock) sock.close(1000, "unpaired");
  deviceId = null;
  status = { controlled: false, until: null, autopilot: null };
  setConn("unpaired");
  updateBadge();
}

async function state() {
  const local = await chrome.storage.local.get(["gateway", "deviceId", "token"]);
  await tabs.load();
  return {
    paired: typeof local.token === "string" && local.token.length > 0,
    gateway: local.gateway || null,
    deviceId: local.deviceId || deviceId,
    conn,
    status,
    stopped: await stopped(),
    agentTabs: tabs.ids.length,
  };
}

chrome.runtime.onMessage.addListener((msg, sender, reply) => {
  // Only the extension's own pages talk to it (no externally_connectable).
  if (sender.id !== chrome.runtime.id) return false;
  const kind = msg && typeof msg.kind === "string" ? msg.kind : "";
  /** @type {Promise<unknown>} */
  let p;
  switch (kind) {
    case "state": p = state(); break;
    case "paired": conn = "offline"; failures = 0; p = ensureConnected().then(state); break;
    case "unpair": p = unpair().then(state); break;
    case "stop": p = stop().then(state); break;
    case "resume": p = resume().then(state); break;
    case "share":
      p = Number.isInteger(msg.tabId) ? tabs.add(msg.tabId).then(state) : Promise.resolve(null);
      break;
    default: return false;
  }
  p.then(reply, () => reply(null));
  return true;
});

chrome.debugger.onEvent.addListener((source, method, params) => {
  if (source.tabId !== undefined && tabs.drivers.has(source.tabId)) {
    tabs.driver(source.tabId).onEvent(method, params || {}, source.sessionId);
  }
});

chrome.debugger.onDetach.addListener((source, reason) => {
  if (source.tabId !== undefined && tabs.drivers.has(source.tabId)) tabs.driver(source.tabId).onDetach(reason);
});

chrome.tabs.onRemoved.addListener((tabId) => {
  tabs.remove(tabId).catch(() => {});
});

chrome.alarms.onAlarm.addListener((alarm) => {
  if (alarm.name === ALARM) ensureConnected();
});

chrome.storage.onChanged.addListener((changes, area) => {
  if (area === "local" && changes.token && changes.token.newValue) {
    if (conn === "upgrade_required") conn = "offline";
    ensureConnected();
  }
});

function boot() {
  chrome.alarms.create(ALARM, { periodInMinutes: 0.5 });
  chrome.storage.session.get("status").then((s) => {
    if (s.status && typeof s.status === "object") status = /** @type {any} */ (s.status);
    updateBadge();
  });
  ensureConnected();
}

chrome.runtime.onStartup.addListener(boot);
chrome.runtime.onInstalled.addListener(boot);
boot();
