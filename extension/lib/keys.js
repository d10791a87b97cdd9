// The Input.dispatchKeyEvent parameters of the computer tool's keys and of typed characters:
// a port of src/browser/keys.rs (key_events, char_events) and of BrowserTools' key names, so
// the extension sends the same events as the local backend. Pure data; never sends anything
// and never logs the text it is given.

/** @typedef {{type: string, key: string, code: string, windowsVirtualKeyCode: number,
 *   nativeVirtualKeyCode: number, text?: string, unmodifiedText?: string}} KeyEvent */

/** @type {Record<string, [string, string, number, string|null]>} */
const KEYS = {
  Enter: ["Enter", "Enter", 13, "\r"],
  Tab: ["Tab", "Tab", 9, null],
  Escape: ["Escape", "Escape", 27, null],
  Backspace: ["Backspace", "Backspace", 8, null],
  ArrowUp: ["ArrowUp", "ArrowUp", 38, null],
  ArrowDown: ["ArrowDown", "ArrowDown", 40, null],
  ArrowLeft: ["ArrowLeft", "ArrowLeft", 37, null],
  ArrowRight: ["ArrowRight", "ArrowRight", 39, null],
};

/** The key a computer-tool `key` text names (one key, no chords), or null.
 * @param {string} text */
export function parseKey(text) {
  switch (String(text).trim().toLowerCase()) {
    case "enter": case "return": return "Enter";
    case "tab": return "Tab";
    case "escape": case "esc": return "Escape";
    case "backspace": return "Backspace";
    case "arrowup": case "up": return "ArrowUp";
    case "arrowdown": case "down": return "ArrowDown";
    case "arrowleft": case "left": return "ArrowLeft";
    case "arrowright": case "right": return "ArrowRight";
    default: return null;
  }
}

/** keyDown and keyUp of a named key. @param {string} key @returns {KeyEvent[]} */
export function keyEvents(key) {
  const [name, code, vk, text] = KEYS[key];
  /** @type {KeyEvent} */
  const down = { type: text ? "keyDown" : "rawKeyDown", key: name, code, windowsVirtualKeyCode: vk, nativeVirtualKeyCode: vk };
  if (text) {
    down.text = text;
    down.unmodifiedText = text;
  }
  return [down, { type: "keyUp", key: name, code, windowsVirtualKeyCode: vk, nativeVirtualKeyCode: vk }];
}

/** keyDown/keyUp typing one printable ASCII character, or null (inserted as text instead).
 * @param {string} c @returns {KeyEvent[]|null} */
export function charEvents(c) {
  if (c.length !== 1 || c < " " || c > "~") return null;
  let code = "", vk = 0;
  if (/[A-Za-z]/.test(c)) {
    code = "Key" + c.toUpperCase();
    vk = c.toUpperCase().charCodeAt(0);
  } else if (/[0-9]/.test(c)) {
    code = "Digit" + c;
    vk = c.charCodeAt(0);
  } else if (c === " ") {
    code = "Space";
    vk = 32;
  }
  return [
    { type: "keyDown", key: c, code, text: c, unmodifiedText: c, windowsVirtualKeyCode: vk, nativeVirtualKeyCode: vk },
    { type: "keyUp", key: c, code, windowsVirtualKeyCode: vk, nativeVirtualKeyCode: vk },
  ];
}
