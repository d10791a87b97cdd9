"""gw.tasks.control and control receipts (issue 21, R-TSK-CTL) on a real headless Chromium
session: agent/user hand-over, idempotent replays, pause/resume/revise, every code of the
control route, and a command's control receipt."""

import uuid

import pytest

import jevgate

OWNER = {"agentId": "assistant", "principalId": "alice", "conversationId": "conv-1"}
STRANGER = {"agentId": "assistant", "principalId": "mallory", "conversationId": "conv-1"}
CONFIG = {
    "gateway": {
        "jev": {
            "enabled": True,
            "provider": "local",
            "features": {"browserTasks": {"enabled": True}, "browserSteps": {"enabled": True}},
        }
    }
}
WAIT = 90.0


def test_r_tsk_ctl_control_verbs_codes_and_receipts(tmp_path):
    with jevgate.Gateway(tmp_path, CONFIG) as gw:
        tasks = gw.tasks
        task_id = tasks.spawn(OWNER, keep_open=True)["id"]
        s = tasks.wait(OWNER, task_id, WAIT)
        assert s["state"] == "waiting_input"
        rev = s["revision"]

        agent = str(uuid.uuid4())
        s = tasks.control(OWNER, task_id, id=agent, action="agent", expected_revision=rev)
        assert s["controller"] == "agent"
        # The same id and contents answer the same; other contents conflict.
        assert tasks.control(OWNER, task_id, id=agent, action="agent", expected_revision=rev)["controller"] == "agent"
        with pytest.raises(jevgate.TaskError) as info:
            tasks.control(OWNER, task_id, id=agent, action="user", expected_revision=rev)
        assert info.value.code == jevgate.codes.IDEMPOTENCY_CONFLICT and info.value.http_status == 409
        tasks.control(OWNER, task_id, id=str(uuid.uuid4()), action="user", expected_revision=rev)

        for action, want in (("resume", "NOTHING_TO_RESUME"), ("user", "STATE_CONFLICT")):
            with pytest.raises(jevgate.TaskError) as info:
                tasks.control(OWNER, task_id, id=str(uuid.uuid4()), action=action, expected_revision=rev)
            assert info.value.code == want
        with pytest.raises(jevgate.TaskError) as info:
            tasks.control(OWNER, task_id, id=str(uuid.uuid4()), action="pause", expected_revision=rev + 7)
        assert info.value.code == "REVISION_CONFLICT"

        revise = str(uuid.uuid4())
        s = tasks.control(
            OWNER, task_id, id=revise, action="revise", expected_revision=rev, text="scroll down"
        )
        assert s["revision"] == rev + 1
        s = tasks.wait(OWNER, task_id, WAIT)
        assert s["state"] == "waiting_input"
        receipt = tasks.command_receipt(OWNER, task_id, revise)
        assert receipt["kind"] == "revise" and receipt["state"] in ("done", "not_done")
        assert tasks.command_receipt(OWNER, task_id, str(uuid.uuid4())) is None

        queued = tasks.command(OWNER, task_id, "scroll up")
        assert queued["state"] == "accepted" and queued["summary"] == "scroll up"
        tasks.wait(OWNER, task_id, WAIT)
        assert tasks.command_receipt(OWNER, task_id, queued["commandId"])["state"] in ("done", "not_done")

        # Bad input: INVALID_INPUT (an ArgumentError), never echoing the text.
        for kwargs in (
            {"id": "42", "action": "pause"},
            {"id": str(uuid.uuid4()), "action": "pause", "text": "x"},
            {"id": str(uuid.uuid4()), "action": "revise"},
            {"id": str(uuid.uuid4()), "action": "revise", "text": "SECRET" * 700},
            {"id": str(uuid.uuid4()), "action": "jump"},
        ):
            with pytest.raises(jevgate.ArgumentError) as info:
                tasks.control(OWNER, task_id, expected_revision=rev + 1, **kwargs)
            assert info.value.code == "INVALID_INPUT" and "SECRET" not in str(info.value)
        with pytest.raises(jevgate.ArgumentError):
            tasks.control(OWNER, "not-a-uuid", id=str(uuid.uuid4()), action="pause", expected_revision=1)
        with pytest.raises(jevgate.AccessDeniedError):
            tasks.control(STRANGER, task_id, id=str(uuid.uuid4()), action="pause", expected_revision=rev + 1)

        # Nothing in doubt: reconcile and resolve say so (tests/task_run.rs reconciles for real);
        # no field question pending: an answer is refused (tests/task_control.rs answers one).
        for call in (
            lambda: tasks.answer(OWNER, task_id, "Address", "12 Main St"),
            lambda: tasks.reconcile(OWNER, task_id),
            lambda: tasks.resolve(OWNER, task_id, "no-such-operation", True),
        ):
            with pytest.raises(jevgate.TaskError) as info:
                call()
            assert info.value.code == "STATE_CONFLICT"

        tasks.cancel(OWNER, task_id)
        s = tasks.wait(OWNER, task_id, WAIT)
        assert s["state"] == "cancelled"
        with pytest.raises(jevgate.TaskError) as info:
            tasks.control(OWNER, task_id, id=str(uuid.uuid4()), action="pause", expected_revision=s["revision"])
        assert info.value.code == "AUTOMATION_SESSION_CLOSED" and info.value.http_status == 410


