"""What the operator sees of the calls: one audit line a call on stderr (real gateway processes, raw
JSON-RPC peers), never with arguments or results."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from lazymcp.core.actions import Called
from lazymcp.run.observe import audit_line

from ..conftest import SERVERS, accepts, free_port, serving, until
from ..forkserver import VARIABLE
from ..raw import (
    MODERN_HEADERS,
    TIMEOUT,
    gateway,
    hostile,
    http_gateway,
    listening,
    modern_call,
    open_session,
    peer,
    post,
    request,
    tool_call,
)

PLAIN = [sys.executable, str(SERVERS / "plain_server.py")]  # add, echo, upper


def config(tmp_path: Path, **top: Any) -> Path:
    path = tmp_path / "mcp.json"
    servers = {"math": {"command": PLAIN[0], "args": PLAIN[1:], "rateLimit": "1/min"}}
    path.write_text(json.dumps({"mcpServers": servers, "lazymcp": top}))
    return path


async def calls_then_stderr(path: Path, cache: Path, *flags: str) -> str:
    """Four calls through a stdio gateway, then its stderr once it has ended."""
    async with gateway(path, cache, "--mode", "proxy", *flags) as peer:
        with anyio.fail_after(TIMEOUT * 2):
            await peer.handshake()
            calls = [
                tool_call(10, "math__echo", text="the-argument-value"),
                tool_call(11, "math__nothing"),
                tool_call(12, "search_tools", query="echo"),
                tool_call(13, "math__echo", text="again"),
                tool_call(14, "time__now"),
            ]
            for call in calls:
                await peer.send(call)
                await peer.answer(call["id"])
            assert peer.process.stdin is not None
            await peer.process.stdin.aclose()
            return await peer.stderr()


@pytest.mark.anyio
async def test_each_call_has_one_audit_line_without_its_arguments_or_result(tmp_path: Path) -> None:
    path = config(tmp_path, access={"*": {"allow": ["math__*"]}})
    stderr = await calls_then_stderr(path, tmp_path / "cache", "--log-level", "info")
    lines = [json.loads(line) for line in stderr.splitlines() if line.startswith('{"audit"')]
    assert [(a["server"], a["tool"], a["outcome"]) for a in lines] == [
        ("math", "echo", "ok"),
        (None, "math__nothing", "unknown_tool"),
        (None, "search_tools", "ok"),
        ("math", "echo", "rate_limited"),  # the server's rateLimit: 1/min
        (None, "time__now", "denied"),  # the client is told it is unknown
    ]
    assert {a["principal"] for a in lines} == {"anonymous"}
    assert all(set(a) == FIELDS for a in lines)
    assert [a["id"] for a in lines] == [10, 11, 12, 13, 14] and {a["session"] for a in lines} == {None}
    assert lines[0]["ms"] > 0 and lines[1]["ms"] == 0
    assert "the-argument-value" not in stderr


@pytest.mark.anyio
@pytest.mark.parametrize("level", [(), ("--log-level", "warning")])
async def test_there_is_no_audit_line_unless_info_is_asked_for(tmp_path: Path, level: tuple[str, ...]) -> None:
    stderr = await calls_then_stderr(config(tmp_path), tmp_path / "cache", *level)
    assert '"audit"' not in stderr


def test_an_audit_line_is_one_compact_json_object() -> None:
    call = Called("token:alice", "math", "echo", "ok", 0.0123456, request_id=7, client=("peer", "1"), session="ab")
    line = audit_line(call, datetime(2026, 7, 28, 12, 0, 1, 234567, tzinfo=UTC))
    assert line == (
        '{"audit":"call","time":"2026-07-28T12:00:01.234Z","principal":"token:alice","session":"ab","id":7,'
        '"address":null,"client":{"name":"peer","version":"1"},"server":"math","tool":"echo","via":"direct",'
        '"outcome":"ok","ms":12.346}'
    )


FIELDS = {"audit", "time", "principal", "session", "id", "address", "client", "server", "tool", "via", "outcome", "ms"}
LOUD = (
    "import runpy, sys; sys.stderr.write('loud one\\nloud two\\n'); sys.stderr.flush(); "
    "runpy.run_path(sys.argv[1], run_name='__main__')"
)


@pytest.mark.anyio
async def test_the_audit_file_holds_a_line_a_call_however_it_was_named_and_the_servers_stderr_is_labelled(
    tmp_path: Path,
) -> None:
    """Over HTTP with a token: calls made directly and through ``invoke_tool``, granted and denied, a 2026
    request, and made-up names past the rate limit. The audit file is parsed line by line; a denied call
    is ``denied`` however it came, and no made-up name becomes a metric label."""
    path = tmp_path / "mcp.json"
    servers = {
        "math": {"command": PLAIN[0], "args": ["-c", LOUD, PLAIN[1]]},
        "text": {"command": PLAIN[0], "args": PLAIN[1:]},
    }
    access = {"alice": {"allow": ["math__*"], "metrics": True}}
    path.write_text(json.dumps({"mcpServers": servers, "lazymcp": {"access": access}}))
    tokens = tmp_path / "tokens"
    tokens.write_text("alice: tok-alice-1\n")
    tokens.chmod(0o600)
    audit, log = tmp_path / "audit.jsonl", tmp_path / "stderr"
    port = free_port()
    flags = ["--token-file", str(tokens), "--mode", "proxy", "--audit-file", str(audit), "--rate-limit", "8/min"]
    alice = {"Authorization": "Bearer tok-alice-1"}
    command = [sys.executable, "-m", "lazymcp", "gateway", "--config", str(path), "--http", f"127.0.0.1:{port}"]
    with log.open("wb") as sink:
        async with listening(
            [*command, *flags], port, env={"LAZYMCP_CACHE_DIR": str(tmp_path / "c")}, stderr=sink.fileno()
        ):
            with anyio.fail_after(TIMEOUT * 2):
                session = await open_session(port, alice)
                calls = [
                    tool_call(10, "math__echo", text="the-argument-value"),
                    request(
                        11,
                        "tools/call",
                        {"name": "invoke_tool", "arguments": {"name": "math__echo", "arguments": {"text": "x"}}},
                    ),
                    request(
                        12, "tools/call", {"name": "invoke_tool", "arguments": {"name": "text__upper", "arguments": {}}}
                    ),
                    tool_call(13, "text__upper", text="x"),
                ]
                for call in calls:
                    await post(port, call, session)
                await post(port, modern_call("m-1", "math__echo", text="x"), {**alice, **MODERN_HEADERS})
                for number in range(20, 30):  # past the limit of 8 a minute
                    await post(port, tool_call(number, f"made__up_{number}"), session)
                async with httpx2.AsyncClient(timeout=TIMEOUT) as client:
                    page = (await client.get(f"http://127.0.0.1:{port}/metrics", headers=alice)).text
    lines = [json.loads(line) for line in audit.read_text().splitlines()]
    assert all(set(line) == FIELDS for line in lines)
    seen = [(a["id"], a["server"], a["tool"], a["via"], a["outcome"]) for a in lines[:5]]
    assert seen == [
        (10, "math", "echo", "direct", "ok"),
        (11, "math", "echo", "invoke_tool", "ok"),
        (12, None, "text__upper", "invoke_tool", "denied"),
        (13, None, "text__upper", "direct", "denied"),
        ("m-1", "math", "echo", "direct", "ok"),
    ]
    assert [a["outcome"] for a in lines[5:]].count("rate_limited") >= 2
    assert {a["principal"] for a in lines} == {"token:alice"}
    assert {a["address"] for a in lines} == {"127.0.0.1"}
    assert {a["client"]["name"] for a in lines} == {"peer"}
    hashed = {a["session"] for a in lines if a["id"] != "m-1"}
    assert len(hashed) == 1 and session["Mcp-Session-Id"] not in hashed and None not in hashed
    assert next(a for a in lines if a["id"] == "m-1")["session"] is None
    for line in lines:
        datetime.fromisoformat(line["time"])
    found = samples(page)
    denied = [a for a in lines if a["outcome"] == "denied"]  # 12 and 13, and the made-up names within the limit
    assert found[("lazymcp_denied_total", ())] == len(denied) and 12 in [a["id"] for a in denied]
    assert not any("made__up" in str(labels) for _, labels in found)
    text = log.read_text()
    assert "[math] loud one" in text and "[math] loud two" in text
    assert '"audit"' not in text and "the-argument-value" not in audit.read_text()


# --- metrics ----------------------------------------------------------------------------------------


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of a Prometheus text page, by name and labels (parsed by prometheus_client's parser)."""
    from prometheus_client.parser import text_string_to_metric_families

    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


