"""One task episode as an MCP server (the official ``mcp`` SDK, the ``mcp`` extra).

``build_server(corpus, task_id)`` starts an episode on the task and returns a low-level
:class:`mcp.server.lowlevel.Server` that exposes exactly the task's visible tools plus
``complete_task(answer?)``; ``run(...)`` serves it over stdio or streamable HTTP.

- Every tool call goes through :meth:`TaskEpisode.call`. A success returns the result's
  JSON text; a rejected call (anticipated rejection, unknown tool, bad arguments) or an
  unexpected failure returns the message as a tool result with ``isError`` true, so the
  agent can correct itself and the session goes on.
- ``complete_task`` ends the episode (:meth:`TaskEpisode.step`, the trainer's view). The agent is told only ``"Task completed."``; the
  reward (score, passed, breakdown) goes to stderr and, with ``reward_file``, to a JSON
  file: the agent never sees the verifier.
- The task's instruction is the server's ``instructions`` and its ``task`` prompt. When the
  app has a policy, it is also the resource ``envsynth://policy`` (markdown) and comes first in
  the ``instructions``, under "## Policy", before "## Request" and the instruction.

The oracle, the expected effects and the app's other tools are never exposed. A server is
one episode: every client that connects (HTTP allows several) shares it, and after
``complete_task`` every call is an error.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

try:
    import anyio
    import mcp_types as types
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(f"envsynth's MCP server needs the MCP SDK: pip install 'envsynth[mcp]' ({exc})") from exc

from envsynth import __version__
from envsynth.corpus.load import Corpus, load_corpus
from envsynth.runtime.episode import SUCCESS
from envsynth.serve.net import BearerAuth, announce, bind, check_exposure, short, url_of
from envsynth.serve.registry import public_breakdown, public_parts
from envsynth.tasks.episode import TaskEpisode
from envsynth.tasks.trainer import COMPLETE, Action

__all__ = ["COMPLETED", "EpisodeTools", "build_server", "run"]

log = logging.getLogger(__name__)

COMPLETED = "Task completed."
POLICY_RESOURCE = types.Resource(
    uri="envsynth://policy",
    name="policy",
    description="The app's policy: what the agent must and must not do (markdown).",
    mime_type="text/markdown",
)
Transport = Literal["stdio", "http"]


class EpisodeTools:
    """The MCP view of one :class:`TaskEpisode`: its tool list, calls and completion.

    Attributes:
        episode: the episode being played.
        task_id: its task.
        seed: the episode's seed.
        reward: the reward record once ``complete_task`` was called, else None.
    """

    def __init__(
        self,
        episode: TaskEpisode,
        *,
        seed: int = 0,
        reward_file: str | Path | None = None,
        on_reward: Callable[[dict[str, Any]], None] | None = None,
        reveal_expected: bool = False,
    ) -> None:
        self.episode = episode
        self._reveal = reveal_expected
        self.task_id = episode.task_id
        self.seed = seed
        self.reward: dict[str, Any] | None = None
        self._reward_file = Path(reward_file) if reward_file is not None else None
        self._on_reward = on_reward
        self.tools = [
            types.Tool(
                name=s["function"]["name"],
                description=s["function"].get("description"),
                input_schema=s["function"].get("parameters") or {"type": "object", "properties": {}},
            )
            for s in episode.tools
        ]
        self._schemas = {t.name: t.input_schema for t in self.tools}

    def input_schema(self, name: str) -> dict[str, Any] | None:
        """The input schema of tool ``name`` (None for an unknown tool)."""
        return self._schemas.get(name)

    def call(self, name: str, arguments: dict[str, Any] | None) -> types.CallToolResult:
        """Run one tool call (or ``complete_task``) and wrap its outcome as an MCP tool result."""
        if self.episode.finished:
            return _result("The task is already completed: no more calls.", error=True)
        if name == "complete_task":
            return self._complete(arguments or {})
        if name not in self._schemas:  # (said here so that a huge name is not echoed whole)
            return _result(f"Unknown tool {short(name)!r}.", error=True)
        try:
            res = self.episode.call(name, arguments or {})
        except Exception as exc:  # an environment bug must not end the session: logged with its traceback
            log.exception("envsynth serve mcp: tool %s of task %s failed", short(name), self.task_id)
            return _result(f"Unexpected failure in {short(name)}: {type(exc).__name__}: {short(str(exc), 500)}", error=True)
        return _result(res.content, error=res.outcome != SUCCESS)

    def _complete(self, arguments: dict[str, Any]) -> types.CallToolResult:
        step = self.episode.step(Action(COMPLETE, arguments))
        if not step.done:  # arguments other than 'answer': the episode goes on
            return _result(step.observation, error=True)
        state, reward = self.episode.state(), self.episode.finish()  # finishing again: the reward it ended with
        self.reward = {
            "task_id": self.task_id,
            "seed": self.seed,
            "answer": state.answer,
            "tainted": state.tainted,
            "score": reward.score,
            "passed": reward.passed,
            "breakdown": public_breakdown(reward, reveal_expected=self._reveal),
            "parts": public_parts(reward, reveal_expected=self._reveal),
        }
        print(f"envsynth mcp: task {self.task_id} completed, score {reward.score}", file=sys.stderr, flush=True)
        if self._reward_file is not None:
            self._reward_file.parent.mkdir(parents=True, exist_ok=True)
            self._reward_file.write_text(json.dumps(self.reward, indent=2, default=str) + "\n", encoding="utf-8")
        if self._on_reward is not None:
            self._on_reward(self.reward)
        return _result(COMPLETED)


def _result(text: str, *, error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=error)


def build_server(
    corpus_or_path: Corpus | str | Path,
    task_id: str,
    *,
    seed: int = 0,
    reward_file: str | Path | None = None,
    on_reward: Callable[[dict[str, Any]], None] | None = None,
    reveal_expected: bool = False,
) -> Server[Any]:
    """An MCP server for one fresh episode on ``task_id``.

    Args:
        corpus_or_path: a loaded corpus or its folder.
        task_id: the task to play.
        seed: the episode's seed.
        reward_file: where to write the reward JSON when ``complete_task`` is called
            (``task_id``, ``seed``, ``answer``, ``tainted``, ``score``, ``passed``, ``breakdown``).
        on_reward: also called with that record.
        reveal_expected: the record's ``breakdown`` is the verifier's full detail (messages,
            expected values and answers); by default only ``{kind, table, count}`` entries.

    Returns:
        The server; its ``instructions`` are the task's instruction and its
        ``envsynth_episode`` attribute is the :class:`EpisodeTools` it serves (for the host
        process: its ``reward`` once completed).

    Raises:
        CorpusError: the corpus cannot be loaded.
        KeyError: no such task.
    """
    corpus = corpus_or_path if isinstance(corpus_or_path, Corpus) else load_corpus(corpus_or_path)
    episode = corpus.start(task_id, seed=seed)
    tools = EpisodeTools(episode, seed=seed, reward_file=reward_file, on_reward=on_reward, reveal_expected=reveal_expected)
    instruction = tools.episode.instruction
    app_policy = tools.episode.app_policy
    prompt = types.Prompt(name="task", description="The user's request for this episode.")
    resources = [POLICY_RESOURCE] if app_policy else []

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools.tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return tools.call(params.name, params.arguments)

    async def list_prompts(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=[prompt])

    async def get_prompt(ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        if params.name != "task":
            raise ValueError(f"Unknown prompt {params.name!r}.")
        message = types.PromptMessage(role="user", content=types.TextContent(text=instruction))
        return types.GetPromptResult(description=prompt.description, messages=[message])

    async def list_resources(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=resources)

    async def read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        if not resources or str(params.uri) != POLICY_RESOURCE.uri:
            raise ValueError(f"Unknown resource {str(params.uri)!r}.")
        text = types.TextResourceContents(uri=POLICY_RESOURCE.uri, mime_type="text/markdown", text=app_policy)
        return types.ReadResourceResult(contents=[text])

    server: Server[Any] = Server(
        f"envsynth-{task_id}",
        version=__version__,
        instructions=f"## Policy\n\n{app_policy}\n\n## Request\n\n{instruction}" if app_policy else instruction,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
        get_tool_input_schema=tools.input_schema,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
    )
    server.envsynth_episode = tools  # type: ignore[attr-defined]
    return server


def run(
    corpus_or_path: Corpus | str | Path,
    task_id: str,
    *,
    seed: int = 0,
    reward_file: str | Path | None = None,
    transport: Transport = "stdio",
    host: str = "127.0.0.1",
    port: int = 8000,
    reveal_expected: bool = False,
    token: str | None = None,
    insecure: bool = False,
) -> None:
    """Serve one episode on ``task_id`` until the client disconnects (stdio) or the process stops (http).

    Args:
        corpus_or_path: a loaded corpus or its folder.
        task_id: the task to play.
        seed: the episode's seed.
        reward_file: where to write the reward JSON on ``complete_task``.
        transport: ``stdio`` (stdin/stdout) or ``http`` (streamable HTTP at ``http://HOST:PORT/mcp``).
        host: address to listen on (http).
        port: port to listen on (http; 0 picks a free one, shown in the startup line on stderr).
        reveal_expected: the reward record's breakdown holds the full detail (see :func:`build_server`).
        token: (http) every request needs ``Authorization: Bearer <token>``; without one,
            only a loopback ``host`` is served unless ``insecure``.
        insecure: (http) serve a non-loopback host without a token (a warning is printed).

    Raises:
        ValueError: an unknown transport; a non-loopback host without a token or ``insecure``.
        OSError: the address cannot be bound.
    """
    if transport not in ("stdio", "http"):
        raise ValueError(f"unknown transport {transport!r}: stdio or http")
    warning = check_exposure(host, token, insecure, what="envsynth serve mcp") if transport == "http" else None
    server = build_server(corpus_or_path, task_id, seed=seed, reward_file=reward_file, reveal_expected=reveal_expected)
    if transport == "stdio":

        async def serve_stdio() -> None:
            async with stdio_server() as (read, write):
                await server.run(read, write, server.create_initialization_options())

        anyio.run(serve_stdio)
        return
    import uvicorn

    app: Any = server.streamable_http_app(host=host)
    if token is not None:
        app = BearerAuth(app, [token])
    sock = bind(host, port)
    if warning:
        announce(warning)
    auth = "token required" if token else "no token"
    announce(f"envsynth serve mcp: listening on {url_of(sock, host)}/mcp (task {task_id}, {auth})")
    try:
        uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])
    finally:
        sock.close()
