"""An HTTP/JSON server for a corpus: many concurrent agent episodes over loopback or a network.

``create_app(corpus)`` gives a FastAPI app, ``serve(corpus, host, port)`` runs it with
uvicorn. Endpoints (all JSON; errors are ``{"error": code, "detail": message}``):

- ``GET /health``
- ``GET /tasks?offset=&limit=&app=&kind=``: ids, app, kind, instruction
- ``GET /tasks/{task_id}``: the public view (id, app, kind, instruction, tools)
- ``GET /tasks/{task_id}/user``: the user profile, for a user simulator bearing ``user_token``
- ``POST /episodes {task_id, seed}`` -> ``{episode_id, task_id, instruction, tools}``
- ``GET /episodes/{id}``, ``GET /episodes/{id}/tools``
- ``POST /episodes/{id}/call {name, arguments}`` -> ``{outcome, content, code}``
- ``POST /episodes/{id}/finish {answer}`` -> ``{score, passed, breakdown, parts}`` (kinds of mismatch,
  tables and counts unless ``reveal_expected``; finishing again returns the same reward)
- ``DELETE /episodes/{id}``

A tool call that is rejected or fails inside the environment is still ``200``: its
``outcome`` says so. HTTP errors are for the protocol: 404 unknown task or episode (or
one ended for idleness), 409 a finished episode, 422 a malformed (or too deeply nested)
body, 503 at capacity, 401 a missing token when the server has one.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
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

from pydantic import BaseModel, ValidationError

from envsynth import __version__
from envsynth.blueprint.policy import policy_text
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
from envsynth.serve.net import BearerAuth, announce, bearer_matches, bind, check_exposure, short, url_of
from envsynth.serve.registry import EpisodeRegistry, ServeError, public_breakdown, public_parts
from envsynth.tasks.episode import COMPLETE_TASK
from envsynth.tasks.model import Task, UserProfile

__all__ = ["create_app", "serve"]

log = logging.getLogger("envsynth.serve")

T = TypeVar("T")
BodyT = TypeVar("BodyT", bound=BaseModel)
CallMode = Literal["inline", "threadpool"]
Runner = Callable[..., Awaitable[Any]]

#: a 422 lists at most this many problems
MAX_ERRORS = 10

_ERRORS: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorBody, "description": "unknown task or episode"},
    409: {"model": ErrorBody, "description": "the episode is finished"},
    422: {"model": ErrorBody, "description": "malformed request"},
    503: {"model": ErrorBody, "description": "at capacity"},
    401: {"model": ErrorBody, "description": "a token is needed (the server was started with one)"},
}


def create_app(
    corpus: str | Path | Corpus,
    *,
    max_episodes: int = 1024,
    idle_timeout: float = 600.0,
    call_mode: CallMode = "inline",
    reap_interval: float | None = None,
    reveal_expected: bool = False,
    token: str | None = None,
    user_token: str | None = None,
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
        reveal_expected: ``/finish`` gives the verifier's full breakdown (messages, expected
            values and answers); by default only the kinds of mismatch, their tables and counts.
        token: every request needs ``Authorization: Bearer <token>`` (or the ``user_token``).
        user_token: ``GET /tasks/{id}/user`` (the user profile, for a user simulator) is
            served to requests bearing it; without it that route answers 403.
    """
    if call_mode not in ("inline", "threadpool"):
        raise ValueError(f"call_mode must be 'inline' or 'threadpool', not {call_mode!r}")
    for name, value in (("token", token), ("user_token", user_token)):
        if value is not None and not value.strip():
            raise ValueError(f"{name} is empty")
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
            ended = registry.close()
            if app.state.on_stopped is not None:
                app.state.on_stopped(ended)

    app = FastAPI(title="envsynth", version=__version__, lifespan=lifespan, responses=_ERRORS)
    app.state.registry = registry
    app.state.corpus = c
    app.state.on_stopped = None  # called with the number of live episodes ended at shutdown
    if token is not None:
        app.add_middleware(BearerAuth, tokens=[token] if user_token is None else [token, user_token])
    _add_error_handlers(app)
    _add_task_routes(app, c, registry, run, user_token)
    _add_episode_routes(app, registry, run, reveal_expected)
    return app


def _add_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ServeError)
    async def _serve_error(_: Request, exc: ServeError) -> JSONResponse:
        return _error_response(exc)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        return _invalid_response(exc.errors())

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        return JSONResponse({"error": code, "detail": short(str(exc.detail), 200)}, status_code=exc.status_code, headers=exc.headers)

    @app.exception_handler(Exception)
    async def _bug(request: Request, exc: Exception) -> JSONResponse:
        # a bug: logged with its traceback (by this handler and by uvicorn); the client gets JSON
        log.error("envsynth serve: %s %s failed", request.method, short(request.url.path), exc_info=exc)
        detail = f"the server failed on this request ({type(exc).__name__}); see its log"
        return JSONResponse({"error": "internal_error", "detail": detail}, status_code=500)


