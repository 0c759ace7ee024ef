"""The requests servers make of the gateway's client (sampling, elicitation, roots), under ids of the
gateway's own, so that two servers' ids never meet at the client.

A request that asks for progress goes with the gateway id as its progress token too: the client's
progress notifications then name one request of one server, and reach that server alone, under the
token it chose.

Each entry lives until the client answers, the server cancels its request (the server side's client
timeout cancels it too), or the server fails: what is kept is bounded by what is in flight.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lazymcp.protocol.jsonrpc import RequestId, id_key

PREFIX = "lazymcp-gateway-"


@dataclass
class Asked:
    """Gateway id -> (server, its own id), and back."""

    _by_gateway_id: dict[str, tuple[str, RequestId]] = field(default_factory=lambda: {})
    _by_server_id: dict[tuple[str, tuple[str, object]], str] = field(default_factory=lambda: {})
    _tokens: dict[str, object] = field(default_factory=lambda: {})
    """Gateway id -> the progress token the server's request gave, for those that gave one."""
    _count: int = 0

    def ask(self, server: str, request_id: RequestId, token: object = None) -> str:
        """The gateway id a server's request goes to the client under (and its progress token, when
        ``token``, the server's own, is not None)."""
        self._count += 1
        gateway_id = f"{PREFIX}{self._count}"
        self._by_gateway_id[gateway_id] = (server, request_id)
        self._by_server_id[(server, id_key(request_id))] = gateway_id
        if token is not None:
            self._tokens[gateway_id] = token
        return gateway_id

    def progressed(self, token: object) -> tuple[str, object] | None:
        """The server a client's progress notification is for, and the token it knows; None: no request
        in flight asked for progress under that token."""
        if not isinstance(token, str) or token not in self._tokens:
            return None
        return self._by_gateway_id[token][0], self._tokens[token]

    def settle(self, gateway_id: str) -> tuple[str, RequestId] | None:
        """The server and id a client's answer (or a cancellation) is for, forgotten now; None: unknown."""
        asked = self._by_gateway_id.pop(gateway_id, None)
        self._tokens.pop(gateway_id, None)
        if asked is not None:
            self._by_server_id.pop((asked[0], id_key(asked[1])), None)
        return asked

    def cancelled(self, server: str, request_id: object) -> str | None:
        """A server gave up on its request: the gateway id the client knows it by, forgotten now."""
        gateway_id = self._by_server_id.get((server, id_key(request_id)))
        if gateway_id is not None:
            self.settle(gateway_id)
        return gateway_id

    def forget(self, server: str) -> None:
        """The server failed: a late answer of the client's must not reach its successor."""
        for gateway_id in [g for g, (asker, _) in self._by_gateway_id.items() if asker == server]:
            self.settle(gateway_id)

    def __len__(self) -> int:
        return len(self._by_gateway_id) + len(self._by_server_id) + len(self._tokens)
