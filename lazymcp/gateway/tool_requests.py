"""The ``tools/*`` requests of a gateway session, from the client's request to its answer or its server.

Theory of operation. A ``tools/*`` request waits while the servers' first lists are awaited
(``Servers.discovering``): it is answered once none is, or past ``first_list_wait`` without the servers
still starting, and refused if the session ends first. A ``tools/call`` counts first against its
principal's rate limit (``lazymcp.access.ratelimit``); then the merged catalog (``lazymcp.gateway.merged``)
answers the request, or names the server a call goes to, which counts against that server's limit and is
sent through the gateway's own door to its servers (``Send``). An answer that changed the listing is held until the
client has listed again (``lazymcp.core.relist``): the client is told ``notifications/tools/list_changed``.

A watched session (``observe``) reports each answered ``tools/call`` once, as ``Called``: at once when
it is answered here, with its server's answer when one is sent on. A call through ``invoke_tool`` is
reported as the tool it names (``via``). A name neither in the catalog nor a meta-tool is an
``unknown_tool`` (and never a metric's label, ``Called.named``); one the access policy refuses is
``denied`` to the operator however the call arrived, and unknown to the client.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, cast

from lazymcp.access.policy import ANONYMOUS, Principal
from lazymcp.access.ratelimit import Limited, Limiter
from lazymcp.core.actions import CLIENT_INFO_CHARS, CODE_CALL, Action, Called, RunCode, StopCode, ToClient
from lazymcp.core.session import ClientSession
from lazymcp.gateway.merged import Merged
from lazymcp.gateway.namespace import MAX_TOOL_NAME
from lazymcp.gateway.servers import Servers
from lazymcp.protocol import jsonrpc
from lazymcp.protocol.bridge import CLIENT_INFO_KEY, Envelope
from lazymcp.protocol.errors import ErrorCode, LazyMCPError
from lazymcp.protocol.jsonrpc import Frame, RequestId
from lazymcp.surfaces.codemode import Code
from lazymcp.surfaces.metatools import BY_NAME, INVOKE_TOOL
from lazymcp.surfaces.methods import Answer

LIST_CHANGED_TOOLS = Frame({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})

WATCHED_CALLS = 10_000
"""Watched calls in flight a session remembers the start of."""

Send = Callable[[str, Frame, float], list[Action]]
"""The gateway's door to its servers: a request it has decided, sent to the server named (or refused)."""


def outcome_of(answer: Frame) -> str:
    """How a ``tools/call`` ended, for the audit line and the metrics."""
    error = answer.message.get("error")
    if isinstance(error, dict):
        code = cast(dict[str, Any], error).get("code")
        data = jsonrpc.field(cast(dict[str, Any], error).get("data"), "reason")
        if code == ErrorCode.RATE_LIMITED:
            return "rate_limited"
        if data == "unknown_tool" or str(cast(dict[str, Any], error).get("message", "")).startswith("Unknown tool"):
            return "unknown_tool"
        return "unavailable" if code == ErrorCode.UPSTREAM_ERROR else "error"
    return "tool_error" if jsonrpc.field(answer.message.get("result"), "isError") is True else "ok"


def _traceparent(frame: Frame) -> str | None:
    """The W3C trace context a request came with in ``_meta.traceparent`` (at most 55 characters)."""
    found = jsonrpc.params_meta(frame.message).get("traceparent")
    return found if isinstance(found, str) and len(found) <= 55 else None


def _error(request_id: object, code: ErrorCode, text: str, data: object = None) -> ToClient:
    return ToClient(Frame(jsonrpc.error_message(request_id, code, text, data)))


def _limited(request_id: object, limited: Limited) -> ToClient:
    text = f"Rate limit reached: {limited.what}; retry in {limited.seconds} s"
    return _error(request_id, ErrorCode.RATE_LIMITED, text, {"retryAfter": limited.seconds})


