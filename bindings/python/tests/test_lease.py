"""gateway.leases (SPEC §4.1, R-LEASE-1..7) with jevgate.ManualClock: the lease rules reach
Python with the seeds' codes and 409/403 statuses."""

import threading

import pytest

import jevgate


@pytest.fixture
def clocked(tmp_path):
    clock = jevgate.ManualClock()
    with jevgate.Gateway(tmp_path, clock=clock) as gw:
        yield gw, clock


def test_r_lease_1_acquire_renew_and_expiry(clocked):
    gw, clock = clocked
    grant = gw.leases.acquire("laptop", "conv-a")
    assert grant == {"acquired": True, "expiresAt": clock.wall_ms + 120_000, "fencingToken": grant["fencingToken"]}
    assert grant["fencingToken"] >= 1
    clock.advance(100)
    renewed = gw.leases.renew("laptop", "conv-a")
    assert renewed["acquired"] is False
    assert renewed["fencingToken"] == grant["fencingToken"], "one tenure, one token"
    clock.advance(119)
    with pytest.raises(jevgate.LeaseError):
        gw.leases.acquire("laptop", "conv-b")
    clock.advance(1)
    later = gw.leases.acquire("laptop", "conv-b")
    assert later["acquired"] is True
    assert later["fencingToken"] > grant["fencingToken"]


def test_r_lease_2_elsewhere_names_nobody(clocked):
    gw, _ = clocked
    gw.leases.acquire("laptop", "holder-conversation")
    with pytest.raises(jevgate.LeaseError) as info:
        gw.leases.acquire("laptop", "other")
    assert info.value.code == "DEVICE_CONTROL_ELSEWHERE"
    assert info.value.http_status == 409
    assert "holder-conversation" not in str(info.value)


def test_r_lease_3_and_4_take_back_window_and_one_notice(clocked):
    gw, clock = clocked
    gw.leases.set_device_owner("laptop", "person")
    gw.leases.acquire("laptop", "conv-a")
    assert gw.leases.take_back("laptop", "person") is True
    status = gw.leases.status("laptop", "person")
    assert status == {"held": True, "heldByRootSession": None, "expiresAt": clock.wall_ms + 120_000, "revoked": True}
    with pytest.raises(jevgate.LeaseError) as info:
        gw.leases.acquire("laptop", "conv-b")
    assert info.value.code == "DEVICE_CONTROL_ELSEWHERE"
    with pytest.raises(jevgate.LeaseError) as info:
        gw.leases.acquire("laptop", "conv-a")
    assert info.value.code == "DEVICE_CONTROL_REVOKED"
    assert gw.leases.acquire("laptop", "conv-a")["acquired"] is True


def test_r_lease_5_status_shows_only_the_callers_session(clocked):
    gw, _ = clocked
    gw.leases.set_device_owner("laptop", "person")
    gw.leases.acquire("laptop", "conv-a")
    assert gw.leases.status("laptop", "person", root_session="conv-a")["heldByRootSession"] == "conv-a"
    assert gw.leases.status("laptop", "person", root_session="conv-b")["heldByRootSession"] is None


def test_r_lease_6_release_session(clocked):
    gw, _ = clocked
    gw.leases.acquire("d1", "conv-a")
    gw.leases.acquire("d2", "conv-a")
    assert gw.leases.release_session("conv-a") == 2
    assert gw.leases.acquire("d1", "conv-b")["acquired"] is True


def test_r_lease_7_owner_only_control_routes(clocked):
    gw, _ = clocked
    gw.leases.set_device_owner("laptop", "person")
    gw.leases.acquire("laptop", "conv-a")
    with pytest.raises(jevgate.AccessDeniedError) as info:
        gw.leases.take_back("laptop", "stranger")
    assert info.value.code == "ACCESS_DENIED" and info.value.http_status == 403
    assert isinstance(info.value, PermissionError)
    with pytest.raises(jevgate.AccessDeniedError):
        gw.leases.take_back("laptop", "person", delegated=True)
    with pytest.raises(jevgate.AccessDeniedError):
        gw.leases.status("laptop", "stranger")


def test_r_lease_7_a_device_without_an_owner_is_refused_to_everyone(clocked):
    gw, _ = clocked
    gw.leases.acquire("ownerless", "conv-a")
    for who in ("person", "mallory"):
        with pytest.raises(jevgate.AccessDeniedError):
            gw.leases.take_back("ownerless", who)
        with pytest.raises(jevgate.AccessDeniedError):
            gw.leases.status("ownerless", who)
    assert gw.leases.acquire("ownerless", "conv-a")["acquired"] is False, "still held, never revoked"


