"""The load bench (issue 6, item 4) runs end to end and loses nothing: ``python -m bench.load`` with a few
clients for a few seconds against ``lazymcp serve --http``, ``lazymcp proxy --http`` and the plain SDK server,
in both eras. Correctness only (no failed, lost, duplicated or crossed answer); timings are never asserted.
The bench's own checks are tested first, against a fake server that misbehaves in each way.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from bench.load import ERAS, LEGACY, TARGETS, LoadClient, Tally

from ..conftest import ROOT

RUN_TIMEOUT = 240


def fake_server(misbehaviour: str) -> httpx2.MockTransport:
    """A streamable-HTTP MCP endpoint answering as SSE, with one ``misbehaviour``."""

    def handle(request: httpx2.Request) -> httpx2.Response:
        message = json.loads(request.content)
        if "id" not in message:
            return httpx2.Response(202)
        result: dict[str, Any] = {}
        if message["method"] == "initialize":
            result = {"protocolVersion": LEGACY, "capabilities": {"tools": {}}, "serverInfo": {"name": "fake"}}
        elif message["method"] == "tools/call":
            text = message["params"]["arguments"]["text"]
            result = {"content": [{"type": "text", "text": "someone else's" if misbehaviour == "crossed" else text}]}
        elif message["method"] == "tools/list":
            result = {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}
        answer = {"jsonrpc": "2.0", "id": message["id"], "result": result}
        answers = {"lost": [], "duplicated": [answer, answer], "other id": [{**answer, "id": -1}]}.get(
            misbehaviour, [answer]
        )
        if misbehaviour == "error":
            answers = [{"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32603, "message": "boom"}}]
        body = "".join(f"event: message\ndata: {json.dumps(a)}\n\n" for a in answers)
        return httpx2.Response(200, text=body, headers={"content-type": "text/event-stream", "mcp-session-id": "s"})

    return httpx2.MockTransport(handle)


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("misbehaviour", "counted"),
    [
        ("none", None),
        ("lost", "lost"),
        ("other id", "lost"),
        ("duplicated", "duplicated"),
        ("crossed", "wrong"),
        ("error", "failed"),
    ],
)
async def test_the_load_client_counts_every_lost_duplicated_crossed_or_failed_answer(
    misbehaviour: str, counted: str | None
) -> None:
    tally = Tally()
    client = LoadClient(0, "http://127.0.0.1:9/mcp", LEGACY, tally, transport=fake_server(misbehaviour))
    with anyio.fail_after(10):
        if misbehaviour in ("none", "crossed"):
            await client.open()
        for method in ("tools/list", "tools/call", "ping"):
            await client.one(method, 1)
        await client.close()
    counts = {kind: getattr(tally, kind) for kind in ("failed", "lost", "duplicated", "wrong")}
    if counted is None:
        assert counts == {"failed": 0, "lost": 0, "duplicated": 0, "wrong": 0} and tally.ok == 3
    else:
        assert counts[counted] >= 1 and sum(counts.values()) == counts[counted], counts


def test_serve_proxy_and_the_plain_sdk_server_answer_every_request_exactly_once_under_concurrent_clients(
    tmp_path: Path,
) -> None:
    out = tmp_path / "load.json"
    command = [sys.executable, "-m", "bench.load", "--clients", "4", "--seconds", "1.5", "--max-requests", "300"]
    command += ["--tools", "10", "--json", str(out)]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=RUN_TIMEOUT, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    results = json.loads(out.read_text())["results"]
    assert {(r["target"], r["era"]) for r in results} == {(t, e) for t in TARGETS for e in ERAS}
    for result in results:
        assert result["requests"] > 0, result
        wrong = {kind: result[kind] for kind in ("failed", "lost", "duplicated", "wrong")}
        assert wrong == {"failed": 0, "lost": 0, "duplicated": 0, "wrong": 0}, (result["target"], result["problems"])
        assert result["rss_kib"]["end"] > 0
