"""The device channel's limits as settings (issue 24, R-DEV-CHAN): gw.serve_channel(
max_connections=…, max_unauthenticated=…, max_unauthenticated_per_address=…, io_threads=…) over
the real loopback WebSocket — the device past the cap is refused with 1013 CONNECTION_LIMIT
(its token never echoed), the others keep working, a device that leaves frees its place; idle
unauthenticated sockets past the per-address budget are closed at once and never displace a
device; bad values are ArgumentErrors naming the setting."""

import socket
import time

import pytest

import jevgate

OWNER = "person"


def browser(n):
    return {"installationId": f"py-limit-{n}", "name": f"Py {n}", "browser": {"name": "Bridge", "version": "1"}}


@pytest.fixture
def gw(tmp_path):
    g = jevgate.Gateway(tmp_path)
    yield g
    g.close()


def serve(tool, args):
    return {"text": "served by Python"}


def works(gw, device_id):
    r = gw.call_tool(OWNER, "conv", "browser_get_text", {}, device_id=device_id)
    return r["success"] and r["result"]["untrustedContent"]["data"]["text"] == "served by Python"


def test_the_device_past_the_cap_is_refused_and_gets_in_once_one_leaves(gw):
    channel = gw.serve_channel(max_connections=2, io_threads=1)
    paired = [gw.pair(OWNER, browser(i)) for i in range(3)]
    first = jevgate.DeviceWorker(channel.url, paired[0]["token"], executor=serve)
    second = jevgate.DeviceWorker(channel.url, paired[1]["token"], executor=serve)
    with pytest.raises(jevgate.DeviceError) as info:
        jevgate.DeviceWorker(channel.url, paired[2]["token"], executor=serve)
    assert info.value.code == "DEVICE_CHANNEL_IO"
    assert "CONNECTION_LIMIT" in str(info.value) and paired[2]["token"] not in str(info.value)
    assert works(gw, paired[0]["device"]["id"]) and works(gw, paired[1]["device"]["id"])
    first.close()
    deadline = time.monotonic() + 10
    while True:
        try:
            third = jevgate.DeviceWorker(channel.url, paired[2]["token"], executor=serve)
            break
        except jevgate.DeviceError as e:
            assert "CONNECTION_LIMIT" in str(e)
            assert time.monotonic() < deadline, "the third device never got in"
    assert works(gw, paired[2]["device"]["id"]) and works(gw, paired[1]["device"]["id"])
    third.close()
    second.close()


def test_idle_unauthenticated_sockets_past_the_per_address_budget_are_closed_at_once(gw):
    channel = gw.serve_channel(max_unauthenticated=8, max_unauthenticated_per_address=2)
    paired = gw.pair(OWNER, browser(0))
    with jevgate.DeviceWorker(channel.url, paired["token"], executor=serve):
        port = channel.port
        idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(2)]
        third = socket.create_connection(("127.0.0.1", port))
        third.settimeout(5)
        try:
            assert third.recv(1) == b""  # closed without an answer
        except ConnectionResetError:
            pass
        # The connected device never noticed.
        assert works(gw, paired["device"]["id"])
        for s in idle + [third]:
            s.close()


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"max_connections": 0}, "max_connections"),
        ({"max_unauthenticated": 0}, "max_unauthenticated"),
        ({"max_unauthenticated_per_address": 0}, "max_unauthenticated_per_address"),
        ({"io_threads": 1000}, "io_threads"),
        ({"max_connections": 10**12}, "max_connections"),
    ],
)
def test_bad_limits_are_argument_errors_naming_the_setting(gw, kwargs, name):
    with pytest.raises(jevgate.ArgumentError) as info:
        gw.serve_channel(**kwargs)
    assert name in str(info.value)


def test_negative_limits_are_refused_by_type(gw):
    with pytest.raises(OverflowError):
        gw.serve_channel(max_connections=-1)
