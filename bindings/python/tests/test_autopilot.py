"""browser_autopilot (issue 26 item 8, R-AUTO, R-DEV-TOOLS) from Python: the tenth device tool
when Jev is configured, run through gw.call_tool on a real headless Chromium paired as a device
(the reference worker over a loopback channel). A scripted callback model fills a two-field
form and submits it; the fixture counts the real submits and what they carried; the model
never receives a value."""

import http.server
import json
import threading
import time
import urllib.parse

import pytest

import jevgate

OWNER = "person"
BROWSER = {"installationId": "inst-ap", "name": "Autopilot", "browser": {"name": "Chromium", "version": "131"}}
CALLBACK = {"gateway": {"jev": {"enabled": True, "provider": "callback"}}}
FIRST, EMAIL = "Quinn-VALUE-9", "quinn.VALUE@mail.example"
PAGE = b"""<!doctype html><title>News</title><h1>News</h1>
<form method="post" action="/submit">
<label>First name <input name="first"></label>
<label>Email <input name="email"></label>
<button type="submit">Submit</button></form>"""


class Site:
    def __init__(self) -> None:
        self.posts: list = []
        site = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server API)
                length = int(self.headers.get("Content-Length", "0"))
                site.posts.append(urllib.parse.parse_qs(self.rfile.read(length).decode()))
                self._send(b"<!doctype html><title>Thanks</title><h1>Thank you</h1>")

            def do_GET(self) -> None:  # noqa: N802
                self._send(PAGE)

            def _send(self, body: bytes) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def scripted(script: list, seen: list):
    """Each evaluation pops (what the wanted option says, value name); "done" answers done."""

    def answer(request):
        seen.append(json.dumps(request))
        want, value = script.pop(0) if script else ("done", None)
        answers = {}
        for key, q in request["questions"].items():
            options = q["criteria"]
            if key == "page":
                pick = "ordinary"
            elif key == "next":
                pick = "done" if want == "done" else next((k for k, d in options.items() if want in d), "stop")
            else:
                pick = next((k for k, d in options.items() if d.endswith(f"named {value}")), next(iter(options)))
            answers[key] = {"type": "choice", "choice": pick, "confidence": 0.9,
                            "probabilities": {k: (1.0 if k == pick else 0.0) for k in options}}
        return {"model": "m", "answers": answers, "usage": {"input_tokens": 1, "output_tokens": 1}}

    return answer


def test_the_tool_is_listed_tenth_only_with_jev(tmp_path):
    with jevgate.Gateway(tmp_path / "off") as gw:
        assert len(gw.tool_definitions()) == 9
        assert "browser_autopilot" not in [t["name"] for t in gw.agent_tools()]
        r = gw.call_tool(OWNER, "conv", "browser_autopilot", {"goal": "x"})
        assert r["errorCode"] == "UNKNOWN_TOOL"
    with jevgate.Gateway(tmp_path / "on", CALLBACK) as gw:
        tools = gw.tool_definitions("openai")
        assert len(tools) == 10 and tools[9]["function"]["name"] == "browser_autopilot"
        assert gw.agent_tools()[-1]["name"] == "browser_autopilot"
        bad = gw.call_tool(OWNER, "conv", "browser_autopilot", {"goal": "x", "values": {"pin": 1234}})
        assert bad["errorCode"] == "INVALID_TOOL_ARGUMENTS" and "1234" not in bad["message"]
        with pytest.raises(jevgate.Error) as e:
            gw.call_agent_tool({"agentId": "a", "principalId": OWNER, "conversationId": "conv"},
                               "browser_autopilot", {"goal": "x"})
        assert e.value.code == "DEVICE_NOT_PAIRED"
        with pytest.raises(jevgate.Error):
            gw.tool_definitions("yaml")


