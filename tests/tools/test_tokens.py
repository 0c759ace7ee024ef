"""Token counts kept in the cache directory: the same as counted, counted again when the kept file is not a
count, and never more than a bounded number of them."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from lazymcp.tools import tokens
from lazymcp.tools.tokens import KEPT_COUNTS, ListingSize, count_tokens, kept_count

TEXT = '[{"name":"issues_get","description":"Get one issue by its number"}]'


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LAZYMCP_CACHE_DIR", str(tmp_path))
    return tmp_path / KEPT_COUNTS


def kept_file(cache: Path, text: str) -> Path:
    return cache / hashlib.sha256(text.encode()).hexdigest()


def test_a_kept_count_is_the_count_and_is_read_back_at_the_next_start(cache: Path) -> None:
    assert kept_count(TEXT) == count_tokens(TEXT)
    path = kept_file(cache, TEXT)
    assert path.read_text() == str(count_tokens(TEXT))
    path.write_text("7")  # what the next start finds is what it says, without loading the encoding
    assert kept_count(TEXT) == 7


@pytest.mark.parametrize("planted", ["", "x1", "1" * 40])
def test_a_kept_file_that_is_not_a_count_is_counted_again(cache: Path, planted: str) -> None:
    cache.mkdir(parents=True)
    kept_file(cache, TEXT).write_text(planted)
    assert kept_count(TEXT) == count_tokens(TEXT)


def test_a_link_in_place_of_a_kept_count_is_not_followed(cache: Path, tmp_path: Path) -> None:
    cache.mkdir(parents=True)
    target = tmp_path / "elsewhere"
    target.write_text("3")
    kept_file(cache, TEXT).symlink_to(target)
    assert kept_count(TEXT) == count_tokens(TEXT)
    assert target.read_text() == "3"


def test_the_kept_counts_stay_bounded(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tokens, "KEPT_COUNTS_MAX", 8)
    for n in range(30):
        assert kept_count(f"text {n}") == count_tokens(f"text {n}")
        assert len(list(cache.iterdir())) <= 8
    assert kept_file(cache, "text 29").exists()


def test_an_unwritable_cache_still_counts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("LAZYMCP_CACHE_DIR", str(blocker))  # a file where the directory would go
    assert kept_count(TEXT) == count_tokens(TEXT)


def test_several_servers_are_counted_list_by_list_and_added() -> None:
    first = [{"name": "issues_get", "description": "Get one issue by its number", "title": "Issue"}]
    second = [{"name": "time_now", "description": "The time now", "inputSchema": {"type": "object"}}]
    size = ListingSize.of_servers([first, second])
    alone = [ListingSize.of(first), ListingSize.of(second)]
    assert (
        size.visible.tokens
        == sum(one.visible.tokens for one in alone)
        == count_tokens('[{"name":"issues_get","description":"Get one issue by its number"}]')
        + count_tokens('[{"name":"time_now","description":"The time now","inputSchema":{"type":"object"}}]')
    )
    assert size.wire.bytes == sum(one.wire.bytes for one in alone) > size.visible.bytes  # the title: wire only
    assert ListingSize.summed([]) == ListingSize.of_servers([]) != ListingSize.of([])
