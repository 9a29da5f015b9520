"""`envsynth check`: every problem of a blueprint at once, one line each, never a traceback.

tests/data/broken/ holds one blueprint per mistake (issue 12's gaps as they apply to the
language, YAML syntax errors, unknown keys, bad references, conditions and generators);
each file starts with the lines it must produce, ``# expect: <path>: <message start>``.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from envsynth.blueprint import BlueprintError, from_dict
from envsynth.blueprint.models import Blueprint
from envsynth.blueprint.problems import keys_of
from envsynth.check import check_data, check_file
from envsynth.cli import app

BROKEN = Path(__file__).parent.parent / "data" / "broken"
CASES = sorted(p for p in BROKEN.glob("*.yaml") if p.name != "not_utf8.yaml")
PERMITS = BROKEN / "also_on_get.yaml"  # any broken file: the clean base is rebuilt from it below


def _expected(path: Path) -> list[str]:
    return [line.removeprefix("# expect: ") for line in path.read_text().splitlines() if line.startswith("# expect: ")]


def _run(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(app, ["check", *args])
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    return res.exit_code, res.output


def _base() -> dict:
    """The clean permits-office blueprint the broken files are made from."""
    data = yaml.safe_load(PERMITS.read_text())
    del data["actions"][0]["also"]
    return data


def test_the_corpus_holds_twenty_mistakes_and_more() -> None:
    assert len(CASES) >= 20
    assert all(_expected(p) for p in CASES)


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_each_broken_blueprint_gives_exactly_its_problems(path: Path) -> None:
    rc, out = _run(str(path))
    lines = out.splitlines()
    expected = _expected(path)
    assert rc == 2, out
    assert "Traceback" not in out
    assert len(lines) == len(expected), out
    for line, want in zip(lines, expected, strict=True):
        assert line.startswith(f"{path}: {want}"), (line, want)


def test_every_broken_file_at_once_in_a_real_process_prints_one_line_per_problem() -> None:
    files = [str(p) for p in CASES] + [str(BROKEN / "not_utf8.yaml")]
    res = subprocess.run([sys.executable, "-m", "envsynth.cli", "check", *files], capture_output=True, text=True, timeout=300, check=False)
    assert res.returncode == 2, res.stderr
    assert "Traceback" not in res.stdout + res.stderr and res.stderr == ""
    assert len(res.stdout.splitlines()) == sum(len(_expected(p)) for p in CASES) + 1
    assert f"{BROKEN / 'not_utf8.yaml'}: cannot read: not UTF-8 text" in res.stdout


def test_a_clean_blueprint_is_one_ok_line_and_exit_0(tmp_path: Path, bookshop_blueprint_path: Path) -> None:
    good = tmp_path / "permits.yaml"
    good.write_text(yaml.safe_dump(_base()))
    rc, out = _run(str(good), str(bookshop_blueprint_path))
    assert rc == 0, out  # the words these blueprints leave out are warnings (tests/blueprint/test_defaults.py), not problems
    assert [x for x in out.splitlines() if ": warning: " not in x] == [
        f"{good}: ok: permits_office: 4 entities, 4 actions, 4 tools (3 write, 1 read)",
        f"{bookshop_blueprint_path}: ok: corner_bookshop: 6 entities, 16 actions, 16 tools (11 write, 5 read)",
    ]


def test_one_bad_file_among_good_ones_exits_2_and_json_lists_every_problem(tmp_path: Path, bookshop_blueprint_path: Path) -> None:
    bad = BROKEN / "several_problems.yaml"
    rc, out = _run("--json", str(bookshop_blueprint_path), str(bad))
    assert rc == 2
    report = json.loads(out)
    assert report["ok"] is False
    assert [f["ok"] for f in report["files"]] == [True, False]
    assert report["files"][0]["tools"] == 16
    paths = [p["path"] for p in report["files"][1]["problems"]]
    assert paths == ["actions[0].entity", "actions[2].pre[0]", "actions[3].resource"]


def test_an_empty_file_a_folder_and_a_missing_file_are_one_line_each(tmp_path: Path) -> None:
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    rc, out = _run(str(empty), str(tmp_path), str(tmp_path / "none.yaml"))
    assert rc == 2
    assert out.splitlines() == [
        f"{empty}: the blueprint is empty; a blueprint is a mapping with the keys name, title, category, entities and actions",
        f"{tmp_path}: is a folder, not a blueprint file",
        f"{tmp_path / 'none.yaml'}: no such blueprint file",
    ]


# -- issue 12 gap 9: the messages that misled ------------------------------------------------


def test_also_on_an_action_that_only_reads_says_which_actions_take_it() -> None:
    (line,) = check_file(PERMITS).lines()
    assert "Extra inputs" not in line and "unknown key" not in line
    assert line.endswith(
        ": actions[0]: 'also' is only for actions that write (create, update, delete, transition, transfer, book); a get action reads one row"
    )


def test_a_top_level_typo_is_the_typo_not_a_missing_key() -> None:
    (line,) = check_file(BROKEN / "typo_top_level_key.yaml").lines()
    assert line.endswith(f": acitons: unknown key 'acitons'; did you mean actions? (allowed here: {', '.join(keys_of(Blueprint))})")
    assert "Field required" not in line


def test_a_list_typed_parameter_is_a_plain_line_and_hides_no_other_problem() -> None:
    lines = check_file(BROKEN / "list_parameter.yaml").lines()
    assert len(lines) == 2
    assert any(": actions[1].params[0].type: ['string'] is not allowed here; allowed: id, ref, string," in x for x in lines)
    assert any(": actions[2].form: unknown key 'form'; did you mean from?" in x for x in lines)
    assert not any("literal[" in x or "more problem" in x for x in lines)


def test_a_function_outside_the_language_lists_the_functions() -> None:
    (line,) = check_file(BROKEN / "function_not_in_language.yaml").lines()
    assert "call 'sqrt' is not allowed" in line
    assert (
        "the functions are abs, all, any, count, days, exists, hours, len, lookup, lower, max, min, minutes, now, old, round, today, weeks"
        in line
    )


# -- loading: the first error is as before, and carries every problem -------------------------


def test_load_raises_the_first_problem_carrying_all_of_them() -> None:
    data = yaml.safe_load((BROKEN / "several_problems.yaml").read_text())
    with pytest.raises(BlueprintError) as info:
        from_dict(data, "x.yaml")
    e = info.value
    assert e.path == "actions[0].entity" and "unknown entity 'aplication'" in e.message
    assert [p.path for p in e.problems] == ["actions[0].entity", "actions[2].pre[0]", "actions[3].resource"]
    assert str(e).startswith("x.yaml: actions[0].entity: get_application: unknown entity 'aplication'")
    assert str(e).endswith("(and 2 more problem(s))")


def test_problems_of_valid_actions_are_found_next_to_invalid_ones() -> None:
    # an action pydantic refuses (a misspelt kind) does not hide the cross-reference problems of the others
    data = _base()
    data["actions"][0]["kind"] = "gett"
    data["actions"][2]["pre"][0]["check"] = "application.fees > 0"
    data["titel"] = "x"
    lines = check_data(data, "p.yaml").lines()
    assert [x.split(": ")[1] for x in lines] == ["titel", "actions[0]", "actions[2].pre[0]"], lines
    assert "did you mean get?" in lines[1]


# -- never a traceback, always 0 or 2 ------------------------------------------------------------

_BASE_TEXT = yaml.safe_dump(_base(), sort_keys=False)
_LINES = _BASE_TEXT.splitlines()
_scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.floats(allow_nan=True), st.text(max_size=12))
_values = st.recursive(
    _scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3), max_leaves=6
)


def _nodes(data: object, path: tuple = ()) -> list[tuple]:
    out = [path]
    if isinstance(data, dict):
        for k, v in data.items():
            out += _nodes(v, (*path, k))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            out += _nodes(v, (*path, i))
    return out


@st.composite
def _mutated_data(draw: st.DrawFn) -> object:
    data = copy.deepcopy(_base())
    for _ in range(draw(st.integers(1, 3))):
        nodes = _nodes(data)
        path = draw(st.sampled_from(nodes))
        if not path:
            return draw(_values)
        parent = data
        for part in path[:-1]:
            parent = parent[part]
        how = draw(st.sampled_from(["replace", "delete", "rename"]))
        if how == "replace":
            parent[path[-1]] = draw(_values)
        elif how == "delete":
            del parent[path[-1]]
        elif isinstance(parent, dict):
            parent[draw(st.text(min_size=1, max_size=10))] = parent.pop(path[-1])
    return data


@st.composite
def _mutated_text(draw: st.DrawFn) -> str:
    lines = list(_LINES)
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(lines) - 1))
        how = draw(st.sampled_from(["delete", "duplicate", "garble", "indent"]))
        if how == "delete":
            del lines[i]
        elif how == "duplicate":
            lines.insert(i, lines[i])
        elif how == "garble":
            j = draw(st.integers(0, len(lines[i])))
            lines[i] = lines[i][:j] + draw(st.text(alphabet=":-[]{}'\"#&*!|>%@` \tab1", max_size=4)) + lines[i][j:]
        else:
            lines[i] = "  " + lines[i]
        if not lines:
            break
    return "\n".join(lines)


def _assert_clean_outcome(rc: int, out: str, name: str) -> None:
    assert rc in (0, 2), out
    assert "Traceback" not in out and "internal error" not in out, out
    assert out and all(line.startswith(f"{name}: ") for line in out.splitlines()), out


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(_mutated_text())
def test_mutated_yaml_text_never_crashes_the_check(tmp_path: Path, text: str) -> None:
    f = tmp_path / "mutant.yaml"
    f.write_text(text)
    rc, out = _run(str(f))
    _assert_clean_outcome(rc, out, str(f))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(_mutated_data())
def test_mutated_blueprint_data_never_crashes_the_check(tmp_path: Path, data: object) -> None:
    f = tmp_path / "mutant.yaml"
    try:
        f.write_text(yaml.safe_dump(data))
    except yaml.YAMLError:  # a value YAML cannot write (none are drawn today); nothing to check
        return
    rc, out = _run(str(f))
    _assert_clean_outcome(rc, out, str(f))


_TOKENS = [
    "application.fee",
    "application.status",
    "application.submitted_at",
    "application.kind",
    "application_id",
    "now()",
    "today()",
    "exists(inspection, application_id=application.application_id)",
    "count(slot)",
    "len(application.kind)",
    "abs(-1)",
    "round(application.fee, 1)",
    "lower(application.kind)",
    "old(application.fee)",
    "1",
    "2.5",
    "'open'",
    "['open', 'approved']",
    "None",
    "True",
    "+",
    "-",
    "*",
    "/",
    "%",
    "==",
    "!=",
    ">=",
    "<",
    " in ",
    " not in ",
    " is ",
    " and ",
    " or ",
    "not ",
    "(",
    ")",
    " if ",
    " else ",
    ",",
    "{",
    "}",
]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.lists(st.sampled_from(_TOKENS), min_size=1, max_size=7), st.lists(st.sampled_from(_TOKENS), max_size=3))
def test_random_conditions_and_messages_never_crash_the_check(tmp_path: Path, check: list[str], message: list[str]) -> None:
    data = _base()
    data["actions"][2]["pre"] = [{"check": "".join(check), "message": "Refused: {" + "".join(message) + "}"}]
    data["actions"][1]["set"] = {"fee": "".join(check)}
    f = tmp_path / "mutant.yaml"
    f.write_text(yaml.safe_dump(data))
    rc, out = _run(str(f))
    _assert_clean_outcome(rc, out, str(f))


def test_the_docs_quote_what_the_check_prints(bookshop_blueprint_path: Path) -> None:
    doc = (Path(__file__).parent.parent.parent / "docs" / "blueprints.md").read_text()
    assert "envsynth check my.yaml" in doc
    *warnings, ok = check_file(bookshop_blueprint_path.parent / "vet_clinic.yaml").lines()
    assert "`my.yaml: " + ok.split(": ", 1)[1] + "`" in doc
    assert all(": warning: " in w for w in warnings)
    for name in ("yaml_unclosed_bracket", "typo_top_level_key", "missing_title"):
        (want,) = _expected(BROKEN / f"{name}.yaml")
        assert f"`{want}" in doc, want
    data = _base()
    data["category"] = "pets"
    (line,) = check_data(data, "x.yaml").lines()
    assert line.startswith("x.yaml: category: 'pets' is not allowed here; allowed: shopping, ") and line.endswith(", other")


def test_recursive_yaml_anchors_are_problems_not_a_hang(tmp_path: Path) -> None:
    f = tmp_path / "recursive.yaml"
    base = yaml.safe_dump(_base(), sort_keys=False)
    f.write_text(base.replace("description: A municipal", "notes: &loop [*loop]\ndescription: A municipal", 1))
    rc, out = _run(str(f))
    (line,) = out.splitlines()
    assert rc == 2 and line.startswith(f"{f}: notes: unknown key 'notes'"), out


def test_build_names_the_first_problem_and_points_at_check_for_the_rest(tmp_path: Path) -> None:
    bad = BROKEN / "several_problems.yaml"
    res = CliRunner().invoke(app, ["build", str(tmp_path / "out"), "--blueprint", str(bad)])
    assert res.exit_code == 2
    (line,) = [x for x in res.output.splitlines() if x.strip()]
    assert line.startswith(f"error: {bad}: actions[0].entity: get_application: unknown entity 'aplication'")
    assert line.endswith(f"(and 2 more problem(s)); `envsynth check {bad}` lists them all")


def test_a_blueprint_error_survives_pickling_with_all_its_problems() -> None:
    import pickle

    data = yaml.safe_load((BROKEN / "several_problems.yaml").read_text())
    with pytest.raises(BlueprintError) as info:
        from_dict(data, "x.yaml")
    back = pickle.loads(pickle.dumps(info.value))
    assert (back.path, back.message, back.source, str(back)) == (info.value.path, info.value.message, "x.yaml", str(info.value))
    assert [p.line() for p in back.all] == [p.line() for p in info.value.all]


def test_an_invalid_entity_hides_neither_other_problems_nor_is_echoed() -> None:
    data = _base()
    data["entities"][2]["fields"][1]["type"] = "dat"  # slot: invalid, so left out of the cross references
    data["actions"][0]["entity"] = "aplication"  # independent of it
    lines = check_data(data, "p.yaml").lines()
    assert [x.split(": ")[1] for x in lines] == ["entities[2].fields[1].type", "actions[0].entity"], lines
    assert not any("unknown entity 'slot'" in x for x in lines)  # inspection.slot_id and book_inspection only echo it


GOOD = sorted(
    [
        *(Path(__file__).parents[2] / "src" / "envsynth" / "catalog").glob("*.yaml"),
        *(BROKEN.parent).glob("*.yaml"),
        *(BROKEN.parent / "examples").glob("*.yaml"),
    ]
)


@pytest.mark.parametrize("path", GOOD, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_shipped_and_example_blueprint_checks_clean(path: Path) -> None:
    # an increment ("+= amount") in an example's also once made the checker's sample run an internal error
    report = check_file(path)
    *warnings, ok = report.lines()
    assert report.ok and ": ok: " in ok and all(": warning: " in w for w in warnings), report.lines()
    if path.parent.name == "catalog":
        assert not warnings  # the catalogue gives every word (docs/blueprints.md section 10)
