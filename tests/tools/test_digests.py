"""Tool digests, ``tools/manifest`` and the draft's ``tools/describe {names}`` (spec/lazy-tools.md §18),
as the one door answers them: canonical encoding, paging, the draft's error shapes, the advertisement."""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

import orjson
import pytest
from jsonschema import Draft202012Validator

from lazymcp.protocol.bridge import Envelope
from lazymcp.protocol.errors import ErrorCode, InvalidParams
from lazymcp.protocol.messages import DRAFT_DESCRIBE, DRAFT_MIN_NAMES, MANIFEST
from lazymcp.surfaces.catalog import Catalog
from lazymcp.surfaces.methods import METHODS, NEW_METHODS, Answer, Caller, advertise, dispatch, most_names
from lazymcp.surfaces.options import Options
from lazymcp.tools.digests import Digest, canonical, well_formed
from lazymcp.tools.packed import Packed
from tests.conftest import SMALL_TOOLS, SPEC, shared_catalog

ERROR_SCHEMA = Draft202012Validator(json.loads((SPEC / "schema" / "error-invalid-params.json").read_text()))
MANIFEST_SCHEMA = Draft202012Validator(json.loads((SPEC / "schema" / "tools-manifest-result.json").read_text()))
NAMES_SCHEMA = Draft202012Validator(json.loads((SPEC / "schema" / "tools-describe-names-result.json").read_text()))
CALLER = Caller()


def _catalog(tools: list[dict[str, Any]] | None = None, **options: Any) -> Catalog:
    return Catalog.build(copy.deepcopy(SMALL_TOOLS if tools is None else tools), Options(**options))


def _answer(method: str, catalog: Catalog, params: object, caller: Caller = CALLER) -> dict[str, Any]:
    outcome = dispatch(method, catalog, params, caller)
    assert isinstance(outcome, Answer)
    return outcome.result


def _refused(method: str, catalog: Catalog, params: object) -> dict[str, Any]:
    """The error data of a refused request, checked against the spec's error schema."""
    with pytest.raises(InvalidParams) as caught:
        dispatch(method, catalog, params, CALLER)
    error = caught.value
    assert error.code == ErrorCode.INVALID_PARAMS
    assert error.data is not None
    ERROR_SCHEMA.validate(json.loads(orjson.dumps({"code": -32602, "message": error.message, "data": error.data})))
    return error.data


# --- the canonical encoding and the digest ----------------------------------------------------------


