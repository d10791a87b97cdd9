// The channel's frames (protocol 2, src/device/frames.rs) and the pairing request, as pure
// functions: what the service worker sends and how it reads what the gateway sends, the
// gateway address forms, the reconnect backoff and the worker failure codes. Owns no socket,
// no storage and no timer; it must never log a frame (a frame carries the token or page data).

/** The channel protocol this extension speaks (a browser below 2 is refused with 1008). */
export const PROTOCOL = 2;
/** The path the channel is served at. */
export const CHANNEL_PATH = "/v1/device-worker/channel";
/** The pairing route on the channel's listener. */
export const PAIR_PATH = "/devices/pair";
/** Keepalive traffic at least this often while paired (MV3 keeps a worker with WebSocket
 * activity inside 30 s alive). */
export const KEEPALIVE_MS = 20000;

/** Worker failure codes (src/device/executor.rs WORKER_CODES). */
export const CODES = Object.freeze({
  DEBUGGER_UNAVAILABLE: "debugger_unavailable",
  TAB_UNAVAILABLE: "tab_unavailable",
  BLOCKED_BY_USER: "blocked_by_user",
  CANCELLED: "cancelled",
  TIMED_OUT: "timed_out",
  JAVASCRIPT_ERROR: "javascript_error",
  EXECUTION_FAILED: "execution_failed",
  BATCH_CAP_EXCEEDED: "batch_cap_exceeded",
});

/** A tool failure carrying a worker code. */
export class ToolFailure extends Error {
  /** @param {string} code @param {string} message */
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

/** @param {string} token */
export function authenticateFrame(token, protocol = PROTOCOL) {
  return JSON.stringify({ type: "authenticate", authorization: `Device ${token}`, protocol, features: ["status"] });
}

/** @param {string} id @param {unknown} result */
export function resultOk(id, result) {
  return JSON.stringify({ type: "result", id, success: true, result });
}

/** @param {string} id @param {string} code @param {string} message */
export function resultErr(id, code, message) {
  return JSON.stringify({ type: "result", id, success: false, errorCode: code, message: String(message).slice(0, 500) });
}

export function pingFrame() {
  return JSON.stringify({ type: "ping" });
}

/**
 * @typedef {{type: "ready", deviceId: string}
 *  | {type: "command", id: string, tool: string, args: any, deadlineMs: number|null}
 *  | {type: "cancel", id: string}
 *  | {type: "status", controlled: boolean, until: number|null, autopilot: string|null}
 *  | {type: "pong"} | {type: "unknown"} | {type: "malformed"}} GatewayFrame
 */

/**
 * Parses one text message from the gateway; never throws.
 * @param {string} text @returns {GatewayFrame}
 */
export function parseGatewayFrame(text) {
  let v;
  try {
    v = JSON.parse(text);
  } catch (_) {
    return { type: "malformed" };
  }
  if (!v || typeof v !== "object" || Array.isArray(v) || typeof v.type !== "string") return { type: "malformed" };
  const str = (/** @type {string} */ k) => (typeof v[k] === "string" ? v[k] : null);
  switch (v.type) {
    case "ready": {
      const deviceId = str("deviceId");
      return deviceId === null ? { type: "malformed" } : { type: "ready", deviceId };
    }
    case "command": {
      const id = str("id"), tool = str("tool");
      if (id === null || tool === null) return { type: "malformed" };
      const d = v.deadlineMs;
      if (d !== undefined && d !== null && !(Number.isInteger(d) && d >= 0)) return { type: "malformed" };
      return { type: "command", id, tool, args: v.args === undefined ? null : v.args, deadlineMs: d ?? null };
    }
    case "cancel": {
      const id = str("id");
      return id === null ? { type: "malformed" } : { type: "cancel", id };
    }
    case "status":
      return {
        type: "status",
        controlled: v.controlled === true,
        until: typeof v.until === "number" ? v.until : null,
        autopilot: typeof v.autopilot === "string" ? v.autopilot.slice(0, 300) : null,
      };
    case "pong":
      return { type: "pong" };
    default:
      return { type: "unknown" };
  }
}

/**
 * The gateway address a person typed (`127.0.0.1:8443`, `http://host:port`, `https://…`,
 * `ws://…`, `wss://…`) as its HTTP base and its channel URL, or null when it is not one.
 * @param {string} input @returns {{http: string, ws: string}|null}
 */
export function gatewayUrls(input) {
  const raw = String(input || "").trim();
  if (!raw || raw.length > 2048 || /\s/.test(raw)) return null;
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(raw) ? raw : `http://${raw}`;
  let u;
  try {
    u = new URL(withScheme);
  } catch (_) {
    return null;
  }
  const scheme = u.protocol.toLowerCase();
  let secure;
  if (scheme === "http:" || scheme === "ws:") secure = false;
  else if (scheme === "https:" || scheme === "wss:") secure = true;
  else return null;
  if (u.username || u.password || !u.host) return null;
  return { http: `${secure ? "https" : "http"}://${u.host}`, ws: `${secure ? "wss" : "ws"}://${u.host}${CHANNEL_PATH}` };
}

/** A pairing code as typed, normalised (upper case, no spaces or dashes), or null when empty
 * or not plausible. @param {string} code */
export function normalisePairingCode(code) {
  const c = String(code || "").replace(/[\s-]+/g, "").toUpperCase();
  return /^[A-Z0-9]{4,32}$/.test(c) ? c : null;
}

/** The reconnect delay after `failures` failed attempts: 1 s doubling to 30 s, with jitter
 * from `random` in [0, 1). @param {number} failures @param {number} random */
export function backoffMs(failures, random) {
  const base = Math.min(30000, 1000 * 2 ** Math.min(5, Math.max(0, failures)));
  return Math.round(base * (0.75 + 0.5 * random));
}

/** Whether a close ends the pairing (the token is no good): unpaired or refused token.
 * @param {number} code @param {string} reason */
export function closeIsFinal(code, reason) {
  return code === 1008 && (reason === "DEVICE_UNPAIRED" || reason === "AUTHENTICATION_FAILED" || reason === "UPGRADE_REQUIRED");
}
