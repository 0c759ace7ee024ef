"""Code mode's traces, with the SDK's in-memory exporter: a gateway session in this process (a real core, a
real driver, the real sandbox, a real server process) runs ``run_code``; the run is one span, each call
its code makes a child of it, and each call's hop to its server a child of that call."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from lazymcp.gateway.reading import read_config
from lazymcp.protocol.jsonrpc import Frame
from lazymcp.run import observe
from lazymcp.run.driver import Driver
from lazymcp.run.gateway_build import Launch, build_gateway
from lazymcp.run.manifests import ManifestStore
from lazymcp.run.sandbox import CodeLimits, Sandbox
from lazymcp.surfaces.options import Options

from ..conftest import SERVERS, initialize_request, until
from ..raw import INITIALIZED, config_of, tool_call

pytest.importorskip("pydantic_monty")
pytest.importorskip("opentelemetry.sdk", reason="traces need opentelemetry-sdk (lazymcp[otel])")

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from lazymcp.run.traces import Traces

TIMEOUT = 120
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"


class Session:
    """One gateway session driven in this process: what it answered the client, by id."""

    def __init__(self, driver: Driver, answers: dict[object, dict[str, Any]], exporter: InMemorySpanExporter) -> None:
        self.driver = driver
        self.answers = answers
        self.exporter = exporter

    def send(self, message: dict[str, Any]) -> None:
        self.driver.from_client(Frame(message))

    async def answer(self, request_id: object) -> dict[str, Any]:
        await until(lambda: request_id in self.answers, within=TIMEOUT, what=f"the answer to {request_id!r}")
        return self.answers[request_id]


@asynccontextmanager
async def traced_session(tmp_path: Path, limits: CodeLimits, **servers: list[str]) -> AsyncIterator[Session]:
    """A code-mode gateway session over ``servers``, its spans going to the exporter it yields with."""
    config = read_config(str(config_of(tmp_path, **servers)))
    memory = InMemorySpanExporter()
    traces = Traces({}, exporter=memory)
    observe.tracing = traces
    observe.watch(traces)
    sandbox = Sandbox(limits)
    try:
        core = build_gateway(Launch(config, Options(mode="code"), mode="code"), ManifestStore(tmp_path / "cache"))
        answers: dict[object, dict[str, Any]] = {}
        driver = Driver(core, lambda frame: answers.__setitem__(frame.message.get("id"), frame.message))
        driver.code.sandbox = sandbox
        session = Session(driver, answers, memory)
        await driver.start()
        session.send(initialize_request("traced"))
        await session.answer(1)
        session.send(INITIALIZED)
        try:
            yield session
        finally:
            await driver.close()
    finally:
        observe.tracing = None
        observe.unwatch(traces)
        await sandbox.close()
        traces.provider.shutdown()


def spans_of(session: Session) -> list[ReadableSpan]:
    return list(session.exporter.get_finished_spans())


def named(spans: list[ReadableSpan], name: str) -> list[ReadableSpan]:
    return [span for span in spans if span.name == name]


def parent_of(span: ReadableSpan) -> int | None:
    return None if span.parent is None else span.parent.span_id


def span_id(span: ReadableSpan) -> int:
    assert span.context is not None
    return span.context.span_id


PLAIN = [sys.executable, str(SERVERS / "plain_server.py")]
FAULTY = [sys.executable, str(SERVERS / "faulty_server.py")]
CODE = "total = (await plain.add(a=2, b=3))['result']\nawait plain.echo(text=f'sum {total}')\ntotal"


@pytest.mark.anyio
async def test_a_run_is_one_span_and_each_call_of_its_code_a_child_with_its_hop_below(tmp_path: Path) -> None:
    from opentelemetry.trace import SpanKind

    with anyio.fail_after(TIMEOUT):
        async with traced_session(tmp_path, CodeLimits(seconds=60), plain=PLAIN) as session:
            run = tool_call(5, "run_code", code=CODE)
            run["params"]["_meta"] = {"traceparent": f"00-{TRACE_ID}-{PARENT_ID}-01"}
            session.send(run)
            answer = await session.answer(5)
            assert answer["result"]["content"][0]["text"] == "5", answer
            await until(lambda: len(named(spans_of(session), "tools/call echo")) == 1, what="the echo hop's span")
            spans = spans_of(session)
    [span] = named(spans, "tools/call run_code")
    assert span.kind is SpanKind.SERVER and parent_of(span) == int(PARENT_ID, 16)
    assert span.context is not None and f"{span.context.trace_id:032x}" == TRACE_ID
    assert span.attributes is not None and span.attributes["lazymcp.outcome"] == "ok"
    for tool, hop in (("plain__add", "tools/call add"), ("plain__echo", "tools/call echo")):
        [call] = named(spans, f"tools/call {tool}")
        assert call.kind is SpanKind.INTERNAL and parent_of(call) == span_id(span), tool
        assert call.attributes is not None and call.attributes["lazymcp.via"] == "run_code"
        assert (call.attributes["lazymcp.server"], call.attributes["lazymcp.outcome"]) == ("plain", "ok")
        [server_call] = named(spans, hop)
        assert server_call.kind is SpanKind.CLIENT and parent_of(server_call) == span_id(call)
        assert server_call.context is not None and f"{server_call.context.trace_id:032x}" == TRACE_ID
    assert all(parent_of(s) is not None for s in spans if s.name != "initialize")  # no call is a trace of its own


@pytest.mark.anyio
async def test_a_call_its_run_gave_up_on_ends_cancelled_under_the_run(tmp_path: Path) -> None:
    """The run's time limit stops a call that never returns: the call's span ends ``cancelled``, a child of
    the run's, which ends with the run's error; so does the call's hop to its server, the session still on."""
    with anyio.fail_after(TIMEOUT):
        async with traced_session(tmp_path, CodeLimits(seconds=2), faulty=FAULTY) as session:
            session.send(tool_call(6, "run_code", code="await faulty.hang()"))
            answer = await session.answer(6)
            assert answer["result"]["isError"], answer
            await until(lambda: bool(named(spans_of(session), "tools/call faulty__hang")), what="the call's span")
            await until(lambda: bool(named(spans_of(session), "tools/call hang")), what="the hop's span")
            spans = spans_of(session)
    [run] = named(spans, "tools/call run_code")
    [call] = named(spans, "tools/call faulty__hang")
    assert parent_of(call) == span_id(run)
    assert call.attributes is not None and call.attributes["error.type"] == "cancelled"
    [hop] = named(spans, "tools/call hang")
    assert parent_of(hop) == span_id(call)
    assert hop.attributes is not None and hop.attributes["error.type"] == "cancelled"
    assert run.attributes is not None and run.attributes["lazymcp.outcome"] == "tool_error"
    assert json.dumps(answer).count("--code-timeout") == 1
