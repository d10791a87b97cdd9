"""jevgate.validate_response and answer_schema (SPEC §3.2, R-VAL-*): the shared validation
cases give the same verdicts in Python; ValidationError carries .code and .reason."""

import json

import pytest

import jevgate
from conftest import REPO

CASES = [json.loads(line) for line in (REPO / "tests" / "data" / "validation_cases.jsonl").read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_shared_validation_case(case):
    response = case.get("response_text", case.get("response"))
    want = case["expect"]
    if want["ok"]:
        answers = jevgate.validate_response(case["questions"], response)
        assert answers == case["response"]["answers"], "returned unchanged"
        return
    with pytest.raises(jevgate.JevError) as info:
        jevgate.validate_response(case["questions"], response)
    err = info.value
    assert err.code == want["code"]
    if "reason" in want:
        assert isinstance(err, jevgate.ValidationError) and isinstance(err, ValueError)
        assert err.reason == want["reason"]
        assert err.http_status == 502


def test_inputs_may_be_str_bytes_or_dict():
    case = CASES[0]
    text = json.dumps(case["response"])
    q = json.dumps(case["questions"])
    assert jevgate.validate_response(q, text) == jevgate.validate_response(case["questions"], text.encode())
    assert jevgate.validate_response(q, bytearray(text.encode()))["n"]["noul"] == 0.8
    with pytest.raises(TypeError):
        jevgate.validate_response(q, 42)  # type: ignore[arg-type]


def test_the_answer_is_never_in_the_error():
    case = CASES[0]
    bad = json.loads(json.dumps(case["response"]))
    bad["answers"]["zz-secret-answer-key"] = {"type": "noul", "noul": 0.5}
    with pytest.raises(jevgate.ValidationError) as info:
        jevgate.validate_response(case["questions"], bad)
    assert "zz-secret-answer-key" not in str(info.value)
    assert info.value.reason == "UNEXPECTED_ANSWER"


def test_hostile_bytes_never_crash():
    q = CASES[0]["questions"]
    for blob in [b"", b"\xff" * 100, b"[" * 100_000, b'{"model":"' + b"a" * 1_000_000, b"\x00"]:
        with pytest.raises(jevgate.ValidationError):
            jevgate.validate_response(q, blob)


def test_answer_schema_describes_the_answers():
    schema = jevgate.answer_schema(CASES[0]["questions"])
    assert set(schema["properties"]) == {"n", "c", "s"}
    assert schema["required"] == ["n", "c", "s"] or set(schema["required"]) == {"n", "c", "s"}
