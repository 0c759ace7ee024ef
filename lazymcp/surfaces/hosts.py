"""Hosts: what each MCP host does with a tool listing, and the mode lazymcp serves it (spec §17).

Theory of operation. A host names itself in ``initialize`` (``clientInfo.name``, ``clientInfo.version``),
and hosts differ in what they do with ``tools/list``: some defer the definitions themselves (they show the
model a search tool and load a definition when it is found), some show every definition, and some refuse
more than so many tools in one request. ``HOSTS`` is the one table of what is known, and ``choose`` the one
rule every front end (the SDK server, the proxy, the gateway) follows to pick a session's mode:

1. the session's own ask (``?mode=`` on an HTTP endpoint);
2. the configuration's mode for this host (``lazymcp.hosts``, ``--host-mode``);
3. the configuration's mode for every host (``--mode``, ``LAZYMCP_MODE``, ``lazymcp.mode``);
4. the table's mode for this host; for Claude Code over stdio, what its environment says of its tool
   search (``toolsearch.tool_search``);
5. the server's default (``describe``; the gateway's ``auto``), also for a known host that does not defer.

Whatever was chosen, a listing never holds more tools than the host accepts: past its cap, ``proxy``.
A host with an always-load hint gets it on every meta-tool listed to it (``Catalog.serving``): a host that
defers definitions would otherwise make the model search for the tools that search.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final, cast

from lazymcp.protocol.errors import InvalidParams
from lazymcp.protocol.messages import MODES, Mode
from lazymcp.surfaces.catalog import Catalog
from lazymcp.surfaces.metacalls import core_names
from lazymcp.surfaces.metatools import REGISTRY
from lazymcp.surfaces.toolsearch import tool_search

CLAUDE_CODE: Final = "claude-code"
ALWAYS_LOAD: Final = "anthropic/alwaysLoad"
"""The ``_meta`` key Claude Code reads as "never defer this tool"."""


@dataclass(frozen=True, slots=True)
class Host:
    """One row of ``HOSTS``: a host as it names itself, from ``since`` (its ``clientInfo.version``) on."""

    name: str
    """``clientInfo.name`` exactly as the host sends it."""
    label: str
    defers: bool
    """It shows the model a search and loads tool definitions itself."""
    list_changed: bool | None
    """It lists again on ``notifications/tools/list_changed`` (None: not known)."""
    cap: int | None
    """The most tools one request of it may carry (None: no known cap)."""
    mode: Mode | None
    """Its mode; None: the server's default (``describe``; the gateway's ``auto``, which keeps to a budget)."""
    always_load: str | None = None
    """The ``_meta`` key it reads as "do not defer this tool", where it has one."""
    since: tuple[int, ...] = ()
    why: str = ""
    """The measurement behind the row."""


HOSTS: Final[tuple[Host, ...]] = (
    # Claude Code before its tool search (the 2.1 line) sends the model every definition, as any host that
    # does not defer: stubs keep their savings there, as they do for 2.1.332 with its search off below.
    Host(CLAUDE_CODE, "Claude Code", defers=False, list_changed=True, cap=None, mode=None),
    # Claude Code 2.1.332, sample catalog (130 tools), a scripted model API (tests/hosts). Search on:
    # eager 1,355 tokens in 2 turns (its ToolSearch, then the call); describe 1,716 in 3 (describe_tools
    # loaded and called, then the call); proxy 781 in 4. Search off: describe 5,664 in 2, eager 21,895
    # (3.9 times as many) in 1. Over stdio `tool_search` reads which of the two it is. Search auto: Claude
    # Code counted eager's listing and its own tools at 28,383 tokens against 100,000 (10% of a 1M window) and
    # showed it in full, 22,888 tokens in 1 turn; `auto_search` predicts that and serves describe, 6,657 in 2.
    # auto:2 (20,000): eager deferred (1,355 in 2), describe's stubs under it and shown (6,657 in 2), so eager.
    # force, and unset behind another base URL: on, as `true` (eager 1,355 in 2, describe 1,716 in 3).
    Host(
        CLAUDE_CODE,
        "Claude Code",
        defers=True,
        list_changed=True,
        cap=None,
        mode="eager",
        always_load=ALWAYS_LOAD,
        since=(2, 1),
        why="defers definitions itself (tool search): full definitions take 2 turns, stubs 3",
    ),
    # Codex CLI 0.171.0 defers every MCP tool in every mode (even proxy's four): lazymcp's part of its
    # first request is the same 32 tokens whatever the mode; eager 2 turns (its tool_search returns the
    # real schema), describe 4 (the stub, describe_tools found by its search, describe_tools, the call),
    # proxy 5.
    Host(
        "codex-mcp-client",
        "Codex CLI",
        defers=True,
        list_changed=None,
        cap=None,
        mode="eager",
        why="defers every tool itself: the same 32 tokens in every mode, eager 2 turns, describe 4, proxy 5",
    ),
    # Gemini CLI 0.61.0 defers nothing, and its definitions run about 53 tokens a tool longer than Claude
    # Code's: describe 12,598 tokens (44% of eager's 28,797) in 2 turns, eager 1, proxy 993 in 3. It sends
    # every declaration (650 tools: 668) and the Gemini API refuses more than 512, failing the whole turn
    # in describe and eager alike.
    Host(
        "gemini-cli-mcp-client",
        "Gemini CLI",
        defers=False,
        list_changed=True,
        cap=512,
        mode=None,
        why="shows every definition: describe 44% of eager's tokens for one more turn; 512 declarations at most",
    ),
    # VS Code and Copilot CLI defer tool definitions themselves (their tool search), as Claude Code and
    # Codex do, where stubs measured only extra turns; not measured here with a scripted model.
    Host(
        "Visual Studio Code",
        "VS Code",
        defers=True,
        list_changed=True,
        cap=None,
        mode="eager",
        why="defers definitions itself, as the measured Claude Code and Codex do",
    ),
    Host(
        "Visual Studio Code - Insiders",
        "VS Code Insiders",
        defers=True,
        list_changed=True,
        cap=None,
        mode="eager",
        why="defers definitions itself, as the measured Claude Code and Codex do",
    ),
    Host(
        "github-copilot-developer",
        "Copilot CLI",
        defers=True,
        list_changed=None,
        cap=None,
        mode="eager",
        why="defers definitions itself, as the measured Claude Code and Codex do",
    ),
    # Cursor: not measured; served as any host lazymcp does not know.
    Host("cursor-vscode", "Cursor", defers=False, list_changed=True, cap=None, mode=None, why="not measured"),
)
"""Every host lazymcp knows, by ``clientInfo.name``; a name's later rows cover later versions."""