@pytest.mark.anyio
async def test_metrics_are_scraped_behind_the_same_token_as_mcp_and_parse(tmp_path: Path) -> None:
    path = config(tmp_path, access={"alice": {"allow": ["math__*"], "metrics": True}})
    tokens = tmp_path / "tokens"
    tokens.write_text("alice: tok-alice-1\n")
    tokens.chmod(0o600)
    port, apart = free_port(), free_port()
    flags = ["--token-file", str(tokens), "--mode", "proxy"]
    alice = {"Authorization": "Bearer tok-alice-1"}
    async with http_gateway(path, tmp_path / "cache", port, flags):
        with anyio.fail_after(TIMEOUT * 2):
            session = await open_session(port, alice)
            for number, name in enumerate(["math__echo", "time__now", "made__up", "math__echo"], 10):
                await post(port, tool_call(number, name, text="hi"), session)
            async with httpx2.AsyncClient(timeout=TIMEOUT) as client:
                refused = await client.get(f"http://127.0.0.1:{port}/metrics")
                page = await client.get(f"http://127.0.0.1:{port}/metrics", headers=alice)
    async with http_gateway(path, tmp_path / "cache", free_port(), [*flags, "--metrics", f"127.0.0.1:{apart}"]):
        with anyio.fail_after(TIMEOUT):
            await until(lambda: accepts(apart), within=TIMEOUT, what="the metrics address")
            async with httpx2.AsyncClient(timeout=TIMEOUT) as client:
                separate = await client.get(f"http://127.0.0.1:{apart}/metrics")
    assert refused.status_code == 401
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/plain")
    found = samples(page.text)
    assert found[("lazymcp_tool_calls_total", (("outcome", "ok"), ("server", "math"), ("tool", "echo")))] == 1
    assert found[("lazymcp_tool_calls_total", (("outcome", "rate_limited"), ("server", "math"), ("tool", "echo")))] == 1
    assert found[("lazymcp_tool_calls_total", (("outcome", "denied"), ("server", ""), ("tool", "")))] == 2
    assert found[("lazymcp_denied_total", ())] == 2 and found[("lazymcp_rate_limited_total", ())] == 1
    assert found[("lazymcp_tool_call_seconds_count", (("server", "math"),))] == 1
    # the echo, and the denied and the unknown call: isError results naming the closest tools
    assert found[("lazymcp_requests_total", (("method", "tools/call"), ("outcome", "ok")))] == 3
    assert found[("lazymcp_requests_total", (("method", "tools/call"), ("outcome", "error")))] == 1  # rate-limited
    assert found[("lazymcp_server_starts_total", (("server", "math"),))] >= 1
    assert found[("lazymcp_sessions", ())] == 1
    assert found[("lazymcp_forwarded_total", ())] == 0
    assert separate.status_code == 200 and "lazymcp_sessions 0.0" in separate.text


