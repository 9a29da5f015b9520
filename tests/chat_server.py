"""A local OpenAI-compatible chat-completions server on loopback, for tests that use real HTTP clients.

The test gives one function ``(path, body) -> (status, payload)``; the server answers every
POST with it (``Retry-After: 0`` on a 429) and runs in a daemon thread while the context is open.
A payload is a JSON object, or a :class:`Raw` body sent as it is (an HTML error page...).
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Raw:
    """A reply body sent as it is, with its content type (a proxy's HTML page under a 200...)."""

    body: str
    content_type: str = "text/html"


Reply = Callable[[str, dict[str, Any]], tuple[int, "dict[str, Any] | Raw"]]
"""``(request path, JSON body) -> (HTTP status, JSON payload or Raw body)``."""


def completion(
    model: str, message: dict[str, Any], *, prompt_tokens: int = 100, completion_tokens: int = 10, finish: str = "stop"
) -> dict[str, Any]:
    """A ``chat.completion`` payload with one choice holding ``message``."""
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


@contextmanager
def chat_server(reply: Reply) -> Iterator[str]:
    """Serve ``reply`` on 127.0.0.1 (a free port); yields the API root ``http://127.0.0.1:PORT/v1``."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            status, payload = reply(self.path, body)
            data = payload.body.encode() if isinstance(payload, Raw) else json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", payload.content_type if isinstance(payload, Raw) else "application/json")
            self.send_header("Content-Length", str(len(data)))
            if status == 429:
                self.send_header("Retry-After", "0")
            self.end_headers()
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout under test)
                self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    finally:
        httpd.shutdown()
        httpd.server_close()