def test_the_canonical_encoding_sorts_keys_at_every_depth_keeps_non_ascii_and_has_no_white_space() -> None:
    tool = {"name": "café", "inputSchema": {"type": "object", "properties": {"b": {}, "a": {"z": 1, "y": 2.5}}}}
    blob = canonical(tool)
    expected = '{"inputSchema":{"properties":{"a":{"y":2.5,"z":1},"b":{}},"type":"object"},"name":"café"}'
    assert blob == expected.encode()
    assert blob == json.dumps(tool, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


@pytest.mark.requirement("LT-33")
def test_a_digest_is_the_sha256_of_the_canonical_encoding_and_the_size_its_bytes() -> None:
    tool = {"name": "ünï", "description": "d"}
    digest = Digest.of(tool)
    blob = canonical(tool)
    assert digest.digest == "sha256:" + hashlib.sha256(blob).hexdigest()
    assert digest.size == len(blob) == len(blob.decode()) + 2  # two characters of two bytes each
    assert well_formed(digest.digest)


def test_member_order_does_not_change_a_digest_and_any_change_of_content_does() -> None:
    tool = {"name": "t", "description": "d", "inputSchema": {"type": "object"}}
    reordered = {"inputSchema": {"type": "object"}, "description": "d", "name": "t"}
    assert Digest.of(tool) == Digest.of(reordered)
    changed = [
        {**tool, "description": "d."},
        {**tool, "inputSchema": {"type": "object", "properties": {}}},
        {**tool, "name": "u"},
        {**tool, "title": "T"},
    ]
    assert len({Digest.of(other).digest for other in [tool, *changed]}) == len(changed) + 1


@pytest.mark.parametrize("digest", ["sha256:" + "A" * 64, "sha256:" + "0" * 63, "md5:" + "0" * 64, 5, None, ""])
def test_only_lowercase_sha256_digests_are_well_formed(digest: object) -> None:
    assert not well_formed(digest)


# --- the catalog's manifest -------------------------------------------------------------------------


@pytest.mark.requirement("LT-34")
def test_the_manifest_of_the_954_tools_has_one_entry_per_tool_in_order_with_its_digest() -> None:
    tools = shared_catalog("combined")
    catalog = Catalog.build(copy.deepcopy(tools))
    entries = catalog.manifest()
    assert [entry["name"] for entry in entries] == [tool["name"] for tool in tools]
    for entry, tool in zip(entries, tools, strict=True):
        assert entry["digest"] == Digest.of(tool).digest
        assert entry["size"] == len(canonical(tool))
        assert entry.get("title") == (tool["title"] if isinstance(tool.get("title"), str) else None)
        assert entry.get("annotations") == tool.get("annotations")
        assert set(entry) <= {"name", "title", "digest", "size", "annotations"}
    assert catalog.manifest() is entries  # once per catalog version
    MANIFEST_SCHEMA.validate(_answer(MANIFEST, catalog, None))


def test_a_packed_catalog_gives_the_same_digests_as_its_tools() -> None:
    tools = shared_catalog("combined")
    plain = Catalog.build(copy.deepcopy(tools))
    packed = Catalog.build(Packed.of(tools), packed=True)
    assert packed.manifest() == plain.manifest()
    assert packed.digest(tools[3]["name"]) == Digest.of(tools[3]).digest
    assert packed.digest("no such tool") is None


@pytest.mark.requirement("LT-33")
def test_digests_stay_off_bare_stubs_and_describe_returns_the_tool_unchanged() -> None:
    catalog = _catalog()
    for shape in ("bare", "stock", "full"):
        for entry in catalog.listing(shape, "summary"):
            assert "digest" not in entry and "size" not in entry
    name = SMALL_TOOLS[0]["name"]
    assert _answer("tools/describe", catalog, {"name": name}) == {"tool": SMALL_TOOLS[0]}
    assert _answer(DRAFT_DESCRIBE, catalog, {"names": [name]}) == {"tools": [SMALL_TOOLS[0]]}


# --- tools/manifest ---------------------------------------------------------------------------------


@pytest.mark.requirement("LT-34")
def test_the_manifest_is_paged_like_tools_list_and_its_pages_concatenate_to_it() -> None:
    tools = [{"name": f"t{i:02d}", "description": "x", "inputSchema": {"type": "object"}} for i in range(7)]
    catalog = _catalog(tools, page_size=3)
    seen: list[dict[str, Any]] = []
    params: dict[str, Any] = {}
    pages = 0
    while True:
        page = _answer(MANIFEST, catalog, params)
        MANIFEST_SCHEMA.validate(page)
        pages += 1
        seen += page["entries"]
        if "nextCursor" not in page:
            break
        params = {"cursor": page["nextCursor"]}
    assert pages == 3
    assert seen == catalog.manifest()


@pytest.mark.parametrize(("cursor", "reason"), [(5, "type"), ("nope", "malformed"), ("0000000000000000.3", "stale")])
def test_a_bad_manifest_cursor_is_invalid_params_on_cursor(cursor: object, reason: str) -> None:
    catalog = _catalog(page_size=1)
    data = _refused(MANIFEST, catalog, {"cursor": cursor})
    assert (data["field"], data["reason"]) == ("cursor", reason)


def test_a_modern_manifest_carries_the_list_cache_members() -> None:
    caller = Caller(envelope=Envelope(server_info={"name": "s", "version": "1"}))
    result = _answer(MANIFEST, _catalog(), None, caller)
    assert result["resultType"] == "complete"
    assert {"ttlMs", "cacheScope", "entries"} <= set(result)
    MANIFEST_SCHEMA.validate(result)


@pytest.mark.requirement("LT-34")
def test_a_stock_client_gets_the_manifest_whatever_the_mode() -> None:
    for mode in ("describe", "dynamic", "proxy", "core", "eager"):
        catalog = _catalog(mode=mode)
        assert _answer(MANIFEST, catalog, {})["entries"] == catalog.manifest()


# --- the draft's tools/describe {names} ---------------------------------------------------------------


@pytest.mark.requirement("LT-35")
def test_names_are_described_in_request_order_repeats_included() -> None:
    catalog = _catalog()
    a, b = SMALL_TOOLS[1]["name"], SMALL_TOOLS[0]["name"]
    result = _answer(DRAFT_DESCRIBE, catalog, {"names": [a, b, a]})
    NAMES_SCHEMA.validate(result)
    assert [tool["name"] for tool in result["tools"]] == [a, b, a]
    assert result["tools"][1] == SMALL_TOOLS[0]


@pytest.mark.requirement("LT-35")
def test_an_unknown_name_fails_the_whole_request_naming_every_unknown_name_once() -> None:
    catalog = _catalog()
    known = SMALL_TOOLS[0]["name"]
    data = _refused(DRAFT_DESCRIBE, catalog, {"names": ["nope", known, "gone", "nope"]})
    assert data["unknownNames"] == ["nope", "gone"]
    assert data["field"] == "names"


@pytest.mark.requirement("LT-35")
def test_an_empty_names_is_reason_empty_with_the_limit() -> None:
    data = _refused(DRAFT_DESCRIBE, _catalog(), {"names": []})
    assert data["reason"] == "empty"
    assert data["maxNames"] == 100


@pytest.mark.requirement("LT-32")
def test_at_least_fifty_names_are_taken_whatever_describe_batch_max_says() -> None:
    catalog = _catalog(describe_batch_max=10)
    assert most_names(catalog.options) == DRAFT_MIN_NAMES
    name = SMALL_TOOLS[0]["name"]
    assert len(_answer(DRAFT_DESCRIBE, catalog, {"names": [name] * DRAFT_MIN_NAMES})["tools"]) == DRAFT_MIN_NAMES
    data = _refused(DRAFT_DESCRIBE, catalog, {"names": [name] * (DRAFT_MIN_NAMES + 1)})
    assert (data["reason"], data["maxNames"]) == ("maxNames", DRAFT_MIN_NAMES)


@pytest.mark.requirement("LT-35")
def test_more_names_than_describe_batch_max_is_reason_max_names() -> None:
    name = SMALL_TOOLS[0]["name"]
    data = _refused(DRAFT_DESCRIBE, _catalog(), {"names": [name] * 101})
    assert (data["reason"], data["maxNames"]) == ("maxNames", 100)


MALFORMED: list[dict[str, Any]] = [{"names": "a"}, {"names": None}, {"names": ["a", 5]}, {"names": ["a"], "name": "a"}]


@pytest.mark.parametrize("params", MALFORMED)
def test_malformed_names_are_a_type_error_on_names(params: dict[str, Any]) -> None:
    data = _refused(DRAFT_DESCRIBE, _catalog(), params)
    assert (data["field"], data["reason"]) == ("names", "type")


def test_a_long_unknown_name_is_echoed_cut() -> None:
    data = _refused(DRAFT_DESCRIBE, _catalog(), {"names": ["x" * 100_000]})
    [shown] = data["unknownNames"]
    assert len(shown) < 1000


# --- the method table and the advertisement ---------------------------------------------------------


def test_both_draft_methods_go_through_the_one_table() -> None:
    assert {MANIFEST, DRAFT_DESCRIBE} <= set(METHODS) and {MANIFEST, DRAFT_DESCRIBE} <= NEW_METHODS


@pytest.mark.requirement("LT-32")
def test_the_capability_is_advertised_beside_the_extension_with_max_names() -> None:
    result = advertise({"capabilities": {"tools": {}}}, Options(describe_batch_max=80))
    assert result["capabilities"]["tools"] == {"listChanged": True, "manifest": {"maxNames": 80}}
    assert "tools" not in advertise({"capabilities": {}}, Options())["capabilities"]
