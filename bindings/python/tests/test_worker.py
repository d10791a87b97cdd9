"""jevgate.DeviceWorker (issues 7 and 8, R-DEV-CHAN, R-DEV-TOOLS): the reference worker in
process — a real headless Chromium behind a real loopback WebSocket channel, driven by agents
through gw.call_tool; the fixture server counts real clicks."""

import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

import jevgate

OWNER = "person"
BROWSER = {"installationId": "inst-w", "name": "Reference worker", "browser": {"name": "Chromium", "version": "131"}}
PAGE = b"""<!doctype html><title>Worker fixture</title><h1>Worker page</h1>
<button onclick="if(event.isTrusted)fetch('/beacon')">Press me</button>
<label>Password <input type=password value="hunter2-worker-secret"></label>"""



class Handler(BaseHTTPRequestHandler):
    clicks = 0

    def do_GET(self):  # noqa: N802 (http.server API)
        if self.path == "/beacon":
            Handler.clicks += 1
            body = b""
        else:
            body = PAGE
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def site():
    httpd = HTTPServer(("127.0.0.1", 0), Handler)
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def gw(tmp_path):
    g = jevgate.Gateway(tmp_path)
    yield g
    g.close()


@pytest.mark.chromium
def test_the_reference_worker_serves_the_tools_from_a_real_browser(gw, site):
    paired = gw.pair(OWNER, BROWSER)
    channel = gw.serve_channel()
    with jevgate.LocalBrowser() as browser, jevgate.DeviceWorker(channel.url, paired["token"], browser) as worker:
        assert worker.device_id == paired["device"]["id"] and worker.running
        nav = gw.call_tool(OWNER, "conv", "browser_navigate", {"url": site + "/"})
        assert nav["success"], nav
        snapshot = nav["result"]["untrustedContent"]["data"]["snapshot"]
        assert snapshot["title"] == "Worker fixture" and "[ref=" in snapshot["text"]
        found = gw.call_tool(OWNER, "conv", "browser_find", {"query": "Press me"})
        ref = found["result"]["untrustedContent"]["data"]["matches"][0]["ref"]
        click = gw.call_tool(OWNER, "conv", "browser_computer", {"action": "click", "ref": ref})
        assert click["success"], click
        deadline = time.monotonic() + 5
        while Handler.clicks < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert Handler.clicks == 1, "one real click"
        text = gw.call_tool(OWNER, "conv", "browser_get_text", {"max_chars": 4})
        assert text["result"]["truncated"] is True
        assert text["result"]["untrustedContent"]["data"]["text"] == "Work"
        everything = json.dumps([nav, found, click, gw.call_tool(OWNER, "conv", "browser_read_page", {})])
        assert "hunter2-worker-secret" not in everything
        shot = gw.call_tool(OWNER, "conv", "browser_computer", {"action": "screenshot"})
        media_type, image = gw.artifact("conv", shot["result"]["artifactId"])
        assert media_type == "image/jpeg" and image[:2] == b"\xff\xd8"
        assert worker.commands_served >= 6
        gw.unpair(OWNER, paired["device"]["id"])
        assert worker.wait(timeout=5) == {"close_code": 1008, "reason": "DEVICE_UNPAIRED"}
        assert not worker.running
    assert Handler.clicks == 1


@pytest.mark.chromium
def test_worker_refusals_are_device_errors(gw):
    paired = gw.pair(OWNER, BROWSER)
    channel = gw.serve_channel()
    with jevgate.LocalBrowser() as browser:
        with pytest.raises(jevgate.DeviceError) as info:
            jevgate.DeviceWorker(channel.url, paired["token"], browser, protocol=1)
        assert info.value.code == "DEVICE_CHANNEL_IO" and "UPGRADE_REQUIRED" in str(info.value)
        with pytest.raises(jevgate.DeviceError) as info:
            jevgate.DeviceWorker(channel.url, "wrong-token-value", browser)
        assert "AUTHENTICATION_FAILED" in str(info.value) and "wrong-token-value" not in str(info.value)
        with pytest.raises(jevgate.ArgumentError):
            jevgate.DeviceWorker("http://example.com/", paired["token"], browser)
        with pytest.raises(ValueError):
            jevgate.DeviceWorker(channel.url, paired["token"], browser, connect_timeout=-1)


def test_a_python_executor_serves_the_commands(gw):
    paired = gw.pair(OWNER, BROWSER)
    channel = gw.serve_channel()
    seen = []

    def serve(tool, args):
        seen.append((tool, args))
        if tool == "browser_get_text":
            return {"text": "from python"}
        if tool == "browser_find":
            raise jevgate.ToolError("tab_unavailable", "no tab here")
        raise RuntimeError("secret-detail-never-shown")

    with jevgate.DeviceWorker(channel.url, paired["token"], executor=serve) as worker:
        ok = gw.call_tool(OWNER, "conv", "browser_get_text", {"max_chars": 4})
        assert ok["result"]["untrustedContent"]["data"]["text"] == "from"
        assert ok["result"]["truncated"] is True
        bad = gw.call_tool(OWNER, "conv", "browser_find", {"query": "x"})
        assert bad == {"success": False, "errorCode": "tab_unavailable", "message": "no tab here"}
        boom = gw.call_tool(OWNER, "conv", "browser_tabs", {"action": "list"})
        assert boom["errorCode"] == "execution_failed" and "secret-detail" not in boom["message"]
        assert worker.commands_served == 3
    assert seen[0] == ("browser_get_text", {"max_chars": 4})
    with pytest.raises(ValueError):
        jevgate.DeviceWorker(channel.url, paired["token"])
    with pytest.raises(TypeError):
        jevgate.DeviceWorker(channel.url, paired["token"], executor=42)