@pytest.mark.chromium
@pytest.mark.timeout(120)
def test_autopilot_fills_and_submits_a_form_once_and_the_model_never_sees_a_value(tmp_path):
    site = Site()
    seen: list = []
    script = [('fill textbox "First name"', "first"), ('fill textbox "Email"', "email"),
              ('press button "Submit"', None), ("done", None)]
    try:
        with jevgate.Gateway(tmp_path, CALLBACK) as gw:
            gw.set_jev_callback(scripted(script, seen))
            paired = gw.pair(OWNER, BROWSER)
            channel = gw.serve_channel()
            with jevgate.LocalBrowser() as browser, jevgate.DeviceWorker(channel.url, paired["token"], browser):
                assert gw.call_tool(OWNER, "conv", "browser_navigate", {"url": site.base + "/"})["success"]
                lines: list = []
                r = gw.call_tool(OWNER, "conv", "browser_autopilot",
                                 {"goal": "sign up with the first name and the email",
                                  "values": {"first": FIRST, "email": EMAIL}}, agent_id="assistant",
                                 on_progress=lines.append)
                assert r["success"], r
                result = r["result"]
                assert result["state"] == "done" and result["reason"] == "GOAL_REACHED", result
                assert [a["tool"] for a in result["actions"]] == ["page_type", "page_type", "page_click"]
                assert all(a["status"] == "done" for a in result["actions"])
                progress = result["untrustedContent"]["data"]["progress"]
                assert progress[0] == ('Autopilot: sign up with the first name and the email — '
                                       'type [first] into textbox "First name"')
                assert lines == progress, "each step's line, as it happened"
                deadline = time.monotonic() + 5
                while not site.posts and time.monotonic() < deadline:
                    time.sleep(0.01)
                assert site.posts == [{"first": [FIRST], "email": [EMAIL]}], "submitted once, as given"
            assert len(seen) == 4
            everything = "\n".join(seen) + json.dumps(r)
            assert "VALUE" not in everything, "a value reached the model or the result"
            usage = gw.usage("assistant", 10, 0)
            assert usage["total"] == 4, "the evaluations are the calling agent's"
    finally:
        site.close()


@pytest.mark.chromium
@pytest.mark.timeout(120)
def test_a_local_tasks_autopilot_round_fills_the_form_once(tmp_path):
    """Issue 26 item 8: the same loop as a gw.tasks spawn option on a local task: the form is
    submitted once with the given values, each action is in the task's receipts, the model
    never sees a value, and the run ends a completion candidate; bad arguments are refused."""
    site = Site()
    seen: list = []
    script = [('fill textbox "First name"', "first"), ('fill textbox "Email"', "email"),
              ('press button "Submit"', None), ("done", None)]
    config = {"gateway": {"jev": {"enabled": True, "provider": "callback",
                                  "features": {"browserTasks": {"enabled": True}}}}}
    owner = {"agentId": "assistant", "principalId": "alice", "conversationId": "conv-ap"}
    try:
        with jevgate.Gateway(tmp_path, config) as gw:
            gw.set_jev_callback(scripted(script, seen))
            with pytest.raises(jevgate.Error) as info:
                gw.tasks.spawn(owner, autopilot={"goal": "x", "values": {"a": 1}})
            assert info.value.code == "INVALID_TOOL_ARGUMENTS"
            task = gw.tasks.spawn(owner, autopilot={
                "goal": "sign up with the first name and the email",
                "values": {"first": FIRST, "email": EMAIL}}, start_url=site.base + "/")["id"]
            s = gw.tasks.wait(owner, task, 90.0)
            assert (s["state"], s["reason"]) == ("waiting_input", "COMPLETION_CANDIDATE"), s
            assert site.posts == [{"first": [FIRST], "email": [EMAIL]}]
            tools = [op["tool"] for r in gw.tasks.receipts(owner, task) for op in r["operations"]]
            assert tools == ["tab_navigate", "page_type", "page_type", "page_click"], tools
            assert not any(FIRST in r or EMAIL in r for r in seen)
            gw.tasks.cancel(owner, task)
    finally:
        site.close()