def test_the_page_escapes_label_values_and_its_histogram_is_cumulative() -> None:
    from lazymcp.run.metrics import Metrics

    metrics = Metrics()
    odd = 'a "quoted"\\path\nline'
    metrics.server_started(odd)
    for seconds in (0.001, 0.2, 0.2, 30.0):
        metrics.called(Called("anonymous", "math", "echo", "ok", seconds))
    metrics.called(Called("anonymous", None, "made-up-" + "x" * 50, "unknown_tool"))
    found = samples(metrics.text().decode())
    assert found[("lazymcp_server_starts_total", (("server", odd),))] == 1
    buckets = {dict(labels)["le"]: value for (name, labels), value in found.items() if name.endswith("_bucket")}
    assert (buckets["0.005"], buckets["0.25"], buckets["10.0"], buckets["+Inf"]) == (1, 3, 3, 4)
    assert found[("lazymcp_tool_call_seconds_count", (("server", "math"),))] == 4
    assert found[("lazymcp_tool_call_seconds_sum", (("server", "math"),))] == pytest.approx(30.401)
    assert found[("lazymcp_tool_calls_total", (("outcome", "unknown_tool"), ("server", ""), ("tool", "")))] == 1


# --- traces -----------------------------------------------------------------------------------------

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"


TRACED = [sys.executable, str(SERVERS / "traced_server.py")]  # seen: the trace context it came with
SPANS = ('{"name"',)


