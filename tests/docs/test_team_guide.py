"""docs/team.md's worked example holds together: the token and secrets files and the configuration as the
gateway reads them (the policy checked against the servers' real tool names), the command line against the
gateway's own flags, the HAProxy file with ``haproxy -c``, and each client's entry sending the bearer token
to the address HAProxy serves."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest

from lazymcp.access.policy import check_policy, read_token_file
from lazymcp.access.secrets import PrincipalSecrets
from lazymcp.cli.flags import parser
from lazymcp.gateway.reading import read_config

from ..conftest import CATALOGS, ROOT
from ..services import HAPROXY, needs_haproxy

GUIDE = (ROOT / "docs" / "team.md").read_text()
EXAMPLE = GUIDE[GUIDE.index("## A worked example") :]
URL = "https://mcp.example.com/mcp"


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", EXAMPLE, re.DOTALL)


def config_of() -> dict[str, Any]:
    [config] = [json.loads(block) for block in blocks("json") if "access" in block]
    return config


def test_the_token_and_secrets_files_read_and_name_the_policys_principals() -> None:
    tokens, secrets = blocks("text")
    names = {name for name, _ in read_token_file(tokens, "tokens")}
    assert names == {"alice", "bob", "ci"}
    assert set(config_of()["lazymcp"]["access"]) == names
    given = PrincipalSecrets.parse(secrets, "secrets")
    assert set(given.blocks) == {"alice", "bob"}
    assert all(values.keys() == {"GITHUB_TOKEN"} for values in given.blocks.values())
    wanted = config_of()["mcpServers"]["github"]["env"]["GITHUB_PERSONAL_ACCESS_TOKEN"]
    assert wanted == "${principal:GITHUB_TOKEN}"


def test_the_configuration_reads_and_its_policy_matches_the_servers_tools(tmp_path: Path) -> None:
    path = tmp_path / "team.json"
    path.write_text(json.dumps(config_of()))
    config = read_config(str(path), {})
    assert config.access is not None
    catalogs = {"github": CATALOGS / "github.json", "time": CATALOGS / "time.json"}
    if not all(catalog.exists() for catalog in catalogs.values()):
        pytest.skip(f"{CATALOGS} is not here (it sits beside the project in CI)")
    tools = {
        server: [f"{server}__{tool['name']}" for tool in json.loads(catalog.read_text())["tools"]]
        for server, catalog in catalogs.items()
    }
    check_policy(config.access, tools, "__", str(path))  # raises on a pattern that matches no tool
    with pytest.raises(Exception, match="matches no tool"):
        check_policy(config.access, {**tools, "github": tools["github"][:5]}, "__", str(path))


def test_the_command_line_is_one_the_gateway_takes() -> None:
    [install, command] = blocks("sh")
    assert install.strip() == 'pipx install ".[otel,redis]"'
    words = shlex.split(command.replace("\\\n", " "))
    env = dict(word.split("=", 1) for word in words if re.match(r"[A-Z_]+=", word))
    assert env["OTEL_TRACES_EXPORTER"] == "otlp" and env["OTEL_EXPORTER_OTLP_ENDPOINT"].startswith("http")
    argv = [word for word in words if not re.match(r"[A-Z_]+=", word)]
    assert argv[:2] == ["lazymcp", "gateway"]
    args = parser().parse_args(argv[1:])
    assert args.config == "/etc/lazymcp/team.json" and args.token_file == "/etc/lazymcp/tokens"
    assert args.allow_host == ["mcp.example.com"] and args.redis == "redis://redis.internal:6379/0"


@needs_haproxy
def test_the_haproxy_file_is_valid_and_sends_to_the_instances(tmp_path: Path) -> None:
    assert HAPROXY is not None
    [text] = blocks("haproxy")
    command = blocks("sh")[1]
    assert "server g1 10.0.0.5:8080" in text and "--advertise http://10.0.0.5:8080" in command
    # the certificate is the operator's: checked without it, every other line as written
    checked = re.sub(r"(bind :443) ssl crt \S+", r"\1", text)
    assert checked != text
    config = tmp_path / "haproxy.cfg"
    config.write_text(checked)
    done = subprocess.run([HAPROXY, "-c", "-f", str(config)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


def test_each_clients_entry_sends_the_bearer_token_to_the_gateway() -> None:
    entries = [json.loads(block) for block in blocks("json") if "access" not in block]
    claude, vscode, cursor = entries
    assert claude["mcpServers"]["team"] == {
        "type": "http",
        "url": URL,
        "headers": {"Authorization": "Bearer ${LAZYMCP_TOKEN}"},
    }
    [prompt] = vscode["inputs"]
    assert prompt["type"] == "promptString" and prompt["password"] is True
    assert vscode["servers"]["team"]["type"] == "http" and vscode["servers"]["team"]["url"] == URL
    assert vscode["servers"]["team"]["headers"] == {"Authorization": f"Bearer ${{input:{prompt['id']}}}"}
    assert cursor["mcpServers"]["team"] == {"url": URL, "headers": {"Authorization": "Bearer ${env:LAZYMCP_TOKEN}"}}
    assert '--header "Authorization: Bearer $LAZYMCP_TOKEN"' in EXAMPLE.replace("\n", " ")
