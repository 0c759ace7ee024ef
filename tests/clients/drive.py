"""One client library against one lazymcp server, the way an agent built on it uses it.

Run by the compatibility suite with the Python of the client's own virtual environment (never the
project's), so it imports nothing of lazymcp or the tests. Its one argument is a JSON config:
``client`` (a key of ``DRIVERS``), ``target`` (``{"command": [...]}`` or ``{"url": ...}``),
``mode``, ``tool``, ``good`` and ``bad`` arguments for it, ``query`` (a search that finds it) and
``unlisted`` (a real tool the mode does not list). It prints one JSON line: each step's outcome,
``{"ok": true, "value": ...}`` or ``{"ok": false, "error": "..."}``. Given a list of configs, it runs
each in turn (see ``main``), so that the client's library is loaded once for all of them.

Steps: ``list`` (and what the client derives from the listing: LangChain's ``args`` and prompt
rendering, the Agents SDK's strict function schemas), ``describe`` (``describe_tools``), ``call`` (the
tool with good arguments: by name in describe, eager and dynamic mode, after ``search_tools`` and a
fresh listing in dynamic mode; through ``invoke_tool`` in proxy and core mode), ``invalid`` (the same
with bad arguments: the answer must be lazymcp's invalid-arguments error) and ``unlisted`` (a real
tool the listing does not show, called by its own name).
"""

from __future__ import annotations

import asyncio
import json
import sys
import traceback
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

Steps = dict[str, dict[str, Any]]


async def step(steps: Steps, name: str, action: Callable[[], Awaitable[Any]]) -> Any:
    try:
        value = await action()
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt | SystemExit):
            raise
        text = f"{type(exc).__name__}: {exc}".strip()
        steps[name] = {"ok": False, "error": text[:600], "trace": traceback.format_exc()[-1500:]}
        return None
    steps[name] = {"ok": True, "value": value}
    return value


def text_of(content: Any) -> str:
    """The text blocks of an MCP result's content (objects or dicts), joined."""
    parts: list[str] = []
    for block in content or []:
        text = block.get("text") if isinstance(block, dict) else getattr(block, "text", None)
        if isinstance(text, str):
            parts.append(text)
    return "\n".join(parts)


def keep_listing(kept: dict[str, Any], loaded: Any) -> list[str]:
    """Keep the tool objects of the last listing by name (an agent runs only these); their names."""
    kept.clear()
    kept.update((tool.name, tool) for tool in loaded)
    return list(kept)


def listed_tool(kept: dict[str, Any], name: str, holder: str = "agent") -> Any:
    """The tool object ``name`` of the last listing, as an agent finds it (``holder``: who looks)."""
    tool = kept.get(name)
    if tool is None:
        raise LookupError(f"the {holder} has no tool {name!r}: it was not in its last listing")
    return tool


def how_to_call(config: dict[str, Any], arguments: dict[str, Any], listed: list[str]) -> tuple[str, dict[str, Any]]:
    """The tool name and arguments a model uses to run ``config["tool"]``: through ``invoke_tool`` where
    the listing offers it (proxy and core mode, and dynamic mode served as proxy to a 2026-07-28 client)."""
    if config["mode"] in ("proxy", "core") or "invoke_tool" in listed:
        return "invoke_tool", {"name": config["tool"], "arguments": arguments}
    return config["tool"], arguments


# --- FastMCP's client ----------------------------------------------------------------------------


def fastmcp_transport(config: dict[str, Any]) -> Any:
    """The target as FastMCP's client takes it (pydantic-ai's ``MCPToolset`` too): a URL, or a stdio command."""
    from fastmcp.client.transports import StdioTransport

    target = config["target"]
    if "url" in target:
        return target["url"]
    command = target["command"]
    return StdioTransport(command=command[0], args=command[1:])


async def fastmcp(config: dict[str, Any], steps: Steps) -> None:
    from fastmcp import Client

    async with Client(fastmcp_transport(config), timeout=config["timeout"]) as client:

        async def listing() -> list[str]:
            return [tool.name for tool in await client.list_tools()]

        async def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
            result = await client.call_tool(name, arguments, raise_on_error=False)
            return {"isError": result.is_error, "text": text_of(result.content), "data": repr(result.data)[:200]}

        await run_steps(config, steps, listing, call)


