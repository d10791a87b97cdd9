// Test only (tests/extension.rs): holds chrome.debugger on every tab whose address contains
// `hold-debugger`, the way DevTools or another debugging extension would.
const held = new Set();
chrome.tabs.onUpdated.addListener((tabId, info, tab) => {
  const url = tab.url || tab.pendingUrl || "";
  if (!url.includes("hold-debugger") || held.has(tabId)) return;
  held.add(tabId);
  chrome.debugger.attach({ tabId }, "1.3").catch(() => held.delete(tabId));
});
