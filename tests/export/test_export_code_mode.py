"""SFT rows of a code-acting run carry no function schemas: the model never saw any."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from envsynth.export import export_sft


def test_code_mode_rows_have_no_tools(oracle_run: tuple[Path, Path], tmp_path: Path) -> None:
    corpus, _ = oracle_run
    run_dir = tmp_path / "code_run"
    res = subprocess.run(
        [sys.executable, "-m", "envsynth.cli", "run", str(corpus), "--agent", "oracle", "--mode", "code", "--out", str(run_dir)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr
    summary = export_sft(run_dir, tmp_path / "sft.jsonl")
    rows = [json.loads(line) for line in (tmp_path / "sft.jsonl").read_text().splitlines()]
    assert summary.rows == len(rows) > 0
    for row in rows:
        assert row["tools"] == []
        assert [m["role"] for m in row["messages"]][:3] == ["system", "user", "assistant"]
        assert "```python" in row["messages"][2]["content"]
