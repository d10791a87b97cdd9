import json
import os
import pathlib
import shutil

import pytest

REPO = pathlib.Path(__file__).resolve().parents[3]


@pytest.fixture(scope="session")
def repo() -> pathlib.Path:
    return REPO


def load_cases(name: str):
    return json.loads((REPO / "tests" / "data" / name).read_text(encoding="utf-8"))


def find_chromium():
    """The executable jevgate would start, searched in the library's own order
    (jevgate::browser::find_chromium): JEVGATE_CHROMIUM, /usr/bin/chromium, then chromium,
    chromium-browser, google-chrome on PATH."""
    explicit = os.environ.get("JEVGATE_CHROMIUM")
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    if os.access("/usr/bin/chromium", os.X_OK):
        return "/usr/bin/chromium"
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


HAVE_CHROMIUM = find_chromium() is not None
# scripts/test sets JEVGATE_REQUIRE_CHROMIUM=1: there a missing browser is a failure, not a skip.
REQUIRE_CHROMIUM = os.environ.get("JEVGATE_REQUIRE_CHROMIUM") == "1"


def pytest_configure(config):
    config.addinivalue_line("markers", "chromium: the test drives a real Chromium")


@pytest.fixture(autouse=True)
def _chromium(request):
    """A test marked `chromium` is skipped without a browser, except under the test command
    (JEVGATE_REQUIRE_CHROMIUM=1), where it fails."""
    if request.node.get_closest_marker("chromium") is None or HAVE_CHROMIUM:
        return
    if REQUIRE_CHROMIUM:
        pytest.fail("no Chromium found, and JEVGATE_REQUIRE_CHROMIUM=1 (the test command) needs one")
    pytest.skip("no Chromium")


def picks(request: dict) -> dict:
    """A deterministic model: a control decision picks the option naming the command's last
    word (an agent's goal run: ``done`` once it acted, else that option, else ``blocked``); the
    impact question is routine unless the control deletes, sends or pays; any other noul 0.9."""
    key = next(iter(request["questions"]))
    q = request["questions"][key]
    state = request["state"]
    usage = {"input_tokens": 1, "output_tokens": 1}
    if q["type"] == "noul":
        p = 0.9
        if key == "routine":
            name = json.loads(state)["untrustedContent"]["data"]["control"]["name"]
            p = 0.05 if name.startswith(("Delete", "Send", "Pay")) else 0.95
        return {"model": "m", "usage": usage, "answers": {key: {"type": "noul", "noul": p}}}
    options = q["criteria"]
    try:
        goal = json.loads(state)
    except ValueError:
        goal = None
    if isinstance(goal, dict) and "goal" in goal:
        word = goal["goal"].split()[-1]
        named = next((k for k, d in options.items() if k.startswith("o") and word in d), "blocked")
        pick = "done" if goal["untrustedContent"]["data"]["actionsDone"] else named
    else:
        word = state.split()[-1]
        pick = next((k for k, d in options.items() if k.startswith("o") and word in d), "none")
    return {"model": "m", "usage": usage, "answers": {key: {
        "type": "choice", "choice": pick, "confidence": 0.9,
        "probabilities": {k: (1.0 if k == pick else 0.0) for k in options}}}}
