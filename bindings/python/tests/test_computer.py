"""The computer helper from Python (issue 25): gw.pair_computer pairs a `jevgate-computer`
helper as a device of capability "computer", and gw.computer_target drives it — observe, act,
operation_status, request_access — with dicts in and out.

Everywhere: pairing, the inventory, a paired helper that is not connected (DEVICE_OFFLINE,
nothing executed), refusals before anything is sent, a browser that is no computer and another
owner's computer. On a throw-away desktop (scripts/desktop: Xvfb, a session bus, the AT-SPI bus;
skipped without one, a failure under JEVGATE_REQUIRE_DESKTOP=1 as scripts/test sets): the real
helper binary serves gnome-calculator — consent refused before approval, approved, a press read
back through AT-SPI with its receipt, revoked. A computer task's computerConnection through a
disconnect and a reconnect, with a Python executor playing the helper."""

import os
import pathlib
import shutil
import subprocess
import tempfile
import time

import pytest

import jevgate

OWNER = "person"
REPO = pathlib.Path(__file__).resolve().parents[3]
REQUIRE_DESKTOP = os.environ.get("JEVGATE_REQUIRE_DESKTOP") == "1"


@pytest.fixture
def gw(tmp_path):
    with jevgate.Gateway(tmp_path / "data") as gw:
        yield gw


def code_of(call):
    with pytest.raises(jevgate.Error) as info:
        call()
    return info.value.code


def test_pair_computer_and_a_helper_not_connected(gw):
    # R-DEV-PAIR, issue 25: a computer is a device of capability "computer".
    pairing = gw.pair_computer(OWNER, {"installationId": "desk-1", "name": "Work desktop"})
    device = pairing["device"]["id"]
    assert pairing["token"]
    listed = [d for d in gw.devices(OWNER) if d["id"] == device]
    assert len(listed) == 1 and listed[0]["label"] == "computer" and not listed[0]["online"]
    assert "token" not in str(gw.devices(OWNER))
    assert code_of(lambda: gw.pair_computer(OWNER, {"name": 1})) == "INVALID_ARGUMENT"

    channel = gw.serve_channel()
    try:
        pc = gw.computer_target(OWNER, "conv-1", device)
        assert pc.device_id == device and device in repr(pc)
        # No helper connected: never sent, so never executed.
        assert code_of(pc.observe) == "DEVICE_OFFLINE"
        assert code_of(lambda: pc.act({"operation_id": "op-1", "kind": "press", "ref": "c1"})) == "DEVICE_OFFLINE"
        assert code_of(lambda: pc.operation_status("op-1")) == "DEVICE_OFFLINE"
        assert code_of(pc.request_access) == "DEVICE_OFFLINE"
        # Refused before anything is sent.
        assert code_of(lambda: pc.act({"operation_id": "op-2", "kind": "drag"})) == "INVALID_ARGUMENT"
        assert code_of(lambda: pc.act({"operation_id": "op-2", "kind": "press"})) == "INVALID_ARGUMENT"
        assert code_of(lambda: pc.act({"operation_id": "op 2", "kind": "press", "ref": "c1"})) == "INVALID_ARGUMENT"
        assert code_of(lambda: pc.act(["not", "an", "object"])) == "INVALID_ARGUMENT"
        assert code_of(lambda: pc.operation_status("")) == "INVALID_ARGUMENT"
    finally:
        channel.stop()


def test_a_browser_is_no_computer_and_owners_are_apart(gw):
    browser = gw.pair(OWNER, {"installationId": "chrome-1", "name": "Chrome",
                              "browser": {"name": "Chrome", "version": "130"}})["device"]["id"]
    assert code_of(gw.computer_target(OWNER, "conv-1", browser).observe) == "DEVICE_CAPABILITY_MISMATCH"
    computer = gw.pair_computer(OWNER, {"installationId": "desk-1", "name": "Desk"})["device"]["id"]
    assert code_of(gw.computer_target("mallory", "conv-9", computer).observe) == "DEVICE_NOT_PAIRED"
    assert code_of(gw.computer_target(OWNER, "conv-1", "dev_unknown").observe) == "DEVICE_NOT_PAIRED"
    gw.close()
    assert code_of(lambda: gw.computer_target(OWNER, "conv-1", computer)) == "GATEWAY_CLOSED"


