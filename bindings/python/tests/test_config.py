"""SPEC §2 (R-CFG…): the shared configuration cases give the same verdicts in Python as in Rust
and on the CLI; ConfigError carries code, path and status."""

import math

import pytest

import jevgate
from conftest import load_cases

CASES = load_cases("config_cases.json")["cases"]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_shared_config_case(case):
    document = case.get("raw") or case["config"]
    if case.get("raw") is None and not isinstance(document, dict):
        # Non-object documents (arrays, null) go through as JSON text.
        import json

        document = json.dumps(document)
    if case["ok"]:
        jevgate.validate_config(document)
    else:
        with pytest.raises(jevgate.ConfigError) as info:
            jevgate.validate_config(document)
        err = info.value
        assert err.code == "JEV_INVALID_CONFIGURATION"
        assert err.path == case["path"]
        assert case["reason"] in str(err)
        assert err.http_status == 400
        assert err.retry_after is None


def test_config_error_is_a_value_error_and_a_jevgate_error():
    with pytest.raises(ValueError):
        jevgate.validate_config('{"gateway": {"jev": {"bogus": 1}}}')
    assert issubclass(jevgate.ConfigError, jevgate.Error)


def test_string_and_dict_inputs_agree():
    text = '{"gateway": {"jev": {"enabled": true, "provider": "local"}}}'
    jevgate.validate_config(text)
    jevgate.validate_config({"gateway": {"jev": {"enabled": True, "provider": "local"}}})


def test_non_json_values_are_config_errors_not_crashes():
    with pytest.raises(jevgate.ConfigError) as info:
        jevgate.validate_config({"gateway": {"computerUse": {"minConfidence": math.nan}}})
    assert info.value.path == ""
    with pytest.raises(jevgate.ConfigError):
        jevgate.validate_config({"gateway": {"jev": {"model": object()}}})
    with pytest.raises(TypeError):
        jevgate.validate_config(42)  # type: ignore[arg-type]
    with pytest.raises(jevgate.ConfigError):
        jevgate.validate_config("{" * 10_000)
    with pytest.raises(jevgate.ConfigError):
        jevgate.validate_config(" " * (2 << 20))


def test_errors_never_echo_a_misplaced_secret():
    with pytest.raises(jevgate.ConfigError) as info:
        jevgate.validate_config({"gateway": {"jev": {"timeoutMs": "sk-live-SECRET"}}})
    assert "SECRET" not in str(info.value)
    assert info.value.path == "gateway.jev.timeoutMs"


def test_errors_never_echo_a_secret_used_as_a_key():
    """Issue 12 item 10a: a key that is not identifier-like is shown as <key>, never echoed."""
    for secret in ("sk-live-SECRET-1", "SECRET with spaces", "\u202eSECRET\x00"):
        with pytest.raises(jevgate.ConfigError) as info:
            jevgate.validate_config({"gateway": {"jev": {secret: True}}})
        assert "SECRET" not in str(info.value)
        assert "SECRET" not in repr(info.value)
        assert info.value.path == "gateway.jev.<key>"
