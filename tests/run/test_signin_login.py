"""``lazymcp login`` against the real OAuth test server (``tests/servers/oauth_server.py``): the scopes an
entry names are the ones asked for, and the loopback redirect listener waits for the one redirect that
carries the sign-in's code and state, answering anything else with 400."""

from __future__ import annotations

from pathlib import Path

import anyio
import httpx2
import pytest

from .test_signin import BOUND, Home, login, oauth_server


@pytest.mark.anyio
async def test_the_scopes_of_an_entry_are_asked_for(tmp_path: Path) -> None:
    """The server names no scope of its own, so without the entry's scopes none would be asked for."""
    with anyio.fail_after(BOUND):
        async with oauth_server() as base:
            home = Home(tmp_path, f"{base}/mcp", {"scopes": ["read", "write"]})
            await login(home)
            async with httpx2.AsyncClient(trust_env=False, timeout=60) as admin:
                asked = (await admin.get(f"{base}/asked")).json()["asked"]
    assert asked == [["read", "write"]], asked
    assert home.kept()["tokens"].get("scope") == "read write", home.kept()["tokens"].get("scope")
