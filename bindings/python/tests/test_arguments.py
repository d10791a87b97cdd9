"""One wrong argument, one answer (issue 13 item 2, R-C).

Every string -> enum, JSON -> request parse and argument check lives once in the Rust core, so
the Python module and the C ABI report the same mistake the same way: `ArgumentError` (a
`ValueError`) with code INVALID_ARGUMENT, HTTP 400 and the same argument name as the C
message. examples/c/arguments.c makes the same calls through C (run by scripts/test under
ASan/UBSan) and expects JEVGATE_INVALID_ARGUMENT with the same code and argument name.
Before, each case below raised a bare ValueError from the binding (no `.code`).
"""

import pytest

import jevgate


@pytest.fixture
def gw(tmp_path):
    with jevgate.Gateway(tmp_path) as gw:
        yield gw


def expect_invalid(call, arg):
    with pytest.raises(jevgate.ArgumentError) as info:
        call()
    err = info.value
    assert isinstance(err, ValueError)
    assert err.code == "INVALID_ARGUMENT"
    assert err.http_status == 400
    assert f"`{arg}`" in str(err), str(err)


def test_unknown_session_mode_is_invalid_argument(gw):
    expect_invalid(lambda: gw.leases.browser_call("t", "acme", mode="private"), "mode")
    with gw.leases.browser_call("t", "acme", mode="isolated") as call:
        assert call.mode == "isolated"


def test_unknown_tool_format_is_invalid_argument():
    expect_invalid(lambda: jevgate.tool_definitions("yaml"), "format")


def test_pair_request_without_installation_id_is_invalid_argument(gw):
    expect_invalid(lambda: gw.pair("owner", {"name": "no installation id"}), "request_json")


def test_command_text_over_the_limit_is_invalid_argument():
    expect_invalid(lambda: jevgate.parse_command("a" * ((1 << 20) + 1)), "text")


def test_zero_connect_timeout_is_invalid_argument():
    # Checked by the core before any connection: port 9 is never dialled.
    expect_invalid(
        lambda: jevgate.DeviceWorker(
            "ws://127.0.0.1:9/v1/device-worker/channel",
            "token",
            executor=lambda tool, args: None,
            connect_timeout=0,
        ),
        "connect_timeout",
    )


def test_half_a_tls_pair_is_invalid_argument(gw):
    # Checked by the core (ChannelTls::from_optional_pem) before anything is bound.
    expect_invalid(lambda: gw.serve_channel(tls_cert_pem=b"-----BEGIN CERTIFICATE-----"), "tls_key_pem")


def test_a_connect_timeout_that_is_no_duration_is_invalid_argument():
    for bad in (-1.0, float("nan"), float("inf")):
        expect_invalid(
            lambda: jevgate.DeviceWorker(
                "ws://127.0.0.1:9/v1/device-worker/channel", "token", executor=lambda tool, args: None, connect_timeout=bad
            ),
            "connect_timeout",
        )


def test_a_call_that_is_not_utf8_is_invalid_argument(gw):
    # As jevgate_evaluate with a call_json that is not UTF-8 (src/ffi/mod.rs str_arg).
    expect_invalid(lambda: gw.evaluate(b'{"agentId": "\xff"}'), "call_json")


# A JSON argument given as a dict/list that holds something JSON cannot carry: the core's
# INVALID_ARGUMENT naming the C argument (or the Python one where C has none), not the bare
# TypeError/ValueError of the `json` module (issue 13 item 2, R-C). The cycle and the deep
# nesting are the `json` module's ValueError and RecursionError.
def _cyclic():
    d = {}
    d["self"] = d
    return d


def _deep():
    d = {}
    for _ in range(100_000):
        d = {"d": d}
    return d


NOT_JSON = [{"s": {1, 2}}, {"n": float("nan")}, {"b": b"bytes"}, {(1, 2): "tuple key"}, _cyclic(), _deep()]


@pytest.mark.parametrize("bad", NOT_JSON, ids=["set", "nan", "bytes", "tuple-key", "cycle", "deep"])
def test_call_tool_args_that_are_not_json_are_invalid_argument(gw, bad):
    expect_invalid(lambda: gw.call_tool("owner", "conv", "browser_get_text", bad), "args")


@pytest.mark.parametrize("bad", NOT_JSON, ids=["set", "nan", "bytes", "tuple-key", "cycle", "deep"])
def test_every_json_argument_that_is_not_json_is_invalid_argument(gw, bad):
    expect_invalid(lambda: gw.pair("owner", bad), "request_json")
    expect_invalid(lambda: gw.evaluate(bad), "call_json")
    expect_invalid(lambda: jevgate.validate_response(bad, "{}"), "questions_json")
    expect_invalid(lambda: jevgate.validate_response("[]", bad), "response_json")
    expect_invalid(lambda: jevgate.answer_schema(bad), "questions_json")
    with gw.leases.browser_call("t", "acme") as call:
        expect_invalid(lambda: call.execute(bad), "command_json")


def test_a_json_argument_of_the_wrong_python_type_stays_a_type_error(gw):
    # A str/bytes/dict is asked for; an int is a Python type mistake, not a jevgate code.
    with pytest.raises(TypeError) as info:
        jevgate.validate_response("[]", 42)  # type: ignore[arg-type]
    assert not isinstance(info.value, jevgate.Error)


def test_executing_an_ended_browser_call_is_invalid_argument(gw):
    # jevgate_browser_call_execute on an ended call: INVALID_ARGUMENT naming `call`
    # (src/ffi/browser.rs). Before: a bare ValueError("this browser call has ended").
    with gw.leases.browser_call("t", "acme") as call:
        pass
    expect_invalid(lambda: call.execute({"tool": "observe", "args": {}}), "call")
    call.end()  # idempotent
    expect_invalid(lambda: call.execute({"tool": "observe", "args": {}}), "call")


def test_a_device_worker_needs_exactly_one_of_browser_or_executor():
    expect_invalid(
        lambda: jevgate.DeviceWorker("ws://127.0.0.1:9/v1/device-worker/channel", "token"),
        "executor",
    )


def test_a_manual_clock_refuses_a_duration_that_is_none():
    clock = jevgate.ManualClock()
    for bad in (-1.0, float("nan"), float("inf"), float("-inf")):
        expect_invalid(lambda: clock.advance(bad), "seconds")
        expect_invalid(lambda: clock.set_wall(bad), "seconds")
