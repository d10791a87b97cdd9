"""R-ERR-1, R-ERR-3: `jevgate.codes` is the core's error table, codes have one casing, and a
wrong argument gets the same code (and words) from Python as from C (examples/c/leases.c and
examples/c/devices.c check the C side of the same calls)."""

import re

import pytest

import jevgate
from jevgate import _jevgate, codes


def test_codes_module_lists_exactly_the_error_table():
    table = _jevgate.error_table()
    want = [row["code"] for row in table]
    assert list(codes.ALL) == want
    public = {name: value for name, value in vars(codes).items() if name.isupper() and name != "ALL"}
    assert public == {code: code for code in want}
    assert jevgate.codes is codes


def test_every_row_is_upper_snake_with_a_family_and_a_status():
    families = {"config", "store", "argument", "gateway", "jev", "grammar", "lease", "access",
                "device", "browser", "task", "internal"}
    for row in _jevgate.error_table():
        assert re.fullmatch(r"[A-Z][A-Z0-9]*(_[A-Z0-9]+)*", row["code"]), row
        assert row["family"] in families, row
        assert row["http_status"] in {400, 401, 402, 403, 404, 409, 410, 429, 499, 500, 502, 503, 504}
        assert isinstance(row["retryable"], bool)
        # the seed's lower-case worker codes are a column, never a second casing of the code
        assert row["worker_code"] is None or re.fullmatch(r"[a-z_]+", row["worker_code"]), row
    by_code = {row["code"]: row for row in _jevgate.error_table()}
    assert by_code["TAB_UNAVAILABLE"]["worker_code"] == "tab_unavailable"
    assert by_code["JEV_RATE_LIMITED"]["retryable"] is True


def _argument_error(call):
    with pytest.raises(jevgate.ArgumentError) as info:
        call()
    err = info.value
    assert isinstance(err, ValueError) and isinstance(err, jevgate.Error)
    assert err.code == codes.INVALID_ARGUMENT == "INVALID_ARGUMENT"
    assert err.http_status == 400 and err.retryable is False and err.worker_code is None
    return str(err)


def test_a_wrong_argument_is_invalid_argument_as_from_c(tmp_path):
    # Same values and same words as examples/c/devices.c (jevgate_tool_definitions("yaml")) and
    # examples/c/leases.c (jevgate_browser_call_begin with "mode":"sideways").
    assert _argument_error(lambda: jevgate.tool_definitions("yaml")) == (
        'invalid argument `format`: must be "mcp" or "openai"'
    )
    with jevgate.Gateway(tmp_path / "data") as gw:
        assert _argument_error(lambda: gw.leases.browser_call("t", "acme", mode="sideways")) == (
            'invalid argument `mode`: must be "authenticated" or "isolated"'
        )
        message = _argument_error(lambda: gw.pair("owner", {"name": "no installation id"}))
        assert message.startswith("invalid argument `request_json`: must be {installationId")
        assert message.endswith("(wrong or unknown members)")
        # the core's own argument check reaches Python with the same code
        _argument_error(lambda: gw.leases.acquire("", "conv"))
    _argument_error(lambda: jevgate.ManualClock().advance(-1))
    _argument_error(lambda: jevgate.parse_command("x" * ((1 << 20) + 1)))
