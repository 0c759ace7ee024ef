"""Server-side settings of the lazy-tools extension, validated once at construction.

Every setting has three spellings, documented together in ``SETTINGS`` (and in the README): a keyword
of ``Options``/``lazify()``, a command-line flag of ``serve`` and ``proxy``, and an environment variable.
Code and flags win over the environment; ``LAZYMCP_*`` variables win over the aliases that other
projects' servers already use (``ALIASES``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from lazymcp.protocol.messages import MODES, Mode, ServerSettings, StockDefault
from lazymcp.surfaces.metatools import DESCRIBE_TOOLS, INVOKE_TOOL, LISTABLE, SEARCH_TOOLS
from lazymcp.tools.metadata import Metadata, load_metadata
from lazymcp.tools.stubs import DEFAULT_SUMMARY_CHARS

DEFAULT_DESCRIBE_BATCH_MAX = 100
MAX_DESCRIBE_BATCH = 100
"""The spec's ceiling on ``describeBatchMax``: it bounds the work one request can ask for."""
DEFAULT_MAX_ENABLED = 50
"""Dynamic mode: tools one session may have enabled at once before the least recently used goes."""
DEFAULT_SEARCH_TOP_K = 20
"""Most matches ``search_tools`` returns (and, in dynamic mode, enables) per call."""
MAX_SEARCH_TOP_K = 100
DEFAULT_EXTRA_META_TOOLS: Final[tuple[str, ...]] = (SEARCH_TOOLS, INVOKE_TOOL)
"""Meta-tools a stock client's ``describe`` listing carries beside ``describe_tools`` when ``meta_tools``
is not set: a model that sees only summaries finds tools by asking, and reaches them through
``invoke_tool`` where its client drops the arguments a stub does not declare (mcp-use, autogen-ext's
``mcp_server_tools``, smolagents' ``ToolCallingAgent`` build an argument model from the listed schema)."""