def _add_task_routes(app: FastAPI, c: Corpus, registry: EpisodeRegistry, run: Runner, user_token: str | None) -> None:
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
            errors=s["errors"],
        )

    @app.get("/tasks", response_model=TaskPage)
    async def list_tasks(
        offset: int = Query(0, ge=0),
        limit: int = Query(100, ge=1, le=1000),
        app_name: str | None = Query(None, alias="app"),
        kind: Literal["action", "info", "mixed"] | None = None,
    ) -> TaskPage:
        tasks = c.tasks.where(app=app_name, kind=kind)  # from the task index: only the page's records are read
        page = [TaskSummary(id=t.id, app=t.app, kind=t.kind, instruction=t.instruction) for t in tasks[offset : offset + limit]]
        return TaskPage(total=len(tasks), offset=offset, limit=limit, tasks=page)

    def _task(task_id: str) -> Task:
        try:
            return c.task(task_id)
        except KeyError:
            raise ServeError(404, "unknown_task", f"no task {short(task_id)!r} in this corpus") from None

    def _task_detail(task_id: str) -> TaskDetail:
        t = _task(task_id)
        with registry._corpus_lock:  # apps load lazily, once
            schemas = c.apps[t.app].tool_schemas(t.visible_tools)
            policy = policy_text(c.apps[t.app].blueprint)
        return TaskDetail(id=t.id, app=t.app, kind=t.kind, instruction=t.instruction, tools=[*schemas, COMPLETE_TASK], policy=policy)

    @app.get("/tasks/{task_id}", response_model=TaskDetail)
    async def get_task(task_id: str) -> TaskDetail:
        return await run(_task_detail, task_id)

    @app.get("/tasks/{task_id}/user", response_model=UserProfile, responses={401: {"model": ErrorBody}, 403: {"model": ErrorBody}})
    async def get_task_user(task_id: str, request: Request) -> UserProfile:
        if user_token is None:
            raise ServeError(403, "user_profile_disabled", "this server does not serve user profiles (start it with --user-token)")
        if not bearer_matches(request.scope, [user_token.encode()]):
            raise ServeError(401, "unauthorized", "the user profile needs 'Authorization: Bearer <user token>'")
        return _task(task_id).user


def _add_episode_routes(app: FastAPI, registry: EpisodeRegistry, run: Runner, reveal_expected: bool) -> None:
    # POST bodies are parsed by pydantic-core straight from the bytes (bounded nesting depth:
    # a deeply nested body is a 422, never a RecursionError) in plain Starlette routes put
    # before FastAPI's; the FastAPI routes, with the same models, document them (OpenAPI).

    def _start(body: StartEpisode) -> JSONResponse:
        live = registry.open(body.task_id, body.seed)
        ep = live.episode
        started = EpisodeStarted(episode_id=live.id, task_id=live.task_id, instruction=ep.instruction, tools=ep.tools, policy=ep.app_policy)
        return JSONResponse(started.model_dump(mode="json"), status_code=201)

    def _call(episode_id: str, body: ToolCall) -> Response:
        res = registry.call(episode_id, body.name, body.arguments)
        content = json.dumps({"outcome": res.outcome, "content": res.content, "code": res.code}, ensure_ascii=False)
        return Response(content, media_type="application/json")

    def _finish(episode_id: str, body: Finish | None) -> JSONResponse:
        reward = registry.finish(episode_id, body.answer if body is not None else None)
        score = Score(
            score=reward.score,
            passed=reward.passed,
            breakdown=public_breakdown(reward, reveal_expected=reveal_expected),
            parts=public_parts(reward, reveal_expected=reveal_expected),
        )
        return JSONResponse(score.model_dump(mode="json"))

    @app.post("/episodes", response_model=EpisodeStarted, status_code=201)
    async def start_episode(body: StartEpisode) -> JSONResponse:
        return await run(_start, body)

    @app.post("/episodes/{episode_id}/call", response_model=ToolResult)
    async def call_tool(episode_id: str, body: ToolCall) -> Response:
        return await run(_call, episode_id, body)

    @app.post("/episodes/{episode_id}/finish", response_model=Score)
    async def finish_episode(episode_id: str, body: Finish | None = None) -> JSONResponse:
        return await run(_finish, episode_id, body)

    def route(model: type[BodyT], handler: Callable[..., Response], *, optional: bool = False) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            raw = await request.body()
            try:
                body = None if optional and not raw.strip() else model.model_validate_json(raw)
            except ValidationError as exc:
                return _invalid_response(exc.errors(include_url=False), prefix=("body",))
            try:
                return await run(handler, *request.path_params.values(), body)
            except ServeError as exc:
                return _error_response(exc)

        return endpoint

    fast = [
        Route("/episodes/{episode_id}/call", route(ToolCall, _call), methods=["POST"]),
        Route("/episodes", route(StartEpisode, _start), methods=["POST"]),
        Route("/episodes/{episode_id}/finish", route(Finish, _finish, optional=True), methods=["POST"]),
    ]
    app.router.routes[0:0] = fast

    @app.get("/episodes/{episode_id}", response_model=EpisodeInfo)
    async def episode_info(episode_id: str) -> EpisodeInfo:
        live = registry.get(episode_id)
        state = live.episode.state()
        return EpisodeInfo(
            episode_id=live.id,
            task_id=state.task_id,
            seed=state.seed,
            calls=state.calls,
            idle_seconds=max(0.0, time.monotonic() - live.last_used),
        )

    @app.get("/episodes/{episode_id}/tools", response_model=Tools)
    async def episode_tools(episode_id: str) -> Tools:
        live = registry.get(episode_id)
        live.last_used = time.monotonic()
        return Tools(tools=live.episode.tools)

    @app.delete("/episodes/{episode_id}", response_model=Deleted)
    async def delete_episode(episode_id: str) -> Deleted:
        await run(registry.delete, episode_id)
        return Deleted(episode_id=episode_id)


