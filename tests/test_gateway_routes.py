"""Routes no server can take over: server names that would make one gateway name stand for two servers
are refused when the configuration is read. Real ``lazymcp gateway`` processes over stdio in front of
``servers/routes_server.py``, which answers in its own name; every wait is bounded."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest

from lazymcp.errors import ConfigError
from lazymcp.run.gateway import read_config

from .conftest import SERVERS
from .raw import TIMEOUT, config_of


def routes(name: str, *, resources: Sequence[str] = (), prompts: Sequence[str] = ()) -> list[str]:
    """``servers/routes_server.py`` as ``name``, listing ``resources`` and ``prompts`` as given."""
    lists = json.dumps({"resources": list(resources), "prompts": list(prompts)})
    return [sys.executable, str(SERVERS / "routes_server.py"), name, lists]


# --- server names that would make one name stand for two servers ------------------------------------


@pytest.mark.anyio
async def test_servers_whose_names_make_gateway_names_ambiguous_stop_the_gateway_in_one_line(tmp_path: Path) -> None:
    """``a`` and ``a_`` under ``__``: ``a___p`` would be ``a``'s ``_p`` and ``a_``'s ``p``, the listing
    would show it twice, and a ``prompts/get`` before any listing would go to ``a``. Refused at load, both
    named, with the status of every configuration error."""
    config = config_of(tmp_path, a=routes("a", prompts=["_p"]), a_=routes("a_", prompts=["p"]))
    command = [sys.executable, "-m", "lazymcp", "gateway", "--config", str(config)]
    env = {**os.environ, "LAZYMCP_CACHE_DIR": str(tmp_path / "cache")}
    with anyio.fail_after(TIMEOUT):
        done = await anyio.run_process(command, input=b"", env=env, check=False)
    assert done.returncode == 2, done.stderr
    assert done.stderr.decode().splitlines() == [
        f"lazymcp: error: {config}: servers 'a' and 'a_' make names ambiguous under the separator '__': "
        "'a___x' would name both '_x' of server 'a' and 'x' of server 'a_'; rename one"
    ]


@pytest.mark.parametrize(
    ("servers", "separator", "pair"),
    [
        (["a_", "b", "a"], "__", ("a", "a_")),
        (["db", "db-"], "--", ("db", "db-")),
        (["x", "x_."], "_._", ("x", "x_.")),
    ],
)
def test_server_names_whose_prefixes_begin_one_another_are_refused_when_the_configuration_is_read(
    tmp_path: Path, servers: list[str], separator: str, pair: tuple[str, str]
) -> None:
    """Whatever their order in the file, the two are named shorter first; a disabled server gets no
    names, so it makes none ambiguous."""
    path = tmp_path / "mcp.json"
    entries: dict[str, Any] = {name: {"command": "true"} for name in servers}
    path.write_text(json.dumps({"mcpServers": entries, "lazymcp": {"separator": separator}}))
    with pytest.raises(ConfigError) as refused:
        read_config(str(path))
    entries[pair[1]]["lazymcp"] = {"enabled": False}
    path.write_text(json.dumps({"mcpServers": entries, "lazymcp": {"separator": separator}}))
    assert [entry.name for entry in read_config(str(path)).enabled] == [n for n in servers if n != pair[1]]
    first, second = pair
    assert refused.value.message.startswith(f"{path}: servers {first!r} and {second!r} make names ambiguous")
