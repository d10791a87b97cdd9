// The options page: pairing with a gateway (address + one-time code → POST /devices/pair →
// the device token, kept in chrome.storage.local only and never shown), the pairing's state,
// and Unpair (removes the token). It never logs the code or the token and never puts the token
// in the page.

import { PAIR_PATH, gatewayUrls, normalisePairingCode } from "./lib/protocol.js";

const $ = (/** @type {string} */ id) => /** @type {HTMLElement} */ (document.getElementById(id));
const message = $("message");

/** @param {string} text @param {"ok"|"error"} kind */
function say(text, kind) {
  message.textContent = text;
  message.dataset.kind = kind;
}

/** The browser's name and version from the user agent (no more). */
function browserInfo() {
  const m = /(Chrome|Chromium)\/([0-9.]+)/.exec(navigator.userAgent);
  return { name: m ? m[1] : "Chromium", version: m ? m[2] : "" };
}

async function installationId() {
  const { installationId } = await chrome.storage.local.get("installationId");
  if (typeof installationId === "string" && installationId) return installationId;
  const id = crypto.randomUUID();
  await chrome.storage.local.set({ installationId: id });
  return id;
}

/** @param {any} body @param {number} status @param {Headers} headers */
function pairingError(body, status, headers) {
  const code = body && typeof body.errorCode === "string" ? body.errorCode : "";
  if (code === "PAIRING_CODE_INVALID") return "That pairing code is wrong, already used or expired. Ask for a new one.";
  if (code === "RATE_LIMITED" || status === 429) {
    const after = headers.get("Retry-After");
    return `Too many failed tries from this address. Try again${after ? ` in ${after} s` : " later"}.`;
  }
  if (status === 413) return "The gateway refused the request as too large.";
  return `The gateway refused the pairing (${code || `HTTP ${status}`}).`;
}

async function pair(/** @type {SubmitEvent} */ ev) {
  ev.preventDefault();
  const urls = gatewayUrls(/** @type {HTMLInputElement} */ ($("gateway")).value);
  const codeInput = /** @type {HTMLInputElement} */ ($("code"));
  const code = normalisePairingCode(codeInput.value);
  if (!urls) return say("Enter the gateway's address, e.g. 127.0.0.1:8443 or https://gateway.example:8443.", "error");
  if (!code) return say("Enter the pairing code shown by the host, e.g. ABCD-EFGH.", "error");
  const button = /** @type {HTMLButtonElement} */ ($("pair"));
  button.disabled = true;
  say("Pairing…", "ok");
  try {
    const body = {
      installationId: await installationId(),
      name: `${browserInfo().name} on ${navigator.platform || "this computer"}`,
      browser: browserInfo(),
      pairingCode: code,
    };
    let res;
    try {
      res = await fetch(urls.http + PAIR_PATH, {
        method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body),
        credentials: "omit", cache: "no-store",
      });
    } catch (_) {
      return say("The gateway could not be reached at that address.", "error");
    }
    let answer = null;
    try {
      answer = await res.json();
    } catch (_) { /* not JSON */ }
    if (res.status !== 200 || !answer || typeof answer.token !== "string" || typeof answer.deviceId !== "string") {
      return say(pairingError(answer, res.status, res.headers), "error");
    }
    codeInput.value = "";
    // The token goes to local storage (never sync) and is never shown again.
    await chrome.storage.local.set({ gateway: urls.http, token: answer.token, deviceId: answer.deviceId });
    answer = null;
    await chrome.runtime.sendMessage({ kind: "paired" });
    say("Paired.", "ok");
    await render();
  } finally {
    button.disabled = false;
  }
}

async function render() {
  const s = await chrome.runtime.sendMessage({ kind: "state" });
  if (!s) return;
  $("pair-section").hidden = s.paired;
  $("paired-section").hidden = !s.paired;
  $("device-id").textContent = s.deviceId || "";
  $("gateway-shown").textContent = s.gateway || "";
  $("conn").textContent = s.conn;
  document.body.dataset.conn = s.conn;
  document.body.dataset.paired = String(s.paired);
}

async function unpair() {
  await chrome.runtime.sendMessage({ kind: "unpair" });
  say("Unpaired: the token was removed from this browser.", "ok");
  await render();
}

$("pair-form").addEventListener("submit", pair);
$("unpair").addEventListener("click", unpair);
chrome.storage.onChanged.addListener(() => { render(); });
render();
setInterval(render, 1000);
