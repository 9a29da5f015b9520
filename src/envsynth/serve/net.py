"""What the HTTP and MCP servers share on the network side: exposure policy, bearer auth, binding.

Pure Python and plain ASGI (no web framework): :class:`BearerAuth` wraps any ASGI app.

Policy: on a loopback host (``127.0.0.1``, ``::1``, ``localhost``) a token is optional. On
any other host a server refuses to start without a token unless the operator passes
``insecure=True`` (``--insecure``), and then it prints a warning.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import os
import socket
import sys
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

__all__ = [
    "TOKEN_ENV",
    "BearerAuth",
    "announce",
    "bearer_matches",
    "bind",
    "check_exposure",
    "is_loopback",
    "short",
    "token_from_env",
    "url_of",
]

#: the environment variable a server reads its token from when none is given
TOKEN_ENV = "ENVSYNTH_TOKEN"

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def short(text: str, limit: int = 64) -> str:
    """``text`` cut to ``limit`` characters (with its length said), for echoing client input in errors."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text)} characters)"


def token_from_env() -> str | None:
    """The token in ``$ENVSYNTH_TOKEN`` (None when unset or empty)."""
    return os.environ.get(TOKEN_ENV) or None


def is_loopback(host: str) -> bool:
    """Whether ``host`` only accepts connections from this machine."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_exposure(host: str, token: str | None, insecure: bool, *, what: str) -> str | None:
    """Apply the exposure policy for a server of kind ``what`` listening on ``host``.

    Returns:
        A warning to print (a non-loopback host without a token, allowed by ``insecure``),
        else None.

    Raises:
        ValueError: a non-loopback host without a token and without ``insecure``.
    """
    if token is not None and not token.strip():
        raise ValueError("the token is empty")
    if token is not None or is_loopback(host):
        return None
    if not insecure:
        raise ValueError(
            f"{what} on {host} (not a loopback address) needs a token: pass --token or set ${TOKEN_ENV}, "
            "or --insecure to serve without authentication"
        )
    return f"WARNING: {what} on {host} without authentication: anyone who can reach this address can use it"


def bind(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` and listening (port 0: a free port).

    Raises:
        OSError: the address cannot be bound (in use, not an address of this machine).
    """
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    last: OSError | None = None
    for family, kind, proto, _, addr in infos:
        sock = socket.socket(family, kind, proto)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(addr)
            sock.listen(2048)
            return sock
        except OSError as exc:
            sock.close()
            last = exc
    raise last or OSError(f"cannot bind {host}:{port}")


def url_of(sock: socket.socket, host: str) -> str:
    """``http://host:port`` of a bound socket (IPv6 hosts in brackets)."""
    port = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return f"http://{shown}:{port}"


def announce(line: str) -> None:
    """One line on stderr (stdout may be a protocol's wire)."""
    print(line, file=sys.stderr, flush=True)


def bearer_matches(scope: Scope, tokens: list[bytes]) -> bool:
    """Whether the ASGI request ``scope`` has ``Authorization: Bearer <t>`` for a ``t`` in ``tokens``."""
    for name, value in scope.get("headers", ()):
        if name.lower() == b"authorization":
            scheme, _, given = bytes(value).partition(b" ")
            if scheme.lower() != b"bearer":
                return False
            given = given.strip()
            return any(hmac.compare_digest(given, t) for t in tokens)
    return False


class BearerAuth:
    """ASGI middleware: every HTTP request needs ``Authorization: Bearer <one of tokens>``.

    A request without it (or with another token) gets a JSON 401
    ``{"error": "unauthorized", "detail": ...}`` (a websocket is closed with 1008). Tokens
    are compared in constant time. Lifespan events pass through.
    """

    def __init__(self, app: ASGIApp, tokens: list[str]) -> None:
        if not tokens or not all(t.strip() for t in tokens):
            raise ValueError("BearerAuth needs non-empty tokens")
        self.app = app
        self._tokens = [t.encode() for t in tokens]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or bearer_matches(scope, self._tokens):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        body = json.dumps({"error": "unauthorized", "detail": "this server needs 'Authorization: Bearer <token>'"}).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), (b"www-authenticate", b"Bearer")]
        await send({"type": "http.response.start", "status": 401, "headers": headers})
        await send({"type": "http.response.body", "body": body})
