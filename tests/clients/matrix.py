"""What the compatibility suite expects of each cell, and the table of docs/compatibility.md written from it.

``EXPECTED[(client, mode, transport)]`` maps each step expected to fail to the reason: a limitation of
the client itself, with the line of its code that causes it. A cell not listed passes every step. The
tests check every cell against this table, and ``python -m tests.clients.matrix`` rewrites docs/compatibility.md's
copy of the table (``--check`` only compares), so the docs say what the suite found.
"""

from __future__ import annotations

import sys
from typing import Any

from ..doc_tables import DOCS, DocTable
from .support import CLIENT_NAMES, MODES, TRANSPORTS

STEPS = ("list", "describe", "call", "invalid", "unlisted")

REASONS: dict[str, str] = {
    "L1": "langchain-mcp-adapters makes a LangChain tool of each listed tool only "
    "(`langchain_mcp_adapters/tools.py:599`, `convert_mcp_tool_to_langchain_tool(...)` over the listing), "
    "so an agent cannot call a tool, or `describe_tools`, that the listing does not show.",
    "L2": "langchain-mcp-adapters opens a new session for every listing and call "
    "(`langchain_mcp_adapters/tools.py:466`, `async with create_session(...)`) and has no `list_changed` "
    "handler: what `search_tools` enabled is gone at the next listing.",
    "A1": "The Agents SDK makes a function tool of each listed tool only "
    "(`agents/mcp/util.py:400`, `tools = await cls._list_tools_with_span(server, run_context, agent)`).",
    "P1": "pydantic-ai's agent runs only the tools of its toolsets' last listing "
    "(`pydantic_ai/tool_manager.py:825`, `raise _UnknownTool(f'Unknown tool name: {name!r}. {msg}')`): "
    "the model gets a retry prompt instead of the call.",
    "U1": "mcp-use's agent has a LangChain tool for each listed tool only "
    "(`mcp_use/agents/mcpagent.py:211`, `self._tools = self.adapter.tools + ...`), so it cannot call a tool, "
    "or `describe_tools`, that the listing does not show.",
    "U2": "mcp-use's adapter keeps each connector's first listing for good "
    "(`mcp_use/agents/adapters/base.py:188`, `if connector in self._connector_tool_map:` returns the cached tools): "
    "what `search_tools` enabled never becomes a tool.",
    "U3": "mcp-use checks arguments against a pydantic model it builds from the schema "
    "(`mcp_use/agents/adapters/langchain_adapter.py:149`, `args_schema = jsonschema_to_pydantic(...)`): "
    "bad arguments never reach the server, and the model gets pydantic's first error instead of every violation.",
    "G1": "AutoGen's `AssistantAgent` runs only the tools its workbenches list "
    '(`autogen_agentchat/agents/_assistant_agent.py:1579`, `if any(t["name"] == tool_call.name for t in tools)`, '
    "else `Error: tool '…' not found in any workbench`).",
    "G2": "AutoGen's `mcp_server_tools` opens a new session for every call "
    "(`autogen_ext/tools/mcp/_base.py:74`, `async with create_mcp_server_session(self._server_params)`): "
    "what `search_tools` enabled is gone at the next call.",
    "G3": "AutoGen's `mcp_server_tools` builds a pydantic model of each listed schema and cannot read a type "
    "list (`autogen_core/utils/_json_to_pydantic.py:217`, `if json_type not in TYPE_MAPPING:` raises "
    "`unhashable type: 'list'`): one parameter typed with a list (the sample catalog's "
    "`customfields_set_value.value`) fails the whole listing.",
    "S1": "smolagents' agent runs only the tools it was given "
    "(`smolagents/agents.py:1465`, `if tool_name not in available_tools:` raises `Unknown tool …`).",
    "S2": "smolagents lists an MCP server's tools once, when the collection opens "
    "(`smolagents/tools.py:1057`, `with MCPAdapt(...) as tools: yield cls(tools)`), and never again: "
    "what `search_tools` enabled never becomes a tool.",
    "S3": "smolagents checks arguments against the tool's inputs before calling "
    "(`smolagents/agents.py:1476`, `validate_tool_arguments(tool, arguments)`): bad arguments never reach the "
    "server, and the model gets the first mismatch instead of every violation.",
    "D1": "ADK runs only the tools of the agent's toolsets "
    "(`google/adk/flows/llm_flows/tools/_caller.py:85`, `if tool_name is None or tool_name not in tools_dict:`, "
    "then `Invoking `…()` failed as no tool with that name is available`).",
    "D2": "ADK keeps a toolset's listing for the whole invocation "
    "(`google/adk/tools/base_toolset.py:139`, `self._cached_invocation_id == invocation_id` returns the cached "
    "tools): what `search_tools` enabled is there at the user's next turn, not in the same one.",
    "I1": "The Inspector CLI refuses a call to a tool it did not list "
    "(`clients/cli/build/index.js:22787`, `managedToolsState.getTools().find((t) => t.name === args.toolName)`, "
    "then `Tool '…' not found on server.`).",
    "I2": "Each Inspector CLI command is a session of its own: what `search_tools` enabled is gone at the next.",
}
"""Why a step fails for a client, by key: the client's own limitation and its line (in the pinned version)."""


def _cells(client: str, modes: tuple[str, ...], failed: dict[str, str]) -> dict[tuple[str, str, str], dict[str, str]]:
    return {(client, mode, transport): failed for mode in modes for transport in TRANSPORTS}


