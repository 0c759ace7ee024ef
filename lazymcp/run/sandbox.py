"""Code mode's sandbox: a ``run_code`` source run in a pydantic-monty worker, its tool calls sent out.

Theory of operation. The code runs in a Monty worker process (the ``code`` extra), a Python subset with
no file system, network, environment or imports but its own small standard library. Each tool of the
session's catalog is an async method of its server's namespace object; calling it awaits ``call``,
the caller's door for a direct call (the gateway's: policy, rate limits, audit, metrics, lazy start),
and the code gets the result as a value (``value_of``) or an exception. ``search`` and ``describe``
answer from the catalog. Every run has bounds, each a flag (``CodeLimits``): its wall time, the worker's
memory, its tool calls and its output; one hit ends the run with a one-line error, and a worker that
crashes is replaced by the pool for the next run.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, cast

import orjson

from lazymcp.local.extras import install_hint
from lazymcp.surfaces import codemode
from lazymcp.surfaces.catalog import Catalog

if TYPE_CHECKING:
    from pydantic_monty import AsyncMonty, CollectString

PRELUDE: Final = "ToolError = RuntimeError\n"
"""Fed before the code: a tool's error is a ``RuntimeError`` in the sandbox, caught as ``ToolError``."""
SEARCH_LIMIT: Final = 10
"""Matches ``search`` answers inside the code."""
GRACE: Final = 5.0
"""Seconds past a run's time limit the host waits on a worker before it kills it."""
INVALID: Final = "Invalid arguments for tool"

Call = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]
"""The door of a direct call: a tool's name and arguments -> its ``CallToolResult`` (as JSON)."""


@dataclass(frozen=True, slots=True)
class CodeLimits:
    """The bounds of one run (``--code-timeout``, ``--code-memory``, ``--code-calls``, ``--code-output``)."""

    seconds: float = 30.0
    memory_mb: int = 256
    calls: int = 200
    output_chars: int = 65_536


class ToolError(RuntimeError):
    """A tool answered ``isError``; in the sandbox it is ``ToolError`` (a ``RuntimeError``)."""


class Stopped(Exception):
    """A limit ended the run; the message says which, in one line."""


def value_of(result: dict[str, Any]) -> Any:
    """A tool's result as the code gets it: ``structuredContent``, else its text (parsed when JSON),
    else small dicts naming each block's type and size.

    Raises:
        ToolError: the result is ``isError``.
        TypeError: the arguments did not fit the tool's schema (the one check's refusal).
    """
    content = cast(list[dict[str, Any]], result.get("content") or [])
    texts = [str(block.get("text", "")) for block in content if block.get("type") == "text"]
    if result.get("isError"):
        text = "\n".join(texts) or "the tool failed"
        if text.startswith(INVALID):
            raise TypeError(text.split("\nThe tool was not called.")[0] + "\nSee describe() for its signature.")
        raise ToolError(text)
    if "structuredContent" in result:
        return result["structuredContent"]
    if len(texts) == len(content) and texts:
        text = "\n".join(texts)
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            return text
    return [_block(block) for block in content]


