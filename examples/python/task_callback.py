"""A browser task driven by a host-supplied model (issue 14 item 7; R-TSK, R-RUN, R-TSK-RCPT).

jevgate runs a person's step list on a local headless Chromium. Where its grammar alone cannot
tell which control a command means, it asks the configured Jev provider one typed `choice`
question over the page's controls (options "o0".."oN", plus "none"). Here the provider is
`callback`: this script's own Python function answers. The "model" is a toy — it picks the
first option whose description shares a word with the command — standing in for whatever model
you run yourself (a local LLM, a rules engine, your own API client). Its answer goes through the
same validator as any provider's, and every page action is checkpointed in a receipt before it
is sent.

A step list whose every step is done is only a completion candidate (R-TSK-VER): the script
installs a deterministic host verifier that checks fresh evidence of the page — the Miso button
now reads "Adoption requested" — and answers a bool; `True` completes the task (VERIFIED).

The script serves its own fixture page on 127.0.0.1 (no network needed), prints each outcome
line as it settles and the receipts at the end, and exits non-zero unless the task completed
and the model was asked.

    python examples/python/task_callback.py
"""

from __future__ import annotations

import re
import sys
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List

import jevgate

HOME = b"""<!doctype html><meta charset="utf-8"><title>Pet shelter</title><h1>Pet shelter</h1>
<a href="/cats">Our cats</a><br><a href="/dogs">Our dogs</a>
<div style="height:2500px">Animals looking for a home.</div>"""
CATS = b"""<!doctype html><meta charset="utf-8"><title>Cats</title><h1>Cats</h1>
<p>Miso, 2 years, likes laps.</p>
<button onclick="this.textContent='Adoption requested'">Adopt Miso</button>
<button onclick="this.textContent='Sponsored'">Sponsor a cat</button>
<div style="height:2500px">More about our cats.</div>"""
PAGES = {"/": HOME, "/cats": CATS, "/dogs": b"<!doctype html><title>Dogs</title><h1>Dogs</h1>"}


class Site(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (http.server API)
        body = PAGES.get(self.path)
        self.send_response(200 if body else 404)
        body = body or b"not found"
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


def words(text: str) -> List[str]:
    return [w for w in re.findall(r"\w+", text.lower()) if len(w) > 2]


def toy_model(asked: List[str]) -> Any:
    """The callback provider: receives the evaluation request (the command as `state`, the
    question `control` with its options as `criteria`) and returns a response in the provider
    shape. A real host would call its own model here."""

    def answer(request: Dict[str, Any]) -> Dict[str, Any]:
        command = words(request["state"])
        options: Dict[str, str] = request["questions"]["control"]["criteria"]
        asked.append(request["state"])
        choice = "none"
        for key, description in options.items():
            if key != "none" and set(words(description)) & set(command):
                choice = key
                break
        # A choice answer gives a probability to every option (summing to 1), the chosen one
        # the highest.
        rest = (1.0 - 0.9) / (len(options) - 1) if len(options) > 1 else 0.0
        probabilities = {k: (0.9 if k == choice else rest) for k in options}
        if len(options) == 1:
            probabilities = {choice: 1.0}
        return {
            "model": "toy-word-overlap",
            "answers": {"control": {"type": "choice", "choice": choice, "probabilities": probabilities, "confidence": 0.9}},
            "usage": {"input_tokens": len(command), "output_tokens": 1},
        }

    return answer


def adoption_requested(request: Dict[str, Any]) -> bool:
    """The host's verifier: fresh evidence (page content, read as data only) shows the request."""
    page = request["evidence"]["untrustedContent"]["data"] or {}
    return any(c.get("name") == "Adoption requested" for c in page.get("controls", []))


def main() -> int:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Site)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    start_url = f"http://127.0.0.1:{server.server_address[1]}/"
    owner = {"agentId": "assistant", "principalId": "alice", "conversationId": "conv-1"}
    # Browser tasks and step lists are off by default: `features.browserTasks` turns tasks on,
    # `features.browserSteps` runs a step list step by step (off, it is one direct command).
    config = {"gateway": {"jev": {"enabled": True, "provider": "callback", "features": {
        "browserTasks": {"enabled": True}, "browserSteps": {"enabled": True}}}}}
    asked: List[str] = []
    status: Dict[str, Any] = {}
    try:
        with tempfile.TemporaryDirectory() as data_dir, jevgate.Gateway(data_dir, config) as gw:
            gw.set_jev_callback(toy_model(asked))
            gw.tasks.set_verifier(adoption_requested)
            # The person's own step list (their authorization, run verbatim); an agent's goal
            # would be the positional `goal`, a goal run checked for impact before each action.
            task_id = gw.tasks.spawn(
                owner,
                user_message="1. go to the cats page\n2. adopt Miso\n3. scroll down",
                start_url=start_url,
                on_outcome=lambda p: print(f"  {p['line']}", flush=True),
            )["id"]
            print(f"task {task_id}")
            status = gw.tasks.wait(owner, task_id, 120)
            print(f"state: {status['state']} ({status['reason']}); the model was asked {len(asked)} time(s)")
            for receipt in gw.tasks.receipts(owner, task_id):
                print(f"receipt {receipt['request']}: {receipt['state']} {receipt['reason']}")
                for op in receipt["operations"]:
                    print(f"  {op['operationId']} {op['tool']} {op['status']}")
            gw.set_jev_callback(None)
    finally:
        server.shutdown()
        server.server_close()
    return 0 if status.get("state") == "completed" and asked else 1


if __name__ == "__main__":
    sys.exit(main())
