"""Who an HTTP front serves, on every front (``serve --http``, ``proxy --http``, ``gateway --http``): a
request from a web page only when its ``Origin`` is allowed (a loopback one on a loopback address, else
one ``--allow-origin`` lists, or any with ``*``), whatever the address, while a request without ``Origin``
is served as before; and, under ``--oauth-issuer``, only a token that names a subject or a client, since
a token that names neither would share every session with every other such token. Real processes, raw
HTTP with chosen ``Host`` and ``Origin``, a real introspection issuer; every wait is bounded."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

from ..conftest import free_port
from ..raw import INIT, PID_SERVER, PROXY, TIMEOUT, config_of, hostile, http, http_gateway, listening, mcp_url, request
from ..servers.issuer import CLIENT_ID, CLIENT_SECRET, running_issuer

pytestmark = pytest.mark.anyio

INITIALIZE = json.dumps(request(1, "initialize", INIT)).encode()
FOREIGN = "http://evil.example"
LISTED = "https://app.example"
TEAM_TOKEN = "team-secret-0b2c"
SECRETS = {"LAZYMCP_OAUTH_CLIENT_ID": CLIENT_ID, "LAZYMCP_OAUTH_CLIENT_SECRET": CLIENT_SECRET}


@asynccontextmanager
async def front(kind: str, bind: str, flags: Sequence[str], tmp_path: Path) -> AsyncIterator[tuple[int, Process]]:
    """``lazymcp KIND --http BIND:PORT FLAGS`` once it listens: its port and process. The gateway, which
    needs a token off loopback, gets ``TEAM_TOKEN`` (requests to it carry ``authorized``'s header)."""
    port = free_port()
    address = ["--http", f"{bind}:{port}", *flags]
    env: dict[str, str] = {}
    if kind == "serve":
        command = [sys.executable, "-m", "lazymcp", "serve", *address]
    elif kind == "proxy":
        command = [*PROXY, *address, "--", *hostile()]
    else:
        config = config_of(tmp_path, h=hostile())
        command = [sys.executable, "-m", "lazymcp", "gateway", "--config", str(config), *address]
        env = {"LAZYMCP_CACHE_DIR": str(tmp_path / "cache"), "LAZYMCP_GATEWAY_TOKEN": TEAM_TOKEN}
    async with listening(command, port, env=env) as process:
        yield port, process


def authorized(kind: str, headers: dict[str, str]) -> dict[str, str]:
    """``headers``, with the gateway's token when ``kind`` is the gateway."""
    return {**headers, "Authorization": f"Bearer {TEAM_TOKEN}"} if kind == "gateway" else headers


async def initialize(kind: str, port: int, host: str, origin: str | None = None) -> int:
    """The status of an ``initialize`` POST naming ``host`` (and coming from ``origin``, when given)."""
    headers = authorized(kind, {} if origin is None else {"Origin": origin})
    status, _, _ = await http(port, "POST", INITIALIZE, headers, host=host)
    return status


async def warning_of(process: Process) -> str:
    """The first warning ``process`` writes on stderr."""
    assert process.stderr is not None
    lines = BufferedByteReceiveStream(process.stderr)
    while True:
        row = (await lines.receive_until(b"\n", 1 << 16)).decode()
        if "warning:" in row:
            return row


# --- Origin ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["serve", "proxy", "gateway"])
async def test_off_loopback_without_lists_a_foreign_origin_is_refused_and_any_host_served(
    kind: str, tmp_path: Path
) -> None:
    """A browser always sends ``Origin``; other clients usually send none, and are served as before."""
    with anyio.fail_after(TIMEOUT * 2):  # the start is bounded by TIMEOUT already, and the stop by 10 s
        async with front(kind, "0.0.0.0", [], tmp_path) as (port, process):
            foreign = await initialize(kind, port, "mcp.example.test", FOREIGN)
            without = await initialize(kind, port, "mcp.example.test")
            warning = await warning_of(process) if kind != "gateway" else None
    assert (foreign, without) == (403, 200)
    if warning is not None:  # a gateway with a token says nothing of its addresses
        assert "warning: listening on 0.0.0.0" in warning
        assert "any Host" in warning and "an Origin only if --allow-origin lists it" in warning


@pytest.mark.parametrize("kind", ["proxy", "gateway"])
async def test_off_loopback_a_host_list_alone_still_refuses_a_foreign_origin(kind: str, tmp_path: Path) -> None:
    flags = ["--allow-host", "mcp.example.test"]
    with anyio.fail_after(TIMEOUT):
        async with front(kind, "0.0.0.0", flags, tmp_path) as (port, _):
            foreign = await initialize(kind, port, "mcp.example.test", FOREIGN)
            listed_host = await initialize(kind, port, "mcp.example.test")
            other_host = await initialize(kind, port, "evil.example")
    assert (foreign, listed_host, other_host) == (403, 200, 421)


@pytest.mark.parametrize(
    ("origins", "allowed", "refused"),
    [([LISTED], [LISTED, LISTED + "/"], [FOREIGN, "https://app.example:8443"]), (["*"], [FOREIGN, LISTED], [])],
)
async def test_serve_off_loopback_checks_the_origin_as_the_other_fronts_do(
    origins: list[str], allowed: list[str], refused: list[str], tmp_path: Path
) -> None:
    """``serve --http`` follows the fronts' one rule: an origin list alone checks origins and leaves any
    Host served (the SDK's own check, once on, refused every Host not listed as well)."""
    flags = [flag for origin in origins for flag in ("--allow-origin", origin)]
    with anyio.fail_after(TIMEOUT):
        async with front("serve", "0.0.0.0", flags, tmp_path) as (port, _):
            let_in = [await initialize("serve", port, "mcp.example.test", origin) for origin in allowed]
            kept_out = [await initialize("serve", port, "mcp.example.test", origin) for origin in refused]
            without = await initialize("serve", port, "mcp.example.test")
    assert let_in == [200] * len(allowed)
    assert kept_out == [403] * len(refused)
    assert without == 200


async def test_serve_on_loopback_takes_loopback_hosts_and_origins_as_the_other_fronts_do(tmp_path: Path) -> None:
    """On a loopback address the fronts take a loopback ``Host`` with or without a port, and a loopback
    ``Origin`` of any port; ``serve`` now takes the same (the SDK's check wanted a port in ``Host``)."""
    with anyio.fail_after(TIMEOUT):
        async with front("serve", "127.0.0.1", [], tmp_path) as (port, _):
            bare_host = await http(port, "POST", INITIALIZE, {"Host": "localhost"})
            loopback = await initialize("serve", port, "127.0.0.1", "http://localhost:6274")
            foreign = await initialize("serve", port, "127.0.0.1", FOREIGN)
            other_host = await initialize("serve", port, "evil.example")
    assert (bare_host[0], loopback, foreign, other_host) == (200, 200, 403, 421)


@pytest.mark.parametrize("kind", ["proxy", "gateway"])
async def test_on_loopback_an_origin_that_is_not_a_url_is_refused_not_an_error(kind: str, tmp_path: Path) -> None:
    with anyio.fail_after(TIMEOUT):
        async with front(kind, "127.0.0.1", [], tmp_path) as (port, _):
            broken = await initialize(kind, port, "127.0.0.1", "http://[::1")
            loopback = await initialize(kind, port, "127.0.0.1", "http://[::1]:6274")
    assert (broken, loopback) == (403, 200)


# --- OAuth tokens that name no one ----------------------------------------------------------------


async def test_an_oauth_token_naming_no_subject_and_no_client_is_refused(tmp_path: Path) -> None:
    """Every such token would be the same principal, so one could drive another's session by its id:
    it is refused with 401 ``invalid_token``, never let in under an empty principal. A token naming a
    subject or a client alone is let in."""
    port = free_port()
    with running_issuer(free_port(), mcp_url(port)) as issuer:
        good = issuer.tokens["good"]
        nameless = {key: value for key, value in good.items() if key not in ("sub", "client_id")}
        issuer.tokens |= {
            "nameless": nameless,
            "empty-names": {**nameless, "sub": "", "client_id": ""},
            "subject-only": {**nameless, "sub": "ada"},
            "client-only": {**nameless, "client_id": "team-client"},
        }
        flags = ["--oauth-issuer", issuer.url]
        async with http_gateway(config_of(tmp_path, p=PID_SERVER), tmp_path / "cache", port, flags, SECRETS):
            with anyio.fail_after(TIMEOUT):
                answers = {
                    token: await http(port, "POST", INITIALIZE, {"Authorization": f"Bearer {token}"})
                    for token in ("nameless", "empty-names", "subject-only", "client-only")
                }
    statuses = {token: answer[0] for token, answer in answers.items()}
    assert statuses == {"nameless": 401, "empty-names": 401, "subject-only": 200, "client-only": 200}
    reasons = {
        "nameless": "the token names no subject and no client",
        "empty-names": "the token's 'client_id' is not a non-empty string",
    }
    for token, reason in reasons.items():
        _, headers, body = answers[token]
        assert 'error="invalid_token"' in headers["www-authenticate"]
        assert json.loads(body) == {"error": "invalid_token", "error_description": reason}
