"""Every feature of server-everything works through ``lazymcp proxy`` exactly as it does directly.

Each test connects two clients side by side to the reference server
``@modelcontextprotocol/server-everything`` (the ``everything_command`` fixture): one to the server
directly, one through ``python -m lazymcp proxy -- <server>``. It runs the same operations on both
and compares what comes back, and what the client's callbacks were asked (sampling, elicitation,
roots) and told (log messages, progress, notifications). The proxy answers tool listing itself and
must relay everything else unchanged, in both directions.

Only values that legitimately differ between two server processes are normalized, each where it is
done: the creation time the dynamic resources stamp into their text, random task and elicitation ids
and task timestamps, and the level the simulated logger picks at random. Every tool call here passes
the tool's schema: arguments that fail it are answered by the proxy itself on purpose (LT-14).

A client slow to answer the upstream's own elicitation does not count as an upstream hang.

Client modes: server-everything@2026.8.31 speaks only 2025-11-25. A client in mode "2026-07-28"
cannot reach it directly (there is nothing to compare, so that mode is skipped here); "auto" probes
``server/discover``, gets -32601 and falls back to ``initialize``: a few tests also run in "auto".
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import sys
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any, cast

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.session import ClientRequestContext
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel

from lazymcp.client import LazyClient, raw_request

from ..conftest import ERAS, EXT_ID, META_TOOL, SEARCH_TOOL, STOCK_STUB_KEYS

# ping, resources/subscribe and logging/setLevel are deprecated as of 2026-07-28; the SDK warns
# even in mode "legacy", where they are the protocol this server speaks.
pytestmark = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")

MODERN = "2026-07-28"
TEST_TIMEOUT = 30.0
"""Bound on one test's whole conversation: both servers' start, every request, every wait, shutdown."""

SKIP_MODERN = pytest.mark.skip(
    reason="server-everything@2026.8.31 speaks only 2025-11-25: a client in mode 2026-07-28 cannot reach it "
    "directly, so there is nothing to compare the proxy with"
)
PARITY_MODES = [pytest.param(mode, marks=SKIP_MODERN) if mode == MODERN else mode for mode in ERAS]
"""The client modes of ``ERAS``; the modern one is skipped (see the module docstring)."""
WITH_AUTO = [*PARITY_MODES, "auto"]

CONDITIONAL_TOOLS = 4
"""Tools server-everything registers after ``initialized`` for a client with sampling and elicitation
(form and URL): trigger-elicitation-request, trigger-url-elicitation, trigger-sampling-request,
simulate-research-query. Each sends ``notifications/tools/list_changed``. (get-roots-list joins them
for a client with roots; trigger-*-async need task capabilities the SDK client does not declare.)"""

ECHO = {"message": "hello through the proxy"}
ROOTS = [types.Root.model_validate({"uri": "file:///work/project", "name": "project"})]
MORE_ROOTS = [*ROOTS, types.Root.model_validate({"uri": "file:///work/other", "name": "other"})]
SAMPLED_TEXT = "A fixed answer from the test's model."
SAMPLED = types.CreateMessageResult(
    role="assistant",
    content=types.TextContent(type="text", text=SAMPLED_TEXT),
    model="fixed-test-model",
    stop_reason="endTurn",
)
FORM_ANSWER: dict[str, Any] = {"name": "Ada Lovelace", "check": True, "integer": 7, "interpretation": "programming"}
SUBSCRIBED_URI = "demo://resource/dynamic/text/1"
GZIP_SOURCE = "data:text/plain;base64," + base64.b64encode(b"hello, proxy").decode()

SIMULATED_LOGS = {
    ("debug", "Debug-level message"),
    ("info", "Info-level message"),
    ("notice", "Notice-level message"),
    ("warning", "Warning-level message"),
    ("error", "Error-level message"),
    ("critical", "Critical-level message"),
    ("alert", "Alert level-message"),
    ("emergency", "Emergency-level message"),
}
"""The eight messages toggle-simulated-logging picks from at random (server/logging.js)."""


# --- the two sides -----------------------------------------------------------------------------


def direct_target(command: list[str]) -> StdioServerParameters:
    return StdioServerParameters(command=command[0], args=command[1:])


def proxy_target(command: list[str], options: Sequence[str] = ()) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "lazymcp", "proxy", *options, "--", *command])


def dump(value: object) -> Any:
    """A result as its wire JSON (models by alias, absent fields left out); plain JSON as it is."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True, exclude_none=True)
    return value


def same(direct: object, proxied: object) -> bool:
    """Equal values with equal member order: what a byte-for-byte relay gives."""
    return json.dumps(dump(direct)) == json.dumps(dump(proxied))


