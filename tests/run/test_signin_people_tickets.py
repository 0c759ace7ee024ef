"""A ticket is spent only by a link that starts a sign-in: one refused for a server the gateway does not have
(yet), or because its principal has too many sign-ins under way, still works once that is no longer so.
A real gateway process and the upstream of ``tests/run/test_signin_people.py``, over real HTTP."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import anyio
import pytest

from lazymcp.access.sealed import read_key, ticket
from lazymcp.run.people import FLOWS_EACH

from ..conftest import until
from .test_signin_people import BOUND, Team, new_browser, upstream


@pytest.mark.anyio
async def test_a_link_refused_before_its_sign_in_starts_keeps_its_ticket(tmp_path: Path) -> None:
    with anyio.fail_after(BOUND):
        async with upstream() as base:
            team = Team(tmp_path, base)
            async with (
                team.gateway(),
                new_browser() as browser,
            ):
                opened = [await browser.get(await team.link("alice")) for _ in range(FLOWS_EACH)]
                assert [answer.status_code for answer in opened] == [303] * FLOWS_EACH
                waiting = await team.link("alice")
                refused = await browser.get(waiting)
                assert refused.status_code == 503 and "yours" in refused.text, refused.text
                state = parse_qs(urlsplit(opened[-1].headers["location"]).query)["state"][0]
                declined = {"state": state, "error": "access_denied"}  # the cookie is the last link's
                ended = await browser.get(f"{team.public}/oauth/callback", params=declined)
                assert ended.status_code == 502, ended.text  # one sign-in under way fewer
                again = await browser.get(waiting)
                assert again.status_code == 303, again.text  # its ticket was not spent by the 503

                later = ticket(read_key(str(team.key)), "token:bob", "later")  # a server not there yet
                link = f"{team.public}/connect/later"
                assert (await browser.get(link, params={"ticket": later})).status_code == 404
                config = json.loads(team.config.read_text())
                config["mcpServers"]["later"] = config["mcpServers"]["people"]
                team.config.write_text(json.dumps(config))

                async def reloaded() -> bool:  # a ticket of its own each look: each may be spent
                    probe = ticket(read_key(str(team.key)), "token:bob", "later")
                    return (await browser.get(link, params={"ticket": probe})).status_code != 404

                await until(reloaded, within=60, what="the configuration with server 'later' in force")
                assert (await browser.get(link, params={"ticket": later})).status_code == 303
