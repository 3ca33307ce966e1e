"""`serve-web`: textual-serve on 127.0.0.1, answering only pages and WebSockets meant for it.

Binding to loopback is not enough: any web page the user visits can open a WebSocket to
127.0.0.1 (cross-site WebSocket hijacking), and a name the attacker controls can be re-pointed
at 127.0.0.1 (DNS rebinding). So every request must name this server in `Host`, and a browser's
`Origin` (always sent on a WebSocket) must be this server too; anything else gets 403. The page
is textual-serve's own, with its font served locally rather than from a public CDN.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
from collections.abc import Awaitable, Callable
from importlib import resources
from pathlib import Path

from aiohttp import web
from textual_serve.server import Server

from zymi_tui import SIGINT_IGNORED_AT_START

log = logging.getLogger("zymi-tui.serve-web")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _templates() -> Path:
    return Path(str(resources.files("zymi_tui") / "data" / "web"))


class LoopbackServer(Server):
    """textual-serve's server on 127.0.0.1:`port`, refusing foreign `Host` and `Origin` headers."""

    def __init__(self, command: str, port: int, title: str) -> None:
        # bound here, so that with port 0 (the OS picks a free one) the page's URLs and the Host check
        # name the real port, and the caller can be told it before the first request
        self.socket = socket.create_server(("127.0.0.1", port))
        port = int(self.socket.getsockname()[1])
        super().__init__(command, host="127.0.0.1", port=port, title=title, templates_path=_templates())
        names = ("127.0.0.1", "localhost")
        self.hosts = {f"{name}:{port}" for name in names} | (set(names) if port == 80 else set())
        self.origins = {f"http://{host}" for host in self.hosts}

    def refusal(self, request: web.Request) -> str | None:
        """Why this request is not for us (None: it is)."""
        host = request.headers.get("Host", "").lower()
        if host not in self.hosts:
            return f"Host {host or '(none)'!r} is not this server"
        origin = request.headers.get("Origin")
        if origin is None and request.path == "/ws":
            return "a WebSocket without an Origin"
        if origin is not None and origin.lower() not in self.origins:
            return f"Origin {origin!r} is not this server"
        return None

    @web.middleware
    async def guard(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        reason = self.refusal(request)
        if reason is not None:
            log.warning("refused %s %s: %s", request.method, request.path, reason)
            raise web.HTTPForbidden(text=f"zymi-tui serve-web serves http://127.0.0.1:{self.port} only: {reason}\n")
        return await handler(request)

    async def _make_app(self) -> web.Application:
        app = await super()._make_app()
        app.middlewares.append(self.guard)
        return app

    def serve(self, debug: bool = False) -> None:
        """textual-serve's `serve`, on the socket bound above."""
        self.debug = debug
        self.initialize_logging()
        loop = asyncio.new_event_loop()
        if not SIGINT_IGNORED_AT_START:  # started with Ctrl-C ignored (`serve-web &` in a script): kept so
            loop.add_signal_handler(signal.SIGINT, self.request_exit)
        loop.add_signal_handler(signal.SIGTERM, self.request_exit)
        web.run_app(self._make_app(), sock=self.socket, handle_signals=False, loop=loop, print=lambda *args: None)
