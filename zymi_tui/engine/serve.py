"""`serve` (docs/engine.md#serve): connectors publish, a router runs every `PipelineRequested` it sees.

Events this process writes reach the router directly; rows other processes append are picked up by
polling the store (`id > last`), never the rows that existed before serve started.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import uuid
from collections.abc import Callable

from zymi_tui.engine.connectors import (
    ConnectorError,
    HttpInboundConnector,
    StdinConnector,
    StdoutOutput,
    clip,
)
from zymi_tui.engine.run_seal import seal_interrupted
from zymi_tui.engine.runner import RunHalted, Runtime, run_pipeline
from zymi_tui.events.kinds import PipelineCompleted, PipelineRequested
from zymi_tui.events.stored import StoredEvent
from zymi_tui.http_request import is_loopback

OWN_IDS_KEPT = 8192


class Router:
    def __init__(self, rt: Runtime, served: list[str], say: Callable[[str], None]) -> None:
        self.rt = rt
        self.served = set(served)
        self.say = say
        self.tasks: set[asyncio.Task[None]] = set()
        self.own: dict[str, None] = {}
        self.done: dict[str, asyncio.Event] = {}

    def on_event(self, stored: StoredEvent) -> None:
        """Listener for events written by this process."""
        self.own[stored.event.id] = None
        if len(self.own) > OWN_IDS_KEPT:
            self.own.pop(next(iter(self.own)))
        self.consider(stored)

    def consider(self, stored: StoredEvent) -> None:
        kind = stored.event.kind
        if not isinstance(kind, PipelineRequested) or kind.pipeline not in self.served:
            return
        corr = stored.event.correlation_id or str(uuid.uuid4())
        stream = stored.event.stream_id
        shown = f"  -> received PipelineRequested for '{kind.pipeline}' (corr={clip(corr)}, stream={clip(stream)})"
        self.say(shown)
        task = asyncio.ensure_future(self.serve_one(kind.pipeline, dict(kind.inputs), corr, stream))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def serve_one(self, pipeline: str, inputs: dict[str, str], corr: str, stream: str) -> None:
        try:
            result = await run_pipeline(self.rt, pipeline, inputs, correlation_id=corr, stream_id=stream)
            done = PipelineCompleted(
                pipeline=pipeline, success=result.success, final_output=result.final_output, error=None
            )
        except RunHalted as e:
            done = PipelineCompleted(pipeline=pipeline, success=False, final_output=None, error=str(e))
        except asyncio.CancelledError:  # Ctrl-C: the run is sealed as failed before serve exits
            await asyncio.shield(seal_interrupted(self.rt.recorder, stream, pipeline, corr, "zymi-serve"))
            raise
        except Exception as e:  # a fault of ours: sealed as failed and said, never an open run in a live serve
            error = f"{type(e).__name__}: {e}"
            print(f"zymi-tui serve: the run on stream {stream} failed: {error}", file=sys.stderr, flush=True)
            done = PipelineCompleted(pipeline=pipeline, success=False, final_output=None, error=error)
        await self.rt.recorder.emit(stream, done, "zymi-serve", corr)
        await self.rt.recorder.checkpoint()
        event = self.done.get(corr)
        if event is not None:
            event.set()

    async def watch(self, poll_ms: int) -> None:
        """Pick up `PipelineRequested` rows appended by other processes."""
        last = await self.rt.reader.max_global_id()
        while True:
            await asyncio.sleep(poll_ms / 1000)
            for _ in range(16):
                page = await self.rt.reader.read_after(last, 256)
                last = page.last_global_id
                for stored in page.events:
                    # a row of ours may be read between its commit and its listener call
                    mine = stored.event.id in self.own or stored.event.id in self.rt.recorder.in_flight
                    if not mine:
                        self.consider(stored)
                if page.rows_scanned < 256:
                    break


def _write_stdout(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


async def serve(
    rt: Runtime, served: list[str], poll_ms: int, say: Callable[[str], None], *, insecure: bool = False
) -> None:
    router = Router(rt, served, say)
    rt.recorder.listeners.append(router.on_event)
    project = rt.workspace.project
    http: list[HttpInboundConnector] = []
    background: list[asyncio.Task[None]] = []
    for cfg in project.outputs:
        if cfg.get("type") == "stdout":
            output = StdoutOutput(cfg, _write_stdout)
            rt.recorder.listeners.append(output)
    try:
        for cfg in project.connectors:
            kind = cfg.get("type")
            if kind == "http_inbound":
                conn = HttpInboundConnector(cfg, rt.recorder, insecure=insecure)
                asked = conn.port
                await conn.start()
                http.append(conn)
                if asked == 0:  # port 0: the OS picked one; the caller needs to know which
                    host = f"[{conn.host}]" if ":" in conn.host else conn.host
                    say(f"  http_inbound '{conn.name}': listening on http://{host}:{conn.port}{conn.path}")
                if conn.auth.get("type", "none") == "none" and not is_loopback(conn.host):  # only with --insecure
                    say(f"  warning: http_inbound '{conn.name}' on {conn.host} without auth (--insecure): "
                        "anyone who can reach it can drive the agent")  # fmt: skip
            elif kind == "stdin":
                background.append(asyncio.ensure_future(StdinConnector(cfg, rt.recorder).run()))
            else:
                say(f"  note:  connector type `{kind}` is not supported by zymi-tui; skipped")
        background.append(asyncio.ensure_future(router.watch(poll_ms)))
        await asyncio.Event().wait()
    except ConnectorError:
        raise
    finally:
        for task in background:
            task.cancel()
        for conn in http:
            await conn.stop()
        for task in list(router.tasks):
            task.cancel()
        for task in [*background, *router.tasks]:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
