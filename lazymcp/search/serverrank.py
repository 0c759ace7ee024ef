"""Server-aware ranking: score the servers a catalog's tools come from, and give each tool its server's score.

Theory of operation. In a gateway's catalog a tool's name is ``<server><separator><tool>``; a request
often names the server, or words that only its tools use ("the Atlas cluster", "in Jira"), while the
tool's own text says only "create a project". Two-stage retrieval scores servers first, then tools
(MCP-Zero, Fei et al. 2025; agent-level retrieval over multi-server benchmarks): here each server is one
document, its name, its description when the front end knows one, and the names and summaries of all
its tools, ranked by the same BM25F as tools. ``ServerRanker`` is a ``Ranker`` that gives each tool its
server's score, so ``lazymcp.search.fusion.HybridRanker`` adds it to the tools' own scores as one more feature:
a server prior, never a filter (a request that names no server still ranks every tool by its text).

A catalog whose tools all come from one server (a single server, no separator) has nothing to tell
apart: ``ServerRanker`` then ranks nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from lazymcp.search.ranking import BM25Ranker, Document
from lazymcp.search.terms import normalize_name


def server_of(document: Document) -> str:
    """The server a tool comes from: its name's part before the separator, else "" (a single server's tool)."""
    if not document.separator:
        return ""
    head, sep, tail = document.name.partition(document.separator)
    return head if sep and head and tail else ""


def server_text(document: Document) -> str:
    """What a tool adds to its server's document: its name as words and its summary."""
    return f"{normalize_name(document.name.partition(document.separator)[2] or document.name)} {document.summary}"


class ServerRanker:
    """Ranks tools by their server's BM25F score for the query (every tool of a server scores alike)."""

    def __init__(self, documents: Sequence[Document], descriptions: Mapping[str, str] | None = None) -> None:
        descriptions = descriptions or {}
        servers = [server_of(document) for document in documents]
        order = list(dict.fromkeys(server for server in servers if server))
        number = {server: i for i, server in enumerate(order)}
        self.members: list[list[int]] = [[] for _ in order]
        texts: list[list[str]] = [[descriptions.get(server, "")] for server in order]
        for position, (server, document) in enumerate(zip(servers, documents, strict=True)):
            if server:
                self.members[number[server]].append(position)
                texts[number[server]].append(server_text(document))
        server_documents = [
            Document({"name": server, "description": " ".join(text)}, "", "", "")
            for server, text in zip(order, texts, strict=True)
        ]
        self.ranker = BM25Ranker(server_documents) if len(order) > 1 else None

    def servers(self, query: str) -> list[tuple[int, float]]:
        """(server number, score) of the servers the query matches, best first."""
        return self.ranker.rank(query, len(self.members)) if self.ranker is not None else []

    def rank(self, query: str, limit: int) -> list[tuple[int, float]]:
        ranked = [(position, score) for server, score in self.servers(query) for position in self.members[server]]
        return ranked[:limit]
