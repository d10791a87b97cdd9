"""Devices from Python (SPEC §5): pairing, inventory labels, the channel with a real
WebSocket worker written here on raw sockets, tool calls with the lease, tool definitions."""

import base64
import json
import os
import socket
import struct
import threading

import pytest

import jevgate

OWNER = "person"
BROWSER = {"installationId": "inst-1", "name": "Work Chrome", "browser": {"name": "Chrome", "version": "130"}}


class Worker:
    """A minimal WebSocket client (RFC 6455, masked text frames) speaking the channel protocol."""

    def __init__(self, port, token, protocol=2):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(
            (
                "GET /v1/device-worker/channel HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
                f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
            ).encode()
        )
        head = b""
        while b"\r\n\r\n" not in head:
            head += self.sock.recv(1)
        assert b" 101 " in head.split(b"\r\n")[0], head
        frame = {"type": "authenticate", "authorization": f"Device {token}"}
        if protocol is not None:
            frame["protocol"] = protocol
        self.send(frame)

    def send(self, obj):
        data = json.dumps(obj).encode()
        mask = os.urandom(4)
        n = len(data)
        header = bytes([0x81]) + (bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + struct.pack(">H", n))
        self.sock.sendall(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))

    def _exact(self, n):
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("closed")
            buf += chunk
        return buf

    def recv(self):
        """The next text frame as JSON; ("close", code, reason) for a close frame; pings answered."""
        while True:
            b0, b1 = self._exact(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._exact(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._exact(8))[0]
            payload = self._exact(n)
            op = b0 & 0x0F
            if op == 0x1:
                return json.loads(payload)
            if op == 0x8:
                code = struct.unpack(">H", payload[:2])[0] if len(payload) >= 2 else None
                return ("close", code, payload[2:].decode())

    def close(self):
        self.sock.close()


@pytest.fixture
def gw(tmp_path):
    with jevgate.Gateway(tmp_path) as gw:
        yield gw


def test_tool_definitions_in_both_forms():
    mcp = jevgate.tool_definitions("mcp")
    names = {t["name"] for t in mcp}
    assert {"browser_navigate", "browser_read_page", "browser_get_text", "browser_find", "browser_computer",
            "browser_form_input", "browser_javascript", "browser_tabs", "browser_batch"} <= names
    assert all("inputSchema" in t for t in mcp)
    openai = jevgate.tool_definitions("openai")
    assert all(t["type"] == "function" and "parameters" in t["function"] for t in openai)
    with pytest.raises(ValueError):
        jevgate.tool_definitions("xml")


def test_pair_inventory_and_calls_that_cannot_be_attempted(gw):
    assert gw.call_tool(OWNER, "conv", "browser_get_text", {})["errorCode"] == "DEVICE_NOT_PAIRED"
    paired = gw.pair(OWNER, BROWSER)
    device = paired["device"]
    assert paired["token"] and paired["token"] not in json.dumps(gw.devices(OWNER))
    assert [d["label"] for d in gw.devices(OWNER)] == ["browser"]
    assert gw.devices("someone-else") == []
    result = gw.call_tool(OWNER, "conv", "browser_get_text", {})
    assert result == {"success": False, "errorCode": "DEVICE_OFFLINE", "message": result["message"]}
    gw.pair(OWNER, {**BROWSER, "installationId": "inst-2"})
    assert gw.call_tool(OWNER, "conv", "browser_get_text", {})["errorCode"] == "DEVICE_SELECTION_REQUIRED"
    assert gw.call_tool("stranger", "conv", "browser_get_text", {}, device_id=device["id"])["errorCode"] == "DEVICE_NOT_PAIRED"
    with pytest.raises(ValueError):
        gw.pair(OWNER, {"name": "no installation id"})


def test_a_real_worker_serves_a_tool_call_and_the_lease_guards_it(gw):
    paired = gw.pair(OWNER, BROWSER)
    channel = gw.serve_channel()
    assert channel.url.startswith("ws://127.0.0.1:") and channel.port > 0
    worker = Worker(channel.port, paired["token"])
    ready = worker.recv()
    assert ready == {"type": "ready", "deviceId": paired["device"]["id"]}

    def serve():
        cmd = worker.recv()
        assert cmd["type"] == "command" and cmd["tool"] == "browser_get_text"
        worker.send({"type": "result", "id": cmd["id"], "success": True, "result": {"text": "hello from the page"}})

    t = threading.Thread(target=serve)
    t.start()
    result = gw.call_tool(OWNER, "conv-a", "browser_get_text", {})
    t.join()
    assert result["success"] is True
    assert "hello from the page" in json.dumps(result["result"])  # wrapped as untrusted content
    assert "untrustedContent" in result["result"]
    other = gw.call_tool(OWNER, "conv-b", "browser_get_text", {})
    assert other["errorCode"] == "DEVICE_CONTROL_ELSEWHERE"
    worker.close()
    channel.stop()


def test_an_old_extension_is_closed_with_upgrade_required(gw):
    paired = gw.pair(OWNER, BROWSER)
    channel = gw.serve_channel()
    worker = Worker(channel.port, paired["token"], protocol=None)
    assert worker.recv() == ("close", 1008, "UPGRADE_REQUIRED")
    worker.close()
    assert gw.devices(OWNER)[0]["label"] == "browser (extension out of date — update to use)"
    assert gw.call_tool(OWNER, "conv", "browser_get_text", {})["errorCode"] == "DEVICE_CAPABILITY_MISMATCH"


def test_artifacts_are_private_to_their_session(gw):
    with pytest.raises(jevgate.DeviceError) as info:
        gw.artifact("conv", "art_missing")
    assert info.value.code == "ARTIFACT_NOT_FOUND"


PNG = b"\x89PNG\r\n\x1a\nabcd"


def _screenshots(gw, worker, session, n):
    """Takes `n` screenshots for `session` through the worker, then lets go of the control lease;
    returns the artifact ids."""

    def serve():
        for _ in range(n):
            cmd = worker.recv()
            image = base64.b64encode(PNG).decode()
            worker.send({"type": "result", "id": cmd["id"], "success": True,
                         "result": {"image": image, "mediaType": "image/png"}})

    t = threading.Thread(target=serve)
    t.start()
    results = [gw.call_tool(OWNER, session, "browser_computer", {"action": "screenshot"}) for _ in range(n)]
    t.join()
    gw.leases.release_session(session)
    return [r["result"]["artifactId"] for r in results]


def _gone(gw, session, artifact_id):
    with pytest.raises(jevgate.DeviceError) as info:
        gw.artifact(session, artifact_id)
    return info.value.code == "ARTIFACT_NOT_FOUND"


def test_artifacts_are_deleted_with_their_session_and_purged_after_the_retention(tmp_path):
    """R-DEV-SHOT: delete_artifacts takes one session's screenshots only; purge_artifacts takes
    those whose age reached the 24 h retention on the gateway's clock."""
    clock = jevgate.ManualClock()
    with jevgate.Gateway(tmp_path, clock=clock) as gw:
        paired = gw.pair(OWNER, BROWSER)
        channel = gw.serve_channel()
        worker = Worker(channel.port, paired["token"])
        assert worker.recv()["type"] == "ready"
        ended = _screenshots(gw, worker, "ended", 2)
        (live,) = _screenshots(gw, worker, "live", 1)
        assert gw.delete_artifacts("ended") == 2
        assert all(_gone(gw, "ended", a) for a in ended)
        assert not any((tmp_path / "artifacts" / a).exists() for a in ended)
        assert gw.artifact("live", live) == ("image/png", PNG)
        assert gw.delete_artifacts("ended") == 0

        clock.advance(24 * 3600 - 1)
        assert gw.purge_artifacts() == 0
        assert gw.artifact("live", live) == ("image/png", PNG)
        clock.advance(1)
        assert gw.purge_artifacts() == 1
        assert _gone(gw, "live", live)
        assert gw.purge_artifacts() == 0
        worker.close()
        channel.stop()
    with pytest.raises(jevgate.GatewayError) as info:
        gw.purge_artifacts()
    assert info.value.code == "GATEWAY_CLOSED"
