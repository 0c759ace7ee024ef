"""Deterministic sample and synthetic MCP tool catalogs for tests, benchmarks, and demos.

`sample_tools()` returns a realistic catalog for an imaginary issue tracker and team workspace (issues, projects,
comments, cycles, wiki documents, webhooks, automations, ...), kept as data in `lazymcp/data/sample.json`: the kind
of large tool list that lazy listing is meant to shrink. `synthetic_tools(n, seed=...)` produces any number of tools
with the same shape and a similar size distribution, for scaling experiments. Every tool is a plain JSON-compatible
dict exactly as it would appear in an MCP `tools/list` result: `name`, optional `title`, `description`,
`inputSchema`, `annotations`, and `_meta` carrying the tool's category under `io.lazymcp/lazy-tools`.

The module uses only the standard library, never touches global random state, and returns fresh objects on every call,
so callers may mutate the results freely. All names and text were written for this project.
"""

from __future__ import annotations

import json
import random
from bisect import bisect
from collections.abc import Callable, Sequence
from importlib import resources
from typing import cast

__all__ = ["CATEGORIES", "sample_tools", "synthetic_tools"]

JSON = dict[str, object]

META_KEY = "io.lazymcp/lazy-tools"

# --------------------------------------------------------------------------------------------------------------------
# JSON Schema property helpers
# --------------------------------------------------------------------------------------------------------------------


def _str(description: str, **extra: object) -> JSON:
    return {"type": "string", "description": description, **extra}


def _int(description: str, minimum: int, maximum: int, **extra: object) -> JSON:
    return {"type": "integer", "description": description, "minimum": minimum, "maximum": maximum, **extra}


def _num(description: str, **extra: object) -> JSON:
    return {"type": "number", "description": description, **extra}


def _bool(description: str, default: bool = False) -> JSON:
    return {"type": "boolean", "description": description, "default": default}


def _enum(description: str, values: Sequence[str], **extra: object) -> JSON:
    return {"type": "string", "description": description, "enum": list(values), **extra}


def _fmt(fmt: str) -> Callable[[str], JSON]:
    return lambda description: {"type": "string", "description": description, "format": fmt}


_datetime, _date, _email, _uri = _fmt("date-time"), _fmt("date"), _fmt("email"), _fmt("uri")


def _array(description: str, items: JSON, min_items: int = 0, max_items: int = 100) -> JSON:
    return {"type": "array", "description": description, "items": items, "minItems": min_items, "maxItems": max_items}


def _obj(description: str, properties: dict[str, JSON], required: Sequence[str] = ()) -> JSON:
    return {
        "type": "object",
        "description": description,
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }


def _input_schema(properties: dict[str, JSON], required: Sequence[str]) -> JSON:
    return {"type": "object", "properties": properties, "required": list(required), "additionalProperties": False}


# readOnlyHint, destructiveHint, idempotentHint by short code.
_HINTS: dict[str, tuple[bool, bool, bool]] = {
    "r": (True, False, True),  # read only
    "w": (False, False, False),  # additive write, not idempotent
    "i": (False, False, True),  # idempotent write
    "d": (False, True, True),  # destructive, idempotent (delete)
    "x": (False, True, False),  # destructive, not idempotent
}


def _tool(
    name: str,
    category: str,
    description: str,
    props: dict[str, JSON],
    required: Sequence[str],
    hints: str,
    title: str | None = None,
    open_world: bool = False,
) -> JSON:
    read_only, destructive, idempotent = _HINTS[hints]
    annotations: JSON = {"readOnlyHint": read_only, "destructiveHint": destructive, "idempotentHint": idempotent}
    if open_world:
        annotations["openWorldHint"] = True
    tool: JSON = {"name": name}
    if title is not None:
        tool["title"] = title
    tool["description"] = description
    tool["inputSchema"] = _input_schema(props, required)
    tool["annotations"] = annotations
    tool["_meta"] = {META_KEY: {"category": category}}
    return tool


# --------------------------------------------------------------------------------------------------------------------
# The sample catalog: 130 tools of an issue tracker, kept as JSON in lazymcp/data/sample.json
# --------------------------------------------------------------------------------------------------------------------


def sample_tools() -> list[dict[str, object]]:
    """Return the built-in sample catalog (130 issue-tracker tools in 17 categories), freshly read on every call."""
    return cast("list[JSON]", _sample_data()["tools"])


def _sample_data() -> JSON:
    return cast(JSON, json.loads(resources.files("lazymcp").joinpath("data/sample.json").read_text(encoding="utf-8")))


CATEGORIES: tuple[str, ...] = tuple(cast("list[str]", _sample_data()["categories"]))
"""The sample catalog's categories, in catalog order."""


def _article(noun: str) -> str:
    return f"an {noun}" if noun[0] in "aeio" else f"a {noun}"


# --------------------------------------------------------------------------------------------------------------------
# Synthetic catalogs of any size
# --------------------------------------------------------------------------------------------------------------------

