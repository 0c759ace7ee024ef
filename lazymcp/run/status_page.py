"""The status of a gateway (``lazymcp.run.status``) for people: the page at ``/`` (plain HTML, rendered here,
every value escaped, no script and nothing fetched from elsewhere: its Content-Security-Policy allows its
own inline style only) and the table ``lazymcp status`` prints. Both read the snapshot's plain data, as
``/status.json`` gives it.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any, Final, cast

STYLE: Final = (
    "body{font:14px/1.45 system-ui,sans-serif;margin:1.5em 2em;color:#222}"
    "table{border-collapse:collapse;margin:.5em 0 1.5em}"
    "th,td{padding:.3em .9em;border-bottom:1px solid #ddd;text-align:left;vertical-align:top}"
    "td.n,th.n{text-align:right}.failed{color:#a00}.running{color:#060}.starting{color:#850}"
    "small{color:#666}"
)
_STYLE_HASH = base64.b64encode(hashlib.sha256(STYLE.encode()).digest()).decode()
HEADERS: Final = {
    "Content-Security-Policy": (
        f"default-src 'none'; style-src 'sha256-{_STYLE_HASH}'; base-uri 'none'; form-action 'none';"
        " frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
"""The page's headers: nothing but its own style runs or loads, no frame may hold it, nothing is cached."""
STATES: Final = {"not_started": "not started", "starting": "starting", "running": "running", "failed": "failed"}


def when(value: object) -> str:
    """An ISO 8601 time of the snapshot, as people read it (``2026-11-28 03:40:12 UTC``)."""
    return str(value).replace("T", " ").replace("Z", " UTC") if value else "-"


def detail(server: Mapping[str, Any]) -> str:
    """What a server's state says besides its name: its sign-in (a remote server that signs in), its
    processes and since when, or why it failed and whether it is refused for a while."""
    text, signed = _state_detail(server), server.get("sign_in")
    if signed is None or (signed == "sign-in needed" and "lazymcp login" in text):
        return text
    return f"{signed}; {text}" if text else str(signed)


def _state_detail(server: Mapping[str, Any]) -> str:
    state = server.get("state")
    if state in ("running", "starting"):
        pids = cast(Sequence[int], server.get("pids") or [])
        parts = [f"pid{'s' if len(pids) > 1 else ''} {', '.join(map(str, pids))}"] if pids else []
        if server.get("since"):
            parts.append(f"since {when(server['since'])}")
        return ", ".join(parts)
    if state == "failed":
        text = str(server.get("reason") or "no reason given")
        if server.get("retry_at"):
            return f"{text}; backing off until {when(server['retry_at'])}"
        return f"{text}; started again on its next call"
    if state == "not_started" and "tools" in server and server["tools"] is None:
        return "no manifest yet: started to list its tools when a session opens"
    return ""


def _count(value: object) -> str:
    return "-" if value is None else f"{value:,}" if isinstance(value, int) else str(value)


def _saving(listing: Mapping[str, Any]) -> str:
    full, tokens = listing.get("full_tokens") or 0, listing.get("tokens") or 0
    if not full:
        return f"{tokens:,} tokens (no tool listed yet)"
    return f"{tokens:,} tokens against {full:,} for its tools in full ({100 * tokens / full:.1f}% of it)"


def _who(snapshot: Mapping[str, Any]) -> str:
    if snapshot.get("view") == "all":
        return f"every principal's (as {snapshot.get('viewer')})"
    return f"{snapshot.get('viewer')}'s own"