def traced_config(tmp_path: Path, traced: dict[str, Any]) -> Path:
    path = tmp_path / "mcp.json"
    servers = {"math": {"command": PLAIN[0], "args": PLAIN[1:]}, "traced": traced}
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


def spans_in(stderr: str) -> dict[str, dict[str, Any]]:
    """The console exporter's spans on stderr, by name (each name once in these tests)."""
    spans = [json.loads(line) for line in stderr.splitlines() if line.startswith(SPANS)]
    return {span["name"]: span for span in spans}


def hex_of(span: dict[str, Any], part: str) -> str:
    return span["context"][part].removeprefix("0x")


def seen_by_server(answer: dict[str, Any]) -> dict[str, Any]:
    return json.loads(answer["result"]["content"][0]["text"])


@pytest.mark.anyio
async def test_a_request_is_a_span_under_the_clients_context_and_its_server_call_a_child_passed_on(
    tmp_path: Path,
) -> None:
    """Over stdio: the client's ``_meta.traceparent`` is the request span's parent; the call to the server
    is the request span's child, and the stdio server gets that hop's context in ``_meta.traceparent``.
    A call the gateway answers itself is one span, with the error status; every request has its span."""
    pytest.importorskip("opentelemetry.sdk", reason="traces need opentelemetry-sdk (lazymcp[otel])")
    config = traced_config(tmp_path, {"command": TRACED[0], "args": TRACED[1:]})
    command = [sys.executable, "-m", "lazymcp", "gateway", "--config", str(config), "--mode", "proxy"]
    env = {"LAZYMCP_CACHE_DIR": str(tmp_path / "cache"), "OTEL_TRACES_EXPORTER": "console", "OTEL_SERVICE_NAME": "gw"}
    traced = tool_call(10, "traced__seen")
    traced["params"]["_meta"] = {"traceparent": f"00-{TRACE_ID}-{PARENT_ID}-01"}
    async with peer(command, env=env) as gateway_peer:
        with anyio.fail_after(TIMEOUT * 2):
            await gateway_peer.handshake()
            answers = []
            for call in (traced, tool_call(11, "math__nothing"), tool_call(12, "math__echo", text="the-argument")):
                await gateway_peer.send(call)
                answers.append(await gateway_peer.answer(call["id"]))
            assert gateway_peer.process.stdin is not None
            await gateway_peer.process.stdin.aclose()
            stderr = await gateway_peer.stderr()
    spans = spans_in(stderr)
    request, hop = spans["tools/call traced__seen"], spans["tools/call seen"]
    assert "initialize" in spans and "tools/call math__echo" in spans and "tools/call echo" in spans
    assert request["kind"] == "SpanKind.SERVER" and hop["kind"] == "SpanKind.CLIENT"
    assert hex_of(request, "trace_id") == TRACE_ID and request["parent_id"] == f"0x{PARENT_ID}"
    assert hex_of(hop, "trace_id") == TRACE_ID and hop["parent_id"] == request["context"]["span_id"]
    assert seen_by_server(answers[0]) == {"header": None, "meta": f"00-{TRACE_ID}-{hex_of(hop, 'span_id')}-01"}
    assert request["attributes"]["mcp.method.name"] == "tools/call"
    assert request["attributes"]["gen_ai.tool.name"] == "traced__seen"
    assert request["attributes"]["gen_ai.operation.name"] == "execute_tool"
    assert (request["attributes"]["lazymcp.server"], request["attributes"]["lazymcp.outcome"]) == ("traced", "ok")
    assert (hop["attributes"]["gen_ai.tool.name"], hop["attributes"]["lazymcp.server"]) == ("seen", "traced")
    assert request["status"]["status_code"] == "UNSET" and hop["status"]["status_code"] == "UNSET"
    unknown = spans["tools/call math__nothing"]
    assert unknown["status"]["status_code"] == "ERROR" and unknown["parent_id"] is None
    assert unknown["attributes"]["lazymcp.outcome"] == "unknown_tool"
    assert not any(span["name"] == "tools/call nothing" for span in spans.values())  # no hop: no server call
    assert request["resource"]["attributes"]["service.name"] == "gw"
    assert "the-argument" not in stderr


