"""Writing export rows: JSONL (no extra dependency) or Parquet via HF ``datasets``; the summary."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from envsynth.errors import EnvsynthError

FORMATS = ("jsonl", "parquet")


class ExportError(EnvsynthError, RuntimeError):
    """A run or corpus that cannot be exported (missing, or not matching); the message is one line."""


@dataclass
class ExportSummary:
    """What an export wrote.

    Attributes:
        out_file: the file written.
        format: ``jsonl`` or ``parquet``.
        rows: rows written.
        tasks: tasks seen (in the run for SFT, in the corpus for RL).
        skipped: why episodes or tasks were left out: ``no_success`` (tasks without a
            usable successful attempt), ``tainted`` (successful episodes that hit an
            Unexpected Failure), ``error`` (successful episodes a model or agent failure
            ended), ``malformed`` (successful episodes with tool-call arguments that are
            not a JSON object); with filters, ``other_tier`` (SFT ``tiers``) and
            ``below_min_reward`` (tasks whose mean reward in the run is under ``min_reward``).
    """

    out_file: Path
    format: str
    rows: int
    tasks: int
    skipped: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["out_file"] = str(self.out_file)
        return d


def _datasets() -> Any:
    try:
        import datasets
    except ImportError:
        raise ImportError("Parquet export needs the datasets package: pip install 'envsynth[datasets]'") from None
    if not hasattr(datasets, "Json"):
        raise ImportError(f"Parquet export needs datasets with the Json feature (found {datasets.__version__}): upgrade datasets")
    return datasets


def sft_features() -> Any:
    """The ``datasets.Features`` of SFT rows: messages and tools as JSON values, metadata as scalars.

    Pass it to ``datasets.load_dataset("json", data_files=..., features=sft_features())`` to
    read a JSONL export with the exact same types as the Parquet one.
    """
    ds = _datasets()
    return ds.Features(
        {
            "messages": ds.List(ds.Json()),
            "tools": ds.List(ds.Json()),
            "task_id": ds.Value("string"),
            "task_hash": ds.Value("string"),
            "app": ds.Value("string"),
            "kind": ds.Value("string"),
            "attempt": ds.Value("int64"),
            "score": ds.Value("float64"),
        }
    )


def rl_features(labelled: bool = False) -> Any:
    """The ``datasets.Features`` of RL rows: the prompt as role/content structs, tools as JSON values.

    ``labelled``: rows exported with a run (``attempts``, ``pass_at_k`` and ``reward_parts``
    as JSON values, ``reward_mean``).
    """
    ds = _datasets()
    labels = {
        "attempts": ds.Value("int64"),
        "pass_at_k": ds.Json(),
        "reward_mean": ds.Value("float64"),
        "reward_parts": ds.Json(),
    }
    return ds.Features(
        {
            "prompt": ds.List({"role": ds.Value("string"), "content": ds.Value("string")}),
            "tools": ds.List(ds.Json()),
            "task_id": ds.Value("string"),
            "task_hash": ds.Value("string"),
            "app": ds.Value("string"),
            "kind": ds.Value("string"),
            "difficulty": ds.Value("float64"),
            "tier": ds.Value("string"),
            "constructs": ds.List(ds.Value("string")),
            **(labels if labelled else {}),
        }
    )


def write_rows(rows: list[dict[str, Any]], out_file: str | Path, fmt: str, features: Any = None) -> Path:
    """Write ``rows`` to ``out_file`` atomically (a temporary file renamed into place).

    Args:
        rows: JSON-serializable dicts, one per example.
        out_file: the file to write (parent folders are created).
        fmt: ``jsonl`` or ``parquet``.
        features: for Parquet, a zero-argument callable returning the ``datasets.Features``.

    Raises:
        ValueError: an unknown format.
        ImportError: Parquet without ``datasets``.
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown export format {fmt!r}: use one of {', '.join(FORMATS)}")
    out = Path(out_file)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    try:
        if fmt == "jsonl":
            with tmp.open("w", encoding="utf-8") as f:
                for row in rows:
                    f.write(json.dumps(row, ensure_ascii=False) + "\n")
        else:
            ds = _datasets()
            ds.disable_progress_bars()
            feats = features() if features else None
            if rows or feats is None:
                table = ds.Dataset.from_list(rows, features=feats)
            else:  # from_list cannot type an empty list
                table = ds.Dataset.from_dict({k: [] for k in feats}, features=feats)
            table.to_parquet(str(tmp))
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    return out
