"""Who an HTTP front serves: under ``--oauth-issuer``, only a token that names a subject or a client,
since a token that names neither would share every session with every other such token. Real
processes, raw HTTP, a real introspection issuer; every wait is bounded."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from .conftest import free_port
from .raw import INIT, PID_SERVER, TIMEOUT, config_of, http, http_gateway, mcp_url, request
from .servers.issuer import CLIENT_ID, CLIENT_SECRET, running_issuer

pytestmark = pytest.mark.anyio

INITIALIZE = json.dumps(request(1, "initialize", INIT)).encode()
SECRETS = {"LAZYMCP_OAUTH_CLIENT_ID": CLIENT_ID, "LAZYMCP_OAUTH_CLIENT_SECRET": CLIENT_SECRET}


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
    for token in ("nameless", "empty-names"):
        _, headers, body = answers[token]
        assert 'error="invalid_token"' in headers["www-authenticate"]
        assert json.loads(body) == {
            "error": "invalid_token",
            "error_description": "the token names no subject and no client",
        }
