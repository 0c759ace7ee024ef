"""The gateway's start-up, told on stderr: each server started with it as it lists its tools (or fails),
then the total once every one has answered, so that whoever waits sees what it waits for."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from lazymcp.core.actions import Say


@dataclass
class StartUp:
    """The servers started with the gateway that have not answered yet."""

    awaited: set[str] = field(default_factory=lambda: set())
    began: float | None = None
    listed: int = 0
    count: int = 0

    def launched(self, names: list[str]) -> None:
        self.awaited, self.count = set(names), len(names)

    def started(self, now: float) -> None:
        if self.began is None:
            self.began = now

    def answered(self, name: str, tools: int | None, known: int, now: float) -> list[Say]:
        """``name`` listed ``tools`` tools (None: it failed, which is said where it fails); ``known``: the
        tools the gateway lists now."""
        if name not in self.awaited:
            return []
        self.awaited.discard(name)
        said: list[Say] = []
        if tools is not None:
            self.listed += 1
            said.append(Say(f"server {name!r}: {tools} tool{'' if tools == 1 else 's'}", logging.INFO))
        if not self.awaited:
            took = now - (self.began if self.began is not None else now)
            total = f"{self.listed} of {self.count} servers started now listed, {known} tools known, in {took:.1f} s"
            said.append(Say(f"{total}: the first listing is ready", logging.INFO))
        return said
