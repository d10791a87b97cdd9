"""High-impact confirmation from Python (issue 26 item 2) on a real headless Chromium: under
``confirmHighImpact: "always"`` a Jev-decided press on "Delete account" is not dispatched until
the person says yes (``CONFIRMATION_REQUIRED``, ``confirmationRequest`` in the status); "no"
runs nothing (``CONFIRMATION_DECLINED``); "yes" presses it once. The fixture counts real
presses; the callback model answers the impact question honestly and sees only the control."""

import http.server
import json
import sys
import threading
import time

import pytest

import jevgate

OWNER = {"agentId": "assistant", "principalId": "alice", "conversationId": "conv-1"}
PAGE = (
    "<title>Account</title><h1>Account</h1><p>SECRET-PAGE-TEXT</p>"
    "<button onclick=\"fetch('/beacon?n=delete',{method:'POST'})\">Delete account</button>"
    "<button onclick=\"fetch('/beacon?n=alpha',{method:'POST'})\">Alpha</button>"
).encode()
WAIT = 90.0


class Site:
    def __init__(self) -> None:
        self.beacons: dict[str, int] = {}
        site = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                name = self.path.partition("n=")[2]
                site.beacons[name] = site.beacons.get(name, 0) + 1
                self.send_response(204)
                self.end_headers()

            def do_GET(self) -> None:  # noqa: N802
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(PAGE)))
                self.end_headers()
                self.wfile.write(PAGE)

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"

    def presses(self, name: str, want: int) -> int:
        deadline = time.monotonic() + 5
        while self.beacons.get(name, 0) < want and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.15)
        return self.beacons.get(name, 0)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def model(seen: list):
    """Picks the control the command's last words name; the impact question is routine unless
    the control deletes; a reply reads yes / no / other."""

    def answer(request):
        key = next(iter(request["questions"]))
        state = request["state"]
        seen.append((key, state))
        if key == "routine":
            name = json.loads(state)["untrustedContent"]["data"]["control"]["name"]
            a = {"type": "noul", "noul": 0.05 if name.startswith("Delete") else 0.95}
        elif key == "reply":
            choice = {"yes": "yes", "no": "no"}.get(state.strip().lower(), "other")
            a = {"type": "choice", "choice": choice, "confidence": 0.9,
                 "probabilities": {k: (1.0 if k == choice else 0.0) for k in ("yes", "no", "other")}}
        else:
            options = request["questions"][key]["criteria"]
            try:
                goal = json.loads(state)
            except ValueError:
                goal = None
            if isinstance(goal, dict):
                # An agent's goal run: done once it acted, else the control its last word names.
                word = goal["goal"].split()[-1]
                acted = goal["untrustedContent"]["data"]["actionsDone"]
                named = next((k for k, d in options.items() if k.startswith("o") and word in d), "blocked")
                pick = "done" if acted else named
            else:
                word = state.split()[-1]
                pick = next((k for k, d in options.items() if word in d), "none")
            a = {"type": "choice", "choice": pick, "confidence": 0.9,
                 "probabilities": {k: (1.0 if k == pick else 0.0) for k in options}}
        return {"model": "m", "answers": {key: a}, "usage": {"input_tokens": 1, "output_tokens": 1}}

    return answer


@pytest.mark.chromium
@pytest.mark.timeout(120)
def test_always_asks_before_deleting_and_only_yes_presses(tmp_path):
    config = {"gateway": {"jev": {"enabled": True, "provider": "callback", "features": {
        "browserTasks": {"enabled": True, "confirmHighImpact": "always"},
        "browserSteps": {"enabled": True}}}}}
    site = Site()
    seen: list = []
    try:
        with jevgate.Gateway(tmp_path, config) as gw:
            gw.set_jev_callback(model(seen))
            task = gw.tasks.spawn(OWNER, keep_open=True, start_url=site.base + "/")["id"]
            assert gw.tasks.wait(OWNER, task, WAIT)["state"] == "waiting_input"
            asked = gw.tasks.command(OWNER, task, "press Delete account")
            s = gw.tasks.wait(OWNER, task, WAIT)
            assert s["reason"] == "CONFIRMATION_REQUIRED", s
            assert s["confirmationRequest"] == {"control": "Delete account",
                                                "question": 'Press "Delete account"?'}
            assert site.presses("delete", 0) == 0
            impact = [state for key, state in seen if key == "routine"]
            assert len(impact) == 1 and "SECRET-PAGE-TEXT" not in impact[0] and "Alpha" not in impact[0]
            gw.tasks.command(OWNER, task, "no")
            s = gw.tasks.wait(OWNER, task, WAIT)
            assert s["reason"] == "CONFIRMATION_DECLINED" and s["confirmationRequest"] is None, s
            assert gw.tasks.command_receipt(OWNER, task, asked["commandId"])["reason"] == "CONFIRMATION_DECLINED"
            assert site.presses("delete", 0) == 0
            gw.tasks.command(OWNER, task, "press Delete account")
            assert gw.tasks.wait(OWNER, task, WAIT)["confirmationRequest"] is not None
            gw.tasks.command(OWNER, task, "yes")
            s = gw.tasks.wait(OWNER, task, WAIT)
            assert s["outcome"].startswith("Done: "), s
            assert site.presses("delete", 1) == 1
            gw.tasks.command(OWNER, task, "press Alpha")
            gw.tasks.wait(OWNER, task, WAIT)
            assert site.presses("alpha", 1) == 1
            gw.tasks.cancel(OWNER, task)
    finally:
        site.close()


