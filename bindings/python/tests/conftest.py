import json
import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[3]


@pytest.fixture(scope="session")
def repo() -> pathlib.Path:
    return REPO


def load_cases(name: str):
    return json.loads((REPO / "tests" / "data" / name).read_text(encoding="utf-8"))
