"""The LLM builder: ScaleEnv's agents synthesizing a domain from a keyword.

Roles (each a prompt file in ``prompts/`` and a pydantic-validated structured output):
domain designer, code agent, test agent, debug agent, dependency agent, task writer and
gating policy. Every model call goes through :class:`~envsynth.llmbuild.client.BuilderClient`
(on-disk response cache, token budget, per-role metrics). LLM-written tool code is
checked statically and runs only in sandboxed workers, never in this process.
"""
