"""Issue 12 item 10: Ctrl-C interrupts blocking calls at once (not when a 30 s call returns), and
objects referenced from their own Python callbacks are collected by the cycle collector (a
gateway's data directory is unlocked again, a worker's connection closed)."""

import gc
import os
import signal
import socket
import threading
import time

import pytest

import jevgate

QUESTIONS = {"greeting": {"type": "noul", "instructions": "Is this a greeting?"}}
CALL = {"agentId": "assistant", "state": "Hello", "questions": QUESTIONS}
OWNER = "person"
DEVICE = {"installationId": "inst-int", "name": "Interrupt test", "browser": {"name": "Chromium", "version": "131"}}


@pytest.fixture
def silent_provider():
    """A loopback provider that accepts connections and never answers."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    yield f"http://127.0.0.1:{srv.getsockname()[1]}"
    srv.close()


def upstream(base, **extra):
    env = f"JEVGATE_PY_INT_{os.getpid()}"
    os.environ[env] = "sk-int"
    jev = {"enabled": True, "provider": "upstream", "baseUrl": base, "apiKeyEnv": env, "model": "m", "timeoutMs": 4000,
           "allowedAgentIds": ["assistant"],
           "thinking": {"baseUrl": f"{base}/v1", "model": "small", "apiKeyEnv": env, "api": "openai-chat"}}
    jev.update(extra)
    return {"gateway": {"jev": jev}}


# The provider's deadline (4 s) is twice the limit: an interrupt seen only when the call returns
# fails the test (an interrupted call's socket is shut down, so closing the gateway does not wait
# for that deadline either).
def interrupted_within(call, limit=2.0, delay=0.3):
    """Runs `call` on the main thread with SIGINT sent to it after `delay`; returns how long it
    took to raise KeyboardInterrupt (fails if it did not, or took longer than `limit`)."""
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    main = threading.main_thread().ident
    timer = threading.Timer(delay, lambda: signal.pthread_kill(main, signal.SIGINT))
    start = time.monotonic()
    try:
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            call()
        took = time.monotonic() - start
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, old)
    assert took < limit, f"KeyboardInterrupt after {took:.2f} s"
    return took


@pytest.mark.timeout(20)
def test_ctrl_c_interrupts_an_evaluation_waiting_on_a_silent_provider(tmp_path, silent_provider):
    with jevgate.Gateway(tmp_path, upstream(silent_provider)) as gw:
        interrupted_within(lambda: gw.evaluate(CALL))
        # the given token is cancelled too, and the gateway still works afterwards
        token = jevgate.CancelToken()
        interrupted_within(lambda: gw.evaluate(CALL, cancel=token))
        with pytest.raises(jevgate.JevError) as info:
            gw.evaluate(CALL, cancel=token)
        assert info.value.code == "JEV_CANCELLED"


@pytest.mark.timeout(20)
def test_ctrl_c_interrupts_the_thinking_helper(tmp_path, silent_provider):
    with jevgate.Gateway(tmp_path, upstream(silent_provider)) as gw:
        interrupted_within(lambda: gw.think("assistant", "Fill", "input"))


@pytest.mark.timeout(20)
def test_ctrl_c_interrupts_a_tool_call_and_a_worker_wait(tmp_path):
    with jevgate.Gateway(tmp_path) as gw:
        paired = gw.pair(OWNER, DEVICE)
        channel = gw.serve_channel()
        release = threading.Event()

        def stuck(tool, args):
            release.wait(30)
            return {"text": "late"}

        with jevgate.DeviceWorker(channel.url, paired["token"], executor=stuck) as worker:
            try:
                interrupted_within(lambda: gw.call_tool(OWNER, "conv", "browser_get_text", {}))
                interrupted_within(lambda: worker.wait())
                interrupted_within(lambda: worker.wait(timeout=60))
                assert worker.wait(timeout=0.05) is None
            finally:
                release.set()


def wait_until(what, cond, limit=10.0):
    start = time.monotonic()
    while not cond():
        assert time.monotonic() - start < limit, f"timed out waiting for {what}"
        gc.collect()
        time.sleep(0.01)


def test_a_gateway_referenced_from_its_own_callback_is_collected(tmp_path):
    config = {"gateway": {"jev": {"enabled": True, "provider": "callback", "allowedAgentIds": ["assistant"]}}}
    gw = jevgate.Gateway(tmp_path, config)

    def model(request, gw=gw):  # the cycle: gw -> model -> gw
        return {"model": repr(gw), "answers": {"greeting": {"type": "noul", "noul": 0.5}},
                "usage": {"input_tokens": 1, "output_tokens": 1}}

    gw.set_jev_callback(model)
    assert gw.evaluate(CALL)["answers"]["greeting"]["noul"] == 0.5
    with pytest.raises(jevgate.Error):
        jevgate.Gateway(tmp_path, config)  # the data directory is locked while it lives
    del gw, model
    gc.collect()
    with jevgate.Gateway(tmp_path, config) as again:
        assert not again.closed
    # removing the callback (None) also drops the reference
    gw2 = jevgate.Gateway(tmp_path / "b", config)
    gw2.set_jev_callback(lambda r, g=gw2: g)
    gw2.set_jev_callback(None)
    gw2.close()


def test_a_worker_referenced_from_its_own_executor_is_collected(tmp_path):
    with jevgate.Gateway(tmp_path) as gw:
        paired = gw.pair(OWNER, DEVICE)
        channel = gw.serve_channel()
        holder = {}

        def serve(tool, args, holder=holder):  # the cycle: worker -> serve -> holder -> worker
            return {"text": holder["worker"].device_id}

        holder["worker"] = jevgate.DeviceWorker(channel.url, paired["token"], executor=serve)
        assert gw.devices(OWNER)[0]["online"]
        del holder, serve
        gc.collect()
        wait_until("the collected worker's connection to close", lambda: not gw.devices(OWNER)[0]["online"])