@pytest.mark.chromium
@pytest.mark.timeout(120)
def test_an_agents_goal_asks_first_and_the_persons_list_runs_verbatim(tmp_path):
    """Issue 26 items 1 and 2 under the default policy: a spawn's goal is the agent's (a goal
    run: Delete is asked about, not pressed, in the person's language); the person's own step
    list in ``user_message`` runs verbatim as theirs, no impact question asked."""
    config = {"gateway": {"jev": {"enabled": True, "provider": "callback", "features": {
        "browserTasks": {"enabled": True}, "browserSteps": {"enabled": True}}}}}
    site = Site()
    seen: list = []
    try:
        with jevgate.Gateway(tmp_path, config) as gw:
            gw.set_jev_callback(model(seen))
            task = gw.tasks.spawn(OWNER, "press Delete account", user_message="ลบบัญชีหน่อย",
                                  start_url=site.base + "/")["id"]
            s = gw.tasks.wait(OWNER, task, WAIT)
            assert s["reason"] == "CONFIRMATION_REQUIRED", s
            assert s["confirmationRequest"]["question"] == 'จะกด "Delete account" ใช่ไหม'
            assert site.presses("delete", 0) == 0
            gw.tasks.command(OWNER, task, "yes")
            s = gw.tasks.wait(OWNER, task, WAIT)
            assert s["reason"] == "COMPLETION_CANDIDATE" and s["state"] == "waiting_input", s
            assert site.presses("delete", 1) == 1
            gw.tasks.cancel(OWNER, task)
            seen.clear()
            # The person's own list is their authorization: Delete is pressed, nothing asked.
            task = gw.tasks.spawn(OWNER, "press Alpha",
                                  user_message="1. press Alpha\n2. press Delete account",
                                  start_url=site.base + "/")["id"]
            s = gw.tasks.wait(OWNER, task, WAIT)
            assert s["stepRun"]["stopReason"] == "ALL_STEPS_DONE", s
            assert site.presses("alpha", 1) == 1 and site.presses("delete", 2) == 2
            assert not [k for k, _ in seen if k == "routine"]
            gw.tasks.cancel(OWNER, task)
    finally:
        site.close()


