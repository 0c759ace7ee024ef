"""No secret of a sign-in leaks: after ``lazymcp login`` to the SDK-based OAuth test server
(``tests/servers/oauth_server.py``) as a confidential client registered beforehand, a gateway with an audit
file and ``/metrics`` calls the server's tool, refreshes its token, and gets errors (a call of an unknown
tool, a call once the server revoked every token). The real values of the access and refresh tokens
(read from the token store at each step) and of the client secret are looked for in the stderr of every
lazymcp process, the audit file, ``/metrics``, the manifests and every other file under the cache
directory, and the text of every answer, errors included."""

from __future__ import annotations

import json
import time
from pathlib import Path

import anyio
import httpx2
import pytest

from ..conftest import free_port, until, until_listening
from ..raw import INIT, INITIALIZED, peer, request, tool_call
from .test_signin import BOUND, CLIENT_SECRET, Home, called, login, oauth_server


@pytest.mark.anyio
async def test_no_token_or_client_secret_shows_in_any_output_file_or_metric(tmp_path: Path) -> None:
    oauth = {"clientId": "lazymcp-at-acme", "clientSecret": "${ACME_SECRET}", "scopes": ["read"]}
    audit, metrics_port = tmp_path / "audit.jsonl", free_port()
    with anyio.fail_after(BOUND):
        async with oauth_server(env={"OAUTH_CLIENT": f"lazymcp-at-acme {CLIENT_SECRET}"}) as base:
            home = Home(tmp_path, f"{base}/mcp", oauth)
            home.env["ACME_SECRET"] = CLIENT_SECRET
            await login(home)
            secrets = [CLIENT_SECRET, *home.secrets()]
            command = home.lazymcp("gateway", "--config", str(home.config), "--mode", "eager")
            command += ["--audit-file", str(audit), "--metrics", f"127.0.0.1:{metrics_port}"]
            answers: list[str] = []
            async with peer(command, env=home.env) as client:
                await client.send(request(0, "initialize", INIT), INITIALIZED, request(1, "tools/list"))
                answers.append(json.dumps(await client.answer(1)))
                answers.append(await called(client, 2))
                expires = home.kept()["expires_at"]
                await until(lambda: time.time() > expires + 0.5, within=60, what="the access token's expiry")
                answers.append(await called(client, 3))  # refreshed
                secrets += home.secrets()
                await client.send(tool_call(4, "signed__nothing"))
                answers.append(json.dumps(await client.answer(4)))
                async with httpx2.AsyncClient(trust_env=False, timeout=60) as admin:
                    assert (await admin.post(f"{base}/revoke-all")).status_code == 200
                    answers.append(await called(client, 5))
                    await until_listening(metrics_port)
                    metrics = (await admin.get(f"http://127.0.0.1:{metrics_port}/metrics")).text
                assert client.process.stdin is not None
                await client.process.stdin.aclose()
                home.said.append(await client.stderr())
    assert "alice, token" in answers[1] and "alice, token" in answers[2] and answers[1] != answers[2], answers
    assert '"isError": true' in answers[3] and "sign in again" in answers[4], answers
    assert "lazymcp_" in metrics and audit.read_text().count("\n") >= 3, (metrics, audit.read_text())
    files = [path for path in (tmp_path / "cache").rglob("*") if path.is_file()]
    cached = {path: path.read_bytes().decode(errors="replace") for path in files}
    places = {"stderr and stdout": "\n".join(home.said), "answers": "\n".join(answers), "/metrics": metrics}
    places |= {"the audit file": audit.read_text()} | {str(path): text for path, text in cached.items()}
    assert any("manifest" in str(path) or path.suffix == ".json" for path in cached), list(cached)
    assert len(set(secrets)) >= 5, "expected a client secret and two sets of tokens"
    for where, text in places.items():
        for secret in secrets:
            assert secret not in text, f"a secret shows in {where}"
