"""Training-data exports: SFT rows from a run's first successes, RL prompts from a corpus.

Usage::

    from envsynth.export import export_rl, export_sft

    export_sft("runs/a", "sft.jsonl")                       # TRL SFTTrainer: messages + tools
    export_sft("runs/a", "sft.parquet", format="parquet")   # needs the ``datasets`` extra
    export_rl("corpus/", "rl.jsonl")                        # TRL GRPOTrainer: prompt + tools + task_id

Both write OpenAI chat messages and function schemas as TRL takes them: tool-call
``arguments`` are JSON objects (dicts), tool messages carry ``name``. Parquet files store
each message and each tool schema as a JSON value (``datasets.Json``, Arrow's
``arrow.json`` extension type), so objects with different keys round-trip exactly instead
of being widened into one struct with null-filled keys.
"""

from __future__ import annotations

from envsynth.export.rl import export_rl, rl_rows
from envsynth.export.sft import export_sft, sft_rows
from envsynth.export.write import FORMATS, ExportError, ExportSummary, rl_features, sft_features

__all__ = [
    "FORMATS",
    "ExportError",
    "ExportSummary",
    "export_rl",
    "export_sft",
    "rl_features",
    "rl_rows",
    "sft_features",
    "sft_rows",
]
