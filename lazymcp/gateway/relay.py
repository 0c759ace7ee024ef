"""What the gateway passes between its client and its servers without answering it itself: notifications
either way, and the servers' requests to the client with the client's answers.

A server's request reaches the client under an id of the session's own (``lazymcp.core.asked``), so two
servers' ids never meet there; the client's answer goes back to the server that asked, under the
server's id, and so do the client's progress notifications for it (its progress token is that id too).
A cancellation is told to whoever owes the request, under the id it knows; one for a request not sent
yet takes it back. A server's change notifications go to the client (a 2026 client's
to its listen streams), its ``tools/list_changed`` excepted: the front announces its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

from lazymcp.core.actions import Action, ToClient
from lazymcp.core.session import ClientSession
from lazymcp.gateway.servers import Happened, Servers
from lazymcp.protocol import jsonrpc
from lazymcp.protocol.bridge import LIST_CHANGED
from lazymcp.protocol.errors import ErrorCode
from lazymcp.protocol.jsonrpc import Frame


@dataclass
class Relay:
    """The notifications and the servers' requests of one gateway session."""

    servers: Servers
    session: ClientSession

    def notification(self, frame: Frame) -> Sequence[Happened]:
        """A client notification: to the servers it concerns."""
        method = frame.method
        if method == "notifications/cancelled":
            request_id = frame.params.get("requestId")
            self.session.cancelled(request_id)  # no answer, or listen stream, is owed it now
            if self.session.withdraw(request_id) or self.servers.withdraw(request_id):
                return []  # not sent yet: it never will be, and no server needs telling
            owing = [server.name for server in self.servers if server.upstream and server.upstream.owes(request_id)]
        elif method == "notifications/progress":
            return self.progress(frame)
        elif method == "notifications/roots/list_changed":
            owing = [server.name for server in self.servers]
        else:
            return []  # notifications/initialized is the gateway's; the servers get their own
        return [h for name in owing for h in self.servers.notify(name, frame)]

    def progress(self, frame: Frame) -> Sequence[Happened]:
        """The client's progress on a server's request: to that server alone, under its own token; progress
        naming no request of a server's in flight goes nowhere."""
        asked = self.session.asked.progressed(frame.params.get("progressToken"))
        if asked is None:
            return []
        server, token = asked
        return self.servers.notify(server, frame.changed(params={**frame.params, "progressToken": token}))

    def answer(self, frame: Frame, now: float) -> Sequence[Happened]:
        """The client's answer to a server's request: back to that server, under its own id."""
        asked = self.session.asked.settle(str(frame.id))
        if asked is None:
            return []
        server, original = asked
        answer = frame.changed(id=original)
        if not answer.fits():  # the server is told, in words, why its request got no answer
            text = "Internal error: the client's answer nests too deeply to pass on"
            answer = Frame(jsonrpc.error_message(original, ErrorCode.INTERNAL_ERROR, text))
        return self.servers.answer(server, answer, now)

    def ask(self, server: str, frame: Frame, now: float) -> Sequence[Happened]:
        """A server's request to the client (sampling, elicitation, roots, ping): to the client, under an
        id of the session's."""
        original = frame.message["id"]
        meta = jsonrpc.params_meta(frame.message)
        token = meta.get("progressToken")
        gateway_id = self.session.asked.ask(server, original, token)
        if token is None:
            asked = frame.changed(id=gateway_id)
        else:  # the client's progress on it then names this request of this server's alone
            meta = {**meta, "progressToken": gateway_id}
            asked = frame.changed(id=gateway_id, params={**frame.params, "_meta": meta})
        if asked.fits():
            return [ToClient(asked)]
        self.session.asked.settle(str(asked.id))  # it cannot be written: the server is refused at once
        text = "Invalid request: nested too deeply to pass on"
        refusal = Frame(jsonrpc.error_message(original, ErrorCode.INVALID_REQUEST, text))
        return self.servers.answer(server, refusal, now)

    def notice(self, server: str, frame: Frame) -> list[Action]:
        """A server's notification: to the client, as it knows the request or list it names."""
        method = frame.method
        if method == "notifications/tools/list_changed":
            return []  # the gateway announces its own, once its catalog is rebuilt
        if method == "notifications/cancelled":  # the client hears it under the id it was given
            params = frame.params
            asked = self.session.asked.cancelled(server, params.get("requestId"))
            if asked is None:
                return []  # not a request of its to the client: nothing to cancel there
            return [ToClient(frame.changed(params={**params, "requestId": asked}))]
        return [*self.servers[server].changed(cast(str, method)), *self.announce(frame)]

    def announce(self, frame: Frame) -> list[Action]:
        """A server's notification to the client: a 2026 client's listen streams for a list change, else
        the client itself."""
        method = cast(str, frame.method)
        if self.session.modern and method in LIST_CHANGED:
            return [ToClient(event) for event in self.session.listeners(method)]
        return [ToClient(frame)]
