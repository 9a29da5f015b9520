"""``envsynth serve http`` and ``serve mcp``: a corpus's episodes for trainers and agents."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from envsynth.cli.common import (
    app,
    fail,
)

serve_app = typer.Typer(help="Serve a corpus's episodes: to trainers over HTTP, to agents over MCP.", no_args_is_help=True)


app.add_typer(serve_app, name="serve")


_TOKEN_HELP = "Require 'Authorization: Bearer TOKEN' on every request (or set $ENVSYNTH_TOKEN, which keeps it out of ps)."


_INSECURE_HELP = "Serve a non-loopback --host without a token (refused otherwise)."


_REVEAL_HELP = "Show the expected values and answers in the reward's breakdown (default: only kinds of mismatch and counts)."


@serve_app.command("http")
def serve_http(
    corpus: Annotated[Path, typer.Argument(help="A corpus folder (envsynth build OUT --tasks-per-app T).")],
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on (0: a free one, shown at startup).")] = 8000,
    max_episodes: Annotated[int, typer.Option("--max-episodes", help="Live episodes at most (503 beyond).")] = 1024,
    idle_timeout: Annotated[float, typer.Option("--idle-timeout", help="Seconds before an idle episode is ended.")] = 600.0,
    call_mode: Annotated[str, typer.Option("--call-mode", help="inline (fastest) or threadpool.")] = "inline",
    token: Annotated[str | None, typer.Option("--token", envvar="ENVSYNTH_TOKEN", help=_TOKEN_HELP)] = None,
    user_token: Annotated[
        str | None,
        typer.Option(
            "--user-token", envvar="ENVSYNTH_USER_TOKEN", help="Serve GET /tasks/{id}/user (the user profile) to this bearer token only."
        ),
    ] = None,
    insecure: Annotated[bool, typer.Option("--insecure", help=_INSECURE_HELP)] = False,
    reveal_expected: Annotated[bool, typer.Option("--reveal-expected", help=_REVEAL_HELP)] = False,
) -> None:
    """Serve episodes over HTTP: create an episode for a task, list its tools, call, finish, close.

    Endpoints: GET /health, GET /tasks, GET /tasks/{id}, POST /episodes, GET /episodes/{id}/tools,
    POST /episodes/{id}/call, POST /episodes/{id}/finish, DELETE /episodes/{id}, and GET /tasks/{id}/user
    for a user simulator (--user-token). A non-loopback --host needs --token (or --insecure).
    See docs/serve.md for what is and is not promised.
    """
    from envsynth.corpus.errors import CorpusError

    if call_mode not in ("inline", "threadpool"):
        fail("--call-mode takes inline or threadpool")
    try:
        from envsynth.serve.http import serve
    except ImportError as exc:
        fail(str(exc))
    try:
        serve(
            corpus,
            host=host,
            port=port,
            max_episodes=max_episodes,
            idle_timeout=idle_timeout,
            call_mode=call_mode,
            reveal_expected=reveal_expected,
            token=token or None,
            user_token=user_token or None,
            insecure=insecure,
        )
    except (CorpusError, ValueError) as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}")


@serve_app.command("mcp")
def serve_mcp(
    corpus: Annotated[Path, typer.Argument(help="A corpus folder (envsynth build OUT --tasks-per-app T).")],
    task: Annotated[str, typer.Option("--task", help="The id of the task to serve (one episode).")],
    transport: Annotated[str, typer.Option(help="stdio (stdin/stdout) or http (streamable HTTP at /mcp).")] = "stdio",
    host: Annotated[str, typer.Option(help="Address to listen on (http).")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on (http; 0: a free one, shown at startup).")] = 8000,
    seed: Annotated[int, typer.Option(help="The episode's seed.")] = 0,
    reward_file: Annotated[
        Path | None, typer.Option("--reward-file", help="Write the reward JSON here when the agent calls complete_task.")
    ] = None,
    token: Annotated[str | None, typer.Option("--token", envvar="ENVSYNTH_TOKEN", help=f"(http) {_TOKEN_HELP}")] = None,
    insecure: Annotated[bool, typer.Option("--insecure", help=f"(http) {_INSECURE_HELP}")] = False,
    reveal_expected: Annotated[bool, typer.Option("--reveal-expected", help=_REVEAL_HELP)] = False,
) -> None:
    """Serve one task episode as an MCP server: the task's tools plus complete_task.

    The task's instruction is the server's instructions (and its "task" prompt). The agent is told
    only "Task completed." when it finishes; the reward goes to stderr and --reward-file. See docs/mcp.md.
    """
    from envsynth.corpus import CorpusError, load_corpus

    if transport not in ("stdio", "http"):
        fail("--transport takes stdio or http")
    try:
        from envsynth.serve.mcp import run
    except ImportError as exc:
        fail(str(exc))
    try:
        loaded = load_corpus(corpus)
        loaded.task(task)
    except CorpusError as exc:
        fail(str(exc))
    except KeyError as exc:
        fail(str(exc.args[0]))
    try:
        run(
            loaded,
            task,
            seed=seed,
            reward_file=reward_file,
            transport=transport,
            host=host,
            port=port,
            reveal_expected=reveal_expected,
            token=token or None,
            insecure=insecure,
        )
    except ValueError as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"cannot listen on {host}:{port}: {exc.strerror or exc}")