@dataclass
class ToolRequests:
    """The ``tools/*`` requests of one gateway session. ``now`` arguments are monotonic seconds."""

    merged: Merged
    servers: Servers
    session: ClientSession
    envelope: Envelope
    """What a 2026 client's results are stamped with."""
    send: Send
    principal: Principal = ANONYMOUS
    limiter: Limiter | None = None
    """The rate limits its calls count against, shared by every session; None: none."""
    observe: bool = False
    """Report each answered ``tools/call`` (``Called``: the audit line, the metrics)."""
    _started: dict[tuple[str, object], tuple[str, Called, float]] = field(init=False, default_factory=lambda: {})
    """Watched calls sent to their servers, by id: (server, what to report, when)."""
    code_prefix: str = field(init=False, default_factory=lambda: f"{CODE_CALL}{secrets.token_hex(6)}:")
    """How the ids of this session's calls from ``run_code`` begin (a client cannot guess it)."""
    running: dict[tuple[str, object], tuple[object, Called, float]] = field(init=False, default_factory=lambda: {})
    """The client's ``run_code`` calls running, by id key: their ids, their reports, when they began."""

    def code_cancelled(self, request_id: object) -> list[Action]:
        """The client cancelled a request: a running ``run_code`` of its is stopped."""
        stopped = self.running.pop(jsonrpc.id_key(request_id), None)  # owed no answer now
        return [] if stopped is None else [StopCode(stopped[0])]

    def code_answered(self, request_id: object, answer: Frame, now: float) -> list[Action] | None:
        """A ``run_code`` ended with ``answer``: None when it is owed none (cancelled, interrupted), else
        its report when watched."""
        running = self.running.pop(jsonrpc.id_key(request_id), None)
        if running is None:
            return None
        _, called, began = running
        return [replace(called, outcome=outcome_of(answer), seconds=now - began)] if self.observe else []

    def request(self, frame: Frame, now: float) -> list[Action]:
        """A ``tools/*`` request: held while the servers' first lists are awaited, else answered."""
        if self.servers.discovering:
            if not self.session.waiting:
                self.servers.await_lists(now)
            self.session.waiting.append(frame)
            return []
        return self.answer(frame, now)

    def release(self, now: float) -> list[Action]:
        """Answer the requests that waited for the first lists, once none is awaited."""
        if self.servers.discovering:
            return []
        waiting, self.session.waiting = self.session.waiting, []
        actions: list[Action] = []
        for frame in waiting:
            actions += self.answer(frame, now)
        return actions

    def overdue(self, now: float) -> list[Action]:
        """Past ``first_list_wait``: the waiting requests answered without the servers still starting."""
        if self.session.waiting and self.servers.listing_overdue(now):
            return [*self.servers.give_up_on_listing(), *self.release(now)]
        return []

    def interrupted(self, reason: str) -> list[Action]:
        """The session ends now: every waiting request gets an error naming ``reason``."""
        waiting, self.session.waiting = self.session.waiting, []
        text = f"The gateway stopped: {reason}"
        running, self.running = [entry[0] for entry in self.running.values()], {}
        ids = [frame.message["id"] for frame in waiting] + running
        return [_error(request_id, ErrorCode.UPSTREAM_ERROR, text) for request_id in ids]

    def answer(self, frame: Frame, now: float) -> list[Action]:
        """A request through the one door: answered here, or a call for its server (a call answered here
        is reported at once when watched, one sent on when its server answers)."""
        actions = self._decide(frame, now)
        if self.observe and frame.message["method"] == "tools/call":
            key = jsonrpc.id_key(frame.id)
            for action in actions:
                if (
                    isinstance(action, ToClient)
                    and "method" not in action.frame.message
                    and action.frame.id == frame.id
                ):
                    started = self._started.pop(key, None)
                    if started is None:
                        actions.append(self._refused(frame, outcome_of(action.frame)))
                    else:  # refused after its server was found (its rate limit)
                        actions.append(replace(started[1], outcome=outcome_of(action.frame)))
                    break
        return actions

    def answered(self, frame: Frame, now: float) -> Called | None:
        """The report of a watched call its server has answered with ``frame``; None for any other answer."""
        if not self._started:
            return None
        started = self._started.pop(jsonrpc.id_key(frame.id), None)
        if started is None:
            return None
        _, called, when = started
        return replace(called, outcome=outcome_of(frame), seconds=now - when)

    def _report(self, frame: Frame, server: str | None, tool: str, outcome: str) -> Called:
        """What is reported of a call: who, which tool of which server, how it named it, how it ended."""
        via = "direct"
        name = frame.params.get("name")
        if isinstance(name, str) and self.merged.catalog.canonical_meta_name(name) == INVOKE_TOOL:
            via = "invoke_tool"
        elif isinstance(frame.id, str) and frame.id.startswith(self.code_prefix):
            via = "run_code"
        return Called(
            self.principal.key,
            server,
            tool[:MAX_TOOL_NAME],
            outcome,
            0.0,
            _traceparent(frame),
            request_id=frame.id,
            via=via,
            client=self._client_info(frame),
            named=server is not None or not self._unknown(tool),
        )

    def _refused(self, frame: Frame, outcome: str) -> Called:
        """The report of a call answered here: a meta-tool's, an unknown or refused tool's, a rate limit's."""
        tool = str(frame.params.get("name"))
        named = jsonrpc.field(cast(object, frame.params.get("arguments")), "name")
        if isinstance(named, str) and self.merged.catalog.canonical_meta_name(tool) == INVOKE_TOOL:
            tool = named  # reported as the tool it names
        if outcome == "tool_error" and self._unknown(tool):
            outcome = "unknown_tool"  # answered as an isError result with the closest names
        grant = self.merged.grant  # the tools this session's principal may use; None: all
        if outcome == "unknown_tool" and grant is not None and not grant(tool):
            outcome = "denied"  # to the client, as unknown; to the operator, refused by the policy
        return self._report(frame, None, tool, outcome)

    def _client_info(self, frame: Frame) -> tuple[str, str] | None:
        """The client's name and version: a 2026 request's own, else its session's ``initialize``'s."""
        info = jsonrpc.params_meta(frame.message).get(CLIENT_INFO_KEY) if self.session.modern else None
        if not isinstance(info, dict):  # a 2026 envelope already read: the one its session was met with
            info = (self.session.record.initialize or {}).get("clientInfo")
        if not isinstance(info, dict):
            return None
        name, version = jsonrpc.field(cast(object, info), "name"), jsonrpc.field(cast(object, info), "version")
        return str(name)[:CLIENT_INFO_CHARS], str(version)[:CLIENT_INFO_CHARS]

    def _unknown(self, name: str) -> bool:
        """Is ``name`` neither a tool of this session's catalog nor a meta-tool?"""
        return name not in self.merged.catalog.index and name not in BY_NAME

    def _decide(self, frame: Frame, now: float) -> list[Action]:
        message = frame.message
        request_id: RequestId = message["id"]
        method: str = message["method"]
        params = frame.params
        if self.limiter is not None and method == "tools/call":
            limited = self.limiter.admit(self.principal.key, now)
            if limited is not None:
                return [_limited(request_id, limited)]
        modern = self.session.modern
        caller = self.session.caller(
            params,
            modern=modern,
            dynamic=self.merged.catalog.options.mode == "dynamic",
            envelope=self.envelope,
            catalog=self.merged.catalog,
        )
        try:
            outcome = self.merged.answer(
                method, message.get("params"), caller, self.servers.down, self.servers.unlisted
            )
        except LazyMCPError as exc:
            return [_error(request_id, exc.code, exc.message, exc.data)]
        if isinstance(outcome, Code):
            if isinstance(request_id, str) and request_id.startswith(self.code_prefix):  # no run_code in a run
                return [ToClient(Frame({"jsonrpc": "2.0", "id": request_id, "result": outcome.result}))]
            self.running[jsonrpc.id_key(request_id)] = (request_id, self._report(frame, None, "run_code", "ok"), now)
            if modern:  # its answer is enveloped on the way out, as a server's is
                self.session.sent_on(request_id, "tools/call")
            return [RunCode(request_id, outcome.source, _traceparent(frame))]
        if isinstance(outcome, Answer):
            answer = Frame({"jsonrpc": "2.0", "id": request_id, "result": outcome.result})
            if outcome.changed:  # tell the client, and answer once it has listed again (core/relist.py)
                self.session.relist.hold(answer, now)
                return [ToClient(LIST_CHANGED_TOOLS)]
            held = self.session.relist.relisted() if method == "tools/list" else []
            return [ToClient(answer), *(ToClient(frame) for frame in held)]
        if outcome.server is None:
            text = f"Unknown tool: {outcome.name!r}"
            return [_error(request_id, ErrorCode.INVALID_PARAMS, text, {"name": outcome.name})]
        if self.observe:
            self._watch(request_id, self._report(frame, outcome.server, str(outcome.name), "ok"), now)
        if self.limiter is not None:
            limited = self.limiter.admit_server(self.principal.key, outcome.server, now)
            if limited is not None:
                return [_limited(request_id, limited)]
        if modern:
            self.session.sent_on(request_id, "tools/call")
        call_params = {**params, "name": outcome.name}
        if outcome.arguments is not None:
            call_params["arguments"] = outcome.arguments
        return self.send(outcome.server, frame.changed(params=call_params), now)

    def _watch(self, request_id: object, called: Called, now: float) -> None:
        """A watched call leaves for its server: when, to report it with its answer."""
        self._started[jsonrpc.id_key(request_id)] = (called.server or "", called, now)
        if len(self._started) > WATCHED_CALLS:  # cancelled calls a server never answers: the oldest go
            del self._started[next(iter(self._started))]
