"""Managed local browser sessions (R-PROF-2..4, SPEC §6 (b)): gw.enable_local_browsers() gives
each conversation thread's browser session a local headless Chromium, started on first use and
closed when the lease manager closes the session (here: 15 idle minutes on a manual clock)."""

import os

import pytest

import jevgate



def test_without_local_browsers_a_session_has_no_browser(tmp_path):
    with jevgate.Gateway(tmp_path) as gw:
        with gw.leases.browser_call("thread-1", "acme") as call:
            with pytest.raises(jevgate.BrowserError) as info:
                call.execute({"tool": "observe", "args": {}})
            assert info.value.code == "BROWSER_UNAVAILABLE"
        with pytest.raises(ValueError):
            call.execute({"tool": "observe", "args": {}})  # ended


@pytest.mark.chromium
def test_a_thread_session_gets_a_browser_that_is_reaped_when_idle(tmp_path):
    clock = jevgate.ManualClock()
    with jevgate.Gateway(tmp_path, clock=clock) as gw:
        gw.enable_local_browsers()
        with pytest.raises(jevgate.ArgumentError):
            gw.enable_local_browsers()
        with gw.leases.browser_call("thread-1", "acme") as call:
            assert call.mode == "isolated" and call.created
            made = call.execute({"tool": "javascript", "args": {"operationId": "op-1",
                                 "code": "document.title = 'Kept'; document.body.innerHTML = '<button>Go</button>'; 1"}})
            assert made["value"].endswith("1\n</untrusted-page-content>")
            snap = call.execute({"tool": "snapshot", "args": {}})
            assert 'button "Go" [ref=e1]' in snap["text"]
        with gw.leases.browser_call("thread-1", "acme") as again:
            assert not again.created
            title = again.execute({"tool": "javascript", "args": {"operationId": "op-2", "code": "document.title"}})
            assert "Kept" in title["value"], "the thread's next call reuses its browser"
        clock.advance(15 * 60)
        assert gw.leases.reap() == 1
        with gw.leases.browser_call("thread-1", "acme") as fresh:
            assert fresh.created
            title = fresh.execute({"tool": "javascript", "args": {"operationId": "op-3", "code": "document.title"}})
            assert "Kept" not in title["value"], "a reaped session's browser is gone"
