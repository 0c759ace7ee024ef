"""Real services the cluster tests start themselves on loopback ports: ``redis-server`` and ``haproxy``
from their Debian packages (a test that needs one is skipped, naming the package, when it is missing),
and gateway instances that share a Redis."""

from __future__ import annotations

import shutil
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from anyio.abc import Process

from .raw import listening

REDIS_SERVER = shutil.which("redis-server")
HAPROXY = shutil.which("haproxy") or (shutil.which("haproxy", path="/usr/sbin:/sbin"))
needs_redis = pytest.mark.skipif(
    REDIS_SERVER is None, reason="redis-server not installed (Debian package redis-server)"
)
needs_haproxy = pytest.mark.skipif(HAPROXY is None, reason="haproxy not installed (Debian package haproxy)")


@asynccontextmanager
async def redis_server(port: int) -> AsyncIterator[Process]:
    """A ``redis-server`` of 127.0.0.1:``port`` that keeps nothing on disk, stopped at the end."""
    assert REDIS_SERVER is not None
    command = [REDIS_SERVER, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    async with listening([*command, "--loglevel", "warning"], port, stderr=None) as process:
        yield process


def instance_command(config: Path, port: int, redis_port: int, *flags: str) -> list[str]:
    """``lazymcp gateway`` of ``config`` on 127.0.0.1:``port``, sharing the Redis of ``redis_port``."""
    command = [sys.executable, "-m", "lazymcp", "gateway", "--config", str(config), "--http", f"127.0.0.1:{port}"]
    return [*command, "--redis", f"redis://127.0.0.1:{redis_port}/0", *flags]


@asynccontextmanager
async def instance(
    config: Path,
    cache: Path,
    port: int,
    redis_port: int,
    flags: Sequence[str] = (),
    env: dict[str, str] | None = None,
    stderr: int | None = None,
) -> AsyncIterator[Process]:
    """One gateway instance (``instance_command``) once it listens, its manifests in ``cache`` (``env``:
    set on top of ours; ``stderr``: where its log goes, ours by default)."""
    command = instance_command(config, port, redis_port, *flags)
    environ = {"LAZYMCP_CACHE_DIR": str(cache), **(env or {})}
    async with listening(command, port, env=environ, stderr=stderr) as process:
        yield process


def haproxy_config(port: int, backends: Sequence[int]) -> str:
    """A round-robin HAProxy in front of ``backends``, as a production set-up would have it: health
    checks on ``/readyz``, a retry on a connection failure, redispatch to another instance."""
    servers = "".join(
        f"    server i{number} 127.0.0.1:{backend} check inter 500 fall 2 rise 1\n"
        for number, backend in enumerate(backends)
    )
    return (
        "global\n    maxconn 512\n"
        "defaults\n    mode http\n    timeout connect 2s\n    timeout client 120s\n    timeout server 120s\n"
        "    retries 3\n    option redispatch\n    retry-on conn-failure empty-response\n"
        f"frontend mcp\n    bind 127.0.0.1:{port}\n    default_backend instances\n"
        "backend instances\n    balance roundrobin\n"
        "    option httpchk\n    http-check send meth GET uri /readyz ver HTTP/1.1 hdr Host 127.0.0.1\n"
        f"    http-check expect status 200\n{servers}"
    )


@asynccontextmanager
async def haproxy(tmp_path: Path, port: int, backends: Sequence[int]) -> AsyncIterator[Process]:
    """``haproxy`` on 127.0.0.1:``port`` in front of ``backends`` (``haproxy_config``)."""
    assert HAPROXY is not None
    config = tmp_path / "haproxy.cfg"
    config.write_text(haproxy_config(port, backends))
    async with listening([HAPROXY, "-db", "-f", str(config)], port, stderr=None) as process:
        yield process
