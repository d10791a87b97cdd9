"""The step-command grammar from Python (SPEC §7): every case of the shared table
tests/data/grammar_cases.jsonl gives the same answer as in Rust and on the CLI."""

import json

import pytest

import jevgate
from conftest import REPO

CASES = [json.loads(line) for line in (REPO / "tests" / "data" / "grammar_cases.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]


def run(case):
    fn, text = case["fn"], case["input"]
    if fn == "parse":
        return jevgate.parse_command(text)
    if fn == "steps":
        return jevgate.split_steps(text)
    if fn == "parts":
        return jevgate.split_parts(text)
    if fn == "model_address":
        try:
            return jevgate.check_model_address(text)
        except jevgate.GrammarError as e:
            assert e.http_status == 400
            return {"error": e.code}
    raise AssertionError(fn)


def test_the_table_is_large_and_covers_every_function():
    assert len(CASES) >= 400
    assert {c["fn"] for c in CASES} == {"parse", "steps", "parts", "model_address"}


@pytest.mark.parametrize("case", CASES, ids=[f"{i}-{c['fn']}" for i, c in enumerate(CASES)])
def test_shared_grammar_case(case):
    assert run(case) == case["expect"], case.get("note")


def test_hostile_inputs_never_crash():
    for text in ["", "\x00", "๙" * 10_000, "1. " * 5_000, "\ud7ff" * 100, "ค้นหา " + "ก" * 60_000]:
        jevgate.parse_command(text)
        jevgate.split_steps(text)
        jevgate.split_parts(text)
    with pytest.raises(ValueError):
        jevgate.parse_command("x" * (2 << 20))
    with pytest.raises(TypeError):
        jevgate.parse_command(None)  # type: ignore[arg-type]


def test_grammar_error_is_a_value_error():
    with pytest.raises(ValueError):
        jevgate.check_model_address("http://127.0.0.1/admin")