@pytest.mark.anyio
async def test_a_call_to_a_server_that_never_answers_ends_its_span_when_it_times_out_or_is_cancelled(
    tmp_path: Path,
) -> None:
    """Two servers whose ``hang`` never answers, under ``--timeout 3``: ``late``'s call ends by the timeout (the
    server counts as hung), ``left``'s by the client's cancellation; each call's span to its server ends
    then, with an error saying which, not with the session."""
    pytest.importorskip("opentelemetry.sdk", reason="traces need opentelemetry-sdk (lazymcp[otel])")
    path = tmp_path / "mcp.json"
    hanging = {"command": hostile()[0], "args": hostile()[1:]}
    path.write_text(json.dumps({"mcpServers": {"late": hanging, "left": hanging}}))
    command = [sys.executable, "-m", "lazymcp", "gateway", "--config", str(path), "--mode", "proxy", "--timeout", "3"]
    env = {"LAZYMCP_CACHE_DIR": str(tmp_path / "cache"), "OTEL_TRACES_EXPORTER": "console"}
    async with peer(command, env=env) as gateway_peer:
        with anyio.fail_after(TIMEOUT * 2):
            await gateway_peer.handshake()
            await gateway_peer.send(tool_call(19, "left__echo", text="ready"))
            assert "result" in await gateway_peer.answer(19)  # ``left`` is up: its calls go straight to it
            cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 20}}
            await gateway_peer.send(tool_call(20, "left__hang"), cancel)
            await gateway_peer.send(tool_call(10, "late__hang"))
            timed_out = await gateway_peer.answer(10)
            assert gateway_peer.process.stdin is not None
            await gateway_peer.process.stdin.aclose()
            stderr = await gateway_peer.stderr()
    assert "did not answer tools/call within 3 s" in timed_out["error"]["message"]
    spans = [json.loads(line) for line in stderr.splitlines() if line.startswith(SPANS)]
    hops = {
        (span["attributes"]["lazymcp.server"], span["attributes"]["jsonrpc.request.id"]): span
        for span in spans
        if span["name"] == "tools/call hang"
    }
    assert set(hops) == {("late", "10"), ("left", "20")}
    for key, error in ((("late", "10"), "timeout"), (("left", "20"), "cancelled")):
        assert hops[key]["status"] == {"status_code": "ERROR", "description": error}, key
        assert hops[key]["attributes"]["error.type"] == error, key
    requests = {span["attributes"]["jsonrpc.request.id"]: span for span in spans if span["name"].endswith("__hang")}
    assert requests["20"]["attributes"]["error.type"] == "cancelled"
    assert requests["10"]["status"]["status_code"] == "ERROR"


@pytest.mark.anyio
async def test_over_http_the_traceparent_header_reaches_an_http_server_as_the_hops_context(tmp_path: Path) -> None:
    """The client's ``traceparent`` header is the request span's parent; the HTTP server behind the
    gateway gets the hop's context as its ``traceparent`` header and in ``_meta.traceparent``."""
    pytest.importorskip("opentelemetry.sdk", reason="traces need opentelemetry-sdk (lazymcp[otel])")
    from ..servers.traced_server import app

    port, server_port = free_port(), free_port()
    header = {"traceparent": f"00-{TRACE_ID}-{PARENT_ID}-01"}
    said = b""
    async with serving(app(), server_port) as url:
        config = traced_config(tmp_path, {"url": url})
        flags, env = ["--mode", "proxy"], {"OTEL_TRACES_EXPORTER": "console"}
        async with http_gateway(config, tmp_path / "cache", port, flags, env) as process:
            assert process.stderr is not None
            with anyio.fail_after(TIMEOUT * 2):
                session = await open_session(port)
                status, answer = await post(port, tool_call(10, "traced__seen"), {**session, **header})
                while b'"name": "tools/call traced__seen"' not in said:
                    said += await process.stderr.receive()
                while not said.endswith(b"\n"):
                    said += await process.stderr.receive()
    assert status == 200 and answer is not None and "result" in answer
    spans = spans_in(said.decode())
    request, hop = spans["tools/call traced__seen"], spans["tools/call seen"]
    assert hex_of(request, "trace_id") == TRACE_ID and request["parent_id"] == f"0x{PARENT_ID}"
    assert hop["parent_id"] == request["context"]["span_id"]
    passed_on = f"00-{TRACE_ID}-{hex_of(hop, 'span_id')}-01"
    assert seen_by_server(answer) == {"header": passed_on, "meta": passed_on}


