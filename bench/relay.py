"""A plain stdio byte relay: the floor any stdio proxy pays (``python bench/relay.py COMMAND ARGS...``).

It spawns the command and copies bytes both ways, parsing nothing, with the same asyncio protocol
callbacks the proxy uses.
"""

import asyncio
import sys


class _Upstream(asyncio.SubprocessProtocol):
    def __init__(self, out: asyncio.WriteTransport) -> None:
        self.out = out

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        if fd == 1:
            self.out.write(data)


class _Client(asyncio.Protocol):
    def __init__(self, upstream: asyncio.WriteTransport, done: asyncio.Future[None]) -> None:
        self.upstream, self.done = upstream, done

    def data_received(self, data: bytes) -> None:
        self.upstream.write(data)

    def eof_received(self) -> bool:
        if not self.done.done():
            self.done.set_result(None)
        return False


async def main() -> None:
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()
    out, _ = await loop.connect_write_pipe(asyncio.Protocol, sys.stdout.buffer)
    child, _ = await loop.subprocess_exec(lambda: _Upstream(out), *sys.argv[1:], stdin=-1, stdout=-1, stderr=None)
    await loop.connect_read_pipe(lambda: _Client(child.get_pipe_transport(0), done), sys.stdin.buffer)  # type: ignore[arg-type]
    await done
    child.kill()


if __name__ == "__main__":
    asyncio.run(main())
