"""``envsynth audit``: a deliberately tau2-like airline ranks closest to tau2, a music-streaming app far from it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from envsynth.audit import BENCHMARKS, OVERLAP, audit, load_references
from envsynth.audit.similarity import Vectoriser, cosine, tokens
from envsynth.cli import app as cli

AIRLINE = Path(__file__).parents[1] / "data" / "audit" / "skyway_airline.yaml"


@pytest.fixture(scope="module")
def apps(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("audit") / "apps"
    got = CliRunner().invoke(cli, ["build", str(out), "--blueprint", str(AIRLINE), "--domain", "tempo_music"])
    assert got.exit_code == 0, got.output
    return out


def test_airline_is_closest_to_tau2_and_music_far_from_it(apps: Path) -> None:
    result = audit(apps, ["tau2", "appworld", "bfcl"])
    by_name = {a["name"]: a for a in result["apps"]}
    airline, music = by_name["skyway_airline"], by_name["tempo_music"]
    assert result["apps"][0]["name"] == "skyway_airline"  # ranked first
    assert airline["closest"] == "tau2"
    tau2 = airline["against"]["tau2"]
    assert tau2["nearest_domain"] == "airline" and tau2["overlap"] and tau2["score"] >= 2 * OVERLAP
    assert tau2["score"] > max(airline["against"][b]["score"] for b in ("appworld", "bfcl"))
    assert {"reservation", "flight", "baggage"} <= set(tau2["shared_terms"])
    assert tau2["closest_tools"][0]["reference"].startswith("airline.")
    far = music["against"]["tau2"]
    assert not far["overlap"] and far["score"] < tau2["score"] / 4
    assert music["closest"] == "appworld" and music["against"]["appworld"]["nearest_domain"] == "spotify"


def test_audit_cli_table_json_and_errors(apps: Path) -> None:
    got = CliRunner().invoke(cli, ["audit", str(apps), "--against", "tau2"])
    assert got.exit_code == 0, got.output
    row = next(line for line in got.output.splitlines() if "skyway_airline" in line and "(airline)" in line)
    assert "tau2" in row.split("│")[-2]  # the "hold out for" column
    assert "skyway_airline ~ tau2/airline: shares" in got.output
    assert got.output.strip().endswith("audit: 2 apps, 1 overlapping tau2")
    as_json = json.loads(CliRunner().invoke(cli, ["audit", str(apps), "--against", "tau2,bfcl", "--json"]).output)
    assert as_json["benchmarks"] == ["tau2", "bfcl"] and len(as_json["apps"]) == 2
    bad = CliRunner().invoke(cli, ["audit", str(apps), "--against", "tau3"])
    assert bad.exit_code == 2 and "unknown benchmark(s) tau3" in bad.output
    empty = CliRunner().invoke(cli, ["audit", str(apps / "nothing")])
    assert empty.exit_code == 2 and "no apps in" in empty.output


def test_reference_lists_are_complete() -> None:
    domains = load_references(list(BENCHMARKS))
    names = {(d.benchmark, d.name) for d in domains}
    assert {("tau2", "airline"), ("tau2", "retail"), ("tau2", "telecom")} <= names
    assert len([d for d in domains if d.benchmark == "appworld"]) == 9
    assert all(d.tools and d.description for d in domains)


def test_tokens_and_cosine() -> None:
    assert tokens("update_reservation_baggages") == ["update", "reservation", "baggage"]
    assert tokens("fillFuelTank booked bookings") == ["fill", "fuel", "tank", "book", "book"]
    assert tokens("mail jo.doe@example.com about order ord_123 and SKU HM-12345") == ["mail", "about", "order", "sku"]
    v = Vectoriser([["flight", "book"], ["song", "play"]])
    a, b = v.vector(["flight", "book"]), v.vector(["song", "play"])
    assert cosine(a, a) == pytest.approx(1.0) and cosine(a, b) == 0.0