# --- langchain-mcp-adapters ----------------------------------------------------------------------


async def langchain(config: dict[str, Any], steps: Steps) -> None:
    from langchain_core.tools import render_text_description_and_args
    from langchain_mcp_adapters.client import MultiServerMCPClient

    target = config["target"]
    if "url" in target:
        connection: dict[str, Any] = {"transport": "streamable_http", "url": target["url"]}
    else:
        command = target["command"]
        connection = {"transport": "stdio", "command": command[0], "args": command[1:]}
    client = MultiServerMCPClient({"lazy": connection})  # type: ignore[arg-type]
    tools: dict[str, Any] = {}

    async def listing() -> list[str]:
        loaded = await client.get_tools()  # a new session, as every call of this client opens one
        for tool in loaded:  # what an agent does with them: read the args, render the prompt
            _ = tool.args, tool.is_single_input
        render_text_description_and_args(loaded)
        return keep_listing(tools, loaded)

    async def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        tool = listed_tool(tools, name, "client")
        tool.handle_tool_error = True  # the model gets the error text, as in an agent loop
        output = await tool.ainvoke(arguments)
        text = output if isinstance(output, str) else text_of(output if isinstance(output, list) else [output])
        if not text and isinstance(output, tuple | list):
            text = json.dumps(output, default=str)
        return {"isError": "Invalid arguments" in text or text.startswith("Error"), "text": text}

    await run_steps(config, steps, listing, call)


# --- the OpenAI Agents SDK -------------------------------------------------------------------------


async def agents(config: dict[str, Any], steps: Steps) -> None:
    from agents import RunContextWrapper
    from agents.mcp import MCPServerStdio, MCPServerStreamableHttp, MCPUtil

    target = config["target"]
    server: Any
    if "url" in target:
        server = MCPServerStreamableHttp(
            params={"url": target["url"], "timeout": config["timeout"]},
            client_session_timeout_seconds=config["timeout"],
        )
    else:
        command = target["command"]
        server = MCPServerStdio(
            params={"command": command[0], "args": command[1:]}, client_session_timeout_seconds=config["timeout"]
        )
    listed: dict[str, Any] = {}
    async with server:

        async def listing() -> list[str]:
            tools = await server.list_tools()
            for tool in tools:  # as an Agent converts them, strict schemas on
                MCPUtil.to_function_tool(tool, server, convert_schemas_to_strict=True)
            return keep_listing(listed, tools)

        async def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
            tool = listed_tool(listed, name)
            output = await MCPUtil.invoke_mcp_tool(server, tool, RunContextWrapper(None), json.dumps(arguments))
            text = output if isinstance(output, str) else json.dumps(output, default=str)
            try:  # a single text block comes back as its JSON: the model reads the text inside
                block = json.loads(text)
                text = block["text"] if isinstance(block, dict) and isinstance(block.get("text"), str) else text
            except ValueError:
                pass
            return {"isError": "Invalid arguments" in text, "text": text}

        await run_steps(config, steps, listing, call)


# --- pydantic-ai -----------------------------------------------------------------------------------


async def pydanticai(config: dict[str, Any], steps: Steps) -> None:
    """A pydantic-ai ``Agent`` with an ``MCPToolset``, its model a script instead of an LLM: each step is
    one agent run whose model asks for one tool call, so the agent lists, validates, calls and turns
    errors into retry prompts exactly as it does for a real model."""
    from pydantic_ai import Agent
    from pydantic_ai.mcp import MCPToolset
    from pydantic_ai.messages import (
        ModelMessage,
        ModelResponse,
        RetryPromptPart,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
    )
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    toolset = MCPToolset(fastmcp_transport(config), init_timeout=config["timeout"], read_timeout=config["timeout"])
    planned: list[tuple[str, dict[str, Any]]] = []
    offered: list[str] = []

    def script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        offered[:] = [tool.name for tool in info.function_tools]
        if planned:
            name, arguments = planned.pop()
            return ModelResponse(parts=[ToolCallPart(tool_name=name, args=arguments)])
        return ModelResponse(parts=[TextPart(content="done")])

    agent = Agent(FunctionModel(script), toolsets=[toolset])
    async with toolset:

        async def listing() -> list[str]:
            await agent.run("list")
            return list(offered)

        async def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
            planned[:] = [(name, arguments)]
            result = await agent.run("call")
            for message in result.all_messages():
                for part in getattr(message, "parts", []):
                    if isinstance(part, ToolReturnPart) and part.tool_name == name:
                        return {"isError": False, "text": part.model_response_str()}
                    if isinstance(part, RetryPromptPart) and part.tool_name == name:
                        return {"isError": True, "text": part.model_response()}
            raise LookupError(f"the agent's run has no answer to its call of {name!r}")

        await run_steps(config, steps, listing, call)


