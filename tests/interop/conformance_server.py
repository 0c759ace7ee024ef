"""The fixture server of the official MCP conformance suite (``@modelcontextprotocol/conformance``).

An ``MCPServer`` built with the Python SDK that implements what the suite's server scenarios call
(read from the package, version pinned in ``tests/interop/npm.py``): its test tools, resources,
resource template, prompts, completion, ``logging/setLevel`` and resource subscriptions. Each
scenario's expectation is quoted next to what implements it.

    python conformance_server.py [--plain] [--stock-default lazy|eager] [--http HOST:PORT] [--record FILE]

By default the server is made lazy with ``lazify(server)`` (default options); ``--plain`` leaves
lazymcp out, for ``lazymcp proxy`` to wrap. ``--stock-default eager`` is a deviation from the
default mode, used only where the README of this folder says so. Without ``--http`` it serves stdio;
with it, stateful streamable HTTP at ``http://HOST:PORT/mcp`` with an in-memory event store, so
that the SSE polling scenario (SEP-1699) can close a stream mid-call and resume it. ``--record``
appends each ``initialize`` request's params to a file (one JSON line each): what the client declared.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import sys
import warnings
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer, UserMessage
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.streamable_http import EventCallback, EventMessage, EventStore
from mcp.shared.exceptions import MCPDeprecationWarning

NAME = "lazymcp-conformance-fixture"

# A 1x1 PNG and a minimal WAV file.
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
WAV = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="

JSON_SCHEMA_2020_12 = "https://json-schema.org/draft/2020-12/schema"
JSON_SCHEMA_TOOL_INPUT: dict[str, Any] = {
    "$schema": JSON_SCHEMA_2020_12,
    "type": "object",
    "$defs": {
        "address": {
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
    "additionalProperties": False,
}
"""json-schema-2020-12: ``$schema``, ``$defs`` and ``additionalProperties`` must survive ``tools/list``."""

SEP1034_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "User name", "default": "John Doe"},
        "age": {"type": "integer", "description": "User age", "default": 30},
        "score": {"type": "number", "description": "User score", "default": 95.5},
        "status": {
            "type": "string",
            "description": "User status",
            "enum": ["active", "inactive", "pending"],
            "default": "active",
        },
        "verified": {"type": "boolean", "description": "Verification status", "default": True},
    },
}
"""elicitation-sep1034-defaults: a default for every primitive type."""

SEP1330_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
        "titledSingle": {
            "type": "string",
            "oneOf": [
                {"const": "value1", "title": "First Option"},
                {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"},
            ],
        },
        "legacyEnum": {
            "type": "string",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"],
        },
        "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
        "titledMulti": {
            "type": "array",
            "items": {
                "anyOf": [
                    {"const": "value1", "title": "First Choice"},
                    {"const": "value2", "title": "Second Choice"},
                    {"const": "value3", "title": "Third Choice"},
                ]
            },
        },
    },
}
"""elicitation-sep1330-enums: the five enum shapes."""

ELICITATION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "username": {"type": "string", "description": "User's response"},
        "email": {"type": "string", "description": "User's email address"},
    },
    "required": ["username", "email"],
}


def text(value: str) -> types.TextContent:
    return types.TextContent(type="text", text=value)


def result(*content: types.ContentBlock, is_error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=list(content), is_error=is_error)


def build_server(record: Path | None = None) -> MCPServer:
    """The fixture, without lazymcp; ``record`` gets each ``initialize`` request's params."""

    async def record_initialize(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if record is not None and ctx.method == "initialize":
            with record.open("a") as file:
                file.write(json.dumps(ctx.params) + "\n")
        return await call_next(ctx)

    server = MCPServer(NAME, version="1.0.0", log_level="WARNING", middleware=[record_initialize])
    subscriptions: set[str] = set()

    # --- tools ---------------------------------------------------------------------------------

    @server.tool(description="Returns simple text content.")
    def test_simple_text() -> types.CallToolResult:
        return result(text("This is a simple text response for testing."))

    @server.tool(description="Returns an image (a 1x1 PNG).")
    def test_image_content() -> types.CallToolResult:
        return result(types.ImageContent(type="image", data=PNG, mime_type="image/png"))

    @server.tool(description="Returns audio (a minimal WAV file).")
    def test_audio_content() -> types.CallToolResult:
        return result(types.AudioContent(type="audio", data=WAV, mime_type="audio/wav"))

    @server.tool(description="Returns an embedded text resource.")
    def test_embedded_resource() -> types.CallToolResult:
        return result(
            types.EmbeddedResource(
                type="resource",
                resource=types.TextResourceContents(
                    uri="test://embedded-resource", mime_type="text/plain", text="This is an embedded resource content."
                ),
            )
        )

    @server.tool(description="Returns text, an image and an embedded resource.")
    def test_multiple_content_types() -> types.CallToolResult:
        return result(
            text("Multiple content types test:"),
            types.ImageContent(type="image", data=PNG, mime_type="image/png"),
            types.EmbeddedResource(
                type="resource",
                resource=types.TextResourceContents(
                    uri="test://mixed-content-resource",
                    mime_type="application/json",
                    text=json.dumps({"test": "data", "value": 123}),
                ),
            ),
        )

    @server.tool(description="Sends three info log messages while it runs, 50 ms apart.")
    async def test_tool_with_logging(ctx: Context) -> types.CallToolResult:
        await ctx.info("Tool execution started")  # pyright: ignore[reportDeprecated]
        await asyncio.sleep(0.05)
        await ctx.info("Tool processing data")  # pyright: ignore[reportDeprecated]
        await asyncio.sleep(0.05)
        await ctx.info("Tool execution completed")  # pyright: ignore[reportDeprecated]
        return result(text("Tool with logging executed successfully"))

    @server.tool(description="Reports progress 0, 50 and 100 of 100, 50 ms apart.")
    async def test_tool_with_progress(ctx: Context) -> types.CallToolResult:
        await ctx.report_progress(0, 100)
        await asyncio.sleep(0.05)
        await ctx.report_progress(50, 100)
        await asyncio.sleep(0.05)
        await ctx.report_progress(100, 100)
        return result(text("Tool with progress executed successfully"))

    @server.tool(description="Always fails.")
    def test_error_handling() -> types.CallToolResult:
        raise ToolError("This tool intentionally returns an error for testing")

    @server.tool(description="Asks the client's model to answer a prompt (sampling/createMessage).")
    async def test_sampling(prompt: str, ctx: Context) -> types.CallToolResult:
        answer = await ctx.session.create_message(  # pyright: ignore[reportDeprecated]
            [types.SamplingMessage(role="user", content=text(prompt))],
            max_tokens=100,
            related_request_id=ctx.request_context.request_id,
        )
        content = answer.content
        said = content.text if isinstance(content, types.TextContent) else f"<{content.type}>"
        return result(text(f"LLM response: {said}"))

    @server.tool(description="Asks the user for a username and an email (elicitation/create).")
    async def test_elicitation(message: str, ctx: Context) -> types.CallToolResult:
        answer = await ctx.session.elicit_form(
            message, ELICITATION_SCHEMA, related_request_id=ctx.request_context.request_id
        )
        return result(text(f"User response: action={answer.action}, content={json.dumps(answer.content or {})}"))

    @server.tool(description="Elicits a form whose fields all have defaults (SEP-1034).")
    async def test_elicitation_sep1034_defaults(ctx: Context) -> types.CallToolResult:
        answer = await ctx.session.elicit_form(
            "Please provide user information", SEP1034_SCHEMA, related_request_id=ctx.request_context.request_id
        )
        return result(text(f"Elicitation completed: action={answer.action}, content={json.dumps(answer.content)}"))

    @server.tool(description="Elicits a form with each enum shape of SEP-1330.")
    async def test_elicitation_sep1330_enums(ctx: Context) -> types.CallToolResult:
        answer = await ctx.session.elicit_form(
            "Please select values using different enum schema types",
            SEP1330_SCHEMA,
            related_request_id=ctx.request_context.request_id,
        )
        return result(text(f"Elicitation completed: action={answer.action}, content={json.dumps(answer.content)}"))

    @server.tool(description="Closes its SSE stream mid-call, then answers on the resumed stream (SEP-1699).")
    async def test_reconnection(ctx: Context) -> types.CallToolResult:
        await ctx.info("Before disconnect")  # pyright: ignore[reportDeprecated]
        await ctx.close_sse_stream()  # a no-op without an event store (stdio, and behind the proxy)
        await asyncio.sleep(0.2)
        await ctx.info("After reconnect")  # pyright: ignore[reportDeprecated]
        return result(text("Reconnection test completed"))

    @server.tool(description="Tool with JSON Schema 2020-12 features")
    def json_schema_2020_12_tool(name: str | None = None, address: dict[str, Any] | None = None) -> str:
        return json.dumps({"name": name, "address": address})

    # The schema exactly as the scenario gives it (the SDK would derive its own from the signature).
    registered = server._tool_manager.get_tool("json_schema_2020_12_tool")  # pyright: ignore[reportPrivateUsage]
    assert registered is not None
    registered.parameters = JSON_SCHEMA_TOOL_INPUT

    # --- resources -----------------------------------------------------------------------------

    @server.resource(
        "test://static-text", name="static-text", description="A static text resource.", mime_type="text/plain"
    )
    def static_text() -> str:
        return "This is the content of the static text resource."

    @server.resource(
        "test://static-binary", name="static-binary", description="A static binary resource.", mime_type="image/png"
    )
    def static_binary() -> bytes:
        return base64.b64decode(PNG)

    @server.resource(
        "test://template/{id}/data",
        name="template",
        description="A resource template: the id is substituted.",
        mime_type="application/json",
    )
    def template(id: str) -> str:
        return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})

    @server.resource(
        "test://watched-resource", name="watched", description="A resource to subscribe to.", mime_type="text/plain"
    )
    def watched() -> str:
        return "Watched resource content"

    async def subscribe(ctx: Any, params: types.SubscribeRequestParams) -> types.EmptyResult:
        subscriptions.add(str(params.uri))
        return types.EmptyResult()

    async def unsubscribe(ctx: Any, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
        subscriptions.discard(str(params.uri))
        return types.EmptyResult()

    async def set_level(ctx: Any, params: types.SetLevelRequestParams) -> types.EmptyResult:
        return types.EmptyResult()

    # MCPServer has no public hook for these three: they go on its lowlevel server.
    lowlevel = server._lowlevel_server  # pyright: ignore[reportPrivateUsage]
    lowlevel.add_request_handler("resources/subscribe", types.SubscribeRequestParams, subscribe)
    lowlevel.add_request_handler("resources/unsubscribe", types.UnsubscribeRequestParams, unsubscribe)
    lowlevel.add_request_handler("logging/setLevel", types.SetLevelRequestParams, set_level)

    # --- prompts and completion ----------------------------------------------------------------

    @server.prompt(description="A simple prompt without arguments.")
    def test_simple_prompt() -> list[UserMessage]:
        return [UserMessage("This is a simple prompt for testing.")]

    @server.prompt(description="A prompt with two required arguments.")
    def test_prompt_with_arguments(arg1: str, arg2: str) -> list[UserMessage]:
        return [UserMessage(f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'")]

    @server.prompt(description="A prompt that embeds a resource.")
    def test_prompt_with_embedded_resource(resourceUri: str) -> list[UserMessage]:
        embedded = types.EmbeddedResource(
            type="resource",
            resource=types.TextResourceContents(
                uri=resourceUri, mime_type="text/plain", text="Embedded resource content for testing."
            ),
        )
        return [UserMessage(embedded), UserMessage("Please process the embedded resource above.")]

    @server.prompt(description="A prompt with an image.")
    def test_prompt_with_image() -> list[UserMessage]:
        image = types.ImageContent(type="image", data=PNG, mime_type="image/png")
        return [UserMessage(image), UserMessage("Please analyze the image above.")]

    @server.completion()
    async def complete(
        ref: types.PromptReference | types.ResourceTemplateReference,
        argument: types.CompletionArgument,
        context: types.CompletionContext | None,
    ) -> types.Completion:
        words = ["paris", "park", "party", "test", "testValue"]
        values = [word for word in words if word.startswith(argument.value)]
        return types.Completion(values=values, total=len(values), has_more=False)

    return server


class MemoryEventStore(EventStore):
    """Every event of the process, for SSE resumption (``Last-Event-ID``)."""

    def __init__(self) -> None:
        self._events: list[tuple[str, str, types.JSONRPCMessage | None]] = []

    async def store_event(self, stream_id: str, message: types.JSONRPCMessage | None) -> str:
        event_id = str(len(self._events) + 1)
        self._events.append((stream_id, event_id, message))
        return event_id

    async def replay_events_after(self, last_event_id: str, send_callback: EventCallback) -> str | None:
        stream = next((s for s, e, _ in self._events if e == last_event_id), None)
        if stream is None:
            return None
        for stream_id, event_id, message in self._events:
            if stream_id == stream and int(event_id) > int(last_event_id) and message is not None:
                await send_callback(EventMessage(message, event_id))
        return stream


async def serve_http(server: MCPServer, host: str, port: int) -> None:
    import uvicorn

    app = server.streamable_http_app(event_store=MemoryEventStore(), retry_interval=100, host=host)
    await uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning")).serve()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--plain", action="store_true", help="leave lazymcp out (for lazymcp proxy to wrap)")
    parser.add_argument("--stock-default", choices=("lazy", "eager"), default=None, help="a lazify() option")
    parser.add_argument("--http", metavar="HOST:PORT", help="serve streamable HTTP at /mcp instead of stdio")
    parser.add_argument("--record", metavar="FILE", type=Path, help="append each initialize's params to FILE")
    args = parser.parse_args(argv)
    # Logging, sampling and elicitation are deprecated as of 2026-07-28; the scenarios use them on
    # 2025-11-25, where they are the protocol.
    warnings.simplefilter("ignore", MCPDeprecationWarning)
    if args.plain and args.stock_default:
        parser.error("--stock-default is a lazymcp option: not with --plain")

    server = build_server(args.record)
    if not args.plain:
        sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # lazymcp from this checkout
        from lazymcp import lazify

        lazify(server, **({} if args.stock_default is None else {"stock_default": args.stock_default}))
    if args.http is None:
        server.run("stdio")
    else:
        host, _, port = args.http.rpartition(":")
        anyio.run(serve_http, server, host, int(port))


if __name__ == "__main__":
    main()