def version_of(text: object) -> tuple[int, ...]:
    """``"2.1.197"`` -> ``(2, 1, 197)``; the leading numbers of a version, ``()`` when there are none."""
    numbers: list[int] = []
    for part in str(text or "").split("."):
        digits = ""
        for char in part:
            if not char.isdigit():
                break
            digits += char
        if not digits:
            break
        numbers.append(int(digits))
        if len(digits) != len(part):
            break
    return tuple(numbers)


def host_of(client_info: object) -> Host | None:
    """The row of ``HOSTS`` for a ``clientInfo`` object: its name's last row whose ``since`` its version
    reaches (a host that gives no version gets its name's latest row)."""
    if not isinstance(client_info, Mapping):
        return None
    info = cast(Mapping[str, object], client_info)
    rows = [host for host in HOSTS if host.name == info.get("name")]
    if not rows:
        return None
    version = version_of(info.get("version"))
    reached = [host for host in rows if not version or version >= host.since]
    return reached[-1] if reached else rows[0]


def known(name: str) -> Host | None:
    """The latest row of a host name (for ``stats``), or None."""
    rows = [host for host in HOSTS if host.name == name]
    return rows[-1] if rows else None


@dataclass(frozen=True, slots=True)
class Choice:
    """The mode a session is served, the always-load hint its meta-tools carry, and why."""

    mode: Mode
    why: str
    hint: str | None = None


@dataclass(frozen=True, slots=True)
class Session:
    """What a front end knows of a session when it chooses its mode."""

    client_info: object = None
    """The ``clientInfo`` of its ``initialize`` (or of a 2026-07-28 request's ``_meta``)."""
    asked: Mode | None = None
    """The mode its endpoint URL asked for (``?mode=``)."""
    environ: Mapping[str, str] | None = None
    """The environment the host started this stdio server with; None over HTTP."""


