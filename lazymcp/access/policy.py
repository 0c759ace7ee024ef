"""Who may use which tool of the gateway: the principals, the access policy, and what it grants each.

Theory of operation. A request's ``Principal`` is what its front learned of it: the name of the bearer
token it carried (``lazymcp.access.bearer``), or the client, issuer, subject, scopes and claims of the OAuth
token an issuer vouched for (``lazymcp.run.http_checks.principal_of``); a client with no credentials (stdio,
an open loopback front) is ``ANONYMOUS``. The configuration's ``lazymcp.access`` block (``Policy``) maps
keys to ``allow`` and ``deny`` globs over the gateway's tool names; ``Policy.grant(principal)`` is the
``Grant`` of one principal: the union of the allows of every key it matches, minus the union of their
denies (no key matched: nothing). Without a policy there is no grant, and everything is allowed. A key's
``"metrics": true`` lets the principals it matches see the whole gateway's status (every principal's
servers, sessions and calls: ``Policy.sees_all``); any other principal sees its own part of it only.

This module is the one place that decides. A gateway session is built for one principal, and its
merged catalog holds only the tools its grant allows (``lazymcp.gateway.merged``), so listings,
``tools/describe``, the meta-tools, "did you mean" suggestions and calls all see the same tools, and a
tool the grant refuses is, to that session, a tool that does not exist. See spec/gateway.md, "Access".
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import translate
from typing import cast

from lazymcp.protocol.errors import ConfigError

EVERYONE = "*"
PREFIXES = ("sub:", "client:", "scope:", "claim:")
"""The keys that match a part of an OAuth token; any other key but ``*`` is a bearer token's name."""
RESOURCES = "resources"
"""A server's resources and resource templates are granted by the name ``<server><separator>resources``."""
DEFAULT_NAME = "default"
"""The principal of a token file's bare tokens (lines without ``name:``)."""
_TOKEN_NAME = re.compile(r"[A-Za-z0-9_.@+\-]+")


@dataclass(frozen=True, slots=True)
class Principal:
    """Who a request comes from. Two requests of one principal compare equal (a session is bound to it,
    its sessions share its servers and its ``--max-sessions-per-principal``): its token's name, or its
    issuer, client and subject, as ``key``. ``scopes``, ``claims`` and ``token`` take no part in that: a
    renewed token's times and id differ, and a person's tokens of other scopes (a client may ask for
    fewer) are still that person, granted by the scopes of each request's own token."""

    name: str | None = None
    """The bearer token's name (``name: token`` in the token file; ``default`` for a bare token)."""
    client: str | None = None
    issuer: str | None = None
    subject: str | None = None
    scopes: frozenset[str] = field(default=frozenset(), compare=False, hash=False)
    claims: Mapping[str, object] = field(default_factory=lambda: {}, compare=False, hash=False)
    token: str | None = field(default=None, compare=False, hash=False, repr=False)
    """The OAuth access token the request came with, for token exchange (``lazymcp.access.exchange``) only:
    never logged, never sent on."""

    def describe(self) -> str:
        """A few words naming it, for logs: the token's name, else the subject or client."""
        return self.name or self.subject or self.client or "anonymous"

    @property
    def key(self) -> str:
        """One text per principal, what its calls are counted and audited under: ``token:<name>`` (a name is
        a plain word), ``oauth:["<issuer>","<client>","<subject>"]`` (a JSON array, so that no two
        principals' parts run together into one text: client ``a b`` with subject ``c`` is not client
        ``a`` with subject ``b c``), or ``anonymous``."""
        if self.name is not None:
            return f"token:{self.name}"
        if self.client is None and self.subject is None:
            return "anonymous"
        return "oauth:" + json.dumps([self.issuer, self.client, self.subject], separators=(",", ":"))


ANONYMOUS = Principal()
"""A client with no credentials: stdio, or an open loopback front. Only the key ``*`` matches it."""


def matches(key: str, principal: Principal) -> bool:
    """Does a policy key name ``principal``?"""
    if key == EVERYONE:
        return True
    kind, colon, value = key.partition(":")
    if not colon:
        return principal.name == key
    if kind == "sub":
        return principal.subject == value
    if kind == "client":
        return principal.client == value
    if kind == "scope":
        return value in principal.scopes
    claim, _, wanted = value.partition("=")
    found = principal.claims.get(claim)
    values = cast(list[object], found) if isinstance(found, list) else [found]
    return any(_claim_text(one) == wanted for one in values)


