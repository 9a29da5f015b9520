"""Serving a corpus to agents over the network.

``envsynth.serve.http`` is an HTTP/JSON server (FastAPI + uvicorn, the ``serve`` extra:
``pip install 'envsynth[serve]'``). Importing this package does not import FastAPI;
``create_app`` and ``serve`` load it on first use.
"""

from __future__ import annotations

from typing import Any

__all__ = ["create_app", "serve"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from envsynth.serve import http

        return getattr(http, name)
    raise AttributeError(f"module 'envsynth.serve' has no attribute {name!r}")
