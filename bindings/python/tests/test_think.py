"""gw.think (R-PRV-THINK) against a loopback server speaking the openai-chat wire format:
text or None comes back; provider failures raise and never become text."""

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

import jevgate


class Handler(BaseHTTPRequestHandler):
    replies = []
    seen = []

    def do_POST(self):  # noqa: N802 (http.server API)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        Handler.seen.append((self.path, self.headers.get("Authorization"), body))
        status, content = Handler.replies.pop(0)
        payload = json.dumps({"id": "c1", "object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}]}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    httpd = HTTPServer(("127.0.0.1", 0), Handler)
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def test_think_returns_text_or_none_and_failures_raise(tmp_path, server, monkeypatch):
    monkeypatch.setenv("JEV_TEXT_API_KEY", "sk-think-secret")
    base = f"http://127.0.0.1:{server.server_address[1]}/v1"
    config = {"gateway": {"jev": {"enabled": True, "provider": "local",
                                  "thinking": {"baseUrl": base, "model": "small", "apiKeyEnv": "JEV_TEXT_API_KEY"}}}}
    Handler.replies[:] = [(200, '{"text": "เชียงใหม่"}'), (200, '{"text": null}'), (500, "boom secret prose"), (200, "just prose")]
    with jevgate.Gateway(tmp_path, config) as gw:
        assert gw.think("assistant", "Which city is the origin?", "goal: fly from Chiang Mai") == "เชียงใหม่"
        assert gw.think("assistant", "Which city?", "nothing known") is None
        with pytest.raises(jevgate.JevError) as info:
            gw.think("assistant", "x", "y")
        assert info.value.code == "JEV_PROVIDER_FAILURE" and "secret prose" not in str(info.value)
        with pytest.raises(jevgate.JevError) as info:
            gw.think("assistant", "x", "y")
        assert info.value.code == "JEV_MALFORMED_RESPONSE"
    path, auth, body = Handler.seen[0]
    assert path == "/v1/chat/completions" and auth == "Bearer sk-think-secret"
    assert body["model"] == "small"
