"""Sandboxed code acting: agents act on a task with Python code blocks (see docs/sandbox.md).

Usage::

    import envsynth
    from envsynth.sandbox import CodeSandbox

    corpus = envsynth.load_corpus("out/")
    with CodeSandbox(workers=2) as sandbox:
        ep = sandbox.episode(corpus.start(corpus.tasks[0]))
        obs = ep.run("print(list_tools())")
        obs.text, obs.error, obs.done
        reward = ep.finish()

The code never runs in the calling process: it runs in a bubblewrap sandbox (or, where
bubblewrap is unusable, a restricted subprocess, with a SandboxWarning), and tool calls
come back over a pipe to be executed here.

The same workers run the bodies of untrusted (LLM-written) custom tools
(:mod:`envsynth.sandbox.untrusted`, :func:`check_tool_code`).
"""

from envsynth.blueprint.codecheck import check_tool_code
from envsynth.sandbox.codeblocks import META_TOOLS, CodeActEpisode, CodeSandbox, Observation, tool_documentation
from envsynth.sandbox.launcher import Limits, Mode, SandboxUnavailable, SandboxWarning, detect, fallback_mode
from envsynth.sandbox.pool import WorkerPool, default_pool
from envsynth.sandbox.untrusted import SandboxedToolFailure, ToolWorkerPool, set_tool_pool, tool_pool

__all__ = [
    "META_TOOLS",
    "CodeActEpisode",
    "CodeSandbox",
    "Limits",
    "Mode",
    "Observation",
    "SandboxUnavailable",
    "SandboxWarning",
    "SandboxedToolFailure",
    "ToolWorkerPool",
    "WorkerPool",
    "check_tool_code",
    "default_pool",
    "detect",
    "fallback_mode",
    "set_tool_pool",
    "tool_documentation",
    "tool_pool",
]
