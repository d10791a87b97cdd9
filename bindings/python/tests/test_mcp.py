"""`jevgate mcp` driven by the real Python `mcp` SDK's stdio client (issue 15 items 3 and 4):
initialize, list the tools, call the browser tools both families share (`browser_navigate`,
`browser_tabs`) on a loopback page, `jev_evaluate`, `task_spawn` + `task_wait`, cancel a
`task_wait` that blocks (and prove the server's call ended), and shut down on EOF.

The binary: $JEVGATE_BIN (scripts/test sets it), else `<cargo target dir>/debug/jevgate`.
"""

import http.server
import json
import os
import pathlib
import re
import subprocess
import threading
import time

import pytest

from conftest import HAVE_CHROMIUM, REPO, REQUIRE_CHROMIUM

mcp = pytest.importorskip("mcp", reason="the mcp SDK is installed by scripts/test")
import anyio  # noqa: E402  (an mcp dependency)
from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

pytestmark = pytest.mark.skipif(
    not HAVE_CHROMIUM and not REQUIRE_CHROMIUM, reason="needs Chromium"
)


def jevgate_bin() -> str:
    explicit = os.environ.get("JEVGATE_BIN")
    if explicit:
        return explicit
    meta = subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--no-deps"],
        cwd=REPO, capture_output=True, check=True, text=True,
    )
    path = pathlib.Path(json.loads(meta.stdout)["target_directory"]) / "debug" / "jevgate"
    if not path.exists():
        pytest.fail(f"build the binary first (cargo build -p jevgate --bin jevgate): {path}")
    return str(path)


PAGE = b"<html><title>MCP home</title><body><h1>Hello MCP</h1><button>Go</button></body></html>"


class Site:
    """A loopback site: `/` a page with a button, `/hang` a page that answers only when
    released (so a task's navigation to it keeps the task running)."""

    def __init__(self) -> None:
        self.release = threading.Event()
        site = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                if self.path.startswith("/hang"):
                    site.release.wait(60)
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(PAGE)))
                self.end_headers()
                self.wfile.write(PAGE)

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


def text_of(result) -> str:
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


def status_of(result) -> dict:
    assert not result.is_error, text_of(result)
    return json.loads(text_of(result))


async def stderr_wait(path: pathlib.Path, pattern: str, limit: float = 15.0):
    """The first match of `pattern` in the server's stderr, waiting up to `limit` seconds
    (the server writes it from another process: there is no event to wait on but the file).
    Waits with the event loop running: the client sends notifications/cancelled from it."""
    deadline = time.monotonic() + limit
    while True:
        found = re.search(pattern, path.read_text(errors="replace"))
        if found or time.monotonic() > deadline:
            return found
        await anyio.sleep(0.05)


@pytest.mark.timeout(180)
def test_mcp_server_over_the_sdk_stdio_client(tmp_path: pathlib.Path) -> None:
    site = Site()
    errlog_path = tmp_path / "stderr.txt"
    params = StdioServerParameters(command=jevgate_bin(), args=["mcp", "--caps", "tabs"])

    async def session_run() -> None:
        with open(errlog_path, "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as session:
                    init = await session.initialize()
                    assert init.protocol_version == "2025-11-25"
                    assert init.capabilities.tools is not None
                    assert init.server_info.name == "jevgate"

                    names = {t.name for t in (await session.list_tools()).tools}
                    for name in ("browser_navigate", "browser_tabs", "jev_evaluate",
                                 "task_spawn", "task_wait", "task_cancel", "task_receipts"):
                        assert name in names, names

                    nav = await session.call_tool("browser_navigate", {"url": site.base + "/"})
                    assert not nav.is_error, text_of(nav)
                    assert "Hello MCP" in text_of(nav)
                    assert "untrusted" in text_of(nav).lower()
                    tabs = await session.call_tool("browser_tabs", {"action": "list"})
                    assert not tabs.is_error, text_of(tabs)
                    assert "MCP home" in text_of(tabs)
                    bad = await session.call_tool("browser_navigate", {"url": 5})
                    assert bad.is_error

                    ev = await session.call_tool("jev_evaluate", {
                        "state": "Hello there, nice to meet you",
                        "questions": {"greeting": {"type": "noul", "instructions": "Is this a greeting?"}},
                    })
                    answers = json.loads(text_of(ev))["answers"]
                    assert answers["greeting"]["type"] == "noul"

                    spawned = status_of(await session.call_tool(
                        "task_spawn", {"goal": "click Go", "startUrl": site.base + "/"}))
                    done = status_of(await session.call_tool(
                        "task_wait", {"taskId": spawned["id"], "timeoutMs": 60000}))
                    assert done["state"] == "completed", done
                    receipts = json.loads(text_of(await session.call_tool(
                        "task_receipts", {"taskId": spawned["id"]})))["receipts"]
                    assert any(op["tool"] == "page_click" for r in receipts for op in r["operations"])

                    # A task whose start page never answers stays running: its wait blocks.
                    hanging = status_of(await session.call_tool(
                        "task_spawn", {"goal": "click Go", "startUrl": site.base + "/hang"}))
                    started = time.monotonic()
                    with anyio.move_on_after(1.5) as scope:
                        await session.call_tool(
                            "task_wait", {"taskId": hanging["id"], "timeoutMs": 120000})
                    assert scope.cancelled_caught, "task_wait returned although the task runs"
                    # The server saw notifications/cancelled and its call ended at once.
                    ended = await stderr_wait(errlog_path, r"cancelled request \S+ ended after (\d+) ms")
                    assert ended, errlog_path.read_text()
                    assert int(ended.group(1)) < 10000
                    assert time.monotonic() - started < 15
                    still = status_of(await session.call_tool("task_status", {"taskId": hanging["id"]}))
                    assert still["state"] in ("queued", "running"), still
                    await session.call_tool("task_cancel", {"taskId": hanging["id"]})
                    site.release.set()
            # Leaving the client closes the server's stdin: EOF shutdown.

    try:
        anyio.run(session_run)
    finally:
        site.close()
    log = errlog_path.read_text()
    assert "shutting down (stdin ended)" in log, log
    assert "mcp: closed" in log, log