async def echo_then_stderr(command: list[str], env: dict[str, str]) -> tuple[dict[str, Any], str]:
    """A gateway run of ``command`` over stdio that calls ``math__echo`` once: its answer, and all it said on
    stderr by its end (its input closed)."""
    async with peer(command, env=env) as p:
        with anyio.fail_after(TIMEOUT * 2):
            await p.handshake()
            await p.send(tool_call(10, "math__echo", text="hi"))
            answered = await p.answer(10)
            assert p.process.stdin is not None
            await p.process.stdin.aclose()
            return answered, await p.stderr()


@pytest.mark.anyio
async def test_without_the_variable_no_opentelemetry_module_is_loaded(tmp_path: Path) -> None:
    """A gateway not asked for traces (the SDK installed or not) runs its calls without loading any
    ``opentelemetry`` module and without a tracing hook."""
    report = (
        "import atexit, sys\n"
        "from lazymcp.run import observe\n"
        "def told():\n"
        "    loaded = sorted(name for name in sys.modules if name.startswith('opentelemetry'))\n"
        "    print('LOADED', loaded, observe.tracing, file=sys.stderr)\n"
        "atexit.register(told)\n"
        "from lazymcp.cli import main\n"
        "sys.exit(main())\n"
    )
    command = [sys.executable, "-c", report, "gateway", "--config", str(config(tmp_path)), "--mode", "proxy"]
    answered, stderr = await echo_then_stderr(
        # started the ordinary way: a fork of the test run's fork server has the SDK, and OTel with it, loaded
        command,
        {"LAZYMCP_CACHE_DIR": str(tmp_path / "cache"), "OTEL_TRACES_EXPORTER": "", VARIABLE: "off"},
    )
    assert "result" in answered
    assert "LOADED [] None" in stderr


BLOCKED = (
    "import sys\n"
    "sys.modules[sys.argv.pop(1)] = None  # as if that package were not installed\n"
    "from lazymcp.cli import main\n"
    "sys.exit(main())\n"
)
"""A gateway run where one package (the first argument) cannot be imported."""


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("variable", "value"),
    [("OTEL_TRACES_EXPORTER", "otlp"), ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")],
)
async def test_traces_asked_for_without_the_extra_are_one_line_at_start(
    tmp_path: Path, variable: str, value: str
) -> None:
    """``OTEL_*`` set where the OpenTelemetry SDK is missing: the gateway says so once, naming the variable
    and the extra that brings it, and serves its calls without traces."""
    command = [sys.executable, "-c", BLOCKED, "opentelemetry", "gateway", "--config", str(config(tmp_path))]
    env = {"LAZYMCP_CACHE_DIR": str(tmp_path / "cache"), "OTEL_TRACES_EXPORTER": "", variable: value}
    answered, stderr = await echo_then_stderr([*command, "--mode", "proxy"], env)
    assert "result" in answered
    said = [line for line in stderr.splitlines() if "OpenTelemetry" in line]
    assert len(said) == 1, stderr
    assert said[0].startswith("lazymcp gateway: ") and variable in said[0] and 'pipx install ".[otel]"' in said[0]


@pytest.mark.anyio
async def test_the_otlp_exporter_missing_stops_the_start_in_one_line(tmp_path: Path) -> None:
    """``OTEL_TRACES_EXPORTER=otlp`` with the SDK but not its OTLP exporter: one line naming the extra, exit 2."""
    pytest.importorskip("opentelemetry.sdk", reason="traces need opentelemetry-sdk (lazymcp[otel])")
    command = [sys.executable, "-c", BLOCKED, "opentelemetry.exporter", "gateway", "--config", str(config(tmp_path))]
    env = {"LAZYMCP_CACHE_DIR": str(tmp_path / "cache"), "OTEL_TRACES_EXPORTER": "otlp"}
    async with peer(command, env=env) as p:
        with anyio.fail_after(TIMEOUT * 2):
            assert p.process.stdin is not None
            await p.process.stdin.aclose()
            stderr = await p.stderr()
            code = await p.process.wait()
    assert code != 0, stderr
    assert stderr.strip().splitlines() == [
        'lazymcp: error: OTEL_TRACES_EXPORTER=otlp needs the otel extra (pipx install ".[otel]" from the checkout,'
        ' or pip install -e ".[otel]")'
    ]