def _claim_text(value: object) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value) if isinstance(value, str | int | float) else None


def any_of(patterns: Iterable[str]) -> Callable[[str], bool]:
    """Does a tool name match one of ``patterns``? A pattern matches the name it spells exactly (a tool
    named ``get[1]`` is matched by ``get[1]``), and as a glob: ``*``, ``?``, ``[seq]``, ``[!seq]``; a glob
    character meant literally is put in brackets (``[*]``, ``[?]``, ``[[]``)."""
    exact = frozenset(patterns)
    translated = [translate(pattern) for pattern in exact]
    regex = re.compile("|".join(translated)) if translated else None
    return lambda name: name in exact or (regex is not None and regex.match(name) is not None)


@dataclass(frozen=True, slots=True)
class Grant:
    """The tools one principal may use: names matching an ``allow`` pattern and no ``deny`` pattern
    (``any_of``)."""

    allow: tuple[str, ...]
    deny: tuple[str, ...] = ()
    _allow: Callable[[str], bool] = field(init=False, compare=False, repr=False)
    _deny: Callable[[str], bool] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_allow", any_of(self.allow))
        object.__setattr__(self, "_deny", any_of(self.deny))

    def __call__(self, name: str) -> bool:
        """May the principal use the tool (or prompt, or a server's resources) of this gateway name?"""
        return self._allow(name) and not self._deny(name)

    def resources(self, server: str, separator: str) -> bool:
        """May the principal list, read, subscribe to and complete ``server``'s resources and templates (the
        name ``<server><separator>resources``)?"""
        return self(f"{server}{separator}{RESOURCES}")

    def touches(self, server: str, separator: str) -> bool:
        """Could an ``allow`` pattern match a name of ``server`` (a tool or prompt not listed yet)? False:
        the principal has nothing of it, and nothing of it is asked for (the server is not started)."""
        for pattern in self.allow:
            head, sep, _ = pattern.partition(separator)
            if sep and any_of([head])(server):
                return True
            if not sep and any(c in pattern for c in "*?["):  # ``*``, ``*get*``: may match any server's
                return True
        return False

    def names_server(self, server: str, separator: str) -> bool:
        """Does an ``allow`` pattern name ``server`` itself (``github__*``, not ``*__get_*``)?"""
        return any(pattern.partition(separator)[0] == server for pattern in self.allow if separator in pattern)


NOTHING = Grant(())


@dataclass(frozen=True, slots=True)
class Rule:
    """One key's globs, and whether its principals see the whole gateway's status."""

    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    metrics: bool = False


@dataclass(frozen=True, slots=True)
class Policy:
    """The ``lazymcp.access`` block: a ``Rule`` by key."""

    rules: Mapping[str, Rule]

    def grant(self, principal: Principal) -> Grant:
        """What ``principal`` may use: the union of the allows of the keys it matches, minus their denies."""
        allow: dict[str, None] = {}
        deny: dict[str, None] = {}
        for key, rule in self.rules.items():
            if matches(key, principal):
                allow.update(dict.fromkeys(rule.allow))
                deny.update(dict.fromkeys(rule.deny))
        return Grant(tuple(allow), tuple(deny)) if allow else NOTHING

    def sees_all(self, principal: Principal) -> bool:
        """Does a key ``principal`` matches grant ``"metrics": true`` (the status of every principal's servers,
        sessions and calls, not its own only)?"""
        return any(rule.metrics and matches(key, principal) for key, rule in self.rules.items())

    def token_names(self) -> list[str]:
        """The keys that name a bearer token."""
        return [key for key in self.rules if key != EVERYONE and ":" not in key]

    def patterns(self) -> list[tuple[str, str]]:
        """(key, pattern) for every glob of the policy, in the file's order."""
        return [(key, p) for key, rule in self.rules.items() for p in (*rule.allow, *rule.deny)]


