// The popup: the connection's state, whether an agent holds the device's control lease (the
// gateway's `status` frame), the autopilot step, the person's Stop / Resume, and "Share this
// tab" (adds the active tab to the agent's tab group). It shows no page content and no token.

const $ = (/** @type {string} */ id) => /** @type {HTMLElement} */ (document.getElementById(id));

/** @param {any} s */
function show(s) {
  if (!s) return;
  $("conn").textContent = s.paired ? s.conn : "not paired";
  const until = s.status && s.status.until ? new Date(s.status.until).toLocaleTimeString() : null;
  $("controller").textContent = s.status && s.status.controlled
    ? `An agent is driving this browser${until ? ` (lease until ${until})` : ""}.`
    : "No agent is driving this browser.";
  const auto = $("autopilot");
  auto.hidden = !(s.status && s.status.autopilot);
  auto.textContent = (s.status && s.status.autopilot) || "";
  $("stopped").hidden = !s.stopped;
  $("stop").hidden = !!s.stopped;
  $("resume").hidden = !s.stopped;
  document.body.dataset.stopped = String(!!s.stopped);
}

async function refresh() {
  show(await chrome.runtime.sendMessage({ kind: "state" }));
}

$("stop").addEventListener("click", async () => show(await chrome.runtime.sendMessage({ kind: "stop" })));
$("resume").addEventListener("click", async () => show(await chrome.runtime.sendMessage({ kind: "resume" })));
$("share").addEventListener("click", async () => {
  const [tab] = await chrome.tabs.query({ active: true, lastFocusedWindow: true });
  if (tab && tab.id !== undefined) show(await chrome.runtime.sendMessage({ kind: "share", tabId: tab.id }));
});
refresh();
setInterval(refresh, 1000);