def test_a_computer_task_target_is_gated_and_checked(tmp_path):
    # Issue 25 items 1 and 4: gw.tasks.spawn takes target {"kind": "computer", "deviceId"};
    # features.computerTasks off is COMPUTER_NOT_ALLOWED before anything is stored; on (the
    # default with Jev), a browser is no computer (the task fails before any lease).
    task_owner = {"agentId": "assistant", "principalId": OWNER, "conversationId": "conv-1"}
    off = {"gateway": {"jev": {"enabled": True, "provider": "local",
                               "features": {"computerTasks": {"enabled": False}}}}}
    with jevgate.Gateway(tmp_path / "off", off) as gw:
        computer = gw.pair_computer(OWNER, {"installationId": "desk-1", "name": "Desk"})["device"]["id"]
        target = {"kind": "computer", "deviceId": computer}
        assert code_of(lambda: gw.tasks.spawn(task_owner, "5", target=target)) == "COMPUTER_NOT_ALLOWED"
        assert gw.tasks.list(task_owner) == []
        assert code_of(lambda: gw.tasks.spawn(task_owner, "5", target={"kind": "computer"})) == "INVALID_ARGUMENT"
    on = {"gateway": {"jev": {"enabled": True, "provider": "local"}}}
    with jevgate.Gateway(tmp_path / "on", on) as gw:
        browser = gw.pair(OWNER, {"installationId": "chrome-1", "name": "Chrome",
                                  "browser": {"name": "Chrome", "version": "130"}})["device"]["id"]
        spawned = gw.tasks.spawn(task_owner, "5", target={"kind": "computer", "deviceId": browser})
        status = gw.tasks.wait(task_owner, spawned["id"], 30.0)
        assert (status["state"], status["reason"]) == ("failed", "DEVICE_CAPABILITY_MISMATCH")
        assert status["target"] == {"kind": "computer", "deviceId": browser}


def test_a_computer_task_shows_its_connection_and_a_disconnect_revokes_access(tmp_path):
    # Issue 25 item 4, seed 003 "Computer connection status": a task session on a paired
    # computer opens connected (its run asked for access); the gateway checks it every five
    # seconds of its clock, idle included: a disconnect shows "disconnected" with the session
    # open, and the reconnected helper's access is revoked before anything else reaches it
    # ("waiting_access") until the person approves again. A Python executor plays the helper.
    task_owner = {"agentId": "assistant", "principalId": OWNER, "conversationId": "conv-1"}
    on = {"gateway": {"jev": {"enabled": True, "provider": "local"}}}
    clock = jevgate.ManualClock()
    approved = {"now": True}
    seen = []

    def helper(tool, args):
        seen.append((tool, dict(args)))
        if tool != "computer_access":
            raise jevgate.ToolError("execution_failed", "CONSENT_REQUIRED: not in this test")
        if args.get("revoke"):
            approved["now"] = False
            return {"state": "revoked"}
        if approved["now"]:
            return {"state": "granted"}
        raise jevgate.ToolError("execution_failed", "CONSENT_REQUIRED: not approved")

    def connection(gw, task_id, want):
        until(f"computerConnection {want}",
              lambda: gw.tasks.status(task_owner, task_id).get("computerConnection") == want, seconds=10)
        return gw.tasks.status(task_owner, task_id)

    with jevgate.Gateway(tmp_path / "on", on, clock=clock) as gw:
        pairing = gw.pair_computer(OWNER, {"installationId": "desk-1", "name": "Desk"})
        computer = pairing["device"]["id"]
        channel = gw.serve_channel()
        worker = jevgate.DeviceWorker(channel.url, pairing["token"], executor=helper)
        try:
            target = {"kind": "computer", "deviceId": computer}
            task_id = gw.tasks.spawn(task_owner, "", target=target, keep_open=True)["id"]
            status = gw.tasks.wait(task_owner, task_id, 30.0)
            assert (status["state"], status["computerConnection"]) == ("waiting_input", "connected")
            assert seen == [("computer_access", {})]

            worker.close()
            until("the helper offline", lambda: not any(d["id"] == computer and d["online"] for d in gw.devices(OWNER)))
            clock.advance(5)
            assert connection(gw, task_id, "disconnected")["state"] == "waiting_input"

            worker = jevgate.DeviceWorker(channel.url, pairing["token"], executor=helper)
            until("the helper online", lambda: any(d["id"] == computer and d["online"] for d in gw.devices(OWNER)))
            seen.clear()
            clock.advance(5)
            assert connection(gw, task_id, "waiting_access")["state"] == "waiting_input"
            assert seen[:2] == [("computer_access", {"revoke": True}), ("computer_access", {"check": True})]

            approved["now"] = True
            clock.advance(5)
            status = connection(gw, task_id, "connected")
            assert status["actions"] == 0
            assert not any(tool != "computer_access" for tool, _ in seen), "nothing replayed"
            gw.tasks.cancel(task_owner, task_id)
            assert "computerConnection" not in gw.tasks.wait(task_owner, task_id, 30.0)
        finally:
            worker.close()
            channel.stop()


# ---- On a real desktop ------------------------------------------------------------------------


def helper_binary():
    """The `jevgate-computer` binary cargo built (feature `computer`): JEVGATE_COMPUTER_BIN, else
    beside JEVGATE_BIN (scripts/test sets it), else the repository's target/debug."""
    explicit = os.environ.get("JEVGATE_COMPUTER_BIN")
    candidates = [explicit] if explicit else []
    if os.environ.get("JEVGATE_BIN"):
        candidates.append(str(pathlib.Path(os.environ["JEVGATE_BIN"]).with_name("jevgate-computer")))
    target = os.environ.get("CARGO_TARGET_DIR") or str(REPO / "target")
    candidates.append(str(pathlib.Path(target) / "debug" / "jevgate-computer"))
    return next((c for c in candidates if c and os.access(c, os.X_OK)), None)