def parse_policy(value: object, source: str) -> Policy:
    """The ``lazymcp.access`` block of the configuration ``source`` (call it only when the block is there:
    a configuration without one has no policy).

    Raises:
        ConfigError: the block is not an object (``null`` included: never "no policy" by accident), or a
            key or a rule is malformed (one line naming it).
    """
    where = f"{source}: field 'lazymcp.access'"
    if not isinstance(value, Mapping):
        shown = "null" if value is None else type(value).__name__
        raise ConfigError(f"{where} must be an object of rules by principal key, not {shown}")
    rules: dict[str, Rule] = {}
    for key, body in cast(Mapping[str, object], value).items():
        _check_key(key, where)
        if not isinstance(body, Mapping):
            raise ConfigError(f'{where}, key {key!r}: expected {{"allow": [...], "deny": [...]}}')
        body = cast(Mapping[str, object], body)
        unknown = [name for name in body if name not in ("allow", "deny", "metrics")]
        if unknown:
            raise ConfigError(f"{where}, key {key!r}: unknown field {unknown[0]!r}; expected allow, deny, metrics")
        field_of = f"{where}, key {key!r}, field"
        metrics = body.get("metrics", False)
        if not isinstance(metrics, bool):
            raise ConfigError(f"{field_of} 'metrics' must be true or false")
        rules[key] = Rule(
            _globs(body.get("allow", []), f"{field_of} 'allow'"),
            _globs(body.get("deny", []), f"{field_of} 'deny'"),
            metrics,
        )
    return Policy(rules)


def _check_key(key: str, where: str) -> None:
    kind, colon, value = key.partition(":")
    if key == EVERYONE or (not colon and _TOKEN_NAME.fullmatch(key)):
        return
    if colon and f"{kind}:" in PREFIXES and value and (kind != "claim" or "=" in value.strip("=")):
        return
    raise ConfigError(
        f"{where}: key {key!r} is none of: a token name, 'sub:<subject>', 'client:<client id>', "
        "'scope:<scope>', 'claim:<name>=<value>', '*'"
    )


def _globs(value: object, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in cast(list[object], value)):
        raise ConfigError(f"{where} must be a list of tool-name patterns")
    return tuple(cast(list[str], value))


def check_policy(policy: Policy, tools: Mapping[str, Sequence[str] | None], separator: str, source: str) -> None:
    """A policy must name only servers of the configuration, and each pattern must match some tool.

    ``tools``: each enabled server's gateway tool names, None for a server not listed yet (no manifest),
    whose names cannot be told at start-up: a pattern that could match one of its tools is let be.

    Raises:
        ConfigError: a pattern names an unknown server, or matches no tool (one line naming it).
    """
    problems = policy_problems(policy, tools, separator, source)
    if problems:
        raise ConfigError(problems[0])


def policy_problems(
    policy: Policy, tools: Mapping[str, Sequence[str] | None], separator: str, source: str
) -> list[str]:
    """Every pattern of ``policy`` that names an unknown server or matches no tool, one line each (see
    ``check_policy``)."""
    problems: list[str] = []
    for key, pattern in policy.patterns():
        where = f"{source}: 'lazymcp.access' key {key!r}: pattern {pattern!r}"
        server, sep, _ = pattern.partition(separator)
        if sep and not any(c in server for c in "*?["):
            if server not in tools:
                problems.append(f"{where} names the server {server!r}, which the configuration does not have")
                continue
            candidates = [server]
        else:
            candidates = list(tools)
        matching = any_of([pattern])
        if any(tools[s] is None for s in candidates):
            continue  # a server not listed yet may have a tool it matches
        names = [name for s in candidates for name in (*(tools[s] or ()), f"{s}{separator}{RESOURCES}")]
        if not any(matching(name) for name in names):  # a server's resources are named like a tool
            problems.append(f"{where} matches no tool of the configuration's servers")
    return problems


def read_token_file(text: str, source: str) -> list[tuple[str, str]]:
    """The (name, token) pairs of a token file: ``name: token`` a line, or a bare token (named
    ``default``); blank lines and ``#`` comments are skipped.

    Raises:
        ConfigError: a line is malformed, a name is not a plain word, or a token is given twice.
    """
    pairs: list[tuple[str, str]] = []
    seen: set[str] = set()
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        name, colon, token = line.partition(":")
        name, token = (name.strip(), token.strip()) if colon else (DEFAULT_NAME, line)
        where = f"{source}, line {number}"
        if not _TOKEN_NAME.fullmatch(name):
            raise ConfigError(f"{where}: the name {name!r} may hold only letters, digits and . _ - @ +")
        if not token or any(c.isspace() for c in token):
            raise ConfigError(f"{where}: expected 'name: token' or a bare token, one a line")
        if token in seen:
            raise ConfigError(f"{where}: this token is given twice")
        seen.add(token)
        pairs.append((name, token))
    if not pairs:
        raise ConfigError(f"{source} holds no token")
    return pairs