_NOUNS = (
    "invoice", "order", "customer", "product", "shipment", "ticket", "contract", "payment", "subscription", "refund",
    "warehouse", "vendor", "employee", "candidate", "interview", "campaign", "lead", "deal", "account", "contact",
    "meeting", "report", "dashboard", "dataset", "pipeline", "job", "build", "deployment", "release", "incident",
    "alert", "monitor", "service", "cluster", "volume", "snapshot", "secret", "certificate", "domain", "bucket",
    "queue", "topic", "message", "channel", "thread", "file", "folder", "form", "survey", "venue", "course", "lesson",
    "grade", "recipe", "device", "sensor", "vehicle", "route", "driver", "policy", "claim", "patient", "appointment",
    "asset", "budget", "expense", "forecast", "supplier", "coupon", "review", "playlist", "booking",
)  # fmt: skip

# action, hints code, whether it targets one existing object, first-sentence variants
_SYN_ACTIONS: tuple[tuple[str, str, bool, tuple[str, ...]], ...] = (
    ("create", "w", False, ("Create a new {noun} from the given fields and return it.",
                            "Create {a_noun} and return the stored record together with its newly assigned ID.")),
    ("get", "r", True, ("Fetch one {noun} by its ID.",
                        "Return the full details of a single {noun}, including fields that list results leave out.")),
    ("list", "r", False, ("List {plural} that match the given filters, newest first.",
                          "Return a page of the {plural} visible to the caller.")),
    ("update", "i", True, ("Update selected fields of an existing {noun}.",
                           "Change one or more fields of {a_noun} and return the record as it looks afterwards.")),
    ("delete", "d", True, ("Delete {a_noun} permanently.", "Remove {a_noun} by ID; this cannot be undone.")),
    ("archive", "i", True, ("Archive {a_noun} so it no longer shows up in everyday views.",)),
    ("restore", "i", True, ("Restore {a_noun} that was previously archived or moved to the trash.",)),
    ("search", "r", False, ("Search {plural} by keyword across their names, descriptions, and tags.",
                            "Find {plural} whose text matches a query, ranked by relevance.")),
    ("export", "r", False, ("Export {plural} to a downloadable file in CSV or JSON format.",)),
    ("import", "w", False, ("Import {plural} in bulk from a file that was uploaded earlier.",)),
    ("assign", "i", True, ("Assign {a_noun} to a person or group, replacing whoever owned it before.",)),
    ("approve", "i", True, ("Approve a pending {noun} so that it can move on to the next stage of its review.",)),
    ("sync", "w", False, ("Synchronise {plural} with the connected external system and report what changed.",)),
    ("validate", "r", True, ("Check {a_noun} for missing or inconsistent data without changing anything.",)),
    ("count", "r", False, ("Count the {plural} that match the given filters without returning them.",)),
    ("duplicate", "w", True, ("Make a copy of an existing {noun} under a new ID.",)),
)  # fmt: skip

_SYN_EXTRA = (
    "Results are paginated with an opaque cursor that is passed back to fetch the next page.",
    "The caller needs at least the editor role in the workspace that owns the {noun}.",
    "Every change is written to the audit log together with the caller's identity.",
    "Requests are rate limited to 60 per minute for each user.",
    "Fields the caller is not allowed to see are left out of the response rather than returned empty.",
    "People watching the {noun} are notified once the change is saved.",
    "All timestamps are returned in UTC using the ISO 8601 format.",
    "Large requests may be processed in the background, in which case the response contains a job ID to poll.",
    "Deleted {plural} are excluded from the results.",
    "The response carries an etag that can be sent back to detect conflicting edits.",
    "When two edits to the same {noun} collide, the later one wins.",
    "Only administrators of the account may call this.",
    "Archived {plural} remain readable but can no longer be modified.",
    "IDs are stable, so callers may store them.",
    "Very old {plural} can take a little longer to load because they are kept in cold storage.",
    "Unknown fields cause the request to be rejected with a validation error.",
    "Webhooks subscribed to {noun} events fire after the change is committed.",
    "The operation is safe to retry after a network error.",
)

