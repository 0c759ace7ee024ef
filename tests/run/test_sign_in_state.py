"""What is kept of a sign-in and what the status says of it: the file store (mode 0600, one sign-in per
server URL and resource), ``signed in`` / ``expired`` / ``sign-in needed`` in the status's table, and an
entry's ``oauth`` key read without its secret ever shown."""

from __future__ import annotations

import stat
import time
from pathlib import Path

import pytest

from lazymcp.access.signin import parse_sign_in
from lazymcp.access.tokens import TokenStore
from lazymcp.core.entries import ServerEntry
from lazymcp.protocol.errors import ConfigError
from lazymcp.run.signin import Kept, sign_in_status
from lazymcp.run.status_page import detail

SECRET = "s3cret-value-never-shown"


def test_each_server_has_its_own_sign_in_in_a_file_only_its_user_reads(tmp_path: Path) -> None:
    store = TokenStore(tmp_path / "lazymcp")
    one, other = ServerEntry("one", url="https://a.example/mcp"), ServerEntry("two", url="https://a.example/other")
    login = "sign-in needed: sign in with `lazymcp login one`"
    assert sign_in_status(one, login, store) == "sign-in needed"
    assert sign_in_status(one, "", store) is None  # a server that never asked shows nothing
    store.put(Kept(one, store).key, {"tokens": {"access_token": SECRET}, "expires_at": time.time() + 60})
    assert stat.S_IMODE((tmp_path / "lazymcp" / "tokens.json").stat().st_mode) == 0o600
    assert sign_in_status(one, "", store) == "signed in"
    assert sign_in_status(other, login, store) == "sign-in needed"
    store.put(Kept(one, store).key, {"tokens": {"access_token": SECRET}, "expires_at": time.time() - 1})
    assert sign_in_status(one, "", store) == "expired"
    assert sign_in_status(ServerEntry("own", url="https://b.example", headers={"Authorization": "x"}), login) is None
    assert store.drop(Kept(one, store).key) and not store.drop(Kept(one, store).key)


def test_the_status_table_says_the_sign_in() -> None:
    assert detail({"state": "running", "pids": [], "sign_in": "signed in"}) == "signed in"
    assert detail({"state": "not_started", "sign_in": "expired"}) == "expired"
    failed = {
        "state": "failed",
        "reason": "sign-in needed: sign in with `lazymcp login x`",
        "sign_in": "sign-in needed",
    }
    assert detail(failed).count("sign-in needed") == 1


def test_an_oauth_key_is_read_and_its_secret_never_shown() -> None:
    read = parse_sign_in({"clientId": "id", "clientSecret": "${S}", "scopes": ["a"]}, "f", lambda _: SECRET)
    assert read.client_secret == SECRET and SECRET not in repr(read)
    for bad in ({"clientSecret": SECRET}, {"clientId": 3}, {"scopes": "a"}, {"clientMetadataUrl": "http://x/y"}, []):
        with pytest.raises(ConfigError) as raised:
            parse_sign_in(bad, "f: server 'x'")
        assert SECRET not in raised.value.message and raised.value.message.startswith("f")