@dataclass(frozen=True, slots=True)
class Options:
    """How a lazy server lists and describes its tools.

    ``stock_default`` is what a client that did not declare the extension gets from a plain
    ``tools/list`` in ``describe`` mode: ``"lazy"`` (valid-MCP stubs plus the ``describe_tools``
    meta-tool) or ``"eager"`` (the full tools). ``page_size`` of ``None`` serves every listing in one page.
    ``mode`` picks another way of serving stock clients (spec §17): ``dynamic``, ``proxy``, ``core`` or
    ``eager``; ``core_tools`` names the always-available (dynamic) or core (core) tools, by name or
    category; ``metadata`` is what a metadata file declares.
    """

    stock_default: StockDefault = "lazy"
    page_size: int | None = None
    summary_chars: int = DEFAULT_SUMMARY_CHARS
    describe_batch_max: int = DEFAULT_DESCRIBE_BATCH_MAX
    check_arguments: bool = True
    mode: Mode = "describe"
    core_tools: tuple[str, ...] = ()
    max_enabled: int = DEFAULT_MAX_ENABLED
    search_top_k: int = DEFAULT_SEARCH_TOP_K
    meta_tools: tuple[str, ...] | None = None
    metadata: Metadata = field(default_factory=Metadata, hash=False)
    by_host: bool = False
    """``mode`` is only the default: a host ``lazymcp.surfaces.hosts`` knows gets its own (set when no mode
    was configured for every host)."""
    hosts: tuple[tuple[str, Mode], ...] = ()
    """A mode by host (``clientInfo.name``), over the table's and over ``mode``."""
    always_load: str | None = None
    """The ``_meta`` key that marks each listed meta-tool "do not defer" (the host's, where it has one)."""

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
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, not {self.mode!r}")
        if self.stock_default == "eager" and self.mode not in ("describe", "eager"):
            raise ValueError(f"stock_default='eager' is the eager mode; it cannot be combined with mode={self.mode!r}")
        if isinstance(self.core_tools, str) or not all(isinstance(n, str) and n for n in self.core_tools):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ValueError(f"core_tools must be a sequence of tool or category names, not {self.core_tools!r}")
        object.__setattr__(self, "core_tools", tuple(self.core_tools))  # a list given in code: kept immutable
        if self.meta_tools is not None:
            if isinstance(self.meta_tools, str):
                raise ValueError(f"meta_tools must be a sequence of meta-tool names, not {self.meta_tools!r}")
            object.__setattr__(self, "meta_tools", tuple(self.meta_tools))
        if self.max_enabled < 1:
            raise ValueError(f"max_enabled must be at least 1, not {self.max_enabled}")
        if not 1 <= self.search_top_k <= MAX_SEARCH_TOP_K:
            raise ValueError(f"search_top_k must be between 1 and {MAX_SEARCH_TOP_K}, not {self.search_top_k}")
        if self.meta_tools is not None:
            if self.mode not in ("describe", "eager"):
                raise ValueError(f"meta_tools applies to the describe and eager modes, not to mode={self.mode!r}")
            unknown = [name for name in self.meta_tools if name not in LISTABLE]
            if unknown:
                raise ValueError(f"meta_tools may name {', '.join(LISTABLE)}; not {unknown[0]!r}")
        object.__setattr__(self, "hosts", tuple((host, mode) for host, mode in self.hosts))  # pairs given as a list
        for host, mode in self.hosts:
            if mode not in MODES:
                raise ValueError(f"the mode of host {host!r} must be one of {', '.join(MODES)}, not {mode!r}")
        self.metadata.check_summaries(self.summary_chars)

    @property
    def stock_meta_tools(self) -> tuple[str, ...]:
        """The meta-tools ahead of a stock stub listing: ``describe_tools``, then what ``meta_tools`` adds
        in ``describe`` mode."""
        if self.mode != "describe" or self.stock_default == "eager":
            return (DESCRIBE_TOOLS,)
        extra = DEFAULT_EXTRA_META_TOOLS if self.meta_tools is None else self.meta_tools
        return (DESCRIBE_TOOLS, *(name for name in LISTABLE if name in extra and name != DESCRIBE_TOOLS))

    @property
    def eager_meta_tools(self) -> tuple[str, ...]:
        """The meta-tools ahead of an ``eager`` listing: what ``meta_tools`` names, none by default."""
        return tuple(name for name in LISTABLE if name in (self.meta_tools or ()))

    def settings(self) -> ServerSettings:
        """What the server advertises at ``capabilities.extensions[EXT_ID]`` (LT-02)."""
        return {
            "describeBatchMax": self.describe_batch_max,
            "summaryMaxChars": self.summary_chars,
            "stockDefault": "eager" if self.mode == "eager" else self.stock_default,
            "pageSize": self.page_size,
        }

    @classmethod
    def from_env(cls, environ: Mapping[str, str], **given: Any) -> Options:
        """Options from keyword arguments (code or flags) first, then the environment, then defaults.

        Raises:
            ValueError: an environment variable holds a value its setting does not take.
            CatalogError: the metadata file cannot be read.
        """
        values: dict[str, Any] = {key: value for key, value in given.items() if value is not None}
        for setting in SETTINGS:
            if setting.field in values or setting.env is None:
                continue
            raw, where = environ.get(setting.env), setting.env
            for alias in ALIASES:
                if raw is None and alias.field == setting.field and alias.env in environ:
                    raw, where = alias.read(environ[alias.env]), alias.env
            if raw is not None and raw.strip():
                values[setting.field] = setting.parse(raw.strip(), where)
        values.setdefault("by_host", "mode" not in values)  # no mode for every host: each host gets its own
        metadata = values.get("metadata")
        if isinstance(metadata, str):
            values["metadata"] = load_metadata(metadata, limit=None)
        return cls(**values)


# --- the settings table ------------------------------------------------------------------------


def _mode(value: str, where: str) -> Mode:
    for mode in MODES:
        if value == mode:
            return mode
    raise ValueError(f"{where} must be one of {', '.join(MODES)}, not {value!r}")


def _stock_default(value: str, where: str) -> StockDefault:
    if value == "lazy" or value == "eager":
        return value
    raise ValueError(f"{where} must be 'lazy' or 'eager', not {value!r}")


def _names(value: str, where: str) -> tuple[str, ...]:
    names = tuple(part.strip() for part in value.split(",") if part.strip())
    if not names:
        raise ValueError(f"{where} must name at least one tool or category (comma-separated)")
    return names