# --- mcp-use -----------------------------------------------------------------------------------------


async def mcpuse(config: dict[str, Any], steps: Steps) -> None:
    """mcp-use's ``MCPClient`` and the LangChain adapter its ``MCPAgent`` builds its tools with; the tools
    bound as the agent's model binds them (OpenAI tool schemas) and called as its tool node calls them."""
    from langchain_core.utils.function_calling import convert_to_openai_tool
    from mcp_use import MCPClient
    from mcp_use.agents.adapters import LangChainAdapter

    target = config["target"]
    if "url" in target:
        server: dict[str, Any] = {"url": target["url"]}
    else:
        command = target["command"]
        server = {"command": command[0], "args": command[1:]}
    client = MCPClient.from_dict({"mcpServers": {"lazy": server}})
    adapter = LangChainAdapter()
    tools: dict[str, Any] = {}
    try:

        async def listing() -> list[str]:
            loaded = await adapter.create_tools(client)  # what MCPAgent.initialize does
            for tool in loaded:
                convert_to_openai_tool(tool)
            return keep_listing(tools, loaded)

        async def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
            tool = listed_tool(tools, name)
            output = await tool.ainvoke(arguments)
            text = output if isinstance(output, str) else json.dumps(output, default=str)
            return {"isError": "Invalid arguments" in text or "error" in text[:40].lower(), "text": text}

        await run_steps(config, steps, listing, call)
    finally:
        await client.close_all_sessions()


# --- AutoGen ---------------------------------------------------------------------------------------


def _autogen_params(config: dict[str, Any]) -> Any:
    """AutoGen's server parameters for the target: stdio or streamable HTTP."""
    from autogen_ext.tools.mcp import StdioServerParams, StreamableHttpServerParams

    target = config["target"]
    if "url" in target:
        return StreamableHttpServerParams(url=target["url"], timeout=config["timeout"])
    command = target["command"]
    return StdioServerParams(command=command[0], args=command[1:], read_timeout_seconds=config["timeout"])