EXPECTED: dict[tuple[str, str, str], dict[str, str]] = {
    **_cells("langchain", ("proxy", "core"), {"unlisted": "L1"}),
    **_cells("langchain", ("dynamic",), {"describe": "L1", "call": "L2", "invalid": "L2", "unlisted": "L1"}),
    **_cells("agents", ("proxy", "core", "dynamic"), {"unlisted": "A1"}),
    **_cells("pydanticai", ("proxy", "core", "dynamic"), {"unlisted": "P1"}),
    **_cells("mcpuse", ("proxy", "core"), {"unlisted": "U1"}),
    **_cells("mcpuse", ("dynamic",), {"describe": "U1", "call": "U2", "invalid": "U2", "unlisted": "U1"}),
    **_cells("mcpuse", ("eager",), {"invalid": "U3"}),
    **_cells("autogen", ("proxy", "core"), {"unlisted": "G1"}),
    **_cells("autogen", ("dynamic",), {"describe": "G1"}),
    **_cells("autogentools", ("proxy", "core"), {"unlisted": "G1"}),
    **_cells("autogentools", ("dynamic",), {"describe": "G1", "call": "G2", "invalid": "G2", "unlisted": "G1"}),
    **_cells("autogentools", ("eager",), {"list": "G3", "call": "G3", "invalid": "G3"}),
    **_cells("smolagents", ("proxy", "core"), {"unlisted": "S1"}),
    **_cells("smolagents", ("dynamic",), {"describe": "S1", "call": "S2", "invalid": "S2", "unlisted": "S1"}),
    **_cells("smolagents", ("eager",), {"invalid": "S3"}),
    **_cells("adk", ("proxy", "core"), {"unlisted": "D1"}),
    **_cells("adk", ("dynamic",), {"describe": "D1", "call": "D2", "invalid": "D2", "unlisted": "D1"}),
    **_cells("inspector", ("proxy", "core"), {"unlisted": "I1"}),
    **_cells("inspector", ("dynamic",), {"describe": "I1", "call": "I2", "invalid": "I2", "unlisted": "I1"}),
}
"""The steps expected to fail, per (client, mode, transport), each with its reason's key in ``REASONS``."""


def judge(mode: str, steps: dict[str, dict[str, Any]]) -> dict[str, str]:
    """The steps that failed, each with what went wrong."""
    failed: dict[str, str] = {}
    if "connect" in steps:
        failed["connect"] = steps["connect"]["error"]
    for name in STEPS:
        if (name == "unlisted" and mode not in ("proxy", "core", "dynamic")) or (
            name == "describe" and mode == "eager"
        ):
            continue
        outcome = steps.get(name)
        if outcome is None:
            failed[name] = "not run"
            continue
        if not outcome["ok"]:
            failed[name] = outcome["error"]
            continue
        value = outcome["value"]
        problem = _check(name, value)
        if problem:
            failed[name] = problem
    return failed


def _check(name: str, value: Any) -> str | None:
    if name == "list":
        return None if isinstance(value, list) and value else f"empty listing: {value!r}"
    if name == "describe":
        expected = {"name": "issues_get", "required": ["issue_id"]}
        return None if value == expected else f"described {value!r}"
    text = value.get("text", "") if isinstance(value, dict) else ""
    if name == "call":
        return None if not value.get("isError") and "ISS-42" in text else f"result {text[:200]!r}"
    if name == "invalid":
        return None if "Invalid arguments" in text and "2 problems" in text else f"result {text[:200]!r}"
    return None if not value.get("isError") and "ISS-1" in text else f"result {text[:200]!r}"


def render() -> str:
    """The compatibility table of docs/compatibility.md."""
    header = "| client | " + " | ".join(f"`{mode}`" for mode in MODES) + " |"
    lines = [header, "|---|" + "---|" * len(MODES)]
    for client, title in CLIENT_NAMES.items():
        cells = []
        for mode in MODES:
            by_transport = {t: EXPECTED.get((client, mode, t), {}) for t in TRANSPORTS}
            if not any(by_transport.values()):
                cells.append("✓")
                continue
            if len({tuple(failed.items()) for failed in by_transport.values()}) == 1:
                failed = by_transport[TRANSPORTS[0]]
                cells.append("✗ " + ", ".join(f"{step} [{reason}]" for step, reason in failed.items()))
                continue
            parts = []
            for transport, failed in by_transport.items():
                if failed:
                    notes = ", ".join(f"{step} [{reason}]" for step, reason in failed.items())
                    parts.append(f"{transport}: ✗ {notes}")
                else:
                    parts.append(f"{transport}: ✓")
            cells.append("; ".join(parts))
        lines.append(f"| {title} | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append(
        "✓: every step passes, over stdio and streamable HTTP. ✗: the steps that fail (on both transports"
        " unless one is named), and why:"
    )
    lines.append("")
    lines += [f"- [{key}] {text}" for key, text in REASONS.items()]
    return "\n".join(lines).rstrip() + "\n"


TABLE = DocTable(
    DOCS / "compatibility.md",
    "<!-- compatibility table: written by python -m tests.clients.matrix -->\n",
    "<!-- end of the compatibility table -->\n",
)
doc_table = TABLE.of


def main() -> int:
    return TABLE.main(render, sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