def test_r_tsk_ctl_update_reopens_a_finished_task_on_a_fresh_page(tmp_path):
    with jevgate.Gateway(tmp_path, CONFIG) as gw:
        tasks = gw.tasks
        task_id = tasks.spawn(OWNER, user_message="scroll down")["id"]
        s = tasks.wait(OWNER, task_id, WAIT)
        assert s["state"] in ("completed", "failed"), s
        first_requests = len(tasks.receipts(OWNER, task_id))
        s = tasks.update(OWNER, task_id, expected_revision=s["revision"], goal="scroll up")
        s = tasks.wait(OWNER, task_id, WAIT)
        # The update is the agent's goal: a goal run, which may end a completion candidate
        # waiting for its verification (issue 26 items 1 and 6).
        assert s["state"] in ("completed", "failed", "waiting_input"), s
        receipts = tasks.receipts(OWNER, task_id)
        assert len(receipts) == first_requests + 1
        assert receipts[-1]["request"] == first_requests + 1
        kinds = [c["kind"] for c in s["commands"]]
        assert "update" in kinds and s["pendingRevisions"] == []
        with pytest.raises(jevgate.TaskError) as info:
            tasks.update(OWNER, task_id, expected_revision=1, goal="scroll up")
        assert info.value.code == "REVISION_CONFLICT"
        with pytest.raises(jevgate.ArgumentError):
            tasks.update(OWNER, task_id, expected_revision=s["revision"], goal="")


def test_r_tsk_ctl_an_open_session_is_readmitted_after_a_restart(tmp_path):
    """Issue 21 item 3: a session waiting for its next command outlives its gateway; the next
    open of the data directory takes commands for it (a new browser, a fresh observation)."""
    with jevgate.Gateway(tmp_path, CONFIG) as gw:
        task_id = gw.tasks.spawn(OWNER, keep_open=True)["id"]
        before = gw.tasks.wait(OWNER, task_id, WAIT)
        assert before["state"] == "waiting_input"
    with jevgate.Gateway(tmp_path, CONFIG) as gw:
        s = gw.tasks.status(OWNER, task_id)
        assert s["state"] == "waiting_input" and s["revision"] == before["revision"], s
        receipt = gw.tasks.command(OWNER, task_id, "scroll down")
        assert receipt["state"] == "accepted"
        s = gw.tasks.wait(OWNER, task_id, WAIT)
        assert s["state"] == "waiting_input", s
        assert gw.tasks.command_receipt(OWNER, task_id, receipt["commandId"])["state"] != "accepted"
        assert [r["request"] for r in gw.tasks.receipts(OWNER, task_id)] == [1, 2]
        gw.tasks.cancel(OWNER, task_id)
        assert gw.tasks.wait(OWNER, task_id, WAIT)["state"] == "cancelled"
