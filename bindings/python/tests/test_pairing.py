"""Pairing codes from Python (R-DEV-PAIR, issue 22 item 2): gw.pairing_code mints a one-time
code, and a client pairs a browser with it the way the extension does — POST /devices/pair on
the channel's own host:port, over real loopback HTTP — then authenticates on the channel with
the token it got, asking for the opt-in status frame (issue 22 item 3)."""

import base64
import http.client
import json
import os
import re
import socket
import struct

import pytest

import jevgate

OWNER = "person"
EXT = "chrome-extension://abcdefghijklmnopabcdefghijklmnop"


@pytest.fixture
def gw(tmp_path):
    with jevgate.Gateway(tmp_path) as gw:
        yield gw


def post(port, body, origin=None, raw=None):
    """POST /devices/pair; returns (status, headers dict lower-cased, parsed JSON body or None)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        headers = {"Content-Type": "application/json"}
        if origin:
            headers["Origin"] = origin
        conn.request("POST", "/devices/pair", body=raw if raw is not None else json.dumps(body), headers=headers)
        resp = conn.getresponse()
        data = resp.read()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, (json.loads(data) if data else None)
    finally:
        conn.close()


def body(code, installation="ext-1"):
    return {
        "installationId": installation,
        "name": "Work Chrome",
        "browser": {"name": "Chrome", "version": "131"},
        "pairingCode": code,
    }


class Worker:
    """A minimal protocol-2 worker (RFC 6455 masked text frames) that asks for status frames."""

    def __init__(self, port, token):
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
        self.send({"type": "authenticate", "authorization": f"Device {token}", "protocol": 2, "features": ["status"]})

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
        """The next text frame as JSON (control frames skipped)."""
        while True:
            b0, b1 = self._exact(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._exact(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._exact(8))[0]
            payload = self._exact(n)
            if b0 & 0x0F == 0x1:
                return json.loads(payload)
            if b0 & 0x0F == 0x8:
                raise ConnectionError(payload[2:].decode())

    def close(self):
        self.sock.close()


def test_a_code_pairs_once_over_http_and_the_token_authenticates(gw):
    code = gw.pairing_code(OWNER, ttl=300)
    assert set(code) == {"code", "expiresAt"}
    assert re.fullmatch(r"[A-HJ-NP-Z2-9]{4}-[A-HJ-NP-Z2-9]{4}", code["code"])
    channel = gw.serve_channel()
    # Typed lower case with a space instead of the dash: the same code.
    typed = code["code"].lower().replace("-", " ")
    status, headers, answer = post(channel.port, body(typed), origin=EXT)
    assert status == 200, answer
    assert headers["access-control-allow-origin"] == EXT
    assert set(answer) == {"deviceId", "token"}
    devices = gw.devices(OWNER)
    assert [d["id"] for d in devices] == [answer["deviceId"]]
    assert answer["token"] not in json.dumps(devices)
    worker = Worker(channel.port, answer["token"])
    try:
        assert worker.recv() == {"type": "ready", "deviceId": answer["deviceId"]}
        assert worker.recv() == {"type": "status", "controlled": False, "until": None, "autopilot": None}
        gw.leases.acquire(answer["deviceId"], "conv-1")
        frame = worker.recv()
        assert frame["type"] == "status" and frame["controlled"] is True and frame["until"] > 0
        assert gw.leases.take_back(answer["deviceId"], OWNER)
        assert worker.recv() == {"type": "status", "controlled": False, "until": None, "autopilot": None}
    finally:
        worker.close()
    # Used: one answer for wrong, used and expired codes.
    status, _, again = post(channel.port, body(code["code"], "ext-2"))
    assert status == 401 and again["errorCode"] == "PAIRING_CODE_INVALID"
    status, _, wrong = post(channel.port, body("ABCD-EFGH", "ext-2"))
    assert (status, wrong) == (401, again)
    assert len(gw.devices(OWNER)) == 1


def test_bad_requests_get_clear_answers_and_keep_the_code(gw):
    code = gw.pairing_code(OWNER, ttl=60)["code"]
    channel = gw.serve_channel()
    status, headers, answer = post(channel.port, None, raw=b"{not json", origin="https://evil.example")
    assert status == 400 and answer["errorCode"] == "INVALID_INPUT"
    assert not any(k.startswith("access-control") for k in headers)
    assert code not in answer["message"]
    missing = body(code)
    del missing["browser"]
    assert post(channel.port, missing)[0] == 400
    assert post(channel.port, None, raw=b" " * 9000)[0] == 413
    assert gw.devices(OWNER) == []
    assert post(channel.port, body(code))[0] == 200


@pytest.mark.parametrize("ttl", [0, -1, 600.001, 1e300, float("nan"), float("inf")])
def test_a_ttl_outside_ten_minutes_is_an_argument_error(gw, ttl):
    with pytest.raises(jevgate.ArgumentError) as e:
        gw.pairing_code(OWNER, ttl=ttl)
    assert e.value.code == "INVALID_ARGUMENT"


def test_an_empty_owner_is_an_argument_error(gw):
    with pytest.raises(jevgate.ArgumentError):
        gw.pairing_code("", ttl=60)
    assert gw.pairing_code(OWNER, ttl=600)["expiresAt"] > 0
