"""The managed browser tool family from Python (issue 15): jevgate.managed_tool_definitions for a
set of caps, and gw.browser_tool(thread_id, organization, name, args) on the thread's local
headless Chromium — selectors (css=, role=, text=), a chord, a dialog armed before its action,
fill_form read back, a screenshot artifact (none when strict), and refusals naming the field."""

import pytest

import jevgate

ENVELOPE_OPEN = "<untrusted-page-content>"
PAGE = (
    "() => { document.title = 'Py managed'; document.body.innerHTML = "
    "'<label>Name <input id=name></label><label><input id=agree type=checkbox> I agree</label>"
    "<select id=colour><option value=r>Red</option><option value=g>Green</option></select>"
    "<button id=go onclick=\"window.hits=(window.hits||0)+1\">Go</button>"
    "<button onclick=\"window.answer=confirm(\\'Sure?\\')\">Ask</button>'; return 1; }"
)


def names(**caps):
    return [t["name"] for t in jevgate.managed_tool_definitions("mcp", **caps)]


def test_definitions_follow_the_caps():
    plain = names()
    assert "browser_click" in plain and "browser_press_key" in plain
    assert "browser_tabs" not in plain and "browser_file_upload" not in plain
    assert "browser_tabs" in names(tabs=True)
    assert "browser_file_upload" in names(files=True)
    openai = jevgate.managed_tool_definitions("openai")
    assert all(t["type"] == "function" for t in openai)
    with pytest.raises(jevgate.ArgumentError):
        jevgate.managed_tool_definitions("yaml")


@pytest.mark.chromium
def test_browser_tool_drives_a_thread_session(tmp_path):
    with jevgate.Gateway(tmp_path) as gw:
        gw.enable_local_browsers()

        def tool(name, args=None, **kw):
            return gw.browser_tool("thread-1", "acme", name, args or {}, **kw)

        nav = tool("browser_navigate", {"url": "about:blank"})
        assert nav["sessionMode"] == "isolated"
        tool("browser_evaluate", {"function": PAGE})
        filled = tool("browser_fill_form", {"fields": [
            {"target": "css=#name", "value": "Ann"},
            {"target": "text=I agree", "value": True},
            {"target": "css=#colour", "value": "Green"},
        ]})
        assert filled["filled"] == 3
        assert filled["page"].startswith(ENVELOPE_OPEN) and "title: Py managed" in filled["page"]
        got = tool("browser_evaluate", {"function":
                   "() => [document.getElementById('name').value, document.getElementById('agree').checked,"
                   " document.getElementById('colour').value].join('|')"})
        assert '"Ann|true|g"' in got["page"]

        tool("browser_click", {"target": 'role=button[name="Go"]'})
        tool("browser_click", {"target": "css=#name"})
        tool("browser_press_key", {"key": "Control+A"})
        tool("browser_press_key", {"key": "Z"})
        got = tool("browser_evaluate", {"function": "() => document.getElementById('name').value + window.hits"})
        assert '"Z1"' in got["page"]

        armed = tool("browser_handle_dialog", {"accept": False})
        assert armed == {"armed": True, "accept": False, "sessionMode": "isolated"}
        asked = tool("browser_click", {"target": "text=Ask"})
        assert asked["dialog"] == {"type": "confirm", "handled": "dismissed"}
        assert "false" in tool("browser_evaluate", {"function": "() => String(window.answer)"})["page"]

        shot = tool("browser_take_screenshot")
        media, data = gw.artifact("thread-1", shot["artifactId"])
        assert media == "image/jpeg" and data[:2] == b"\xff\xd8"
        strict = tool("browser_take_screenshot", data_handling="strict")
        assert "artifactId" not in strict and strict["image"]

        with pytest.raises(jevgate.Error) as info:
            tool("browser_click", {"target": "css=#nothing"})
        assert info.value.code == "TARGET_NOT_FOUND"
        with pytest.raises(jevgate.Error) as info:
            tool("browser_type", {"target": "css=#name", "text": "x", "secret": "SECRET-42"})
        assert info.value.code == "INVALID_TOOL_ARGUMENTS"
        assert "`secret`" in str(info.value) and "SECRET-42" not in str(info.value)
        with pytest.raises(jevgate.Error) as info:
            tool("browser_tabs", {"action": "list"})
        assert info.value.code == "UNKNOWN_TOOL"
        gw.set_managed_caps(tabs=True)
        assert tool("browser_tabs", {"action": "list"})["count"] == 1
        with pytest.raises(jevgate.ArgumentError):
            tool("browser_snapshot", data_handling="loose")