def test_caps_hold_whatever_shape_a_python_executor_returns(gw):
    """R-DEV-CAPS: the gateway caps the whole result, not only a `text` field (issue 12)."""
    paired = gw.pair(OWNER, BROWSER)
    channel = gw.serve_channel()
    z = "z" * 50_000
    shapes = [
        {"text": "short", "content": z},
        [z, z],
        {"text": {"nested": [z]}},
        list(range(20_000)),
        {z: 1, "text": "k"},
    ]
    current = {"shape": shapes[0]}

    def serve(tool, args):
        return current["shape"]

    with jevgate.DeviceWorker(channel.url, paired["token"], executor=serve):
        for shape in shapes:
            current["shape"] = shape
            text = gw.call_tool(OWNER, "conv", "browser_get_text", {"max_chars": 100})
            assert text["result"]["truncated"] is True
            assert len(json.dumps(text, separators=(",", ":"))) < 100 + 2_000 + 400
            other = gw.call_tool(OWNER, "conv", "browser_find", {"query": "q"})
            assert len(json.dumps(other, separators=(",", ":"))) < 50_000 + 400
            if len(json.dumps(shape)) > 50_000:
                assert other["result"]["truncated"] is True


WS_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def _recv_exact(sock, n):
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        assert chunk, "the worker closed the connection"
        data += chunk
    return data


def _read_frame(sock):
    """One WebSocket frame from the worker (a client: masked) as (opcode, payload)."""
    b0, b1 = _recv_exact(sock, 2)
    n = b1 & 0x7F
    if n == 126:
        n = int.from_bytes(_recv_exact(sock, 2), "big")
    elif n == 127:
        n = int.from_bytes(_recv_exact(sock, 8), "big")
    mask = _recv_exact(sock, 4) if b1 & 0x80 else b"\0\0\0\0"
    payload = _recv_exact(sock, n)
    return b0 & 0x0F, bytes(c ^ mask[i % 4] for i, c in enumerate(payload))


def _send_frame(sock, opcode, payload=b""):
    n = len(payload)
    size = bytes([n]) if n < 126 else bytes([126]) + n.to_bytes(2, "big")
    sock.sendall(bytes([0x80 | opcode]) + size + payload)


def _scripted_gateway(listener, release, out):
    """A raw gateway (R-DEV-CHAN protocol 2): `ready`, then command c1, command c2, a cancel of
    c2 and a WebSocket ping. The worker reads frames in order, so its pong proves the cancel
    was handled while c1 still blocks the executor; only then is c1 released. No timing."""
    import base64
    import hashlib

    sock, _ = listener.accept()
    sock.settimeout(10)
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(4096)
        assert chunk
        head += chunk
    key = next(
        line.split(b":", 1)[1].strip()
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"sec-websocket-key:")
    )
    accept = base64.b64encode(hashlib.sha1(key + WS_GUID).digest())
    sock.sendall(
        b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
        b"Sec-WebSocket-Accept: " + accept + b"\r\n\r\n"
    )
    assert _read_frame(sock)[0] == 1  # authenticate
    text = lambda frame: _send_frame(sock, 1, json.dumps(frame).encode())  # noqa: E731
    text({"type": "ready", "deviceId": "dev_queued"})
    for n in (1, 2):
        text({"type": "command", "id": f"c{n}", "tool": "browser_get_text", "args": {"n": n}, "deadlineMs": 60000})
    text({"type": "cancel", "id": "c2"})
    _send_frame(sock, 9)  # ping
    while _read_frame(sock)[0] != 10:  # until the pong
        pass
    release.set()
    while len(out) < 2:
        opcode, payload = _read_frame(sock)
        if opcode == 1:
            out.append(json.loads(payload))
    sock.close()


def test_a_command_cancelled_in_the_queue_never_reaches_the_python_executor():
    """Issue 19 item 1, R-DEV-CHAN: the Python executor has no check of its own; the core job
    loop answers a command cancelled while it waited in the queue, and never calls Python."""
    import socket

    listener = socket.create_server(("127.0.0.1", 0))
    release = threading.Event()
    results = []
    served = []

    def serve(tool, args):
        served.append(args["n"])
        assert release.wait(10)
        return {"text": "from python"}

    gateway = threading.Thread(target=_scripted_gateway, args=(listener, release, results), daemon=True)
    gateway.start()
    url = f"ws://127.0.0.1:{listener.getsockname()[1]}/v1/device-worker/channel"
    with jevgate.DeviceWorker(url, "jgd_x", executor=serve) as worker:
        gateway.join(15)
        assert not gateway.is_alive()
        assert worker.commands_served == 2
    listener.close()
    assert served == [1]
    assert [r["id"] for r in results] == ["c1", "c2"]
    assert results[0]["success"] is True
    assert results[1]["success"] is False and results[1]["errorCode"] == "cancelled"