def listed_count(catalog: Catalog, mode: Mode) -> int:
    """How many tools ``mode`` lists to a stock client of ``catalog`` (a dynamic session at its fullest)."""
    metas = sum(1 for meta in REGISTRY if mode in meta.listed_in)
    options = catalog.options
    if mode == "describe":  # describe_tools, and at most the two meta-tools that may ride with it
        return len(catalog) + 3
    if mode == "eager":
        return len(catalog) + len(options.eager_meta_tools)
    if mode == "proxy":
        return metas
    if mode == "core":
        return metas + len(core_names(catalog))
    return metas + len(core_names(catalog)) + options.max_enabled


def choose(catalog: Catalog, session: Session, *, full_tokens: Callable[[], int] | None = None) -> Choice:
    """The mode ``session`` is served from ``catalog``, by the rule of this module's docstring.

    ``catalog.options`` holds the configuration: ``mode`` (the default, or what was configured for every
    host when ``by_host`` is false) and ``hosts`` (a mode by host name).
    """
    options = catalog.options
    host = host_of(session.client_info)
    name = host.name if host is not None else _name(session.client_info)
    per_host = dict(options.hosts)
    if session.asked is not None:
        choice = Choice(session.asked, "asked for by the session (?mode=)")
    elif name is not None and name in per_host:
        choice = Choice(per_host[name], f"configured for {name}")
    elif not options.by_host:
        choice = Choice(options.mode, "configured")
    elif host is None:
        choice = Choice(options.mode, "default: a host lazymcp does not know")
    else:
        choice = _by_table(catalog, host, session, full_tokens)
    hint = host.always_load if host is not None else None
    if host is not None and host.cap is not None and choice.mode != "proxy":
        count = listed_count(catalog, choice.mode)
        if count > host.cap:
            why = f"{choice.why}; {count} tools are past {host.label}'s cap of {host.cap}"
            return Choice("proxy", why, hint)
    return Choice(choice.mode, choice.why, hint)


def _by_table(catalog: Catalog, host: Host, session: Session, full_tokens: Callable[[], int] | None) -> Choice:
    if host.name == CLAUDE_CODE and host.defers and session.environ is not None:
        tokens = full_tokens or (lambda: _full_tokens(catalog))
        search = tool_search(session.environ, tokens)
        if search is not None:
            on, said = search
            mode: Mode = "eager" if on else catalog.options.mode
            return Choice(mode, f"{host.label}'s tool search is {'on' if on else 'off'} ({said})")
    return Choice(host.mode or catalog.options.mode, f"{host.label}: {host.why}" if host.why else host.label)


def _full_tokens(catalog: Catalog) -> int:
    from lazymcp.tools.tokens import Size

    return catalog.memo("full_tokens", lambda: Size.of(catalog.listing("full", "summary")).tokens)


def _name(client_info: object) -> str | None:
    name = cast(Mapping[str, object], client_info).get("name") if isinstance(client_info, Mapping) else None
    return name if isinstance(name, str) else None


def parse_mode(value: str, where: str) -> Mode:
    """A mode named in text (a query parameter, a flag, a configuration value).

    Raises:
        ValueError: ``value`` names no mode.
    """
    for mode in MODES:
        if value == mode:
            return mode
    raise ValueError(f"{where} must be one of {', '.join(MODES)}, not {value!r}")


def asked_mode(query: Mapping[str, str] | None) -> Mode | None:
    """The mode an HTTP endpoint URL's query asks for (``?mode=``), None when it asks for none.

    Raises:
        InvalidParams: it names no mode.
    """
    asked = None if query is None else query.get("mode")
    if asked is None:
        return None
    try:
        return parse_mode(asked, "the endpoint's ?mode=")
    except ValueError as exc:
        raise InvalidParams("mode", "unknown_value", str(exc)) from None


def every_host(catalog: Catalog) -> list[tuple[Host, Choice]]:
    """Each host of the table (its latest row) and the mode ``catalog`` serves it, as ``stats`` shows them:
    what the table, the configuration and the host's cap decide (not a stdio environment)."""
    names = dict.fromkeys(host.name for host in HOSTS)
    return [(host, choose(catalog, Session({"name": name}))) for name in names if (host := known(name)) is not None]
