"""jevgate.Gateway: open/close as a context manager, reload generations (R-CFG-RELOAD),
doctor, secret names (R-CFG-SECRETS), store errors."""

import threading

import pytest

import jevgate

LOCAL = {"gateway": {"jev": {"enabled": True, "provider": "local"}}}


def test_open_reload_and_close_with_a_context_manager(tmp_path):
    with jevgate.Gateway(tmp_path, LOCAL) as gw:
        assert gw.generation == 1
        assert not gw.closed
        assert gw.reload({}) == 2
        assert gw.reload('{"gateway": {}}') == 3
        assert "generation=3" in repr(gw)
    assert gw.closed
    with pytest.raises(jevgate.GatewayError) as info:
        gw.reload({})
    assert info.value.code == "GATEWAY_CLOSED"
    assert info.value.http_status == 409
    gw.close()  # idempotent


def test_an_invalid_reload_changes_nothing(tmp_path):
    with jevgate.Gateway(tmp_path, LOCAL) as gw:
        with pytest.raises(jevgate.ConfigError) as info:
            gw.reload({"gateway": {"jev": {"maxQueueSize": -1}}})
        assert info.value.path == "gateway.jev.maxQueueSize"
        assert gw.generation == 1


def test_invalid_config_on_open_raises_config_error(tmp_path):
    with pytest.raises(jevgate.ConfigError) as info:
        jevgate.Gateway(tmp_path / "d", {"gateway": {"jev": {"enabled": True}}})
    assert info.value.path == "gateway.jev.provider"


def test_one_gateway_per_data_directory(tmp_path):
    with jevgate.Gateway(tmp_path):
        with pytest.raises(jevgate.StoreError) as info:
            jevgate.Gateway(tmp_path)
        assert info.value.code == "STORE_LOCKED"
    with jevgate.Gateway(tmp_path):
        pass


def test_a_foreign_file_is_store_corrupt(tmp_path):
    (tmp_path / "jevgate.sqlite3").write_bytes(b"not a database at all" * 50)
    with pytest.raises(jevgate.StoreError) as info:
        jevgate.Gateway(tmp_path)
    assert info.value.code == "STORE_CORRUPT"


def test_doctor_returns_a_dict_and_never_a_key(tmp_path, monkeypatch):
    key = tmp_path / "jev.key"
    key.write_text("sk-very-secret\n")
    key.chmod(0o600)
    config = {"gateway": {"jev": {"enabled": True, "provider": "typesafe", "model": "jev-1.13.0", "apiKeyFile": str(key)}}}
    with jevgate.Gateway(tmp_path / "data", config) as gw:
        report = gw.doctor()
        assert report["ok"] is True
        assert [c["name"] for c in report["checks"]] == ["config", "jev.credentials", "store", "store.permissions"]
        assert "sk-very-secret" not in repr(report)
        key.write_text("")
        report = gw.doctor()
        assert report["ok"] is False
        assert report["checks"][1]["code"] == "JEV_MISSING_CREDENTIALS"


def test_secret_env_names_survive_a_reload(tmp_path):
    def jev(env):
        return {"gateway": {"jev": {"enabled": True, "provider": "typesafe", "model": "m", "apiKeyEnv": env}}}

    with jevgate.Gateway(tmp_path, jev("OLD_JEV_KEY")) as gw:
        gw.reload(jev("NEW_JEV_KEY"))
        assert gw.secret_env_names() == ["NEW_JEV_KEY", "OLD_JEV_KEY"]


def test_reloads_from_many_threads_get_distinct_generations(tmp_path):
    with jevgate.Gateway(tmp_path) as gw:
        seen = []
        lock = threading.Lock()

        def work():
            for _ in range(20):
                g = gw.reload({})
                with lock:
                    seen.append(g)

        threads = [threading.Thread(target=work) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(seen) == list(range(2, 162))


def test_version_is_exposed():
    assert jevgate.__version__.count(".") == 2