def test_no_line_when_traces_are_not_asked_for_or_the_sdk_is_there() -> None:
    pytest.importorskip("opentelemetry.sdk", reason="traces need opentelemetry-sdk (lazymcp[otel])")
    from lazymcp.run.traces import missing

    assert missing({}) is None
    assert missing({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://x"}) is None
    assert missing({"OTEL_TRACES_EXPORTER": "console", "OTEL_SDK_DISABLED": "true"}) is None
    assert missing({"OTEL_TRACES_EXPORTER": "otlp"}) is None  # installed: traces are on


class Session:
    """What ``Traces`` keys a session's spans by (the driver, in a gateway)."""


def test_a_hop_ends_with_its_answer_or_its_servers_stop_and_a_closed_session_ends_the_rest() -> None:
    """With the SDK's in-memory exporter: a hop that got an error, one whose server stopped, the gateway's
    own request to a server (no span), a request answered, and one left when the session closed."""
    pytest.importorskip("opentelemetry.sdk", reason="traces need opentelemetry-sdk (lazymcp[otel])")
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from lazymcp.core.actions import Stop, ToClient, ToServer
    from lazymcp.protocol.jsonrpc import Frame, params_meta, parse
    from lazymcp.run.traces import Traces

    memory, session = InMemorySpanExporter(), Session()
    traces = Traces({}, exporter=memory)

    def to_server(request_id: int, meta: dict[str, object]) -> ToServer:
        return ToServer(Frame(tool_call(request_id, "x") | {"params": {"name": "x", "_meta": meta}}), "a")

    raw = b"not json"
    assert traces.incoming(session, raw) is raw  # the core answers it
    first = traces.incoming(session, Frame(tool_call(1, "a__x", text="secret")))
    second = traces.incoming(session, Frame(tool_call(2, "a__x")))
    assert isinstance(first, Frame) and isinstance(second, Frame)
    own = to_server(8, {})
    sent = traces.outgoing(session, [to_server(7, params_meta(first.message)), own])
    assert sent[1] is own  # the gateway's own request: no client span to join
    hop = params_meta(sent[0].frame.message)["traceparent"]  # pyright: ignore[reportAttributeAccessIssue]
    assert hop != params_meta(first.message)["traceparent"]
    traces.from_server(session, "a", b'{"jsonrpc": "2.0", "id": 7, "error": {"code": -32602, "message": "no"}}')
    traces.outgoing(session, [to_server(9, params_meta(second.message))])
    traces.outgoing(session, [Stop("gone", "a"), ToClient(Frame({"jsonrpc": "2.0", "id": 1, "result": {}}))])
    traces.closed(session)
    spans = {(span.name, span.attributes["jsonrpc.request.id"]): span for span in memory.get_finished_spans()}  # pyright: ignore[reportOptionalSubscript]
    assert set(spans) == {
        ("tools/call a__x", "1"),
        ("tools/call a__x", "2"),
        ("tools/call x", "7"),
        ("tools/call x", "9"),
    }
    errors = {key: span.attributes.get("error.type") for key, span in spans.items()}  # pyright: ignore[reportOptionalMemberAccess]
    assert errors == {
        ("tools/call a__x", "1"): None,
        ("tools/call a__x", "2"): "session_closed",
        ("tools/call x", "7"): "-32602",
        ("tools/call x", "9"): "server_stopped",
    }
    parent = spans[("tools/call x", "7")].parent
    assert parent is not None and parent.span_id == spans[("tools/call a__x", "1")].context.span_id  # pyright: ignore[reportOptionalMemberAccess]
    context = spans[("tools/call x", "7")].context
    assert context is not None
    assert hop == f"00-{context.trace_id:032x}-{context.span_id:016x}-{int(context.trace_flags):02x}"
    assert "secret" not in repr([dict(span.attributes or {}) for span in spans.values()])
    assert parse(sent[0].frame.line)["id"] == 7
