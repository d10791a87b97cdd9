"""gw.evaluate and gw.usage (SPEC §3.3–3.4, R-JEV-*): the local heuristic provider, a Python
callable as the callback provider (through the validator), access checks, usage privacy."""

import threading

import pytest

import jevgate

QUESTIONS = {
    "greeting": {"type": "noul", "instructions": "Is this a greeting?"},
    "next": {"type": "choice", "instructions": "Next step?", "criteria": {"explain": "Compare the options", "execute": "Execute the choice"}},
}


def config(provider, **jev):
    return {"gateway": {"jev": {"enabled": True, "provider": provider, "allowedAgentIds": ["assistant"], **jev}}}


def test_local_provider_evaluates_offline_and_records_usage(tmp_path):
    with jevgate.Gateway(tmp_path, config("local")) as gw:
        e = gw.evaluate({"agentId": "assistant", "state": "Hello there! Please compare the options.", "questions": QUESTIONS})
        assert set(e["answers"]) == {"greeting", "next"}
        assert e["answers"]["next"]["choice"] in {"explain", "execute"}
        page = gw.usage("assistant", 10, 0)
        assert page["total"] == 1 and len(page["records"]) == 1
        assert "Hello there" not in repr(page)


def test_access_is_checked(tmp_path):
    with jevgate.Gateway(tmp_path, config("local")) as gw:
        with pytest.raises(jevgate.JevError) as info:
            gw.evaluate({"agentId": "intruder", "state": "x", "questions": QUESTIONS})
        assert info.value.code == "JEV_ACCESS_DENIED" and info.value.http_status == 403


def test_a_python_callable_is_the_provider_and_its_answer_is_validated(tmp_path):
    seen = []

    def model(request):
        seen.append((threading.current_thread().name, sorted(request)))
        return {
            "model": "my-own-model",
            "answers": {
                "greeting": {"type": "noul", "noul": 0.9},
                "next": {"type": "choice", "choice": "explain", "probabilities": {"explain": 0.51, "execute": 0.5}, "confidence": 0.5},
            },
            "usage": {"input_tokens": 3, "output_tokens": 1},
        }

    with jevgate.Gateway(tmp_path, config("callback")) as gw:
        gw.set_jev_callback(model)
        e = gw.evaluate({"agentId": "assistant", "state": "hi", "questions": QUESTIONS})
        assert e["model"] == "my-own-model"
        assert e["answers"]["next"]["probabilities"] == {"explain": 0.51, "execute": 0.5}
        assert seen and "questions" in seen[0][1]

        def bad_model(request):
            return {"model": "m", "answers": {"greeting": {"type": "noul", "noul": 1.5}}, "usage": {"input_tokens": 1, "output_tokens": 1}}

        gw.set_jev_callback(bad_model)
        with pytest.raises(jevgate.ValidationError) as info:
            gw.evaluate({"agentId": "assistant", "state": "hi", "questions": QUESTIONS})
        assert info.value.reason in {"PROBABILITY_RANGE", "MISSING_ANSWER"}

        def raising_model(request):
            raise RuntimeError("secret provider prose")

        gw.set_jev_callback(raising_model)
        with pytest.raises(jevgate.JevError) as info:
            gw.evaluate({"agentId": "assistant", "state": "hi", "questions": QUESTIONS})
        assert info.value.code == "JEV_PROVIDER_FAILURE"
        assert "secret provider prose" not in str(info.value)


def test_cancel_from_another_thread(tmp_path):
    started = threading.Event()
    release = threading.Event()

    def slow_model(request):
        started.set()
        release.wait(5)
        return {"model": "m", "answers": {}, "usage": {"input_tokens": 0, "output_tokens": 0}}

    with jevgate.Gateway(tmp_path, config("callback", timeoutMs=10000)) as gw:
        gw.set_jev_callback(slow_model)
        token = jevgate.CancelToken()
        errors = []

        def run():
            try:
                gw.evaluate({"agentId": "assistant", "state": "x", "questions": QUESTIONS}, cancel=token)
            except jevgate.JevError as e:
                errors.append(e.code)

        t = threading.Thread(target=run)
        t.start()
        assert started.wait(5)
        token.cancel()
        t.join(5)
        release.set()
        assert errors == ["JEV_CANCELLED"]


