"""Server-side settings of the lazy-tools extension, validated once at construction."""

from __future__ import annotations

from dataclasses import dataclass

from lazymcp.messages import ServerSettings, StockDefault
from lazymcp.stubs import DEFAULT_SUMMARY_CHARS

DEFAULT_DESCRIBE_BATCH_MAX = 100
MAX_DESCRIBE_BATCH = 100
"""The spec's ceiling on ``describeBatchMax``: it bounds the work one request can ask for."""
META_TOOL_NAME = "describe_tools"
META_TOOL_FALLBACK_NAME = "lazymcp_describe_tools"


@dataclass(frozen=True, slots=True)
class Options:
    """How a lazy server lists and describes its tools.

    ``stock_default`` is what a client that did not declare the extension gets from a plain
    ``tools/list``: ``"lazy"`` (valid-MCP stubs plus the ``describe_tools`` meta-tool) or ``"eager"``
    (the full tools). ``page_size`` of ``None`` serves every listing in one page.
    """

    stock_default: StockDefault = "lazy"
    page_size: int | None = None
    summary_chars: int = DEFAULT_SUMMARY_CHARS
    describe_batch_max: int = DEFAULT_DESCRIBE_BATCH_MAX
    check_arguments: bool = True

    def __post_init__(self) -> None:
        if self.stock_default not in ("lazy", "eager"):
            raise ValueError(f"stock_default must be 'lazy' or 'eager', not {self.stock_default!r}")
        if self.page_size is not None and self.page_size < 1:
            raise ValueError(f"page_size must be at least 1 (or None for one page), not {self.page_size}")
        if self.summary_chars < 8:
            raise ValueError(f"summary_chars must be at least 8, not {self.summary_chars}")
        if not 1 <= self.describe_batch_max <= MAX_DESCRIBE_BATCH:
            limit = MAX_DESCRIBE_BATCH
            raise ValueError(f"describe_batch_max must be between 1 and {limit}, not {self.describe_batch_max}")

    def settings(self) -> ServerSettings:
        """What the server advertises at ``capabilities.extensions[EXT_ID]`` (LT-02)."""
        return {
            "describeBatchMax": self.describe_batch_max,
            "summaryMaxChars": self.summary_chars,
            "stockDefault": self.stock_default,
            "pageSize": self.page_size,
        }
