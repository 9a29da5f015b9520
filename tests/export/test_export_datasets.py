"""Exports read back with HF ``datasets`` (JSON and Parquet), and rendered by a chat template if available."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from envsynth.export import export_rl, export_sft, rl_features, sft_features

datasets = pytest.importorskip("datasets")


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_sft_jsonl_loads_with_datasets(oracle_run, tmp_path):
    export_sft(oracle_run[1], tmp_path / "sft.jsonl")
    written = _rows(tmp_path / "sft.jsonl")
    ds = datasets.load_dataset("json", data_files=str(tmp_path / "sft.jsonl"), split="train")
    assert ds.to_list() == written
    typed = datasets.load_dataset("json", data_files=str(tmp_path / "sft.jsonl"), split="train", features=sft_features())
    assert typed.to_list() == written


def test_sft_parquet_round_trip(oracle_run, tmp_path):
    export_sft(oracle_run[1], tmp_path / "sft.jsonl")
    s = export_sft(oracle_run[1], tmp_path / "sft.parquet", format="parquet")
    ds = datasets.Dataset.from_parquet(str(tmp_path / "sft.parquet"))
    assert s.rows == len(ds)
    assert ds.to_list() == _rows(tmp_path / "sft.jsonl")  # no null-filled keys from Arrow struct widening
    for row in ds:
        for m in row["messages"]:
            for c in m.get("tool_calls", []):
                assert isinstance(c["function"]["arguments"], dict)


def test_rl_parquet_round_trip(oracle_run, tmp_path):
    export_rl(oracle_run[0], tmp_path / "rl.jsonl")
    export_rl(oracle_run[0], tmp_path / "rl.parquet", format="parquet")
    ds = datasets.Dataset.from_parquet(str(tmp_path / "rl.parquet"))
    assert ds.features == rl_features()
    assert ds.to_list() == _rows(tmp_path / "rl.jsonl")


def test_empty_export_writes_a_valid_parquet(oracle_run, tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "trajectories.jsonl").write_text("", encoding="utf-8")
    s = export_sft(run, tmp_path / "e.parquet", format="parquet", corpus=oracle_run[0])
    pq = pytest.importorskip("pyarrow.parquet")
    table = pq.read_table(tmp_path / "e.parquet")  # datasets' from_parquet refuses 0-row files; the file itself is valid
    assert s.rows == table.num_rows == 0 and table.schema.names == list(sft_features())


def test_renders_with_a_chat_template(oracle_run, tmp_path):
    """The rows go through transformers' chat-template renderer (the one SFTTrainer uses), tools included."""
    pytest.importorskip("transformers")
    try:
        from transformers.utils.chat_template_utils import render_jinja_template
    except ImportError:
        pytest.skip("this transformers has no render_jinja_template")
    template = (
        "{% for t in tools or [] %}[{{ t.function.name }}]{% endfor %}"
        "{% for m in messages %}<{{ m.role }}>{{ m.content }}"
        "{% for c in m.tool_calls or [] %}{{ c.function.name }}{{ c.function.arguments | tojson }}{% endfor %}{% endfor %}"
    )
    export_sft(oracle_run[1], tmp_path / "sft.jsonl")
    for r in _rows(tmp_path / "sft.jsonl"):
        rendered, _ = render_jinja_template(conversations=[r["messages"]], tools=r["tools"], chat_template=template)
        call = next(m["tool_calls"][0] for m in r["messages"] if m.get("tool_calls"))
        assert json.dumps(call["function"]["arguments"], ensure_ascii=False) in rendered[0]  # objects, not double-encoded strings
        assert "[complete_task]" in rendered[0]
