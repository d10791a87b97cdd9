"""jevgate.LocalBrowser (SPEC §6, R-BRW-*): a real headless Chromium on a loopback fixture
page — observe, refs and generations, a real click counted by the server, the snapshot,
sensitive fields never read, stale refusals, and no process left after close."""

import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

import jevgate

PAGE = b"""<!doctype html><title>Fixture</title><form aria-label="Sign in">
<button type=button id=go onclick="if(event.isTrusted){fetch('/beacon');this.textContent='Clicked'}">Go</button>
<input type=password aria-label="Password" value="hunter2-secret"></form>"""
# Served on 127.0.0.1, it frames localhost on the same port: another site, so Chromium renders
# the frame out of process (R-BRW-OBS "iframes are included").
OUTER = b"""<!doctype html><title>Outer</title><iframe id=f title="Cross frame"></iframe>
<script>f.src = 'http://localhost:' + location.port + '/inner';</script>"""
LONG = b"<!doctype html><title>Long</title>" + b"".join(b"<button>Button %d</button>" % i for i in range(120))
INNER = b"""<!doctype html><title>Inner</title>
<button onclick="if(event.isTrusted)fetch('/xbeacon')">Inside</button>"""


class Handler(BaseHTTPRequestHandler):
    clicks = 0
    frame_clicks = 0

    def do_GET(self):  # noqa: N802 (http.server API)
        if self.path == "/beacon":
            Handler.clicks += 1
            body = b""
        elif self.path == "/xbeacon":
            Handler.frame_clicks += 1
            body = b""
        else:
            body = {"/outer": OUTER, "/inner": INNER, "/long": LONG}.get(self.path, PAGE)
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def site():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.mark.chromium
def test_local_browser_observes_clicks_and_protects_secrets(site):
    import time

    with jevgate.LocalBrowser() as browser:
        browser.navigate(site + "/")
        obs = browser.observe()
        go = next(c for c in obs["controls"] if c["name"] == "Go")
        pw = next(c for c in obs["controls"] if c.get("sensitive"))
        assert "value" not in pw or pw["value"] in (None, "")
        # Issue 26: the button's enclosing form (name and text, never a field's value).
        (form,) = obs["containers"]
        assert (go["container"], form["kind"], form["name"]) == (form["id"], "form", "Sign in")
        assert "hunter2-secret" not in repr(obs) and "hunter2-secret" not in browser.snapshot()
        # The fixture counts only trusted clicks: a script click (what a backend faking clicks
        # through el.click() would do) changes nothing, so the real-click check below can fail.
        browser.execute({"tool": "javascript", "args": {"operationId": "js-1", "code": "document.getElementById('go').click(); 1"}})
        assert "Clicked" not in browser.snapshot() and Handler.clicks == 0
        browser.execute({"tool": "page_click", "args": {"operationId": "op-1", "generation": obs["generation"], "ref": go["ref"]}})
        deadline = time.monotonic() + 5
        while Handler.clicks < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert Handler.clicks == 1, "one real click"
        assert "Clicked" in browser.snapshot()
        with pytest.raises(jevgate.BrowserError) as info:
            browser.execute({"tool": "page_click", "args": {"operationId": "op-2", "generation": 0, "ref": go["ref"]}})
        assert info.value.code == "STALE_OBSERVATION"
        with pytest.raises(jevgate.ArgumentError):  # a reused operation id: nothing is sent
            browser.execute({"tool": "page_click", "args": {"operationId": "op-1", "generation": obs["generation"], "ref": go["ref"]}})
        with pytest.raises(jevgate.ArgumentError):
            browser.execute({"tool": "fly"})

        # Issue 21 item 6: the browser's record of what it ran answers operation_status —
        # executed / not_executed / unknown, the tool and when, never arguments or page text.
        def status(op: str) -> dict:
            return browser.execute({"tool": "operation_status", "args": {"operationId": op}})

        done = status("op-1")
        assert (done["status"], done["outcome"], done["tool"]) == ("executed", "completed", "page_click")
        assert isinstance(done["atMs"], int)
        assert set(done) <= {"operationId", "status", "outcome", "tool", "errorCode", "atMs"}
        refused = status("op-2")
        assert (refused["status"], refused["errorCode"]) == ("not_executed", "STALE_OBSERVATION")
        never = status("never-used")
        assert (never["status"], never["outcome"]) == ("unknown", "not_recorded")
        with pytest.raises(jevgate.ArgumentError) as bad:
            status("x" * 201)
        assert bad.value.code == "INVALID_ARGUMENT"
    assert Handler.clicks == 1, "a reused operation id is never replayed"


@pytest.mark.chromium
def test_cross_origin_iframe_controls_have_frame_refs_and_take_real_clicks(site):
    import time

    with jevgate.LocalBrowser() as browser:
        browser.navigate(site + "/outer")
        inside = None
        deadline = time.monotonic() + 5
        while inside is None and time.monotonic() < deadline:
            obs = browser.observe()
            inside = next((c for c in obs["controls"] if c["name"] == "Inside"), None)
        assert inside is not None and inside["ref"] == "f1e1"
        assert "[ref=f1e1]" in browser.snapshot()
        browser.execute({"tool": "page_click", "args": {"operationId": "x-1", "generation": obs["generation"], "ref": "f1e1"}})
        while Handler.frame_clicks < 1 and time.monotonic() < deadline + 5:
            time.sleep(0.01)
        time.sleep(0.1)
        assert Handler.frame_clicks == 1, "one real click inside the frame"


@pytest.mark.skipif(not (os.environ.get("JEVGATE_CHROMIUM") or os.path.exists("/usr/bin/chromium")), reason="no Chromium")
def test_a_cut_snapshot_says_so_and_a_refused_tab_address_opens_nothing(site):
    """Issue 12 §10: the cut is stated in the text with how to read the rest; `tabs new` with a
    refused address is refused before any tab is opened."""
    with jevgate.LocalBrowser() as browser:
        browser.navigate(site + "/long")
        cut = browser.execute({"tool": "snapshot", "args": {"maxChars": 800}})
        assert cut["truncated"] is True
        last = cut["text"].split("\n")[-2]  # the line before the envelope's closing tag
        assert last.startswith("[snapshot truncated at "), last
        total = cut["totalChars"]
        assert f" of {total} characters" in last and f"maxChars {total}" in last, last
        whole = browser.execute({"tool": "snapshot", "args": {"maxChars": total}})
        assert whole["truncated"] is False and "[snapshot truncated" not in whole["text"]
        assert "Button 119" in whole["text"]

        def count() -> int:
            return len(browser.execute({"tool": "tabs", "args": {"action": "list"}})["tabs"])

        before = count()
        for url in ("file:///etc/passwd", "javascript:alert(1)", "chrome://settings"):
            with pytest.raises(jevgate.BrowserError) as info:
                browser.execute({"tool": "tabs", "args": {"action": "new", "url": url}})
            assert info.value.code == "NAVIGATION_FAILED"
            assert count() == before, f"{url} opened a tab"


def test_missing_chromium_is_browser_unavailable(tmp_path):
    with pytest.raises(jevgate.BrowserError) as info:
        jevgate.LocalBrowser(executable=tmp_path / "no-such-chromium")
    assert info.value.code == "BROWSER_UNAVAILABLE"
