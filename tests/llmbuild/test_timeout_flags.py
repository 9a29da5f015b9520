"""``--timeout`` and ``--max-rounds``: shown in ``--help``, refused by flag name when meaningless, and ``--timeout`` reaches the client."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from chat_server import chat_server, completion
from envsynth import cli
from envsynth.errors import ConfigError
from envsynth.llm.retry import RetryPolicy
from envsynth.llmbuild.client import EndpointUnavailable
from envsynth.llmbuild.command import DEFAULT_TIMEOUT, builder_client

pytest.importorskip("openai")


def test_the_flags_are_in_the_help() -> None:
    res = CliRunner().invoke(cli.app, ["build", "--help"], env={"COLUMNS": "200"})
    assert res.exit_code == 0
    assert "--timeout" in res.output and "--max-rounds" in res.output


@pytest.mark.parametrize(
    ("extra", "flag"),
    [(["--timeout", "0"], "--timeout"), (["--timeout", "-3"], "--timeout"), (["--max-rounds", "0"], "--max-rounds")],
)
def test_meaningless_values_are_refused_by_flag_name(tmp_path: Path, extra: list[str], flag: str) -> None:
    out = tmp_path / "out"
    res = CliRunner().invoke(cli.app, ["build", str(out), "--builder", "llm", "--domain", "Job Seeking", "--model", "scripted", *extra])
    assert res.exit_code != 0
    [line] = [x for x in res.stderr.splitlines() if x.startswith("error:")]
    assert flag in line, line
    assert not out.exists()


def test_builder_client_refuses_a_bad_timeout(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        builder_client(tmp_path, model="scripted", timeout=0)
    assert caught.value.option == "timeout"


def test_the_timeout_reaches_the_client_and_a_timeout_names_the_flag(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")

    def slow(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        time.sleep(1.5)  # longer than the timeout
        return 200, completion(body["model"], {"role": "assistant", "content": "hi"})

    with chat_server(slow) as url:
        client = builder_client(tmp_path, model="m", base_url=url, api_key="k", timeout=0.3)
        assert client.chat.timeout == 0.3  # type: ignore[attr-defined]
        client.chat.retry = RetryPolicy(max_retries=0)  # type: ignore[attr-defined]
        started = time.perf_counter()
        with pytest.raises(EndpointUnavailable) as caught:
            asyncio.run(client.text("designer", [{"role": "user", "content": "hello"}]))
        assert time.perf_counter() - started < 1.4  # it did not wait for the server
    text = str(caught.value)
    assert "timed out after 0.3 s" in text and "--timeout" in text, text
    assert builder_client(tmp_path, model="m", base_url=url, api_key="k").chat.timeout == DEFAULT_TIMEOUT  # type: ignore[attr-defined]
