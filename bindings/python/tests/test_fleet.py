"""gateway.store from Python (issue 23 items 1 to 3): a configuration with kind "postgres"
opens a gateway on the shared PostgreSQL store, and two gateways (as two processes would) share
device control leases with fencing tokens and see the same tasks and receipts; an unreachable store is STORE_UNAVAILABLE without
the URL. Needs JEVGATE_PG_URL (scripts/test starts a throw-away cluster and sets it, with
JEVGATE_REQUIRE_PG=1) and a module built with `maturin develop --features postgres`; otherwise
each test is skipped with the reason — and fails under JEVGATE_REQUIRE_PG=1."""

import os
import socket
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

import jevgate

PG_URL = os.environ.get("JEVGATE_PG_URL", "")
REQUIRE_PG = os.environ.get("JEVGATE_REQUIRE_PG") == "1"
PG_CONFIG = {"gateway": {"store": {"kind": "postgres", "urlEnv": "JEVGATE_PG_URL"}}}


def _skip(why: str) -> None:
    if REQUIRE_PG:
        pytest.fail(f"JEVGATE_REQUIRE_PG=1 but {why}")
    pytest.skip(why)


def _open(path, config=None):  # type: ignore[no-untyped-def]
    """A gateway on the shared store, or a skip when this module cannot have one."""
    try:
        return jevgate.Gateway(path, config or PG_CONFIG)
    except jevgate.ConfigError as e:
        if e.path == "gateway.store.kind":
            _skip("the module was built without the cargo feature `postgres`")
        raise


def test_two_gateways_share_one_lease_with_fencing_tokens(tmp_path):
    if not PG_URL:
        _skip("JEVGATE_PG_URL is not set")
    device = f"py-{uuid.uuid4().hex}"
    with _open(tmp_path / "a") as a, _open(tmp_path / "b") as b:
        a.leases.set_device_owner(device, "person")
        grant = a.leases.acquire(device, "conv-a")
        assert grant["acquired"] is True and grant["fencingToken"] >= 1
        assert a.leases.renew(device, "conv-a")["fencingToken"] == grant["fencingToken"]
        with pytest.raises(jevgate.LeaseError) as info:
            b.leases.acquire(device, "conv-b")
        assert info.value.code == "DEVICE_CONTROL_ELSEWHERE"
        # The owner recorded through a is the owner for b too; b takes the device back.
        assert b.leases.take_back(device, "person") is True
        status = a.leases.status(device, "person")
        assert status["held"] is True and status["revoked"] is True
        with pytest.raises(jevgate.LeaseError) as info:
            a.leases.acquire(device, "conv-a")
        assert info.value.code == "DEVICE_CONTROL_REVOKED"
        again = a.leases.acquire(device, "conv-a")
        assert again["fencingToken"] > grant["fencingToken"]


def test_an_unreachable_store_is_store_unavailable_without_the_url(tmp_path, monkeypatch):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url_file = tmp_path / "pg-url"
    url_file.write_text(f"postgresql://jevgate:hunter2-secret@127.0.0.1:{port}/fleetdb\n")
    config = {"gateway": {"store": {"kind": "postgres", "urlFile": str(url_file)}}}
    with pytest.raises(jevgate.Error) as info:
        _open(tmp_path / "data", config).close()
    err = info.value
    assert isinstance(err, jevgate.StoreError)
    assert err.code == jevgate.codes.STORE_UNAVAILABLE
    assert err.http_status == 503 and err.retryable is True
    assert "hunter2" not in str(err) and "fleetdb" not in str(err)


def test_a_postgres_store_without_a_url_reference_is_refused(tmp_path):
    with pytest.raises(jevgate.ConfigError) as info:
        jevgate.Gateway(tmp_path, {"gateway": {"store": {"kind": "postgres"}}})
    assert info.value.path == "gateway.store"
    with pytest.raises(jevgate.ConfigError) as info:
        jevgate.Gateway(tmp_path, {"gateway": {"store": {"kind": "sqlite", "urlEnv": "X_URL"}}})
    assert info.value.path == "gateway.store.urlEnv"


# Issue 23 item 3: tasks and receipts live in the shared store — a task a gateway runs (as one
# process of a fleet would) is read, with its receipts, from a second gateway on the same
# database; the second never takes over a task whose owner is alive.
class _Site:
    def __init__(self):  # type: ignore[no-untyped-def]
        page = b"<!doctype html><title>Fleet</title><h1>Fleet</h1><button>Alpha</button>"

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (http.server API)
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(page)))
                self.end_headers()
                self.wfile.write(page)

            def log_message(self, *args):  # type: ignore[no-untyped-def]
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/"

    def close(self):  # type: ignore[no-untyped-def]
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.mark.chromium
def test_a_task_and_its_receipts_are_read_from_a_second_gateway(tmp_path):
    if not PG_URL:
        _skip("JEVGATE_PG_URL is not set")
    owner = {"agentId": "assistant", "principalId": "alice", "conversationId": f"conv-{uuid.uuid4().hex}"}
    features = {"browserTasks": {"enabled": True}, "browserSteps": {"enabled": True}}
    config = {"gateway": {"store": PG_CONFIG["gateway"]["store"],
                          "jev": {"enabled": True, "provider": "local", "features": features}}}
    site = _Site()
    try:
        with _open(tmp_path / "a", config) as a, _open(tmp_path / "b", config) as b:
            task_id = a.tasks.spawn(owner, start_url=site.url, keep_open=True)["id"]
            status = a.tasks.wait(owner, task_id, 90.0)
            assert status["state"] == "waiting_input" and status["reason"] == "SESSION_READY", status
            seen = b.tasks.status(owner, task_id)
            assert (seen["state"], seen["reason"], seen["revision"]) == ("waiting_input", "SESSION_READY",
                                                                         status["revision"])
            assert b.tasks.receipts(owner, task_id) == a.tasks.receipts(owner, task_id)
            assert [t["id"] for t in b.tasks.list(owner)] == [task_id]
            a.tasks.cancel(owner, task_id)
            assert a.tasks.wait(owner, task_id, 90.0)["state"] == "cancelled"
            assert b.tasks.status(owner, task_id)["state"] == "cancelled"
    finally:
        site.close()