def _whole(value: str, where: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise ValueError(f"{where} must be a positive whole number, not {value!r}")
    return int(value)


def _host_modes(value: str, where: str) -> tuple[tuple[str, Mode], ...]:
    pairs: list[tuple[str, Mode]] = []
    for part in (part.strip() for part in value.split(",") if part.strip()):
        host, equals, mode = part.rpartition("=")
        if not equals or not host.strip():
            raise ValueError(f"{where} takes HOST=MODE pairs (comma-separated), not {part!r}")
        pairs.append((host.strip(), _mode(mode.strip(), f"{where} for {host.strip()!r}")))
    if not pairs:
        raise ValueError(f"{where} must give at least one HOST=MODE pair")
    return tuple(pairs)


def _path(value: str, where: str) -> str:
    return value


@dataclass(frozen=True, slots=True)
class Setting:
    """One setting's three spellings, and how to read it from text."""

    field: str
    flag: str
    env: str | None
    parse: Callable[[str, str], Any]
    metavar: str
    help: str

    @property
    def whole_number(self) -> bool:
        """Does it take a positive whole number?"""
        return self.parse is _whole


SETTINGS: Final[tuple[Setting, ...]] = (
    Setting(
        "mode",
        "--mode",
        "LAZYMCP_MODE",
        _mode,
        "MODE",
        "describe, dynamic, proxy, core or eager, for every host (default: each known host's, else describe)",
    ),
    Setting(
        "hosts",
        "--host-mode",
        "LAZYMCP_HOST_MODES",
        _host_modes,
        "HOST=MODE",
        "the mode of a host, by the clientInfo.name it sends (e.g. claude-code=describe; comma-separated)",
    ),
    Setting(
        "core_tools",
        "--core-tools",
        "LAZYMCP_CORE_TOOLS",
        _names,
        "A,B",
        "always-available (dynamic) or core (core) tools, by tool or category name",
    ),
    Setting(
        "max_enabled",
        "--max-enabled",
        "LAZYMCP_MAX_ENABLED",
        _whole,
        "N",
        f"dynamic: tools a session keeps enabled, least recently used out first (default {DEFAULT_MAX_ENABLED})",
    ),
    Setting(
        "search_top_k",
        "--search-top-k",
        "LAZYMCP_SEARCH_TOP_K",
        _whole,
        "K",
        f"most matches search_tools returns, and dynamic mode enables (default {DEFAULT_SEARCH_TOP_K})",
    ),
    Setting(
        "meta_tools",
        "--meta-tools",
        "LAZYMCP_META_TOOLS",
        _names,
        "A,B",
        "describe/eager: meta-tools the stock listing carries (e.g. search_tools)",
    ),
    Setting(
        "metadata",
        "--metadata",
        "LAZYMCP_METADATA",
        _path,
        "FILE",
        "JSON file of per-tool category, summary, examples, related, deprecated",
    ),
    Setting(
        "stock_default",
        "--stock-default",
        "LAZYMCP_STOCK_DEFAULT",
        _stock_default,
        "lazy|eager",
        "describe: what a client without the extension gets from tools/list (default lazy)",
    ),
    Setting(
        "page_size", "--page-size", "LAZYMCP_PAGE_SIZE", _whole, "N", "tools per tools/list page (default: one page)"
    ),
    Setting(
        "summary_chars",
        "--summary-chars",
        "LAZYMCP_SUMMARY_CHARS",
        _whole,
        "N",
        f"longest stub summary (default {DEFAULT_SUMMARY_CHARS})",
    ),
)
"""Every setting of ``serve`` and ``proxy``, with its flag and environment variable."""


@dataclass(frozen=True, slots=True)
class Alias:
    """An environment variable other projects use for the same idea, mapped to the nearest setting."""

    env: str
    field: str
    read: Callable[[str], str]
    meaning: str


def _lazy_mode(value: str) -> str:
    truthy = value.strip().lower()
    if truthy in ("1", "true", "yes", "on"):
        return "dynamic"
    if truthy in ("0", "false", "no", "off"):
        return "eager"
    raise ValueError(f"LAZY_MODE must be true or false, not {value!r}")


def _tools_mode(value: str) -> str:
    mode = {"core": "core", "extended": "eager", "full": "eager", "all": "eager"}.get(value.strip().lower())
    if mode is None:
        raise ValueError(f"MCP_TOOLS_MODE must be core or extended, not {value!r}")
    return mode


ALIASES: Final[tuple[Alias, ...]] = (
    Alias("LAZY_MODE", "mode", _lazy_mode, "true: dynamic; false: eager"),
    Alias("MCP_TOOLS_MODE", "mode", _tools_mode, "core: core; extended (or full, all): eager"),
    Alias("ALWAYS_AVAILABLE_TOOLS", "core_tools", str, "core_tools"),
)
"""Environment spellings of the seed patterns, read when the ``LAZYMCP_*`` variable is unset."""
