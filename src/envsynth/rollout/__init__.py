"""Rollouts: one episode (:func:`run_episode`), many (:func:`run_batch`, resumable JSONL), their summary and regrading (:func:`regrade`).

Usage::

    from envsynth.agents import ChatAgent, OracleAgent
    from envsynth.llm import OpenAIChat
    from envsynth.rollout import run_batch, summarize

    llm = OpenAIChat("gpt-4.1-mini", concurrency=16)
    run_batch("corpus/", lambda task, attempt: ChatAgent(llm), attempts=4, concurrency=32, out="runs/a")
    summarize("runs/a").pass_at[1]
"""

from __future__ import annotations

from envsynth.rollout.batch import BatchResult, PolicyFactory, RunError, arun_batch, run_batch
from envsynth.rollout.config import RunConfig
from envsynth.rollout.regrade import RegradeResult, regrade
from envsynth.rollout.runner import run_episode
from envsynth.rollout.summary import RunSummary, pass_at_k, summarize, summarize_records
from envsynth.rollout.trajectory import REGRADED, RUN_CONFIG, TRAJECTORIES, Trajectory, read_graded, read_trajectories

__all__ = [
    "REGRADED",
    "RUN_CONFIG",
    "TRAJECTORIES",
    "BatchResult",
    "PolicyFactory",
    "RegradeResult",
    "RunConfig",
    "RunError",
    "RunSummary",
    "Trajectory",
    "arun_batch",
    "pass_at_k",
    "read_graded",
    "read_trajectories",
    "regrade",
    "run_batch",
    "run_episode",
    "summarize",
    "summarize_records",
]
