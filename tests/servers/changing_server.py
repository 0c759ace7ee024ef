"""A plain SDK server (no lazymcp) whose tool list changes at runtime, announcing it in both eras."""

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("changing", version="1.0", log_level="WARNING")
added: list[str] = []


@server.tool()
async def grow(ctx: Context) -> str:
    """Add one more tool to this server. It is announced with notifications/tools/list_changed."""
    name = f"extra_{len(added) + 1}"

    def extra(text: str) -> str:
        return f"{name}: {text}"

    server.add_tool(extra, name=name, description=f"Extra tool number {len(added) + 1}. Added at runtime.")
    added.append(name)
    await ctx.session.send_tool_list_changed()  # 2025-11-25 sessions
    await ctx.notify_tools_changed()  # 2026-07-28 subscriptions/listen streams
    return name


if __name__ == "__main__":
    server.run()