class Peer:
    """One client's side: what its callbacks were asked, and what it was told."""

    def __init__(self, *, roots: bool = False) -> None:
        self.roots: list[types.Root] | None = list(ROOTS) if roots else None
        self.logs: list[dict[str, Any]] = []
        self.notifications: list[dict[str, Any]] = []
        self.sampling_requests: list[dict[str, Any]] = []
        self.elicitation_requests: list[dict[str, Any]] = []
        self.roots_requests = 0
        self.user_answers: anyio.Event | None = None
        """When set, elicitations are answered only once this event is set (a user taking their time)."""
        self._changed = anyio.Event()

    def _note(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    async def wait_until(self, condition: Callable[[], bool]) -> None:
        """Wait until ``condition()`` holds; callers bound the wait with ``anyio.fail_after``."""
        while not condition():
            await self._changed.wait()

    def client_kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "logging_callback": self.on_log,
            "message_handler": self.on_message,
            "sampling_callback": self.on_sampling,
            "elicitation_callback": self.on_elicitation,
        }
        if self.roots is not None:
            kwargs["list_roots_callback"] = self.on_list_roots
        return kwargs

    async def on_log(self, params: types.LoggingMessageNotificationParams) -> None:
        self.logs.append(dump(params))
        self._note()

    async def on_message(self, message: types.ServerNotification | Exception) -> None:
        self.notifications.append({"exception": repr(message)} if isinstance(message, Exception) else dump(message))
        self._note()

    async def on_sampling(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        self.sampling_requests.append(dump(params))
        self._note()
        return SAMPLED

    async def on_elicitation(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        self.elicitation_requests.append(dump(params))
        self._note()
        if self.user_answers is not None:
            await self.user_answers.wait()
        if isinstance(params, types.ElicitRequestURLParams):
            return types.ElicitResult(action="accept")
        return types.ElicitResult(action="accept", content=FORM_ANSWER)

    async def on_list_roots(self, context: ClientRequestContext) -> types.ListRootsResult:
        self.roots_requests += 1
        self._note()
        return types.ListRootsResult(roots=list(self.roots or []))

    def notified(self, method: str) -> list[dict[str, Any]]:
        return [n for n in self.notifications if n.get("method") == method]


@asynccontextmanager
async def side_by_side(
    command: list[str],
    mode: str,
    direct_peer: Peer,
    proxied_peer: Peer,
    *,
    lazy: bool = False,
    proxy_options: Sequence[str] = (),
) -> AsyncGenerator[tuple[Client, Any]]:
    """A stock client on the server directly, and a stock client (or ``LazyClient``) through the proxy.

    Both connect and disconnect at the same time, each held open by its own task. A client that
    offers roots is handed over once the server has fetched them (it asks 350 ms after
    initialization): a roots request still unanswered at shutdown keeps node running until it is
    killed, seconds later.
    """
    proxied_type: Any = LazyClient if lazy else Client
    sides = {
        "direct": (Client(direct_target(command), mode=mode, **direct_peer.client_kwargs()), direct_peer),
        "proxied": (
            proxied_type(proxy_target(command, proxy_options), mode=mode, **proxied_peer.client_kwargs()),
            proxied_peer,
        ),
    }
    opened: dict[str, Any] = {}
    ready = {side: anyio.Event() for side in sides}
    leave = anyio.Event()

    async def hold(side: str) -> None:
        manager, peer = sides[side]
        async with manager as client:
            if peer.roots is not None:
                await peer.wait_until(lambda: peer.roots_requests >= 1 and len(peer.logs) >= 1)
            opened[side] = client
            ready[side].set()
            await leave.wait()

    try:
        async with anyio.create_task_group() as tg:
            for side in sides:
                tg.start_soon(hold, side)
            for event in ready.values():
                await event.wait()
            try:
                yield opened["direct"], opened["proxied"]
            finally:
                leave.set()
    except BaseExceptionGroup as group:  # one failure (an assert in the test): show it plainly
        if len(group.exceptions) == 1 and isinstance(group.exceptions[0], Exception):
            raise group.exceptions[0] from None
        raise


async def outcome(call: Awaitable[object]) -> dict[str, Any]:
    """A request's result, or its JSON-RPC error, as JSON: errors are compared whole."""
    try:
        value = await call
    except MCPError as exc:
        return {"error": dump(exc.error)}
    return {"result": dump(value)}


async def on_both(direct: Any, proxied: Any, operation: Callable[[Any], Awaitable[object]]) -> tuple[Any, Any]:
    """Run one operation on the direct client, then on the proxied one."""
    return await outcome(operation(direct)), await outcome(operation(proxied))


async def tool(client: Any, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    """``tools/call`` as the raw result dict: no SDK validation or reshaping in between."""
    return await raw_request(client.session, "tools/call", {"name": name, "arguments": arguments or {}})


# --- normalizing what differs between two server processes ------------------------------------

CLOCK = re.compile(r"\b\d{1,2}:\d{2}:\d{2}(?:\s?[AP]M)?")


def without_clock(value: Any) -> Any:
    """Mask the creation time the dynamic resources stamp into their text (``toLocaleTimeString``),
    and into the text base64-encoded in their blob: two processes make them at different seconds."""
    if isinstance(value, dict):
        return {
            key: _blob_without_clock(item) if key == "blob" and isinstance(item, str) else without_clock(item)
            for key, item in cast(dict[str, Any], value).items()
        }
    if isinstance(value, list):
        return [without_clock(item) for item in cast(list[Any], value)]
    if isinstance(value, str):
        return CLOCK.sub("<time>", value)
    return value


def _blob_without_clock(blob: str) -> str:
    try:
        text = base64.b64decode(blob, validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        return blob  # binary data (gzip): no clock in it
    return base64.b64encode(CLOCK.sub("<time>", text).encode()).decode()


def masked(value: Any, keys: frozenset[str]) -> Any:
    """``value`` with the values of ``keys`` replaced, wherever they occur."""
    if isinstance(value, dict):
        return {
            key: "<varies>" if key in keys else masked(item, keys) for key, item in cast(dict[str, Any], value).items()
        }
    if isinstance(value, list):
        return [masked(item, keys) for item in cast(list[Any], value)]
    return value


TASK_VARIES = frozenset({"taskId", "createdAt", "lastUpdatedAt"})
"""Random task ids (hex) and wall-clock task timestamps: each server process makes its own."""
ELICITATION_VARIES = frozenset({"elicitationId"})
"""The prerequisite URL elicitation of the error path carries a random UUID."""


# --- the handshake, ping and list_changed --------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("mode", WITH_AUTO)
async def test_handshake_ping_and_list_changed_match_the_direct_server(
    everything_command: list[str], mode: str
) -> None:
    direct_peer, proxied_peer = Peer(), Peer()
    with anyio.fail_after(TEST_TIMEOUT):
        async with side_by_side(everything_command, mode, direct_peer, proxied_peer) as (direct, proxied):
            assert proxied.protocol_version == direct.protocol_version == "2025-11-25"
            assert same(direct.server_info, proxied.server_info)
            assert proxied.instructions == direct.instructions
            capabilities = dump(proxied.server_capabilities)
            assert EXT_ID in capabilities.pop("extensions")  # the proxy's one addition (LT-02)
            assert capabilities == dump(direct.server_capabilities)

            pongs = await on_both(direct, proxied, lambda c: c.send_ping())
            assert pongs[0] == pongs[1] == {"result": {}}

            # The tools registered after initialization announce themselves; through the proxy the
            # notifications arrive once its catalog has caught up, every one of them.
            def changes(peer: Peer) -> list[dict[str, Any]]:
                return peer.notified("notifications/tools/list_changed")

            for peer in (direct_peer, proxied_peer):
                await peer.wait_until(lambda peer=peer: len(changes(peer)) >= CONDITIONAL_TOOLS)
            await on_both(direct, proxied, lambda c: c.send_ping())
            assert changes(direct_peer) == changes(proxied_peer)
            assert len(changes(proxied_peer)) == CONDITIONAL_TOOLS


# --- resources, prompts, completions -------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("mode", PARITY_MODES)
async def test_resources_prompts_and_completions_match_the_direct_server(
    everything_command: list[str], mode: str
) -> None:
    prompt_calls: list[tuple[str, dict[str, str] | None]] = [
        ("simple-prompt", None),
        ("args-prompt", {"city": "Lyon"}),
        ("args-prompt", {"city": "Austin", "state": "Texas"}),
        ("completable-prompt", {"department": "Sales", "name": "Eve"}),
        ("resource-prompt", {"resourceType": "Text", "resourceId": "3"}),
        ("resource-prompt", {"resourceType": "Blob", "resourceId": "4"}),
    ]
    department = types.PromptReference(type="ref/prompt", name="completable-prompt")
    resource_prompt = types.PromptReference(type="ref/prompt", name="resource-prompt")
    text_template = types.ResourceTemplateReference(
        type="ref/resource", uri="demo://resource/dynamic/text/{resourceId}"
    )
    completions: list[tuple[Any, dict[str, str], dict[str, str] | None, list[str]]] = [
        (department, {"name": "department", "value": "S"}, None, ["Sales", "Support"]),
        (department, {"name": "name", "value": ""}, {"department": "Engineering"}, ["Alice", "Bob", "Charlie"]),
        (department, {"name": "name", "value": "G"}, {"department": "Marketing"}, ["Grace"]),
        (resource_prompt, {"name": "resourceType", "value": "B"}, None, ["Blob"]),
        (text_template, {"name": "resourceId", "value": "12"}, None, ["12"]),
        (text_template, {"name": "resourceId", "value": "x"}, None, []),
    ]
    direct_peer, proxied_peer = Peer(), Peer()
    with anyio.fail_after(TEST_TIMEOUT):
        async with side_by_side(everything_command, mode, direct_peer, proxied_peer) as (direct, proxied):
            # resources/list, resources/templates/list, resources/read
            listed = await on_both(direct, proxied, lambda c: raw_request(c.session, "resources/list"))
            assert same(*listed)
            resources = listed[0]["result"]["resources"]
            assert resources  # the static documents
            assert same(*await on_both(direct, proxied, lambda c: c.list_resources()))
            templates = await on_both(direct, proxied, lambda c: raw_request(c.session, "resources/templates/list"))
            assert same(*templates)
            assert len(templates[0]["result"]["resourceTemplates"]) == 2
            assert same(*await on_both(direct, proxied, lambda c: c.list_resource_templates()))
            for resource in resources:
                uri = resource["uri"]
                assert same(*await on_both(direct, proxied, lambda c, uri=uri: c.read_resource(uri)))
            for uri in ("demo://resource/dynamic/text/7", "demo://resource/dynamic/blob/8"):
                reads = await on_both(
                    direct, proxied, lambda c, uri=uri: raw_request(c.session, "resources/read", {"uri": uri})
                )
                assert "result" in reads[0]
                assert same(without_clock(reads[0]), without_clock(reads[1]))

            # prompts/list, prompts/get with arguments
            prompts = await on_both(direct, proxied, lambda c: raw_request(c.session, "prompts/list"))
            assert same(*prompts)
            assert [p["name"] for p in prompts[0]["result"]["prompts"]] == [
                "simple-prompt",
                "args-prompt",
                "completable-prompt",
                "resource-prompt",
            ]
            assert same(*await on_both(direct, proxied, lambda c: c.list_prompts()))
            for name, arguments in prompt_calls:
                typed = await on_both(
                    direct, proxied, lambda c, name=name, arguments=arguments: c.get_prompt(name, arguments)
                )
                assert "result" in typed[0]
                assert same(without_clock(typed[0]), without_clock(typed[1]))
                params = {"name": name, "arguments": arguments or {}}
                raw = await on_both(
                    direct, proxied, lambda c, params=params: raw_request(c.session, "prompts/get", params)
                )
                assert same(without_clock(raw[0]), without_clock(raw[1]))

            # completion/complete of prompt and resource-template arguments
            for ref, argument, context, expected in completions:
                done = await on_both(
                    direct,
                    proxied,
                    lambda c, ref=ref, argument=argument, context=context: c.complete(ref, argument, context),
                )
                assert done[0]["result"]["completion"]["values"] == expected
                assert same(*done)


# --- logging, subscriptions, progress, cancellation ----------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("mode", PARITY_MODES)
async def test_log_level_log_messages_and_resource_updates_reach_the_client_as_directly(
    everything_command: list[str], mode: str
) -> None:
    # The clients offer no roots: no "Roots updated" message arrives at a time of the server's choosing.
    direct_peer, proxied_peer = Peer(), Peer()
    peers = (direct_peer, proxied_peer)
    with anyio.fail_after(TEST_TIMEOUT):
        async with side_by_side(everything_command, mode, direct_peer, proxied_peer) as (direct, proxied):
            assert same(*await on_both(direct, proxied, lambda c: c.set_logging_level("warning")))
            subscribed = await on_both(direct, proxied, lambda c: c.subscribe_resource(SUBSCRIBED_URI))
            assert subscribed[0] == subscribed[1] == {"result": {}}  # acknowledged by an info log: filtered out
            assert same(*await on_both(direct, proxied, lambda c: c.set_logging_level("info")))

            started = await on_both(direct, proxied, lambda c: tool(c, "toggle-subscriber-updates"))
            assert same(*started)
            for peer in peers:  # the first update is sent at once
                await peer.wait_until(lambda peer=peer: bool(peer.notified("notifications/resources/updated")))
            stopped = await on_both(direct, proxied, lambda c: tool(c, "toggle-subscriber-updates"))
            assert same(*stopped)

            unsubscribed = await on_both(direct, proxied, lambda c: c.unsubscribe_resource(SUBSCRIBED_URI))
            assert unsubscribed[0] == unsubscribed[1] == {"result": {}}  # acknowledged by an info log: sent
            for peer in peers:
                await peer.wait_until(lambda peer=peer: len(peer.logs) >= 1)
            await on_both(direct, proxied, lambda c: c.send_ping())
            assert len(direct_peer.logs) == 1  # the levels set through the proxy reached the server
            assert direct_peer.logs == proxied_peer.logs
            assert direct_peer.logs[0]["level"] == "info"
            updates = [peer.notified("notifications/resources/updated")[0] for peer in peers]
            assert updates[0] == {"method": "notifications/resources/updated", "params": {"uri": SUBSCRIBED_URI}}
            assert updates[0] == updates[1]

            assert same(*await on_both(direct, proxied, lambda c: c.set_logging_level("debug")))
            started = await on_both(direct, proxied, lambda c: tool(c, "toggle-simulated-logging"))
            assert same(*started)
            for peer in peers:  # the first simulated message is sent at once
                await peer.wait_until(lambda peer=peer: len(peer.logs) >= 2)
            stopped = await on_both(direct, proxied, lambda c: tool(c, "toggle-simulated-logging"))
            assert same(*stopped)
    # The simulated logger picks one of eight messages at random: the two processes differ in which
    # one, so each side must have got one of the eight, in the same shape.
    simulated = [peer.logs[1] for peer in peers]
    assert all((log["level"], log["data"]) in SIMULATED_LOGS for log in simulated)
    assert list(simulated[0]) == list(simulated[1])


@pytest.mark.anyio
@pytest.mark.parametrize("mode", PARITY_MODES)
async def test_progress_and_cancellation_of_a_long_call_work_as_directly(
    everything_command: list[str], mode: str
) -> None:
    direct_peer, proxied_peer = Peer(), Peer()
    reported: dict[str, list[tuple[float, float | None, str | None]]] = {"direct": [], "proxied": []}
    results: dict[str, Any] = {}

    async def run(side: str, client: Client) -> None:
        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            reported[side].append((progress, total, message))

        arguments = {"duration": 0.3, "steps": 3}
        result = await client.call_tool("trigger-long-running-operation", arguments, progress_callback=on_progress)
        results[side] = dump(result)

    async def cancel_midway(client: Client) -> None:
        """Start a long operation, and cancel it (an anyio cancel scope) once it reports progress."""
        first_report = anyio.Event()

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            first_report.set()

        async def call() -> None:
            arguments = {"duration": 0.6, "steps": 6}
            await client.call_tool("trigger-long-running-operation", arguments, progress_callback=on_progress)
            pytest.fail("the cancelled call returned")

        async with anyio.create_task_group() as tg:
            tg.start_soon(call)
            await first_report.wait()
            tg.cancel_scope.cancel()

    with anyio.fail_after(TEST_TIMEOUT):
        async with side_by_side(everything_command, mode, direct_peer, proxied_peer) as (direct, proxied):
            async with anyio.create_task_group() as tg:
                tg.start_soon(run, "direct", direct)
                tg.start_soon(run, "proxied", proxied)

            await cancel_midway(direct)
            await cancel_midway(proxied)
            pongs = await on_both(direct, proxied, lambda c: c.send_ping())
            echoes = await on_both(direct, proxied, lambda c: c.call_tool("echo", ECHO))
    assert reported["direct"] == [(1.0, 3.0, None), (2.0, 3.0, None), (3.0, 3.0, None)]
    assert reported["proxied"] == reported["direct"]
    assert same(results["direct"], results["proxied"])
    # After the cancellation the proxied session still answers, like the direct one.
    assert pongs[0] == pongs[1] == {"result": {}}
    assert "result" in echoes[0]
    assert same(*echoes)
    assert not [n for n in proxied_peer.notifications if "exception" in n]


# --- requests the server sends the client --------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("mode", PARITY_MODES)
async def test_sampling_elicitation_and_roots_requests_are_answered_by_the_client_identically(
    everything_command: list[str], mode: str
) -> None:
    direct_peer, proxied_peer = Peer(roots=True), Peer(roots=True)
    peers = (direct_peer, proxied_peer)
    sampling = {"prompt": "Name a prime number.", "maxTokens": 42}
    url_request = {"url": "https://example.com/consent", "elicitationId": "fixed-elicitation"}
    url_error = {"url": "https://example.com/authorize", "elicitationId": "fixed-error", "errorPath": True}
    with anyio.fail_after(TEST_TIMEOUT):
        async with side_by_side(everything_command, mode, direct_peer, proxied_peer) as (direct, proxied):
            # sampling/createMessage: the client's fixed answer, embedded in the tool's result
            sampled_raw = await on_both(direct, proxied, lambda c: tool(c, "trigger-sampling-request", sampling))
            sampled = await on_both(direct, proxied, lambda c: c.call_tool("trigger-sampling-request", sampling))

            # elicitation/create, form and URL mode, and the URL error path (-32042) with its retry
            form = await on_both(direct, proxied, lambda c: tool(c, "trigger-elicitation-request"))
            url = await on_both(direct, proxied, lambda c: tool(c, "trigger-url-elicitation", url_request))
            refused = await on_both(direct, proxied, lambda c: tool(c, "trigger-url-elicitation", url_error))
            retried = await on_both(direct, proxied, lambda c: tool(c, "trigger-url-elicitation", url_error))

            # roots/list: asked once after initialization (side_by_side waited for it), then again
            # after notifications/roots/list_changed from the client
            first_roots = await on_both(direct, proxied, lambda c: tool(c, "get-roots-list"))
            for peer in peers:
                peer.roots = list(MORE_ROOTS)
            await on_both(direct, proxied, lambda c: c.send_roots_list_changed())
            for peer in peers:
                await peer.wait_until(lambda peer=peer: peer.roots_requests == 2 and len(peer.logs) == 2)
            second_roots = await on_both(direct, proxied, lambda c: tool(c, "get-roots-list"))

    assert same(*sampled_raw)
    assert same(*sampled)
    assert SAMPLED_TEXT in sampled_raw[0]["result"]["content"][0]["text"]
    assert len(direct_peer.sampling_requests) == 2
    assert direct_peer.sampling_requests == proxied_peer.sampling_requests

    assert same(*form)
    assert FORM_ANSWER["name"] in json.dumps(form[0])  # the client's answer, reported back
    assert same(*url)
    assert refused[0]["error"]["code"] == -32042
    # The prerequisite elicitation of the error path carries a random UUID.
    assert same(masked(refused[0], ELICITATION_VARIES), masked(refused[1], ELICITATION_VARIES))
    assert same(*retried)  # the retry proceeds by the request path
    assert [r["mode"] for r in direct_peer.elicitation_requests] == ["form", "url", "url"]
    assert direct_peer.elicitation_requests == proxied_peer.elicitation_requests

    assert same(*first_roots)
    assert same(*second_roots)
    assert str(ROOTS[0].uri) in json.dumps(first_roots[0])
    assert str(MORE_ROOTS[1].uri) in json.dumps(second_roots[0])
    assert direct_peer.roots_requests == proxied_peer.roots_requests == 2
    assert direct_peer.logs == proxied_peer.logs  # "Roots updated" twice


@pytest.mark.anyio
async def test_an_elicitation_the_user_answers_slowly_does_not_count_as_an_upstream_hang(
    everything_command: list[str],
) -> None:
    """The proxy runs with ``--timeout 6``; its client's user answers the elicitation after 6.5 s.

    The 6.5 s are measured by a 6.5 s operation on the direct server, not by a sleep. Directly, the
    server simply waits for the answer (server-everything allows ten minutes). The timeout also bounds
    the server's start, which it must stay above on a loaded machine.
    """
    direct_peer, proxied_peer = Peer(), Peer()
    user_answers = proxied_peer.user_answers = anyio.Event()
    answered: dict[str, Any] = {}

    async def slow_user(direct: Client) -> None:
        await direct.call_tool("trigger-long-running-operation", {"duration": 6.5, "steps": 1})
        user_answers.set()

    async def elicit(side: str, client: Client) -> None:
        answered[side] = await outcome(tool(client, "trigger-elicitation-request"))

    with anyio.fail_after(TEST_TIMEOUT):
        async with side_by_side(
            everything_command, "legacy", direct_peer, proxied_peer, proxy_options=["--timeout", "6"]
        ) as (direct, proxied):
            async with anyio.create_task_group() as tg:
                tg.start_soon(slow_user, direct)
                tg.start_soon(elicit, "direct", direct)
                tg.start_soon(elicit, "proxied", proxied)
    assert "result" in answered["direct"]
    assert same(answered["direct"], answered["proxied"])


# --- tools, tasks and errors ---------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("mode", PARITY_MODES)
async def test_tool_results_and_upstream_errors_pass_through_unchanged(
    everything_command: list[str], mode: str
) -> None:
    calls: list[tuple[str, dict[str, Any]]] = [
        ("echo", ECHO),
        ("get-sum", {"a": 2, "b": 3.5}),
        ("get-annotated-message", {"messageType": "error", "includeImage": True}),
        ("get-annotated-message", {"messageType": "debug"}),
        ("get-tiny-image", {}),
        ("get-resource-links", {"count": 4}),
        ("get-resource-reference", {"resourceType": "Text", "resourceId": 2}),
        ("get-resource-reference", {"resourceType": "Blob", "resourceId": 5}),
        ("get-structured-content", {"location": "Chicago"}),
        ("gzip-file-as-resource", {"name": "inline.gz", "data": GZIP_SOURCE, "outputType": "resource"}),
        ("gzip-file-as-resource", {"name": "linked.gz", "data": GZIP_SOURCE}),
    ]
    direct_peer, proxied_peer = Peer(), Peer()
    with anyio.fail_after(TEST_TIMEOUT):
        async with side_by_side(everything_command, mode, direct_peer, proxied_peer) as (direct, proxied):
            for name, arguments in calls:
                raw = await on_both(direct, proxied, lambda c, name=name, arguments=arguments: tool(c, name, arguments))
                assert raw[0]["result"].get("isError") is not True, name
                assert same(without_clock(raw[0]), without_clock(raw[1])), name
            structured = await on_both(
                direct, proxied, lambda c: c.call_tool("get-structured-content", {"location": "Los Angeles"})
            )
            assert "structuredContent" in structured[0]["result"]
            assert same(*structured)

            # The gzip tool registered session resources: announced, listed and readable the same way.
            for peer in (direct_peer, proxied_peer):
                await peer.wait_until(lambda peer=peer: len(peer.notified("notifications/resources/list_changed")) >= 2)
            listed = await on_both(direct, proxied, lambda c: raw_request(c.session, "resources/list"))
            assert same(*listed)
            linked = await on_both(direct, proxied, lambda c: c.read_resource("demo://resource/session/linked.gz"))
            assert "result" in linked[0]
            assert same(*linked)

            # Errors, from the upstream to the client unchanged. An unknown tool: server-everything
            # answers with an isError result.
            unknown_raw = await on_both(direct, proxied, lambda c: tool(c, "no-such-tool", {"x": 1}))
            unknown_typed = await on_both(direct, proxied, lambda c: c.call_tool("no-such-tool", {}))
            # simulate-research-query has execution.taskSupport "required": called without a task.
            taskless = await on_both(direct, proxied, lambda c: tool(c, "simulate-research-query", {"topic": "go"}))
            errors = [
                await on_both(direct, proxied, lambda c: raw_request(c.session, "no/such-method")),
                await on_both(direct, proxied, lambda c: c.read_resource("demo://resource/no-such")),
                await on_both(direct, proxied, lambda c: c.get_prompt("no-such-prompt")),
                await on_both(
                    direct,
                    proxied,
                    lambda c: c.get_prompt("resource-prompt", {"resourceType": "Text", "resourceId": "0"}),
                ),
                await on_both(direct, proxied, lambda c: raw_request(c.session, "tasks/get", {"taskId": "none"})),
            ]
    assert unknown_raw[0]["result"]["isError"] is True
    assert same(*unknown_raw)
    assert same(*unknown_typed)
    assert same(*taskless)
    assert errors[0][0]["error"]["code"] == -32601
    for pair in errors:
        assert "error" in pair[0]
        assert same(*pair)


@pytest.mark.anyio
@pytest.mark.parametrize("mode", PARITY_MODES)
async def test_task_augmented_calls_run_to_the_same_results(everything_command: list[str], mode: str) -> None:
    """simulate-research-query as a task: create, get, cancel, the result and the list, with the
    elicitation an ambiguous query sends while the client waits on ``tasks/result``."""
    direct_peer, proxied_peer = Peer(), Peer()
    seen: dict[str, list[Any]] = {}

    async def run(side: str, client: Client) -> None:
        async def request(method: str, params: dict[str, Any] | None = None) -> Any:
            return await outcome(raw_request(client.session, method, params))

        def research(topic: str, **arguments: Any) -> dict[str, Any]:
            return {
                "name": "simulate-research-query",
                "arguments": {"topic": topic, **arguments},
                "task": {"ttl": 60000},
            }

        created = await request("tools/call", research("python", ambiguous=True))
        doomed = await request("tools/call", research("rust"))
        task_id = created["result"]["task"]["taskId"]
        doomed_id = doomed["result"]["task"]["taskId"]
        got = await request("tasks/get", {"taskId": task_id})
        cancelled = await request("tasks/cancel", {"taskId": doomed_id})
        final = await request("tasks/result", {"taskId": task_id})
        done = await request("tasks/get", {"taskId": task_id})
        listed = await request("tasks/list")
        seen[side] = [created, doomed, got, cancelled, final, done, listed]

    with anyio.fail_after(TEST_TIMEOUT):
        async with side_by_side(everything_command, mode, direct_peer, proxied_peer) as (direct, proxied):
            async with anyio.create_task_group() as tg:
                tg.start_soon(run, "direct", direct)
                tg.start_soon(run, "proxied", proxied)
    direct_seen, proxied_seen = seen["direct"], seen["proxied"]
    assert all("result" in answer for answer in direct_seen)
    assert direct_seen[4]["result"]["content"]  # the report
    assert direct_seen[5]["result"]["status"] == "completed"
    assert same(masked(direct_seen, TASK_VARIES), masked(proxied_seen, TASK_VARIES))
    assert len(direct_peer.elicitation_requests) == 1  # the clarification, tied to the task
    assert same(
        masked(direct_peer.elicitation_requests, TASK_VARIES), masked(proxied_peer.elicitation_requests, TASK_VARIES)
    )


@pytest.mark.anyio
@pytest.mark.parametrize("mode", PARITY_MODES)
async def test_upstream_runs_with_the_environment_the_proxy_was_given(everything_command: list[str], mode: str) -> None:
    direct_peer, proxied_peer = Peer(), Peer()
    with anyio.fail_after(TEST_TIMEOUT):
        async with side_by_side(everything_command, mode, direct_peer, proxied_peer) as (direct, proxied):
            environments = await on_both(direct, proxied, lambda c: tool(c, "get-env"))
    assert "result" in environments[0]
    assert same(*environments)


# --- the lazy side -------------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.requirement("LT-07")
@pytest.mark.parametrize("mode", PARITY_MODES)
async def test_stock_client_gets_valid_stubs_and_describe_tools_returns_the_direct_definitions(
    everything_command: list[str], mode: str
) -> None:
    direct_peer, proxied_peer = Peer(), Peer()
    with anyio.fail_after(TEST_TIMEOUT):
        async with side_by_side(everything_command, mode, direct_peer, proxied_peer) as (direct, proxied):
            full = (await raw_request(direct.session, "tools/list"))["tools"]
            names = [t["name"] for t in full]
            assert len(names) == 12 + CONDITIONAL_TOOLS

            listing = await proxied.list_tools()  # validated by the stock SDK: the stubs are valid MCP
            raw = (await raw_request(proxied.session, "tools/list"))["tools"]
            metas = [META_TOOL, SEARCH_TOOL, "invoke_tool"]
            assert [t.name for t in listing.tools] == [t["name"] for t in raw] == [*metas, *names]
            assert raw[0]["inputSchema"]["required"] == ["names"]  # the meta-tools, in full
            assert raw[1]["inputSchema"]["required"] == ["query"]
            assert raw[2]["inputSchema"]["required"] == ["name"]
            for stub in raw[len(metas) :]:
                assert stub["inputSchema"] == {"type": "object", "properties": {}}
                assert set(stub) <= STOCK_STUB_KEYS

            described = await proxied.call_tool(META_TOOL, {"names": names})
            assert described.is_error is not True
            text = described.content[0]
            assert isinstance(text, types.TextContent)
            payload = json.loads(text.text)
            assert json.dumps(payload["tools"]) == json.dumps(full)  # same definitions, same member order
            assert payload["unknown"] == []

            # A tool the stock client knows only from its stub runs as it does directly.
            echoes = await on_both(direct, proxied, lambda c: c.call_tool("echo", ECHO))
            assert "result" in echoes[0]
            assert same(*echoes)


@pytest.mark.anyio
@pytest.mark.requirement("LT-05")
@pytest.mark.requirement("LT-12")
@pytest.mark.parametrize("mode", WITH_AUTO)
async def test_lazy_client_full_listing_and_describes_equal_the_direct_listing(
    everything_command: list[str], mode: str
) -> None:
    direct_peer, proxied_peer = Peer(), Peer()
    with anyio.fail_after(TEST_TIMEOUT):
        async with side_by_side(everything_command, mode, direct_peer, proxied_peer, lazy=True) as (direct, lazy):
            assert lazy.server_supports_lazy
            assert lazy.client.protocol_version == direct.protocol_version
            full = (await raw_request(direct.session, "tools/list"))["tools"]
            names = [t["name"] for t in full]

            assert json.dumps(await lazy.list_full()) == json.dumps(full)
            for name, definition in zip(names, full, strict=True):
                assert json.dumps(await lazy.describe(name)) == json.dumps(definition)
            batch, unknown = await lazy.describe_batch([*names, "no-such-tool", names[0]])
            assert json.dumps(batch) == json.dumps(full)
            assert unknown == ["no-such-tool"]
            assert [stub["name"] for stub in await lazy.list_stubs()] == names

            called = await lazy.call_tool("echo", ECHO)
            assert same(await direct.call_tool("echo", ECHO), called)
