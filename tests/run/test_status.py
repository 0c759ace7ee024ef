"""The status of a running HTTP gateway: a real gateway process with a server that exits at once and one that
works, a real SDK client calling a tool, then ``/status.json`` read with each principal's token, the page at
``/`` in a real headless Chromium, and ``lazymcp status`` run as a process. Every wait is bounded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from ..conftest import SERVERS, free_port, until
from ..raw import http_gateway, mcp_url

pytestmark = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")

ALICE, BOB, OPS = "alice-token-1", "bob-token-2", "ops-token-3"
BROKEN = [sys.executable, "-c", "import sys; sys.exit(3)"]
WORKS = [sys.executable, str(SERVERS / "plain_server.py")]


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@asynccontextmanager
async def team_gateway(tmp_path: Path) -> AsyncIterator[int]:
    """A gateway over HTTP of ``works`` and ``broken``, with three principals; ``ops`` is granted metrics."""
    servers = {
        name: {"command": command[0], "args": command[1:]} for name, command in (("works", WORKS), ("broken", BROKEN))
    }
    access = {"alice": {"allow": ["*"]}, "bob": {"allow": ["*"]}, "ops": {"metrics": True}}
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": servers, "lazymcp": {"access": access}}))
    tokens = tmp_path / "tokens"
    tokens.write_text(f"alice: {ALICE}\nbob: {BOB}\nops: {OPS}\n")
    tokens.chmod(0o600)
    port = free_port()
    async with http_gateway(config, tmp_path / "cache", port, ["--token-file", str(tokens)]):
        yield port


async def status_of(port: int, token: str) -> dict[str, Any]:
    async with httpx2.AsyncClient(timeout=30) as raw:
        answer = await raw.get(f"http://127.0.0.1:{port}/status.json", headers=bearer(token))
    assert answer.status_code == 200, answer.text
    return answer.json()


def by_name(snapshot: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {server["name"]: server for server in snapshot["servers"]}


@asynccontextmanager
async def alice_called(port: int) -> AsyncIterator[None]:
    """Alice's SDK client, which has called ``works__echo`` once, open while the body runs; the broken server
    has failed in her session by then."""
    team = httpx2.AsyncClient(headers=bearer(ALICE), timeout=60)
    async with team, Client(streamable_http_client(mcp_url(port), http_client=team), mode="legacy") as client:
        echoed = await client.call_tool("works__echo", {"text": "status"})
        assert "status" in str(echoed.content[0])

        async def failed() -> bool:
            return by_name(await status_of(port, ALICE))["broken"]["state"] == "failed"

        await until(failed, within=30, what="the broken server shown as failed")
        yield


@pytest.mark.anyio
async def test_the_status_shows_a_failed_server_with_its_reason_and_counts_the_call(tmp_path: Path) -> None:
    async with team_gateway(tmp_path) as port, alice_called(port):
        mine, bobs, everyones = await status_of(port, ALICE), await status_of(port, BOB), await status_of(port, OPS)
        async with httpx2.AsyncClient(timeout=30) as raw:
            url = f"http://127.0.0.1:{port}"
            refused = [
                (await raw.get(f"{url}{path}", headers=headers)).status_code
                for path in ("/status.json", "/")
                for headers in ({}, bearer("not-a-token"))
            ]
            page = await raw.get(f"{url}/", headers=bearer(ALICE))
    assert refused == [401, 401, 401, 401]
    servers = by_name(mine)
    assert servers["broken"]["state"] == "failed"
    assert "exited with code 3" in servers["broken"]["reason"]
    assert servers["works"]["state"] == "running" and servers["works"]["pids"]
    assert (servers["works"]["tools"], servers["works"]["calls"], servers["works"]["errors"]) == (3, 1, 0)
    assert mine["view"] == "own" and [p["principal"] for p in mine["principals"]] == ["alice"]
    assert mine["listing"]["tools"] == 3 and mine["listing"]["full_tokens"] > 0
    # another principal sees neither alice's session nor her calls, nor her failed server
    assert bobs["principals"] == [] and by_name(bobs)["works"]["calls"] == 0
    assert by_name(bobs)["broken"]["state"] == "not_started"
    # the principal granted metrics sees everyone's
    assert everyones["view"] == "all" and [p["principal"] for p in everyones["principals"]] == ["alice"]
    assert by_name(everyones)["works"]["calls"] == 1 and by_name(everyones)["broken"]["state"] == "failed"
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "default-src 'none'" in page.headers["content-security-policy"]
    assert "exited with code 3" in page.text and "<script" not in page.text


def lazymcp_status(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "lazymcp", "status", *args]
    environ = {"PATH": "/usr/bin:/bin", **(env or {})}
    return subprocess.run(command, capture_output=True, text=True, timeout=60, env=environ, check=False)


@pytest.mark.anyio
async def test_lazymcp_status_prints_the_table_or_the_json_and_one_line_when_it_cannot(tmp_path: Path) -> None:
    token = tmp_path / "alice"
    token.write_text(ALICE + "\n")
    token.chmod(0o600)
    async with team_gateway(tmp_path) as port, alice_called(port):
        url = mcp_url(port)
        shown = await anyio.to_thread.run_sync(lambda: lazymcp_status("--url", url, "--token-file", str(token)))
        as_json = await anyio.to_thread.run_sync(
            lambda: lazymcp_status("--url", url, "--json", env={"LAZYMCP_GATEWAY_TOKEN": ALICE})
        )
        wrong = await anyio.to_thread.run_sync(
            lambda: lazymcp_status("--url", url, env={"LAZYMCP_GATEWAY_TOKEN": "no"})
        )
    gone = await anyio.to_thread.run_sync(lambda: lazymcp_status("--url", url, env={"LAZYMCP_GATEWAY_TOKEN": ALICE}))
    assert shown.returncode == 0, shown.stderr
    broken = next(line for line in shown.stdout.splitlines() if line.startswith("broken"))
    assert "failed" in broken and "exited with code 3" in broken
    works = next(line for line in shown.stdout.splitlines() if line.startswith("works"))
    assert "running" in works and works.split()[2:5] == ["3", "1", "0"]
    assert as_json.returncode == 0 and by_name(json.loads(as_json.stdout))["works"]["calls"] == 1
    for failed, says in ((wrong, "refused the token (HTTP 401)"), (gone, "cannot reach")):
        assert failed.returncode == 1 and failed.stdout == ""
        assert failed.stderr.count("\n") == 1 and says in failed.stderr, failed.stderr


def chromium() -> Any:
    """Headless Chromium driven by selenium, or a skip naming what to install."""
    import shutil

    webdriver = pytest.importorskip("selenium.webdriver", reason="needs selenium (the dev extra)")
    if shutil.which("chromium") is None or shutil.which("chromedriver") is None:
        pytest.skip("needs chromium and chromedriver (Debian package chromium) (Debian package chromium-driver)")
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium")
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        options.add_argument(flag)
    service = webdriver.ChromeService(executable_path=shutil.which("chromedriver"))
    return webdriver.Chrome(options=options, service=service)


@pytest.mark.anyio
async def test_a_person_sees_the_failed_server_and_its_reason_in_a_browser(tmp_path: Path) -> None:
    """The token goes in the Authorization header, set through the DevTools protocol (the gateway takes no
    token in a URL or a cookie: a URL is logged and kept in history, and a cookie would be sent by any page)."""
    browser = chromium()
    try:
        async with team_gateway(tmp_path) as port, alice_called(port):

            def look() -> tuple[str, str, str, str]:
                url = f"http://127.0.0.1:{port}/"
                browser.get(url)
                refused = browser.find_element("tag name", "body").text
                browser.execute_cdp_cmd("Network.enable", {})
                browser.execute_cdp_cmd("Network.setExtraHTTPHeaders", {"headers": bearer(ALICE)})
                browser.get(url)
                row = browser.find_element("id", "server-broken")
                cells = [cell.text for cell in row.find_elements("tag name", "td")]
                color = row.value_of_css_property("color")
                return refused, " | ".join(cells), color, browser.title

            refused, broken, color, title = await anyio.to_thread.run_sync(look)
    finally:
        browser.quit()
    assert "unauthorized" in refused and "broken" not in refused, refused
    assert title == "lazymcp gateway status"
    assert broken.startswith("broken | failed | the upstream server exited with code 3"), broken
    assert color == "rgba(170, 0, 0, 1)"  # the page's own style applies: its hash is in the page's CSP


def test_lazymcp_status_of_a_configuration_reads_its_manifests_and_starts_nothing(tmp_path: Path) -> None:
    """``lazymcp status --config``: a server whose manifest ``stats`` wrote shows its tools, one never listed
    says it has no manifest yet, a remote server with no sign-in kept says so; no server is started (no
    manifest is written for the one never listed), in the table and in the JSON alike."""
    cache = tmp_path / "cache"
    env = {**os.environ, "LAZYMCP_CACHE_DIR": str(cache), "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    config = tmp_path / "mcp.json"
    listed = {"works": {"command": WORKS[0], "args": WORKS[1:]}}
    config.write_text(json.dumps({"mcpServers": listed}))
    stats = [sys.executable, "-m", "lazymcp", "stats", "--config", str(config)]
    assert subprocess.run(stats, env=env, capture_output=True, timeout=120, check=False).returncode == 0
    manifests = sorted(cache.rglob("*"))
    never = {"command": WORKS[0], "args": WORKS[1:], "env": {"NEVER": "1"}}
    remote = {"url": "http://127.0.0.1:9/mcp"}
    config.write_text(json.dumps({"mcpServers": {**listed, "never": never, "remote": remote}}))
    status = [sys.executable, "-m", "lazymcp", "status", "--config", str(config)]
    shown = subprocess.run(status, env=env, capture_output=True, text=True, timeout=60, check=False)
    as_json = subprocess.run([*status, "--json"], env=env, capture_output=True, text=True, timeout=60, check=False)
    assert shown.returncode == 0 and as_json.returncode == 0, shown.stderr + as_json.stderr
    rows = {line.split()[0]: line for line in shown.stdout.splitlines()[3:6]}
    assert rows["works"].split()[1:4] == ["not", "started", "3"], shown.stdout
    assert "no manifest yet" in rows["never"] and "not signed in" in rows["remote"], shown.stdout
    servers = {server["name"]: server for server in json.loads(as_json.stdout)["servers"]}
    assert servers["works"]["tools"] == 3 and servers["never"]["tools"] is None
    assert servers["remote"]["sign_in"] == "not signed in"
    assert sorted(cache.rglob("*")) == manifests  # nothing listed, so nothing started
