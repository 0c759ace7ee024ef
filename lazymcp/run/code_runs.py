"""A driver's ``run_code`` calls: each run in the sandbox, its tool calls through the core's own door.

The core decides a ``run_code`` call is to run (``RunCode``); this runs it (``lazymcp.run.sandbox``) and
hands the core its answer. Each tool call the code makes is fed to the core as a call of the client's,
under an id beginning with its session's ``ToolRequests.code_prefix`` (a client cannot guess it), so it
meets every rule a direct call meets (the policy, the rate limits, the audit line with ``via: run_code``,
the metrics, a server's lazy start); its answer comes back here instead of to the client. Each carries
the run's trace context in ``_meta.traceparent`` (with traces on, the ``run_code`` request's span), so that
the traces show a run as one span and its calls as its children. A cancelled run cancels its calls in
flight at their servers.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, cast

from lazymcp.core.actions import Action, Core, RunCode, StopCode
from lazymcp.protocol import jsonrpc
from lazymcp.protocol.jsonrpc import Frame
from lazymcp.protocol.limits import DEFAULT_TIMEOUT
from lazymcp.run.sandbox import Sandbox, shared_sandbox

if TYPE_CHECKING:
    from lazymcp.gateway.front import Gateway


class Driving(Protocol):
    """What a run needs of its driver (``lazymcp.run.driver.Driver``)."""

    loop: asyncio.AbstractEventLoop
    done: asyncio.Future[int]
    tasks: set[asyncio.Task[Any]]
    core: Core

    def from_client(self, data: bytes | Frame) -> None: ...

    def apply(self, step: Callable[[float], list[Action]]) -> None: ...

    def say(self, text: str, level: int = ...) -> None: ...


class CodeRuns:
    """The ``run_code`` calls of one driver's session, and their tool calls waiting for answers."""

    def __init__(self, driver: Driving, sandbox: Sandbox | None = None) -> None:
        self.driver = driver
        self.sandbox = sandbox
        self._prefix: str | None = None  # this session's own, once a run starts (``ToolRequests.code_prefix``)
        self._numbers = itertools.count(1)
        self._waiting: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._runs: dict[tuple[str, object], asyncio.Task[None]] = {}

    def takes(self, frame: Frame) -> bool:
        """Is ``frame`` the answer to a call of a run's code? Then it is that call's, not the client's."""
        request_id = frame.id
        prefix = self._prefix
        if prefix is None or "method" in frame.message or not isinstance(request_id, str):
            return False
        if not request_id.startswith(prefix):
            return False
        waiting = self._waiting.pop(request_id, None)
        if waiting is not None and not waiting.done():
            waiting.set_result(frame.message)
        return True

    def carry_out(self, action: RunCode | StopCode) -> None:
        key = jsonrpc.id_key(action.request_id)
        if isinstance(action, StopCode):
            task = self._runs.get(key)
            if task is not None:
                task.cancel()
            return
        self._prefix = cast("Gateway", self.driver.core).tool_requests.code_prefix
        task = self.driver.loop.create_task(self._run(action))
        self._runs[key] = task
        self.driver.tasks.add(task)
        task.add_done_callback(lambda done: (self.driver.tasks.discard(done), self._runs.pop(key, None)))

    async def _run(self, action: RunCode) -> None:
        core = cast("Gateway", self.driver.core)
        sandbox = self.sandbox or shared_sandbox()
        try:
            traceparent = action.traceparent
            result = await sandbox.run(
                action.source, core.catalog, lambda name, arguments: self._call(name, arguments, traceparent)
            )
        except asyncio.CancelledError:
            result = {"content": [{"type": "text", "text": "run_code was cancelled"}], "isError": True}
        except Exception as exc:  # a bug must cost this run, never the session
            self.driver.say(f"internal error in run_code: {exc!r}")
            result = {"content": [{"type": "text", "text": "internal error in run_code"}], "isError": True}
        if not self.driver.done.done():
            self.driver.apply(lambda now: core.code_result(cast(jsonrpc.RequestId, action.request_id), result, now))

    async def _call(self, name: str, arguments: dict[str, Any], traceparent: str | None) -> dict[str, Any]:
        """One tool call of the code, as the client's call: its ``CallToolResult``, or an error result."""
        request_id = f"{self._prefix}{next(self._numbers)}"
        waiting: asyncio.Future[dict[str, Any]] = self.driver.loop.create_future()
        self._waiting[request_id] = waiting
        params: dict[str, Any] = {"name": name, "arguments": arguments}
        if traceparent is not None:
            params["_meta"] = {"traceparent": traceparent}
        self.driver.from_client(Frame({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}))
        wait = self.driver.core.timeout or DEFAULT_TIMEOUT
        try:
            async with asyncio.timeout(wait):
                answer = await waiting
        except (asyncio.CancelledError, TimeoutError) as exc:
            self._waiting.pop(request_id, None)
            cancel = {"requestId": request_id, "reason": "run_code stopped"}
            self.driver.from_client(Frame({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel}))
            if isinstance(exc, asyncio.CancelledError):
                raise
            return {"content": [{"type": "text", "text": f"{name}: no answer in {wait:g} s"}], "isError": True}
        error = answer.get("error")
        if isinstance(error, dict):
            text = str(cast(dict[str, Any], error).get("message", "error"))
            return {"content": [{"type": "text", "text": text}], "isError": True}
        return cast(dict[str, Any], answer.get("result") or {})