@pytest.mark.chromium
@pytest.mark.timeout(120)
def test_a_read_request_and_a_handoff_go_to_the_agent(tmp_path):
    """Issue 26 items 3 and 4: the person's question about the page is a read request (nothing
    pressed; ``needsAgent``; the agent's mutations are READ_REQUEST_ONLY), and a command that
    did nothing is handed to the agent, whose one ``task_update`` runs — a second is refused."""
    config = {"gateway": {"jev": {"enabled": True, "provider": "callback", "features": {
        "browserTasks": {"enabled": True}, "browserSteps": {"enabled": True}}}}}
    site = Site()
    seen: list = []
    base = model(seen)

    def reads(request):
        options = request["questions"].get("control", {}).get("criteria", {})
        if request["state"].endswith("?") and "read_request" in options:
            return {"model": "m", "usage": {"input_tokens": 1, "output_tokens": 1}, "answers": {
                "control": {"type": "choice", "choice": "read_request", "confidence": 0.9,
                            "probabilities": {k: (1.0 if k == "read_request" else 0.0) for k in options}}}}
        return base(request)

    def agent(gw, tool, **args):
        return gw.call_agent_tool(OWNER, tool, args)

    try:
        with jevgate.Gateway(tmp_path, config) as gw:
            gw.set_jev_callback(reads)
            task = gw.tasks.spawn(OWNER, keep_open=True, start_url=site.base + "/")["id"]
            gw.tasks.wait(OWNER, task, WAIT)
            asked = gw.tasks.command(OWNER, task, "what does this page say?")
            s = gw.tasks.wait(OWNER, task, WAIT)
            assert s["needsAgent"]["code"] == "READ_REQUEST", s
            assert gw.tasks.command_receipt(OWNER, task, asked["commandId"])["state"] == "needs_agent"
            with pytest.raises(jevgate.TaskError) as e:
                agent(gw, "task_command", taskId=task, command="press Alpha")
            assert e.value.code == "READ_REQUEST_ONLY"
            # The agent answers from fresh evidence: reads are allowed in its read-only turn.
            fresh = agent(gw, "task_status", taskId=task, browserEvidence="fresh")
            assert fresh["browserEvidence"]["available"] is True, fresh
            assert "Delete account" in json.dumps(fresh["untrustedContent"]["data"]["evidence"])
            assert site.presses("alpha", 0) == 0
            gw.tasks.command(OWNER, task, "press the shiny one")
            s = gw.tasks.wait(OWNER, task, WAIT)
            assert s["needsAgent"]["code"] == "AGENT_HANDOFF", s
            revision = s["needsAgent"]["revision"]
            agent(gw, "task_update", taskId=task, expectedRevision=revision, goal="press Alpha")
            s = gw.tasks.wait(OWNER, task, WAIT)
            assert site.presses("alpha", 1) == 1
            with pytest.raises(jevgate.TaskError) as e:
                agent(gw, "task_update", taskId=task, expectedRevision=s["revision"], goal="press Alpha")
            assert e.value.code == "AGENT_HANDOFF_USED"
            gw.tasks.cancel(OWNER, task)
    finally:
        site.close()


class Helper:
    """A loopback text helper speaking the OpenAI chat wire format (`gateway.jev.thinking`):
    answers `{"text": …}` and records what it was sent."""

    def __init__(self, text: str) -> None:
        self.seen: list = []
        helper = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                helper.seen.append(self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode())
                body = json.dumps({"choices": [{"message": {"role": "assistant",
                                                            "content": json.dumps({"text": text})}}]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


FORM = (
    "<title>SECRET-TITLE</title><p>SECRET-PAGE-TEXT</p>"
    "<label>Origin <input id=o oninput=\"fetch('/beacon?n=typed:'+encodeURIComponent(this.value),"
    "{method:'POST'})\"></label>"
).encode()


@pytest.mark.chromium
@pytest.mark.timeout(120)
def test_the_text_helper_fills_a_decided_field_from_the_command_only(tmp_path, monkeypatch):
    """Issue 26 item 7: with `gateway.jev.thinking`, a Jev-decided text entry types the value
    the text helper resolves from the person's command; the helper never sees the page's
    title, path, query or text."""
    site = Site()
    helper = Helper("Chiang Mai")
    monkeypatch.setenv("JEVGATE_TEST_PY_HELPER_KEY", "k")
    monkeypatch.setattr(sys.modules[__name__], "PAGE", FORM)
    config = {"gateway": {"jev": {"enabled": True, "provider": "callback",
                                  "thinking": {"baseUrl": helper.base + "/v1", "model": "small",
                                               "apiKeyEnv": "JEVGATE_TEST_PY_HELPER_KEY"},
                                  "features": {"browserTasks": {"enabled": True}}}}}

    def field_model(request):
        options = request["questions"]["control"]["criteria"]
        pick = next((k for k, d in options.items() if "Origin" in d), "none")
        return {"model": "m", "usage": {"input_tokens": 1, "output_tokens": 1}, "answers": {"control": {
            "type": "choice", "choice": pick, "confidence": 0.9,
            "probabilities": {k: (1.0 if k == pick else 0.0) for k in options}}}}

    try:
        with jevgate.Gateway(tmp_path, config) as gw:
            gw.set_jev_callback(field_model)
            task = gw.tasks.spawn(OWNER, keep_open=True, start_url=site.base + "/secret-path?q=SECRET-QUERY")["id"]
            gw.tasks.wait(OWNER, task, WAIT)
            gw.tasks.command(OWNER, task, "choose Chiang Mai as the origin")
            s = gw.tasks.wait(OWNER, task, WAIT)
            assert s["outcome"].startswith("Done: "), s
            assert site.presses("typed:Chiang%20Mai", 1) == 1
            assert len(helper.seen) == 1 and "choose Chiang Mai as the origin" in helper.seen[0]
            for secret in ("SECRET-TITLE", "SECRET-PAGE-TEXT", "secret-path", "SECRET-QUERY"):
                assert secret not in helper.seen[0], secret
            gw.tasks.cancel(OWNER, task)
    finally:
        site.close()
        helper.close()
