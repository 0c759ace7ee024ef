"""A sealed gateway: no configuration or cache file can take it down or redirect what it writes, and no
server learns another's secrets. Real ``lazymcp gateway`` processes, each conversation bounded by a
timeout."""

from __future__ import annotations

import json
import os
import select
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lazymcp.core.entries import ServerEntry
from lazymcp.gateway.config import parse_config
from lazymcp.run.manifests import ManifestStore

SERVERS = Path(__file__).parents[1] / "servers"
PLAIN = [sys.executable, str(SERVERS / "plain_server.py")]
ENV = [sys.executable, str(SERVERS / "env_server.py")]
INIT = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "sealed", "version": "1"}}
TIMEOUT = 60


def line(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode() + b"\n"


def converse(
    config: Path, cache: Path, *messages: dict[str, Any], env: dict[str, str] | None = None
) -> tuple[dict[object, Any], str]:
    """Send ``messages`` to a gateway over ``config``, close its input, and return its answers by id and
    its stderr (it answers what it read, then exits)."""
    command = [sys.executable, "-m", "lazymcp", "gateway", "--config", str(config)]
    environ = {**os.environ, "LAZYMCP_CACHE_DIR": str(cache), **(env or {})}
    done = subprocess.run(
        command, input=b"".join(map(line, messages)), capture_output=True, env=environ, timeout=TIMEOUT, check=False
    )
    answers = {m["id"]: m for m in map(json.loads, done.stdout.splitlines()) if "id" in m and "method" not in m}
    assert done.returncode == 0, done.stderr.decode()
    return answers, done.stderr.decode()


def listing_session() -> list[dict[str, Any]]:
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"lazy": False}}
    return [{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT}, initialized, listing]


def config_with(tmp_path: Path, **servers: dict[str, Any]) -> Path:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


def plain_entry(tmp_path: Path) -> tuple[Path, ServerEntry]:
    config = config_with(tmp_path, plain={"command": PLAIN[0], "args": PLAIN[1:]})
    return config, parse_config(json.loads(config.read_text())).servers[0]


PLAIN_TOOLS = ["plain__add", "plain__echo", "plain__upper"]


def listed(answers: dict[object, Any]) -> list[str]:
    return [tool["name"] for tool in answers[1]["result"]["tools"]]