def page(snapshot: Mapping[str, Any]) -> str:
    """The status page."""

    def cell(value: object, css: str = "") -> str:
        attribute = f' class="{css}"' if css else ""
        return f"<td{attribute}>{escape(str(value))}</td>"

    rows: list[str] = []
    for server in cast(list[dict[str, Any]], snapshot.get("servers", [])):
        state = str(server.get("state", ""))
        rows.append(
            f'<tr id="server-{escape(str(server.get("name", "")))}" class="{escape(state)}">'
            + cell(server.get("name", ""))
            + cell(STATES.get(state, state), "state")
            + cell(detail(server), "detail")
            + cell(_count(server.get("tools")), "n")
            + cell(_count(server.get("calls")), "n")
            + cell(_count(server.get("errors")), "n")
            + "</tr>"
        )
    principals = [
        "<tr>" + cell(one["principal"]) + cell(one["sessions"], "n") + cell(when(one.get("last_seen"))) + "</tr>"
        for one in cast(list[dict[str, Any]], snapshot.get("principals", []))
    ]
    calls = cast(dict[str, Any], snapshot.get("calls", {}))
    listing = cast(dict[str, Any], snapshot.get("listing", {}))
    head = "<tr><th>server</th><th>state</th><th></th><th class=n>tools</th>"
    head += "<th class=n>calls, last hour</th><th class=n>errors</th></tr>"
    return "\n".join(
        [
            "<!doctype html>",
            '<html lang="en"><head><meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            "<title>lazymcp gateway status</title>",
            f"<style>{STYLE}</style></head><body>",
            f"<h1>lazymcp gateway {escape(str(snapshot.get('lazymcp', '')))}</h1>",
            f"<p>{escape(str(snapshot.get('config', '')))}, up since {escape(when(snapshot.get('started')))};"
            f" as of {escape(when(snapshot.get('now')))}. <small>View: {escape(_who(snapshot))}.</small></p>",
            f'<h2>Servers</h2><table id="servers"><thead>{head}</thead><tbody>',
            *rows,
            "</tbody></table>",
            f"<p>Calls in the last hour: {_count(calls.get('calls', 0))}, errors: {_count(calls.get('errors', 0))}"
            " <small>(the gateway's own answers included)</small>.</p>",
            f'<h2>Listing</h2><p id="listing">{listing.get("tools", 0):,} tools; a stock client\'s listing:'
            f" {escape(_saving(listing))} of what the model sees; mode {escape(str(listing.get('mode', '')))}.</p>",
            f"<h2>Sessions: {_count(snapshot.get('sessions', 0))}</h2>",
            '<table id="principals"><thead><tr><th>principal</th><th class=n>sessions</th><th>last seen</th></tr>',
            "</thead><tbody>",
            *principals,
            "</tbody></table>",
            "</body></html>",
        ]
    )


def table(snapshot: Mapping[str, Any]) -> str:
    """The status as a plain-text table (``lazymcp status``): a running gateway's, or a configuration's as
    its manifests have it (``running`` false: no calls, no sessions)."""
    servers = cast(list[dict[str, Any]], snapshot.get("servers", []))
    width = max([len(str(s.get("name", ""))) for s in servers] + [6]) + 2
    running = snapshot.get("running", True)
    version, source = snapshot.get("lazymcp", ""), snapshot.get("config", "")
    if running:
        head = f"lazymcp gateway {version}: {source}, up since {when(snapshot.get('started'))}; view: {_who(snapshot)}"
    else:
        head = f"lazymcp {version}: {source}, as its manifests have it (no gateway asked, no server started)"
    counted = f"{'calls 1h':>10}{'errors':>8}" if running else ""
    lines = [head, "", f"{'server':<{width}}{'state':<14}{'tools':>7}{counted}  detail"]
    for server in servers:
        state = str(server.get("state", ""))
        calls = f"{_count(server.get('calls')):>10}{_count(server.get('errors')):>8}" if running else ""
        lines.append(
            f"{str(server.get('name', '')):<{width}}{STATES.get(state, state):<14}{_count(server.get('tools')):>7}"
            f"{calls}  {detail(server)}".rstrip()
        )
    calls = cast(dict[str, Any], snapshot.get("calls", {}))
    listing = cast(dict[str, Any], snapshot.get("listing", {}))
    lines.append("")
    if running:
        lines.append(
            f"calls in the last hour: {_count(calls.get('calls', 0))}, errors: {_count(calls.get('errors', 0))}"
            " (the gateway's own answers included)"
        )
    lines.append(
        f"listing: {listing.get('tools', 0):,} tools; a stock client's listing: {_saving(listing)} of what the"
        f" model sees; mode {listing.get('mode', '')}"
    )
    if running:
        lines.append(f"sessions: {_count(snapshot.get('sessions', 0))}")
        principals = cast(list[dict[str, Any]], snapshot.get("principals", []))
        lines += [f"  {p['principal']}: {p['sessions']}, last seen {when(p.get('last_seen'))}" for p in principals]
    return "\n".join(lines)
