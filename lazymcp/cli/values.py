"""What a flag's value must be: the argparse types of the ``lazymcp`` command's flags, each refusing a bad
value in one line that argparse shows with the flag's name."""

from __future__ import annotations

import argparse

from lazymcp.access.ratelimit import Rate, parse_rate
from lazymcp.protocol.errors import ConfigError

MAX_PORT = 65535


def host_port(value: str) -> tuple[str, int]:
    """``HOST:PORT`` (an IPv6 host in brackets) as (host, port); the port 0 to 65535 (0: any free one)."""
    host, colon, port = value.rpartition(":")
    if not colon or not port.isdigit() or not host:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {value!r}")
    if int(port) > MAX_PORT:
        raise argparse.ArgumentTypeError(f"the port must be 0 to {MAX_PORT}, got {value!r}")
    return host.strip("[]"), int(port)


def positive(value: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {value!r}")
    return int(value)


def rate(value: str) -> Rate:
    """``N/s`` or ``N/min``."""
    try:
        return parse_rate(value, "--rate-limit")
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(exc.message.removeprefix("--rate-limit: ")) from None