async def _autogen_call(workbench: Any, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Run a call as an ``AssistantAgent``'s tool-call step runs the ``FunctionCall`` a model emits; the
    result's text as the model reads it (``_blocks_text``)."""
    from autogen_agentchat.agents import AssistantAgent
    from autogen_core import CancellationToken, FunctionCall

    request = FunctionCall(id=f"call-{uuid.uuid4().hex[:8]}", name=name, arguments=json.dumps(arguments))
    _, result = await AssistantAgent._execute_tool_call(  # pyright: ignore[reportPrivateUsage]
        request, [workbench], [], "agent", CancellationToken(), asyncio.Queue()
    )
    return {"isError": result.is_error is True, "text": _blocks_text(result.content)}


async def autogen(config: dict[str, Any], steps: Steps) -> None:
    """An ``McpWorkbench`` (one session), its tools listed as an ``AssistantAgent`` lists them for its model,
    and each call run by the agent's own tool-call step on the ``FunctionCall`` a model would emit."""
    from autogen_ext.tools.mcp import McpWorkbench

    params = _autogen_params(config)
    async with McpWorkbench(params) as workbench:

        async def listing() -> list[str]:
            return [tool["name"] for tool in await workbench.list_tools()]

        async def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
            return await _autogen_call(workbench, name, arguments)

        await run_steps(config, steps, listing, call)


async def autogentools(config: dict[str, Any], steps: Steps) -> None:
    """``mcp_server_tools`` (each tool opens a session of its own for every call), given to an
    ``AssistantAgent`` as tools: the agent puts them in a ``StaticWorkbench`` and runs each call through
    its own tool-call step."""
    from autogen_core.tools import StaticWorkbench
    from autogen_ext.tools.mcp import mcp_server_tools

    params = _autogen_params(config)
    workbench = StaticWorkbench([])

    async def listing() -> list[str]:
        nonlocal workbench
        workbench = StaticWorkbench(list(await mcp_server_tools(params)))
        return [tool["name"] for tool in await workbench.list_tools()]

    async def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return await _autogen_call(workbench, name, arguments)

    await run_steps(config, steps, listing, call)


def _blocks_text(shown: str) -> str:
    """The text a model reads in a tool result that ``mcp_server_tools`` gives as the JSON of its content
    blocks (``McpToolAdapter.return_value_as_string``); anything else as it is."""
    try:
        blocks = json.loads(shown)
    except ValueError:
        return shown
    if isinstance(blocks, list) and all(isinstance(block, dict) and "type" in block for block in blocks):
        return text_of(blocks)
    return shown


# --- smolagents ------------------------------------------------------------------------------------


async def smolagents(config: dict[str, Any], steps: Steps) -> None:
    """``ToolCollection.from_mcp`` (mcpadapt, on a thread of its own), its tools given to a
    ``ToolCallingAgent`` whose model is never asked: each call is the agent's own ``execute_tool_call``,
    which checks the arguments against the tool's inputs and turns failures into the model's error text."""
    from mcp import StdioServerParameters
    from smolagents import Model, ToolCallingAgent, ToolCollection

    target = config["target"]
    params: Any
    if "url" in target:
        params = {"url": target["url"], "transport": "streamable-http"}
    else:
        command = target["command"]
        params = StdioServerParameters(command=command[0], args=command[1:])
    with ToolCollection.from_mcp(params, trust_remote_code=True) as collection:
        agent = ToolCallingAgent(tools=list(collection.tools), model=Model(model_id="scripted"))

        async def listing() -> list[str]:  # the agent's tools are those of the collection, made once
            return [name for name in agent.tools if name != "final_answer"]

        async def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
            try:
                output = await asyncio.to_thread(agent.execute_tool_call, name, arguments)
            except Exception as exc:  # AgentError: its message is what the model reads
                return {"isError": True, "text": str(exc)}
            text = output if isinstance(output, str) else json.dumps(output, default=str)
            return {"isError": False, "text": text}

        await run_steps(config, steps, listing, call)


# --- Google ADK ------------------------------------------------------------------------------------


async def adk(config: dict[str, Any], steps: Steps) -> None:
    """An ``LlmAgent`` with an ``McpToolset``: its tools listed as the agent lists them for a model turn,
    and each call run by the agent flow's own function-call handling on the event a model would emit."""
    from google.adk.agents import LlmAgent
    from google.adk.agents.invocation_context import InvocationContext
    from google.adk.agents.readonly_context import ReadonlyContext
    from google.adk.events import Event
    from google.adk.flows.llm_flows.functions import handle_function_calls_async
    from google.adk.sessions import InMemorySessionService
    from google.adk.tools.mcp_tool import McpToolset, StdioConnectionParams, StreamableHTTPConnectionParams
    from google.genai import types
    from mcp import StdioServerParameters

    target = config["target"]
    params: Any
    if "url" in target:
        params = StreamableHTTPConnectionParams(url=target["url"], timeout=config["timeout"])
    else:
        command = target["command"]
        params = StdioConnectionParams(
            server_params=StdioServerParameters(command=command[0], args=command[1:]), timeout=config["timeout"]
        )
    toolset = McpToolset(connection_params=params)
    agent = LlmAgent(name="agent", model="gemini-2.5-flash", tools=[toolset])
    sessions = InMemorySessionService()
    session = await sessions.create_session(app_name="lazymcp", user_id="user")
    context = InvocationContext(session_service=sessions, invocation_id="run", agent=agent, session=session)
    tools: dict[str, Any] = {}
    try:

        async def listing() -> list[str]:  # what the agent does at each model turn
            loaded = await agent.canonical_tools(ReadonlyContext(context))
            for tool in loaded:
                tool._get_declaration()  # pyright: ignore[reportPrivateUsage]
            return keep_listing(tools, loaded)

        async def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
            request = types.Part(function_call=types.FunctionCall(id="call", name=name, args=arguments))
            event = Event(author="agent", invocation_id="run", content=types.Content(role="model", parts=[request]))
            answer = await handle_function_calls_async(context, event, tools)
            parts = answer.content.parts if answer and answer.content else None
            response = parts[0].function_response.response if parts and parts[0].function_response else None
            if not isinstance(response, dict):
                raise LookupError(f"the agent gave no function response to its call of {name!r}")
            error = response.get("error")
            text = error if isinstance(error, str) else text_of(response.get("content"))
            return {"isError": bool(error or response.get("isError")), "text": text or json.dumps(response)}

        await run_steps(config, steps, listing, call)
    finally:
        await toolset.close()


# --- the steps, the same for every client ----------------------------------------------------------


async def run_steps(
    config: dict[str, Any],
    steps: Steps,
    listing: Callable[[], Awaitable[list[str]]],
    call: Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]],
) -> None:
    mode, tool = config["mode"], config["tool"]
    listed: list[str] = await step(steps, "list", listing) or []

    async def describe() -> dict[str, Any]:
        result = await call("describe_tools", {"names": [tool]})
        payload = json.loads(result["text"])
        [described] = payload["tools"]
        return {"name": described["name"], "required": described["inputSchema"].get("required", [])}

    if mode != "eager":  # an eager listing has every schema already, and no describe_tools
        await step(steps, "describe", describe)

    async def good() -> dict[str, Any]:
        if mode == "dynamic" and "invoke_tool" not in listed:
            await call("search_tools", {"query": config["query"]})
            listed[:] = await listing()  # the list changed: list again, as a client following list_changed does
        return await call(*how_to_call(config, config["good"], listed))

    async def bad() -> dict[str, Any]:
        return await call(*how_to_call(config, config["bad"], listed))

    await step(steps, "call", good)
    await step(steps, "invalid", bad)
    if mode in ("proxy", "core", "dynamic"):

        async def unlisted() -> dict[str, Any]:
            return await call(config["unlisted"], config["unlisted_args"])

        await step(steps, "unlisted", unlisted)