def _block(block: dict[str, Any]) -> Any:
    kind = str(block.get("type"))
    if kind == "text":
        return block.get("text")
    data = block.get("data") or block.get("blob") or ""
    small: dict[str, Any] = {"type": kind, "size": len(str(data)) * 3 // 4}
    resource = block.get("resource")
    if isinstance(resource, dict):
        resource = cast(dict[str, Any], resource)
        small.update(uri=resource.get("uri"), size=len(str(resource.get("text") or resource.get("blob") or "")))
    for key in ("mimeType", "uri", "name"):
        if key in block:
            small[key] = block[key]
    return small


@dataclass
class CodeRun:
    """One run's state: its calls, whether a limit stopped it, its calls in flight."""

    catalog: Catalog
    call: Call
    limits: CodeLimits
    calls: int = 0
    stopped: str | None = None
    inflight: set[asyncio.Task[Any]] = field(default_factory=lambda: set())

    async def tool(self, name: str, arguments: dict[str, Any]) -> Any:
        self.calls += 1
        if self.calls > self.limits.calls:
            self.stopped = f"stopped: more than {self.limits.calls} tool calls in one run (--code-calls)"
            raise Stopped(self.stopped)
        task = asyncio.ensure_future(self.call(name, arguments))
        self.inflight.add(task)
        try:
            return value_of(await task)
        finally:
            self.inflight.discard(task)

    async def search(self, query: str) -> list[dict[str, Any]]:
        return codemode.search_in_code(self.catalog, str(query), SEARCH_LIMIT)

    async def describe(self, name: str) -> str:
        return codemode.describe_in_code(self.catalog, str(name))

    def namespaces(self) -> dict[str, Any]:
        """Each server's namespace, a host object whose allowed methods are its tools."""
        from pydantic_monty import ClassInstance

        found: dict[str, Any] = {}
        for space, functions in codemode.python_names(self.catalog).namespaces.items():
            methods = {function: self._method(tool) for function, tool in functions.items()}
            holder = type(space, (), methods)()
            found[space] = ClassInstance(holder, allowed_methods=set(functions))
        return found

    def _method(self, tool: str) -> Callable[..., Awaitable[Any]]:
        async def method(holder: object, **arguments: Any) -> Any:
            return await self.tool(tool, arguments)

        return method


class Sandbox:
    """A pool of Monty workers for the runs of one process, started at its first run."""

    def __init__(self, limits: CodeLimits | None = None) -> None:
        self.limits = limits or CodeLimits()
        self._pool: AsyncMonty | None = None
        self._lock = asyncio.Lock()

    async def pool(self) -> AsyncMonty:
        async with self._lock:
            if self._pool is None:
                from pydantic_monty import AsyncMonty

                pool = AsyncMonty(min_processes=1, request_timeout=self.limits.seconds + GRACE)
                await pool.__aenter__()
                self._pool = pool
            return self._pool

    async def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.__aexit__(None, None, None)

    async def run(self, source: str, catalog: Catalog, call: Call) -> dict[str, Any]:
        """Run ``source``: a ``CallToolResult`` with what it printed and its last value, or the error.
        Cancelling it cancels its tool calls in flight."""
        try:
            pool = await self.pool()
        except ImportError:
            return _error(f"code mode needs the sandbox: {install_hint('code')}", "")
        from pydantic_monty import CollectString

        run = CodeRun(catalog, call, self.limits)
        output = CollectString(max_bytes=self.limits.output_chars * 4)
        try:
            async with asyncio.timeout(self.limits.seconds):
                return await self._feed(pool, source, run, output)
        except TimeoutError:  # a tool call that does not return in time: what was printed still comes back
            return _error(f"stopped: the run took over {self.limits.seconds:g} s (--code-timeout)", output.output)
        finally:
            for task in run.inflight:
                task.cancel()

    async def _feed(self, pool: AsyncMonty, source: str, run: CodeRun, output: CollectString) -> dict[str, Any]:
        from pydantic_monty import MontyCrashedError, MontyError

        limits = self.limits
        bounds: Any = {
            "max_feed_duration_secs": limits.seconds,
            "max_memory": limits.memory_mb * 1024 * 1024,
            "max_recursion_depth": 200,
            "max_suspensions": limits.calls * 2 + 100,
        }
        lookup = {**run.namespaces(), "search": run.search, "describe": run.describe}
        try:
            async with pool.checkout(limits=bounds) as session:
                await session.feed_run(PRELUDE)
                value = await session.feed_run(source, external_lookup=lookup, print_callback=output)
        except MontyCrashedError as exc:
            return _error(f"the sandbox's worker crashed ({exc}); the next run gets a fresh one", output.output)
        except MontyError as exc:
            return _error(run.stopped or _explained(exc, limits), output.output)
        return _answer(output.output, value, limits.output_chars)


def _explained(exc: Exception, limits: CodeLimits) -> str:
    """A sandbox error in one line, naming the limit it hit."""
    display = getattr(exc, "display", None)
    text = str(display("type-msg") if callable(display) else exc)
    if text.startswith("TimeoutError") and "time limit" in text:
        return f"stopped: the code ran over {limits.seconds:g} s (--code-timeout)"
    if text.startswith("MemoryError"):
        return f"stopped: {text} (--code-memory {limits.memory_mb} MB, --code-output {limits.output_chars} chars)"
    if text.startswith("RecursionError"):
        return f"stopped: {text}"
    traceback = str(display("traceback")) if callable(display) else text
    return traceback.strip()


def _bounded(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[output cut at {limit} characters (--code-output) of {len(text)}]"


def _error(message: str, printed: str) -> dict[str, Any]:
    printed = printed.rstrip("\n")
    text = _bounded(printed, 4096) + ("\n" if printed else "") + message
    return {"content": [{"type": "text", "text": text}], "isError": True}


def _answer(printed: str, value: Any, limit: int) -> dict[str, Any]:
    parts = [printed.rstrip("\n")] if printed else []
    if value is not None:
        try:
            parts.append(orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode())
        except TypeError:
            parts.append(repr(value))
    return {"content": [{"type": "text", "text": _bounded("\n".join(parts), limit)}]}


_SHARED: list[Sandbox] = []


def configure(limits: CodeLimits) -> None:
    """The limits of this process's runs (the command line's ``--code-*`` flags), before the first run."""
    _SHARED[:] = [Sandbox(limits)]


def shared_sandbox() -> Sandbox:
    """This process's sandbox: one pool of workers for every session's runs."""
    if not _SHARED:
        _SHARED.append(Sandbox())
    return _SHARED[0]
