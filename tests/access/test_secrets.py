"""The principals' secrets file, and ``${principal:NAME}`` in a configuration: kept for each principal's
server, filled only from that principal's block, refused where it does not belong; no error shows a value."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lazymcp.access.secrets import PrincipalSecrets, filled, lacking, wanted
from lazymcp.cli import main
from lazymcp.gateway.config import parse_config
from lazymcp.protocol.errors import ConfigError

FILE = """
# each principal's own tokens
[alice]
GITHUB_TOKEN = ghp-a=b
[bob@example.com]
GITHUB_TOKEN=
"""


def test_a_secrets_file_is_one_block_per_principal() -> None:
    secrets = PrincipalSecrets.parse(FILE, "s")
    assert dict(secrets.of("alice")) == {"GITHUB_TOKEN": "ghp-a=b"}
    assert lacking({"GITHUB_TOKEN"}, secrets.of("bob@example.com")) == ["GITHUB_TOKEN"]  # empty: none
    assert lacking({"GITHUB_TOKEN", "X"}, secrets.of("nobody")) == ["GITHUB_TOKEN", "X"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("TOKEN=hunter2", "s, line 1: a value before any '[principal]' block"),
        ("[a]\nthe token is hunter2", "s, line 2: expected '[principal]' or 'NAME=value'"),
        ("[a]\nT=hunter2\nT=hunter3", "s, line 3: T is given twice in this block"),
        ("[a]\n[a]", "s, line 2: principal 'a' has a block already"),
    ],
)
def test_a_malformed_secrets_file_is_one_line_that_never_shows_a_value(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as refused:
        PrincipalSecrets.parse(text, "s")
    assert refused.value.message == message


def test_a_secrets_file_may_be_json_with_the_same_blocks() -> None:
    text = '{"alice": {"GITHUB_TOKEN": "ghp-a=b"}, "bob@example.com": {"GITHUB_TOKEN": ""}}'
    assert PrincipalSecrets.parse(text, "s") == PrincipalSecrets.parse(FILE, "s")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"alice": {"T": "hunter2"', "s: not valid JSON (Expecting ',' delimiter, line 1)"),
        ('{"al ice": {"T": "hunter2"}}', "s: a principal's name may hold only letters, digits and . _ - @ + : |"),
        ('{"alice": "hunter2"}', "s: principal 'alice' must be an object of NAME: value"),
        ('{"alice": {"T": "hunter2", "T": "x"}}', "s: 'T' is given twice in one object"),
        ('{"alice": {"T": ["hunter2"]}}', "s: principal 'alice': each value must be a string under a NAME"),
    ],
)
def test_a_malformed_json_secrets_file_is_one_line_that_never_shows_a_value(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as refused:
        PrincipalSecrets.parse(text, "s")
    assert refused.value.message == message and "hunter2" not in message


def test_principal_values_stay_in_env_and_headers_until_a_principal_s_server_starts() -> None:
    servers = {
        "gh": {"command": "gh-server", "env": {"GITHUB_TOKEN": "${principal:GITHUB_TOKEN}"}},
        "api": {"url": "https://api.test/mcp", "headers": {"Authorization": "Bearer ${principal:PAT}"}},
    }
    gh, api = parse_config({"mcpServers": servers}).servers
    assert (gh.personal, api.personal) == ({"GITHUB_TOKEN"}, {"PAT"})
    assert dict(api.as_principal({"PAT": "p"}).headers) == {"Authorization": "Bearer p"}
    assert wanted({"A": "x"}) == set() and filled({"A": "${principal:B}!"}, {"B": "b"}) == {"A": "b!"}
    with pytest.raises(ConfigError) as refused:
        parse_config({"mcpServers": {"gh": {"command": "gh", "args": ["${principal:GITHUB_TOKEN}"]}}})
    assert refused.value.message.endswith("${principal:GITHUB_TOKEN} is for a server's 'env' and 'headers' only")


def test_a_secrets_file_others_can_read_stops_the_gateway(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "mcp.json"
    config.write_text('{"mcpServers": {}}')
    secrets = tmp_path / "secrets"
    secrets.write_text("[alice]\nT=hunter2\n")
    os.chmod(secrets, 0o644)
    assert main(["gateway", "--config", str(config), "--principal-secrets", str(secrets)]) == 2
    err = capsys.readouterr().err
    assert "can be read by others (mode 644): chmod 600 it" in err and "hunter2" not in err