def test_a_manifest_write_follows_no_link_planted_in_the_cache(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    store = ManifestStore(cache)
    identity = ServerEntry("s", command=("server",)).identity()
    victim = tmp_path / "victim"
    victim.write_text("precious")
    cache.mkdir(mode=0o755)
    path = store.path(identity)
    for planted in (path, path.with_suffix(f".{os.getpid()}.tmp"), cache / f".{path.stem}.tmp"):
        planted.symlink_to(victim)
    store.save(identity, [{"name": "t", "inputSchema": {"type": "object"}}])
    assert victim.read_text() == "precious"
    assert path.is_file() and not path.is_symlink() and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert store.load(identity) is not None
    fresh = tmp_path / "fresh-cache"
    ManifestStore(fresh).save(identity, [])
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o700


def test_two_accounts_of_one_server_keep_two_manifests() -> None:
    home = ServerEntry("home", command=("server",), env={"ACCOUNT": "home"})
    work = ServerEntry("work", command=("server",), env={"ACCOUNT": "work"})
    keyed = ServerEntry("api", url="https://example.test/mcp", headers={"Authorization": "Bearer a"})
    other = ServerEntry("api", url="https://example.test/mcp", headers={"Authorization": "Bearer b"})
    store = ManifestStore(Path("/nonexistent"))
    assert store.path(home.identity()) != store.path(work.identity())
    assert store.path(keyed.identity()) != store.path(other.identity())
    assert "home" not in store.path(home.identity()).name  # a hash of it, never the value


@pytest.mark.parametrize(
    "tools",
    [
        [{"name": "echo"}, {"name": "echo"}],  # a name given twice
        [{"name": "x" * 300}],  # too long once prefixed
    ],
    ids=["repeated", "too-long"],
)
def test_a_manifest_that_cannot_be_served_is_ignored_and_its_server_listed_afresh(
    tmp_path: Path, tools: list[dict[str, Any]]
) -> None:
    config, entry = plain_entry(tmp_path)
    cache = tmp_path / "cache"
    store = ManifestStore(cache)
    store.save(entry.identity(), tools, "1")
    answers, err = converse(config, cache, *listing_session())
    assert listed(answers) == PLAIN_TOOLS
    [said] = [text for text in err.splitlines() if "ignoring the manifest" in text]
    assert str(store.path(entry.identity())) in said and "'plain'" in said


@pytest.mark.parametrize("kind", ["fifo", "device", "huge"])
def test_a_cache_entry_that_is_no_regular_file_of_a_sane_size_is_not_read(tmp_path: Path, kind: str) -> None:
    config, entry = plain_entry(tmp_path)
    cache = tmp_path / "cache"
    cache.mkdir()
    path = ManifestStore(cache).path(entry.identity())
    if kind == "fifo":
        os.mkfifo(path)  # opening it to read would wait for a writer forever
    elif kind == "device":
        path.symlink_to("/dev/zero")  # reading it would never end
    else:
        with path.open("wb") as sparse:
            sparse.truncate(64 * 1024 * 1024)  # bigger than any manifest: not read
    answers, _ = converse(config, cache, *listing_session())
    assert listed(answers) == PLAIN_TOOLS


def test_a_token_file_others_can_read_is_warned_about(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from lazymcp.cli.commands import access_of
    from lazymcp.cli.flags import parser

    token = tmp_path / "token"
    token.write_text("s3cret\n")
    for mode, warned in ((0o644, True), (0o600, False)):
        token.chmod(mode)
        args = parser().parse_args(["gateway", "--config", "x", "--http", "127.0.0.1:9", "--token-file", str(token)])
        caplog.clear()
        assert access_of(args) is not None
        said = caplog.text
        assert ("can be read by others" in said and "chmod 600" in said) is warned, said


def call(request_id: int, name: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {"name": name, "arguments": {}}}


def environment_of(answer: dict[str, Any]) -> dict[str, str]:
    return json.loads(answer["result"]["content"][0]["text"])


def test_each_server_gets_a_safe_base_its_own_env_and_no_secret_of_the_gateway_or_another_server(
    tmp_path: Path,
) -> None:
    server = {"command": ENV[0], "args": ENV[1:]}
    config = config_with(
        tmp_path,
        a={**server, "env": {"K": "${A_SECRET}"}},
        b=server,
        c={**server, "lazymcp": {"inherit_env": ["SHARED_SETTING"]}},
        d={**server, "lazymcp": {"inherit_env": True}},
    )
    secrets = {"LAZYMCP_GATEWAY_TOKEN": "t0ken", "LAZYMCP_OAUTH_CLIENT_SECRET": "cl1ent", "A_SECRET": "s3cret"}
    session = [*listing_session()[:2], call(1, "a__env"), call(2, "b__env"), call(3, "c__env"), call(4, "d__env")]
    answers, _ = converse(config, tmp_path / "cache", *session, env={**secrets, "SHARED_SETTING": "on"})
    a, b, c, d = (environment_of(answers[n]) for n in (1, 2, 3, 4))
    for seen in (a, b, c, d):
        assert "LAZYMCP_GATEWAY_TOKEN" not in seen and "LAZYMCP_OAUTH_CLIENT_SECRET" not in seen
        assert seen["PATH"] == os.environ["PATH"] and seen["LAZYMCP_GATEWAY_DEPTH"] == "1"
    assert a["K"] == "s3cret" and "A_SECRET" not in a  # its own env, expanded: not the variable itself
    assert "K" not in b and "A_SECRET" not in b and "SHARED_SETTING" not in b
    assert c["SHARED_SETTING"] == "on" and "A_SECRET" not in c
    assert d["A_SECRET"] == "s3cret" and d["SHARED_SETTING"] == "on"  # all of it, lazymcp's secrets aside


def test_the_proxys_server_gets_the_proxys_environment_without_lazymcps_secrets() -> None:
    command = [sys.executable, "-m", "lazymcp", "proxy", "--", *ENV]
    env = {**os.environ, "GITHUB_TOKEN": "for-the-server", "LAZYMCP_GATEWAY_TOKEN": "t0ken"}
    session = [*listing_session()[:2], call(1, "env")]
    done = subprocess.run(
        command, input=b"".join(map(line, session)), capture_output=True, env=env, timeout=TIMEOUT, check=False
    )
    [answer] = [m for m in map(json.loads, done.stdout.splitlines()) if m.get("id") == 1]
    seen = environment_of(answer)
    assert seen["GITHUB_TOKEN"] == "for-the-server" and "LAZYMCP_GATEWAY_TOKEN" not in seen


def test_a_configuration_that_runs_the_gateway_on_itself_is_refused_in_one_line(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    itself = {"command": "lazymcp", "args": ["gateway", "--config", str(config)]}
    config.write_text(json.dumps({"mcpServers": {"fine": {"command": PLAIN[0], "args": PLAIN[1:]}, "all": itself}}))
    command = [sys.executable, "-m", "lazymcp", "gateway", "--config", str(config)]
    done = subprocess.run(command, input=b"", capture_output=True, timeout=TIMEOUT, check=False)
    assert done.returncode == 2
    assert done.stderr.decode().strip().splitlines() == [
        f"lazymcp: error: {config}: server 'all' runs this gateway on its own configuration"
    ]


def test_gateways_nested_past_the_bound_refuse_to_start(tmp_path: Path) -> None:
    config, _ = plain_entry(tmp_path)
    command = [sys.executable, "-m", "lazymcp", "gateway", "--config", str(config)]
    env = {**os.environ, "LAZYMCP_GATEWAY_DEPTH": "4"}
    done = subprocess.run(command, input=b"", capture_output=True, env=env, timeout=TIMEOUT, check=False)
    assert done.returncode == 2 and "inside 4 others" in done.stderr.decode()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
def test_servers_end_with_a_gateway_killed_with_sigkill(tmp_path: Path) -> None:
    config = config_with(tmp_path, s={"command": ENV[0], "args": [*ENV[1:], "--linger"]})
    command = [sys.executable, "-m", "lazymcp", "gateway", "--config", str(config)]
    env = {**os.environ, "LAZYMCP_CACHE_DIR": str(tmp_path / "cache")}
    with subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env) as gateway:
        assert gateway.stdin is not None and gateway.stdout is not None
        gateway.stdin.write(b"".join(map(line, [*listing_session()[:2], call(1, "s__pid")])))
        gateway.stdin.flush()
        pid = None
        while pid is None:  # bounded: the gateway answers the call, or the test times out
            message = json.loads(gateway.stdout.readline())
            if message.get("id") == 1:
                pid = int(message["result"]["content"][0]["text"])
        server = os.pidfd_open(pid)
        gateway.kill()
    try:
        ready, _, _ = select.select([server], [], [], TIMEOUT)  # readable once the process has ended
    finally:
        os.close(server)
    assert ready, f"server {pid} outlived the gateway"