DRIVERS = {
    "fastmcp": fastmcp,
    "langchain": langchain,
    "agents": agents,
    "pydanticai": pydanticai,
    "mcpuse": mcpuse,
    "autogen": autogen,
    "autogentools": autogentools,
    "smolagents": smolagents,
    "adk": adk,
}


def drive(config: dict[str, Any]) -> Steps:
    """One run of the client against one target, in an event loop of its own, bounded at three times
    ``config["timeout"]``; its steps."""
    steps: Steps = {}

    async def run() -> None:
        await asyncio.wait_for(DRIVERS[config["client"]](config, steps), config["timeout"] * 3)

    try:
        asyncio.run(run())
    except BaseException as exc:
        steps.setdefault("connect", {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:600]})
    return steps


def carry_fork_server() -> None:
    """In a run with the tests' fork server, the stdio servers this client's own SDK starts hand their program
    over to it too: the SDK gives a server only a few variables of its choosing, and would leave its address
    out. ``tests/forkserver.py`` is loaded by its path and needs only the standard library."""
    import os

    if "|" not in os.environ.get("LAZYMCP_TEST_FORKSERVER", ""):
        return
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location(
        "tests_forkserver", Path(__file__).resolve().parents[1] / "forkserver.py"
    )
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    try:
        module.carry()
    except ImportError:  # a client without the MCP SDK's stdio client starts its servers its own way
        pass


def main() -> None:
    """One config: one JSON line of its steps. A list of configs (a client's every mode and transport): each
    run in turn, its own objects and event loop, and one JSON line of each run's steps with its index in
    the list (``cell``), printed as soon as it is done; the client's library is loaded once."""
    given = json.loads(sys.argv[1])
    carry_fork_server()
    if isinstance(given, dict):
        sys.stdout.write(json.dumps({"steps": drive(given)}, default=str) + "\n")
        return
    for cell, config in enumerate(given):
        sys.stdout.write(json.dumps({"cell": cell, "steps": drive(config)}, default=str) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