def test_bad_calls(tmp_path):
    with jevgate.Gateway(tmp_path, config("local")) as gw:
        with pytest.raises(jevgate.JevError) as info:
            gw.evaluate({"agentId": "assistant", "state": "x", "questions": {}})
        assert info.value.code == "JEV_INVALID_REQUEST"
        with pytest.raises(jevgate.Error):
            gw.usage("assistant", 0, 0)


def test_a_refused_answer_still_records_what_the_provider_charged(tmp_path):
    """R-JEV-USAGE, issue 12 items 9 and 10d: the provider answered (and billed) but the validator
    refused the answer: the usage record keeps the reported usage and billing, with the model
    string bounded and cleaned; the record is committed when evaluate returns."""

    def model(request):
        return {
            "model": "m\x1b[2J" + "x" * 100_000,
            "answers": {"greeting": {"type": "noul", "noul": 1.5}},
            "usage": {"input_tokens": 7, "output_tokens": 2},
            "billing": {"charged_credits": 0.5, "rate_version": "r1"},
        }

    with jevgate.Gateway(tmp_path, config("callback")) as gw:
        gw.set_jev_callback(model)
        with pytest.raises(jevgate.JevError) as info:
            gw.evaluate({"agentId": "assistant", "state": "hi", "questions": QUESTIONS})
        assert info.value.code == "JEV_MALFORMED_RESPONSE"
        record = gw.usage("assistant", 10, 0)["records"][0]
        assert record["outcome"] == "JEV_MALFORMED_RESPONSE"
        assert record["usage"] == {"input_tokens": 7, "output_tokens": 2}
        assert record["billing"]["charged_credits"] == 0.5
        assert len(record["model"].encode()) <= 128 and "\x1b" not in record["model"]


def _accepting_silent_provider():
    """A loopback provider that accepts connections and never answers; returns its URL, the
    accepted connections (a list) and a stop function."""
    import socket

    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    conns = []

    def accept():
        while True:
            try:
                conns.append(srv.accept()[0])
            except OSError:
                return

    acceptor = threading.Thread(target=accept, daemon=True)
    acceptor.start()

    def stop():
        # shutdown() wakes the blocked accept() (close() alone does not on Linux, and a
        # connection it accepted after the loop below would be left unclosed for the GC);
        # the thread is joined before the accepted connections are closed.
        try:
            srv.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        srv.close()
        acceptor.join(5)
        for c in conns:
            c.close()

    return f"http://127.0.0.1:{srv.getsockname()[1]}", conns, stop


def _wait_for(what, cond, limit=5.0):
    import time

    start = time.monotonic()
    while not cond():
        assert time.monotonic() - start < limit, f"timed out waiting for {what}"
        time.sleep(0.005)


# Issue 12 item 5 (R-JEV-LIMIT): cancelling shuts the provider socket down, so the only slot
# (maxConcurrentRequests 1) is free for the next call at once, not after timeoutMs (60 s); and
# closing the gateway with a call in flight ends that call instead of waiting timeoutMs.
@pytest.mark.timeout(30)
def test_cancel_and_close_abort_a_silent_provider_call(tmp_path):
    import os
    import time

    base, conns, stop = _accepting_silent_provider()
    env = f"JEVGATE_PY_ABORT_{os.getpid()}"
    os.environ[env] = "sk-abort"
    cfg = config("upstream", baseUrl=base, apiKeyEnv=env, model="m", timeoutMs=60000, maxConcurrentRequests=1)
    try:
        gw = jevgate.Gateway(tmp_path, cfg)
        errors = []

        def run(token=None):
            try:
                gw.evaluate({"agentId": "assistant", "state": "x", "questions": QUESTIONS}, cancel=token)
            except jevgate.Error as e:
                errors.append(e.code)

        token = jevgate.CancelToken()
        first = threading.Thread(target=run, args=(token,))
        first.start()
        _wait_for("the first call at the provider", lambda: len(conns) == 1)
        token.cancel()
        first.join(5)
        assert not first.is_alive() and errors == ["JEV_CANCELLED"]
        # the slot was freed: the second call is admitted and reaches the provider
        second = threading.Thread(target=run)
        second.start()
        _wait_for("the second call at the provider", lambda: len(conns) == 2)
        started = time.monotonic()
        closer = threading.Thread(target=gw.close)
        closer.start()
        closer.join(5)
        second.join(5)
        assert not closer.is_alive() and not second.is_alive()
        assert time.monotonic() - started < 3
        assert errors == ["JEV_CANCELLED", "GATEWAY_CLOSED"]
    finally:
        stop()