def test_r_lease_7_owners_survive_a_restart(tmp_path):
    clock = jevgate.ManualClock()
    with jevgate.Gateway(tmp_path, clock=clock) as gw:
        gw.leases.set_device_owner("laptop", "person")
        gw.leases.acquire("laptop", "conv-a")
    with jevgate.Gateway(tmp_path, clock=clock) as gw:
        with pytest.raises(jevgate.AccessDeniedError):
            gw.leases.take_back("laptop", "mallory")
        with pytest.raises(jevgate.LeaseError) as info:
            gw.leases.acquire("laptop", "conv-b")
        assert info.value.code == "DEVICE_CONTROL_ELSEWHERE", "the refused take-back dispossessed nobody"
        assert gw.leases.take_back("laptop", "person") is True


def test_suspend_keeps_the_lease(clocked):
    gw, clock = clocked
    gw.leases.acquire("laptop", "conv-a")
    clock.set_wall(clock.wall_ms / 1000 + 8 * 3600)
    with pytest.raises(jevgate.LeaseError):
        gw.leases.acquire("laptop", "conv-b")


def test_bad_arguments(clocked):
    gw, _ = clocked
    with pytest.raises(jevgate.ArgumentError):
        gw.leases.acquire("", "conv")
    with pytest.raises(TypeError):
        gw.leases.acquire(None, "conv")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        jevgate.ManualClock().advance(-1)
    with pytest.raises(ValueError):
        jevgate.ManualClock().advance(float("nan"))


def test_manual_clock_saturates_instead_of_panicking(clocked):
    """R-CLK, issue 12 item 6: set_wall(1.7e19) raised PanicException; huge values now saturate at
    9999-12-31T23:59:59.999Z, NaN/inf/negative are ValueError, and the gateway keeps working."""
    gw, clock = clocked
    end_of_time_ms = 253_402_300_799_999
    clock.set_wall(1.7e19)
    assert clock.wall_ms == end_of_time_ms
    for _ in range(3):
        clock.advance(1e300)
    assert clock.wall_ms == end_of_time_ms
    assert clock.now > 1e19
    for bad in (float("inf"), float("-inf"), float("nan"), -1.0):
        with pytest.raises(ValueError):
            clock.set_wall(bad)
        with pytest.raises(ValueError):
            clock.advance(bad)
    clock.set_wall(0)
    assert clock.wall_ms == 0
    gw.leases.acquire("laptop", "conv-a")


def test_many_python_threads_one_holder(clocked):
    gw, _ = clocked
    winners = []
    lock = threading.Lock()

    def contend(i):
        try:
            grant = gw.leases.acquire("shared", f"conv-{i}")
        except jevgate.LeaseError as e:
            assert e.code == "DEVICE_CONTROL_ELSEWHERE"
            return
        with lock:
            winners.append((i, grant["acquired"]))

    threads = [threading.Thread(target=contend, args=(i,)) for i in range(32)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(winners) == 1 and winners[0][1] is True


def test_leases_after_close_raise_gateway_error(tmp_path):
    gw = jevgate.Gateway(tmp_path)
    leases = gw.leases
    gw.close()
    with pytest.raises(jevgate.GatewayError):
        leases.acquire("d", "s")


def test_r_prof_browser_sessions_from_python(clocked):
    gw, clock = clocked
    with gw.leases.browser_call("t1", "acme", profile_key="work") as call:
        assert call.mode == "authenticated" and call.created
        first = call.session_id
        with pytest.raises(jevgate.LeaseError) as info:
            gw.leases.browser_call("t2", "acme", profile_key="work")
        assert info.value.code == "BROWSER_CONTEXT_BUSY" and info.value.http_status == 409
        assert info.value.isolated_available is True, "isolatedAvailable is a typed attribute"
        with gw.leases.browser_call("t2", "acme", mode="isolated") as iso:
            assert iso.mode == "isolated"
    with gw.leases.browser_call("t1", "acme", profile_key="work") as again:
        assert again.session_id == first and not again.created
    with pytest.raises(jevgate.LeaseError) as info:
        gw.leases.browser_call("t3", "acme", mode="authenticated", profile_key="work", authenticated_allowed=False)
    assert info.value.code == "BROWSER_AUTHENTICATED_UNAVAILABLE" and info.value.http_status == 403
    assert info.value.isolated_available is None
    clock.advance(15 * 60)
    assert gw.leases.reap() == 2
    with pytest.raises(ValueError):
        gw.leases.browser_call("t1", "acme", mode="sideways")