def registry_errors(app: FastAPI) -> int:
    """How many episodes the app's registry failed to release (0 unless there is a bug)."""
    return int(app.state.registry.stats()["errors"])


def _error_response(exc: ServeError) -> JSONResponse:
    headers = {"Retry-After": "1"} if exc.status == 503 else None
    return JSONResponse({"error": exc.code, "detail": exc.message, **exc.extra}, status_code=exc.status, headers=headers)


def _invalid_response(raw: Any, prefix: tuple[str, ...] = ()) -> JSONResponse:
    errors = []
    for e in list(raw)[:MAX_ERRORS]:  # client input (field names) is cut short, never echoed whole
        loc = [x if isinstance(x, int) else short(str(x)) for x in e.get("loc", ())]
        if prefix and (not loc or loc[0] != prefix[0]):
            loc = [*prefix, *loc]
        errors.append({"loc": loc, "msg": short(str(e.get("msg", "")), 300), "type": str(e.get("type", ""))})
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
    reveal_expected: bool = False,
    token: str | None = None,
    user_token: str | None = None,
    insecure: bool = False,
    log_level: str = "warning",
    access_log: bool = False,
    loop: str = "auto",
    http: str = "auto",
) -> None:
    """Serve ``corpus`` over HTTP with uvicorn until interrupted (one process, one event loop).

    Episodes live in this process's memory, so run one worker per server; ``loop`` and
    ``http`` are uvicorn's (``auto`` picks uvloop and httptools when installed, which the
    ``serve`` extra does). Once the port is bound it prints
    ``envsynth serve http: listening on http://HOST:PORT (N tasks)`` on stderr (``port=0``
    picks a free port, shown there).

    Args:
        token: every request needs ``Authorization: Bearer <token>``; without one, only a
            loopback ``host`` is served unless ``insecure``.
        insecure: serve a non-loopback host without a token (a warning is printed).
        reveal_expected, user_token: see :func:`create_app`.

    Raises:
        ValueError: a non-loopback host without a token and without ``insecure``.
        OSError: the address cannot be bound.
    """
    try:
        import uvicorn
    except ImportError as exc:  # pragma: no cover
        raise ImportError(f"envsynth's HTTP server needs uvicorn: pip install 'envsynth[serve]' ({exc})") from exc
    warning = check_exposure(host, token, insecure, what="envsynth serve http")
    app = create_app(
        corpus,
        max_episodes=max_episodes,
        idle_timeout=idle_timeout,
        call_mode=call_mode,
        reveal_expected=reveal_expected,
        token=token,
        user_token=user_token,
    )
    sock = bind(host, port)
    if warning:
        announce(warning)
    auth = "token required" if token else "no token"
    announce(f"envsynth serve http: listening on {url_of(sock, host)} ({len(app.state.corpus.tasks)} tasks, {auth})")
    app.state.on_stopped = lambda n: announce(f"envsynth serve http: stopped ({n} live episodes ended, {registry_errors(app)} errors)")
    config = uvicorn.Config(app, log_level=log_level, access_log=access_log, loop=loop, http=http)  # type: ignore[arg-type]
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()
