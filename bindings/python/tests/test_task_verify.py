"""gw.tasks.verify and gw.tasks.set_verifier (issue 26 item 6, R-TSK-VER) on a real headless
Chromium over a loopback page: a step list whose every step is done waits waiting_input
(COMPLETION_CANDIDATE) instead of completing; a host verifier must answer a bool (False:
VERIFICATION_FAILED; "yes" or an exception: INVALID_CONTRACT, never read as False; True:
completed, verification by host); the parent verifies on fresh evidence — refusals first,
each changing nothing — the task completes with verification by parent, the same verification
again answers the same status, another is AUTOMATION_SESSION_CLOSED."""

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

import jevgate

OWNER = {"agentId": "assistant", "principalId": "alice", "conversationId": "conv-1"}
FEATURES = {"browserTasks": {"enabled": True}, "browserSteps": {"enabled": True}}
LOCAL = {"gateway": {"jev": {"enabled": True, "provider": "local", "features": FEATURES}}}
WAIT = 90.0
STEPS = "1. scroll down\n2. scroll down"
PAGE = b'<!doctype html><title>Tall</title><body style="height:6000px"><h1>Verify me</h1>'


class Page(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (http.server API)
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(PAGE)))
        self.end_headers()
        self.wfile.write(PAGE)

    def log_message(self, *args):  # quiet
        pass


@pytest.fixture()
def site():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


def candidate(tasks, site):
    task_id = tasks.spawn(OWNER, user_message=STEPS, start_url=site)["id"]
    return task_id, tasks.wait(OWNER, task_id, WAIT)


@pytest.mark.chromium
def test_r_tsk_ver_a_host_verifier_must_answer_a_bool(tmp_path, site):
    seen = []

    def raises(_):
        raise RuntimeError("a verifier bug")

    with jevgate.Gateway(tmp_path, LOCAL) as gw:
        tasks = gw.tasks
        for verifier in (lambda _: "yes", lambda _: 1, raises):
            tasks.set_verifier(verifier)
            task_id, s = candidate(tasks, site)
            assert (s["state"], s["reason"]) == ("waiting_input", "INVALID_CONTRACT"), s
            assert s["verification"] is None
            tasks.cancel(OWNER, task_id)

        def records(arg):
            seen.append(arg)
            return False

        tasks.set_verifier(records)
        task_id, s = candidate(tasks, site)
        assert (s["state"], s["reason"]) == ("waiting_input", "VERIFICATION_FAILED"), s
        assert s["stepRun"]["stopReason"] == "ALL_STEPS_DONE"
        arg = seen[0]
        assert (arg["taskId"], arg["request"], arg["goal"]) == (task_id, 1, STEPS)
        assert arg["evidence"]["source"] == "fresh"
        assert "Verify me" in str(arg["evidence"]["untrustedContent"]["data"])
        tasks.cancel(OWNER, task_id)

        tasks.set_verifier(lambda _: True)
        task_id, s = candidate(tasks, site)
        assert (s["state"], s["reason"]) == ("completed", "VERIFIED"), s
        assert s["verification"]["by"] == "host" and s["verification"]["request"] == 1
        tasks.set_verifier(None)


@pytest.mark.chromium
def test_r_tsk_ver_the_parent_verifies_on_fresh_evidence(tmp_path, site):
    with jevgate.Gateway(tmp_path, LOCAL) as gw:
        tasks = gw.tasks
        task_id, s = candidate(tasks, site)
        assert (s["state"], s["reason"]) == ("waiting_input", "COMPLETION_CANDIDATE"), s
        evidence = tasks.evidence(OWNER, task_id, fresh=True)
        assert evidence["request"] == 1
        args = dict(
            expected_revision=s["revision"],
            expected_request_id=1,
            evidence_id=evidence["evidenceId"],
            instruction="the fresh page shows Verify me, scrolled down twice",
        )
        stale = dict(args, expected_revision=s["revision"] + 1)
        with pytest.raises(jevgate.TaskError) as info:
            tasks.verify(OWNER, task_id, **stale)
        assert info.value.code == "REVISION_CONFLICT"
        recorded = tasks.evidence(OWNER, task_id)
        with pytest.raises(jevgate.TaskError) as info:
            tasks.verify(OWNER, task_id, **dict(args, evidence_id=recorded["evidenceId"]))
        assert info.value.code == "STATE_CONFLICT" and "EVIDENCE_REQUIRED" in str(info.value)
        with pytest.raises(jevgate.TaskError) as info:
            tasks.verify(OWNER, task_id, **dict(args, expected_request_id=2))
        assert "NOT_A_CANDIDATE" in str(info.value)
        with pytest.raises(jevgate.Error) as info:
            tasks.verify(OWNER, task_id, **dict(args, instruction=""))
        assert info.value.code == "INVALID_INPUT"
        stranger = dict(OWNER, principalId="mallory")
        with pytest.raises(jevgate.AccessDeniedError):
            tasks.verify(stranger, task_id, **args)
        assert tasks.status(OWNER, task_id)["state"] == "waiting_input"

        v = tasks.verify(OWNER, task_id, **args)
        assert (v["state"], v["reason"]) == ("completed", "VERIFIED"), v
        assert v["verification"]["by"] == "parent"
        assert v["verification"]["evidenceId"] == evidence["evidenceId"]
        assert [c["kind"] for c in v["commands"]][-1] == "verify"
        again = tasks.verify(OWNER, task_id, **args)
        assert again["verification"] == v["verification"]
        with pytest.raises(jevgate.TaskError) as info:
            tasks.verify(OWNER, task_id, **dict(args, evidence_id=recorded["evidenceId"]))
        assert info.value.code == "AUTOMATION_SESSION_CLOSED"