_SYN_FIELDS: tuple[tuple[str, Callable[[str], JSON], str], ...] = (  # "name" must stay first (see create)
    ("name", lambda d: _str(d, minLength=1, maxLength=120), "Display name of the {noun}."),
    ("description", lambda d: _str(d, maxLength=10_000), "Free-form notes about the {noun}, in Markdown."),
    ("status", lambda d: _enum(d, ("draft", "active", "paused", "closed")), "Lifecycle status of the {noun}."),
    ("priority", lambda d: _enum(d, ("low", "normal", "high", "critical")), "How urgent the {noun} is."),
    ("owner_email", _email, "Email address of the person who owns the {noun}."),
    ("external_url", _uri, "Link to the {noun} in another system."),
    ("tags", lambda d: _array(d, {"type": "string", "maxLength": 40}, 0, 50), "Tags used to group {plural}."),
    ("created_after", _datetime, "Only include {plural} created after this time."),
    ("due_at", _datetime, "When the {noun} is due."),
    ("page_size", lambda d: _int(d, 1, 100, default=25), "Maximum number of {plural} per page."),
    ("cursor", _str, "Cursor from the previous page; omit it for the first page."),
    ("amount", lambda d: _num(d, minimum=0), "Monetary amount attached to the {noun}."),
    ("currency", lambda d: _str(d, pattern="^[A-Z]{3}$"), "Three-letter ISO 4217 currency code."),
    ("quantity", lambda d: _int(d, 0, 10_000), "Number of units."),
    ("notify", lambda d: _bool(d, True), "Notify people watching the {noun}."),
    ("dry_run", _bool, "Validate the request without saving anything."),
    ("reason", lambda d: _str(d, maxLength=500), "Short explanation recorded in the audit log."),
    ("assignee_id", lambda d: _str(d, maxLength=64), "ID of the person responsible for the {noun}."),
    ("parent_id", lambda d: _str(d, maxLength=64), "ID of the parent {noun}, if any."),
    ("sort", lambda d: _enum(d, ("created_at", "updated_at", "name")), "Field to sort {plural} by."),
    ("order", lambda d: _enum(d, ("asc", "desc"), default="desc"), "Sort direction."),
    ("locale", lambda d: _str(d, pattern="^[a-z]{2}(-[A-Z]{2})?$"), "Language for generated text, such as en-GB."),
    ("include", lambda d: _array(d, _enum("Related data.", ("owner", "history", "attachments", "comments"))),
     "Related data to embed in the response."),
    ("metadata", lambda d: {"type": "object", "description": d, "additionalProperties": {"type": "string"}},
     "Arbitrary string key-value pairs stored with the {noun}."),
    ("address", lambda d: _obj(d, {"street": _str("Street and number."), "city": _str("City."),
                                   "postal_code": _str("Postal code."),
                                   "country": _str("Two-letter country code.", pattern="^[A-Z]{2}$")}, ["country"]),
     "Postal address associated with the {noun}."),
)  # fmt: skip

_SENTENCE_CUMULATIVE = (0.25, 0.65, 0.90)  # 1-4 sentences: 25%, 40%, 25%, 10%
_PROPERTY_CUMULATIVE = (0.10, 0.28, 0.48, 0.64, 0.76, 0.85, 0.91, 0.95, 0.98)  # 1-10 properties, mostly 2-5


def _plural(noun: str) -> str:
    if noun.endswith("y") and noun[-2] not in "aeiou":
        return f"{noun[:-1]}ies"
    return f"{noun}es" if noun.endswith(("s", "x", "ch", "sh")) else f"{noun}s"


def synthetic_tools(n: int, *, seed: int = 0) -> list[dict[str, object]]:
    """Return `n` generated tools with unique names, deterministic for a given `(n, seed)`.

    Names are `<domain>_<action>`; once every domain/action pair is used, numbered domains (`invoices2_create`, ...)
    keep names unique at any size. A prefix of a longer list equals the shorter list for the same seed.
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    rng = random.Random(seed)
    actions = list(_SYN_ACTIONS)
    nouns = list(_NOUNS)
    rng.shuffle(actions)
    rng.shuffle(nouns)
    # Per noun, everything that does not depend on the action: plural, article, formatted sentences and fields.
    domains: list[tuple[str, str, dict[str, str], tuple[str, ...], list[tuple[str, Callable[[str], JSON], str]]]] = []
    for noun in nouns:
        words = {"noun": noun, "plural": _plural(noun), "a_noun": _article(noun)}
        extras = tuple(sentence.format_map(words) for sentence in _SYN_EXTRA)
        fields = [(name, make, doc.format_map(words)) for name, make, doc in _SYN_FIELDS]
        domains.append((noun, words["plural"], words, extras, fields))
    per_round = len(nouns) * len(actions)
    tools: list[JSON] = []
    for i in range(n):
        variant, rest = divmod(i, per_round)
        noun_index, action_index = divmod(rest, len(actions))
        noun, plural, words, extras, fields = domains[noun_index]
        action, hints, targeted, firsts = actions[action_index]
        category = f"{plural}{variant + 1}" if variant else plural

        sentences = bisect(_SENTENCE_CUMULATIVE, rng.random())
        first = firsts[rng.randrange(len(firsts))].format_map(words)
        description = " ".join([first, *rng.sample(extras, sentences)]) if sentences else first

        count = bisect(_PROPERTY_CUMULATIVE, rng.random()) + 1
        props: dict[str, JSON] = {}
        required: list[str] = []
        pool = fields
        if targeted:
            required.append(f"{noun}_id")
            props[f"{noun}_id"] = _str(f"ID of the {noun}.", minLength=1, maxLength=64)
            count -= 1
        elif action == "create":  # creating always needs a name; the rest is optional
            name, make, doc = fields[0]
            required.append(name)
            props[name] = make(doc)
            pool, count = fields[1:], count - 1
        for name, make, doc in rng.sample(pool, count):
            props[name] = make(doc)

        title = None
        if rng.random() < 0.15:
            subject = noun if targeted or action == "create" else plural
            title = f"{action.capitalize()} {subject}" + (f" ({variant + 1})" if variant else "")
        tools.append(_tool(f"{category}_{action}", category, description, props, required, hints, title))
    return tools
