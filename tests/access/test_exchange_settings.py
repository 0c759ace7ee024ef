"""An entry's ``oauth.exchange`` (``lazymcp.access.exchange``): what the configuration accepts, what
``lazymcp check`` says, and how an exchange's answer is read, never showing a token or the secret."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lazymcp.access.exchange import ExchangeRefused, exchange_form, read_exchange
from lazymcp.cli import main
from lazymcp.gateway.config import parse_config
from lazymcp.protocol.errors import ConfigError

EXCHANGE = {
    "tokenEndpoint": "https://idp.example/token",
    "audience": "api",
    "clientId": "gateway",
    "clientSecret": "${SECRET}",
}


def entry(oauth: object) -> dict[str, Any]:
    return {"mcpServers": {"api": {"url": "https://api.example/mcp", "oauth": oauth}}}


def test_an_exchange_entry_is_read_with_its_secret_expanded_and_never_shown() -> None:
    api = parse_config(entry({"exchange": EXCHANGE}), source="mcp.json", environ={"SECRET": "s3cret-value"}).servers[0]
    assert api.sign_in is not None and api.sign_in.exchange is not None
    settings = api.sign_in.exchange
    assert (settings.token_endpoint, settings.audience, settings.client_id) == (
        "https://idp.example/token",
        "api",
        "gateway",
    )
    assert settings.client_secret == "s3cret-value" and "s3cret-value" not in repr(api)
    form = exchange_form(settings, "subject-token", "https://api.example/mcp")
    assert form["grant_type"] == "urn:ietf:params:oauth:grant-type:token-exchange"
    assert form["subject_token_type"] == "urn:ietf:params:oauth:token-type:access_token"
    assert (form["audience"], form["resource"]) == ("api", "https://api.example/mcp")


@pytest.mark.parametrize(
    ("oauth", "said"),
    [
        ({"exchange": "yes"}, "field 'oauth.exchange' must be an object"),
        ({"exchange": {**EXCHANGE, "scope": "x"}}, "unknown field 'oauth.exchange.scope'"),
        ({"exchange": {k: v for k, v in EXCHANGE.items() if k != "audience"}}, "'oauth.exchange.audience' must be"),
        ({"exchange": {**EXCHANGE, "clientId": ""}}, "'oauth.exchange.clientId' must be a non-empty string"),
        ({"exchange": {**EXCHANGE, "tokenEndpoint": "http://idp.example/token"}}, "must be https"),
        ({"exchange": EXCHANGE, "clientId": "other"}, "takes no other 'oauth' field"),
    ],
)
def test_a_wrong_exchange_is_one_line_naming_the_field(oauth: dict[str, Any], said: str) -> None:
    with pytest.raises(ConfigError) as refused:
        parse_config(entry(oauth), source="mcp.json", environ={"SECRET": "s3cret-value"})
    assert said in refused.value.message and "\n" not in refused.value.message
    assert "s3cret-value" not in refused.value.message


def test_http_on_loopback_is_a_token_endpoint_too() -> None:
    loopback = {**EXCHANGE, "tokenEndpoint": "http://127.0.0.1:8080/token"}
    api = parse_config(entry({"exchange": loopback}), source="mcp.json", environ={"SECRET": "s"}).servers[0]
    assert api.sign_in is not None and api.sign_in.exchange is not None


def test_lazymcp_check_accepts_an_exchange_entry(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps(entry({"exchange": EXCHANGE})))
    monkeypatch.setenv("SECRET", "s3cret-value")
    monkeypatch.setenv("LAZYMCP_CACHE_DIR", str(tmp_path / "cache"))
    assert main(["check", "--config", str(path)]) == 0
    said = capsys.readouterr()
    assert "ok: 1 servers" in said.out + said.err and "s3cret-value" not in said.out + said.err


@pytest.mark.parametrize(
    ("status", "body", "said"),
    [
        (400, b'{"error": "invalid_grant", "error_description": "token abc is bad"}', "HTTP 400 (invalid_grant)"),
        (401, b"not json", "HTTP 401"),
        (400, b'{"error": "with token abc"}', "HTTP 400"),
        (200, b'{"access_token": "", "token_type": "Bearer"}', "gave no bearer access_token"),
        (200, b'{"access_token": "abc", "token_type": "N_A"}', "gave no bearer access_token"),
    ],
)
def test_a_refused_or_unusable_exchange_is_one_line_without_what_was_sent(status: int, body: bytes, said: str) -> None:
    with pytest.raises(ExchangeRefused) as refused:
        read_exchange(status, body)
    assert said in str(refused.value) and "abc" not in str(refused.value) and "\n" not in str(refused.value)


def test_an_exchanged_token_lasts_its_expires_in_else_a_default() -> None:
    assert read_exchange(200, b'{"access_token": "t", "token_type": "bearer", "expires_in": 90}') == ("t", 90.0)
    assert read_exchange(200, b'{"access_token": "t", "token_type": "Bearer"}')[1] > 0
