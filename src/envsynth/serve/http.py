"""An HTTP/JSON server for a corpus: many concurrent agent episodes over loopback or a network.

``create_app(corpus)`` gives a FastAPI app, ``serve(corpus, host, port)`` runs it with
uvicorn. Endpoints (all JSON; errors are ``{"error": code, "detail": message}``):

- ``GET /health``
- ``GET /tasks?offset=&limit=&app=&kind=``: ids, app, kind, instruction
- ``GET /tasks/{task_id}``: the public view (id, app, kind, instruction, user, tools)
- ``POST /episodes {task_id, seed}`` -> ``{episode_id, task_id, instruction, tools}``
- ``GET /episodes/{id}``, ``GET /episodes/{id}/tools``
- ``POST /episodes/{id}/call {name, arguments}`` -> ``{outcome, content, code}``
- ``POST /episodes/{id}/finish {answer}`` -> ``{score, passed, breakdown}``
- ``DELETE /episodes/{id}``

A tool call that is rejected or fails inside the environment is still ``200``: its
``outcome`` says so. HTTP errors are for the protocol: 404 unknown task or episode (or
one ended for idleness), 409 a finished episode, 422 a malformed body, 503 at capacity.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, Literal, TypeVar

try:
    from fastapi import FastAPI, Query, Request
    from fastapi.concurrency import run_in_threadpool
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse, Response
    from starlette.exceptions import HTTPException as StarletteHTTPException
    from starlette.routing import Route
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(f"envsynth's HTTP server needs FastAPI and uvicorn: pip install 'envsynth[serve]' ({exc})") from exc

from pydantic import ValidationError

from envsynth import __version__
from envsynth.corpus.load import Corpus, load_corpus
from envsynth.serve.models import (
    Deleted,
    EpisodeInfo,
    EpisodeStarted,
    ErrorBody,
    Finish,
    Health,
    Score,
    StartEpisode,
    TaskDetail,
    TaskPage,
    TaskSummary,
    ToolCall,
    ToolResult,
    Tools,
)
from envsynth.serve.registry import EpisodeRegistry, ServeError
from envsynth.tasks.episode import COMPLETE_TASK

__all__ = ["create_app", "serve"]

log = logging.getLogger("envsynth.serve")

T = TypeVar("T")
CallMode = Literal["inline", "threadpool"]

_ERRORS: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorBody, "description": "unknown task or episode"},
    409: {"model": ErrorBody, "description": "the episode is finished"},
    422: {"model": ErrorBody, "description": "malformed request"},
    503: {"model": ErrorBody, "description": "at capacity"},
}


def create_app(
    corpus: str | Path | Corpus,
    *,
    max_episodes: int = 1024,
    idle_timeout: float = 600.0,
    call_mode: CallMode = "inline",
    reap_interval: float | None = None,
) -> FastAPI:
    """The HTTP app serving ``corpus`` (a folder or a loaded :class:`Corpus`).

    Args:
        max_episodes: live episodes at most; one more start gets 503 until one ends.
        idle_timeout: seconds without a request after which an episode is ended (its id
            then answers 404 ``episode_expired``).
        call_mode: ``inline`` runs tool calls on the event loop (they take tens of
            microseconds: the fastest, see docs/serve.md); ``threadpool`` runs them in
            worker threads.
        reap_interval: how often the reaper looks for idle episodes (default:
            ``idle_timeout / 4``, between 0.05 s and 30 s).
    """
    if call_mode not in ("inline", "threadpool"):
        raise ValueError(f"call_mode must be 'inline' or 'threadpool', not {call_mode!r}")
    c = corpus if isinstance(corpus, Corpus) else load_corpus(corpus)
    registry = EpisodeRegistry(c, max_episodes=max_episodes, idle_timeout=idle_timeout)
    interval = reap_interval if reap_interval is not None else min(30.0, max(0.05, idle_timeout / 4))

    async def run(fn: Callable[..., T], *args: Any) -> T:
        if call_mode == "inline":
            return fn(*args)
        return await run_in_threadpool(fn, *args)

    async def reaper() -> None:
        while True:
            await asyncio.sleep(interval)
            try:
                await run(registry.reap)
            except Exception:  # keep reaping; one bad episode must not stop it
                log.exception("envsynth serve: reaping idle episodes failed")

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        task = asyncio.create_task(reaper())
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            registry.close()

    app = FastAPI(title="envsynth", version=__version__, lifespan=lifespan, responses=_ERRORS)
    app.state.registry = registry
    app.state.corpus = c

    @app.exception_handler(ServeError)
    async def _serve_error(_: Request, exc: ServeError) -> JSONResponse:
        return _error_response(exc)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        return _invalid_response(exc.errors())

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        return JSONResponse({"error": code, "detail": str(exc.detail)}, status_code=exc.status_code, headers=exc.headers)

    # -- tasks -------------------------------------------------------------------------------

    @app.get("/health", response_model=Health)
    async def health() -> Health:
        s = registry.stats()
        return Health(
            version=__version__,
            tasks=len(c.tasks),
            live_episodes=s["live"],
            max_episodes=registry.max_episodes,
            idle_timeout=registry.idle_timeout,
            started=s["started"],
            finished=s["finished"],
            reaped=s["reaped"],
        )

    @app.get("/tasks", response_model=TaskPage)
    async def list_tasks(
        offset: int = Query(0, ge=0),
        limit: int = Query(100, ge=1, le=1000),
        app_name: str | None = Query(None, alias="app"),
        kind: Literal["action", "info", "mixed"] | None = None,
    ) -> TaskPage:
        tasks = c.tasks
        if app_name is not None or kind is not None:
            tasks = [t for t in tasks if (app_name is None or t.app == app_name) and (kind is None or t.kind == kind)]
        page = [TaskSummary(id=t.id, app=t.app, kind=t.kind, instruction=t.instruction) for t in tasks[offset : offset + limit]]
        return TaskPage(total=len(tasks), offset=offset, limit=limit, tasks=page)

    def _task_detail(task_id: str) -> TaskDetail:
        try:
            t = c.task(task_id)
        except KeyError:
            raise ServeError(404, "unknown_task", f"no task {task_id!r} in this corpus") from None
        with registry._corpus_lock:  # apps load lazily, once
            schemas = c.apps[t.app].tool_schemas(t.visible_tools)
        return TaskDetail(id=t.id, app=t.app, kind=t.kind, instruction=t.instruction, user=t.user, tools=[*schemas, COMPLETE_TASK])

    @app.get("/tasks/{task_id}", response_model=TaskDetail)
    async def get_task(task_id: str) -> TaskDetail:
        return await run(_task_detail, task_id)

    # -- episodes ----------------------------------------------------------------------------

    @app.post("/episodes", response_model=EpisodeStarted, status_code=201)
    async def start_episode(body: StartEpisode) -> EpisodeStarted:
        live = await run(registry.open, body.task_id, body.seed)
        ep = live.episode
        return EpisodeStarted(episode_id=live.id, task_id=live.task_id, instruction=ep.instruction, tools=ep.tools)

    @app.get("/episodes/{episode_id}", response_model=EpisodeInfo)
    async def episode_info(episode_id: str) -> EpisodeInfo:
        live = registry.get(episode_id)
        return EpisodeInfo(
            episode_id=live.id,
            task_id=live.task_id,
            seed=live.seed,
            calls=live.calls,
            idle_seconds=max(0.0, time.monotonic() - live.last_used),
        )

    @app.get("/episodes/{episode_id}/tools", response_model=Tools)
    async def episode_tools(episode_id: str) -> Tools:
        live = registry.get(episode_id)
        live.last_used = time.monotonic()
        return Tools(tools=live.episode.tools)

    def _call(episode_id: str, name: str, arguments: Any) -> JSONResponse:
        res = registry.call(episode_id, name, arguments)
        return JSONResponse({"outcome": res.outcome, "content": res.content, "code": res.code})

    @app.post("/episodes/{episode_id}/call", response_model=ToolResult)
    async def call_tool(episode_id: str, body: ToolCall) -> JSONResponse:
        # documents the endpoint (OpenAPI); requests are served by the leaner route below
        return await run(_call, episode_id, body.name, body.arguments)

    async def fast_call(request: Request) -> Response:
        # the hot path, without FastAPI's dependency machinery: the same ToolCall model
        # validates the body (pydantic-core straight from the bytes), the same errors result
        episode_id = request.path_params["episode_id"]
        raw = await request.body()
        try:
            body = ToolCall.model_validate_json(raw)
        except ValidationError as exc:
            return _invalid_response(exc.errors(include_url=False), prefix=("body",))
        try:
            res = await run(registry.call, episode_id, body.name, body.arguments)
        except ServeError as exc:
            return _error_response(exc)
        return Response(
            json.dumps({"outcome": res.outcome, "content": res.content, "code": res.code}, ensure_ascii=False),
            media_type="application/json",
        )

    app.router.routes.insert(0, Route("/episodes/{episode_id}/call", fast_call, methods=["POST"]))

    def _finish(episode_id: str, answer: Any) -> Score:
        reward = registry.finish(episode_id, answer)
        d = reward.to_dict()
        return Score(score=d["score"], passed=d["passed"], breakdown=d["breakdown"])

    @app.post("/episodes/{episode_id}/finish", response_model=Score)
    async def finish_episode(episode_id: str, body: Finish | None = None) -> Score:
        return await run(_finish, episode_id, body.answer if body is not None else None)

    @app.delete("/episodes/{episode_id}", response_model=Deleted)
    async def delete_episode(episode_id: str) -> Deleted:
        await run(registry.delete, episode_id)
        return Deleted(episode_id=episode_id)

    return app


def _error_response(exc: ServeError) -> JSONResponse:
    headers = {"Retry-After": "1"} if exc.status == 503 else None
    return JSONResponse({"error": exc.code, "detail": exc.message, **exc.extra}, status_code=exc.status, headers=headers)


def _invalid_response(raw: Any, prefix: tuple[str, ...] = ()) -> JSONResponse:
    errors = []
    for e in raw:
        loc = list(e.get("loc", ()))
        if prefix and (not loc or loc[0] != prefix[0]):
            loc = [*prefix, *loc]
        errors.append({"loc": loc, "msg": str(e.get("msg", "")), "type": str(e.get("type", ""))})
    detail = "; ".join(f"{'.'.join(str(x) for x in e['loc'])}: {e['msg']}" for e in errors[:3])
    return JSONResponse({"error": "invalid_request", "detail": detail, "errors": errors}, status_code=422)


def serve(
    corpus: str | Path | Corpus,
    host: str = "127.0.0.1",
    port: int = 8000,
    *,
    max_episodes: int = 1024,
    idle_timeout: float = 600.0,
    call_mode: CallMode = "inline",
    log_level: str = "warning",
    access_log: bool = False,
    loop: str = "auto",
    http: str = "auto",
) -> None:
    """Serve ``corpus`` over HTTP with uvicorn until interrupted (one process, one event loop).

    Episodes live in this process's memory, so run one worker per server; ``loop`` and
    ``http`` are uvicorn's (``auto`` picks uvloop and httptools when installed, which the
    ``serve`` extra does).
    """
    try:
        import uvicorn
    except ImportError as exc:  # pragma: no cover
        raise ImportError(f"envsynth's HTTP server needs uvicorn: pip install 'envsynth[serve]' ({exc})") from exc
    app = create_app(corpus, max_episodes=max_episodes, idle_timeout=idle_timeout, call_mode=call_mode)
    uvicorn.run(app, host=host, port=port, log_level=log_level, access_log=access_log, loop=loop, http=http)  # type: ignore[arg-type]