def desktop_missing():
    for program in ("Xvfb", "dbus-daemon", "gnome-calculator"):
        if shutil.which(program) is None:
            return f"{program} is not installed"
    if not os.path.exists("/usr/libexec/at-spi-bus-launcher"):
        return "at-spi2-core is not installed"
    if helper_binary() is None:
        return "jevgate-computer is not built (cargo build --features computer)"
    return None


@pytest.fixture
def desktop():
    """scripts/desktop's throw-away desktop: yields its environment; applications started with
    it are killed and the desktop stopped on every exit path."""
    why = desktop_missing()
    if why:
        if REQUIRE_DESKTOP:
            pytest.fail(f"JEVGATE_REQUIRE_DESKTOP=1 but {why}")
        pytest.skip(why)
    d = tempfile.mkdtemp(prefix="jevgate-desk-")
    script = str(REPO / "scripts" / "desktop")
    started = subprocess.run([script, "start", d], capture_output=True, text=True, timeout=60)
    procs = []
    try:
        assert started.returncode == 0, started.stderr
        env = dict(os.environ)
        for line in pathlib.Path(d, "env").read_text(encoding="utf-8").splitlines():
            if line.startswith("export ") and "=" in line:
                name, value = line[len("export "):].split("=", 1)
                env[name] = value.strip("'\"")
        env.pop("NO_AT_BRIDGE", None)
        yield env, procs
    finally:
        for p in procs:
            if p.stdin is not None:
                p.stdin.close()  # the helper's --exit-on-stdin-eof
            p.kill()
            p.wait(timeout=10)
        subprocess.run([script, "stop", d], capture_output=True, timeout=60)
        shutil.rmtree(d, ignore_errors=True)


def until(what, check, seconds=30.0):
    deadline = time.monotonic() + seconds
    while True:
        got = check()
        if got or time.monotonic() > deadline:
            assert got, f"timed out waiting for {what}"
            return got
        time.sleep(0.05)


def test_the_helper_on_a_real_calculator(gw, desktop, tmp_path):
    env, procs = desktop
    procs.append(subprocess.Popen(["gnome-calculator"], env=env, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL))
    pairing = gw.pair_computer(OWNER, {"installationId": "desk-1", "name": "Test desktop"})
    device = pairing["device"]["id"]
    channel = gw.serve_channel()
    state = tmp_path / "helper"
    state.mkdir()
    helper = helper_binary()
    # The token goes by the environment, never the command line.
    serve_env = dict(env, JEVGATE_DEVICE_TOKEN=pairing["token"])
    procs.append(subprocess.Popen(
        [helper, "serve", "--url", channel.url, "--state-dir", str(state), "--app", "gnome-calculator",
         "--exit-on-stdin-eof"],
        env=serve_env, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    try:
        until("the helper online", lambda: any(d["id"] == device and d["online"] for d in gw.devices(OWNER)))
        pc = gw.computer_target(OWNER, "conv-1", device)
        # Pairing alone authorizes nothing.
        assert code_of(pc.observe) == "CONSENT_REQUIRED"
        assert code_of(lambda: pc.act({"operation_id": "op-0", "kind": "press", "ref": "e1"})) == "CONSENT_REQUIRED"
        assert pc.operation_status("op-0") == {"state": "not_found"}

        # The person approves the calculator in the helper.
        subprocess.run([helper, "approve", "--state-dir", str(state), "--app", "gnome-calculator",
                        "--minutes", "30"], env=env, check=True, capture_output=True, timeout=30)
        granted = pc.request_access()
        assert granted["state"] == "granted" and "gnome-calculator" in granted["applications"]

        def seven():
            try:
                o = pc.observe()
            except jevgate.Error:
                return None
            found = [c for c in o["controls"] if c.get("name") == "7" and "press" in c.get("actions", [])]
            return (o, found[0]["ref"]) if len(found) == 1 else None

        o, ref = until("the calculator's buttons", seven)
        assert o["contractVersion"] == 1
        result = pc.act({"operation_id": "op-7", "kind": "press", "ref": ref})
        assert isinstance(result, dict)
        receipt = pc.operation_status("op-7")
        assert receipt["state"] == "completed" and receipt["operation_id"] == "op-7"

        def display_reads_7():
            o = pc.observe()
            return any("editable" in c.get("states", []) and c.get("value") == "7" for c in o["controls"])

        until("the display to read 7", display_reads_7, seconds=10)

        # Withdrawn: refused again, the receipt still there.
        subprocess.run([helper, "revoke", "--state-dir", str(state)], env=env, check=True,
                       capture_output=True, timeout=30)
        assert code_of(pc.observe) == "CONSENT_REQUIRED"
        assert pc.operation_status("op-7")["state"] == "completed"
    finally:
        channel.stop()
