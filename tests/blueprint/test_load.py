"""Blueprint loading: good files load, bad ones fail with the path of the offending field."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from envsynth.blueprint import BlueprintError, expand, from_dict, load_blueprint
from envsynth.blueprint import expr as X
from envsynth.blueprint.models import Blueprint, FieldDef
from envsynth.blueprint.problems import keys_of

TOP_KEYS = ", ".join(keys_of(Blueprint))  # the keys the models take (others' additions keep this test true)
FIELD_KEYS = ", ".join(keys_of(FieldDef))


@pytest.fixture
def data(bookshop_blueprint_path: Path) -> dict:
    return yaml.safe_load(bookshop_blueprint_path.read_text())


def test_example_expands_every_archetype(bookshop_blueprint_path: Path) -> None:
    from envsynth.blueprint.models import ARCHETYPES

    specs = expand(load_blueprint(bookshop_blueprint_path))
    assert {s.kind for s in specs} == set(ARCHETYPES)
    assert {s.kind for s in specs} == {
        "get",
        "search",
        "aggregate",
        "create",
        "update",
        "delete",
        "transition",
        "transfer",
        "book",
        "custom",
    }


def _error(data: dict, mutate) -> BlueprintError:  # type: ignore[no-untyped-def]
    d = copy.deepcopy(data)
    mutate(d)
    with pytest.raises(BlueprintError) as info:
        from_dict(d, "x.yaml")
    return info.value


@pytest.mark.parametrize(
    ("mutate", "path", "words"),
    [
        (
            lambda d: d["entities"][2]["fields"][1].update(type="reference"),
            "entities[2].fields[1].type",
            "'reference' is not allowed here; allowed: id, ref,",
        ),
        (lambda d: d["entities"][2]["fields"][1].update(ref="nowhere"), "entities[2].fields[1].ref", "unknown entity 'nowhere'"),
        (lambda d: d["entities"][0]["fields"].insert(0, {"name": "x", "type": "string"}), "entities[0]", "first field"),
        (
            lambda d: d["entities"][0]["fields"][4].update(transitions={"active": ["closed"]}),
            "entities[0].fields[4]",
            "unknown state 'closed'",
        ),
        (lambda d: d["actions"][8].update(to="refunded"), "actions[8].to", "not a state"),
        (lambda d: d["actions"][8].update(**{"from": ["shipped"]}), "actions[8].from", "no move"),
        (lambda d: d["actions"][6]["pre"].append("book.colour == 'red'"), "actions[6].pre[2]", "no field 'colour'"),
        (lambda d: d["actions"][6]["pre"].append("__import__('os')"), "actions[6].pre[2]", "not allowed"),
        (lambda d: d["actions"][6]["pre"].append("mystery > 1"), "actions[6].pre[2]", "unknown name"),
        (lambda d: d["actions"][5].update(fields=["email"]), "actions[5].set", "needs a value for 'full_name'"),
        (lambda d: d["actions"][7].update(fields=["status"]), "actions[7].fields[0]", "use a transition"),
        (lambda d: d["actions"].append(dict(d["actions"][0])), "actions[16].name", "duplicate"),
        (lambda d: d["actions"][0].update(kind="fetch"), "actions[0]", "fetch"),
        (lambda d: d["entities"][0].update(name="class"), "entities[0].name", "reserved"),
        (lambda d: d["actions"][15].update(code="return (("), "actions[15].code", "does not compile"),
        (
            lambda d: d["entities"][3]["fields"][1]["gen"].update(bothify=None, faker="gift_code"),
            "entities[3].fields[1].gen.faker",
            "no provider",
        ),
        (
            lambda d: d["entities"][1]["fields"][1]["gen"].update(template="The {adj} {colour}"),
            "entities[1].fields[1].gen.template",
            "colour",
        ),
        (lambda d: d["entities"][1]["fields"][3].update(gen={"choice": [1, 2]}), "entities[1].fields[3]", "do not fit"),
        (lambda d: d["entities"][1]["fields"][3].update(gen={"choice": ["cooking"]}), "entities[1].fields[3]", "not among"),
        (lambda d: d["actions"][6]["pre"].append("old(book.stock) > 0"), "actions[6].pre[2]", "old()"),
        (lambda d: d["actions"][6]["pre"][0].update(message="{customer.full name}"), "actions[6].pre[0].message", "placeholder"),
        (
            lambda d: d["actions"][2]["filters"].append({"field": "author", "param": "where"}),
            "actions[2].filters[3]",
            "used by the generated code",
        ),
    ],
)
def test_errors_point_at_the_field(data: dict, mutate, path: str, words: str) -> None:  # type: ignore[no-untyped-def]
    e = _error(data, mutate)
    assert e.path == path, str(e)
    assert words in e.message, str(e)
    assert str(e).startswith(f"x.yaml: {path}: ")


def test_missing_file_and_bad_yaml(tmp_path: Path) -> None:
    with pytest.raises(BlueprintError, match="no such blueprint file"):
        load_blueprint(tmp_path / "none.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: [unclosed\n")
    with pytest.raises(BlueprintError, match="not valid YAML"):
        load_blueprint(bad)


@pytest.mark.parametrize(
    ("source", "ok"),
    [
        ("order.status == 'paid'", True),
        ("account.balance >= amount and not exists(payee, name=name)", True),
        ("a.b + 1 <= c.d if flag else True", True),
        ("os.system('x')", False),
        ("order.items[0]", False),
        ("lambda: 1", False),
        ("order._secret", False),
        ("[x for x in y]", False),
    ],
)
def test_condition_language_whitelist(source: str, ok: bool) -> None:
    if ok:
        X.parse(source)
    else:
        with pytest.raises(X.ExprError):
            X.parse(source)


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (
            lambda d: d.update(acitons=d.pop("actions")),
            f"x.yaml: acitons: unknown key 'acitons'; did you mean actions? (allowed here: {TOP_KEYS})",
        ),
        (
            lambda d: d.update(titel=d.pop("title")),
            f"x.yaml: titel: unknown key 'titel'; did you mean title? (allowed here: {TOP_KEYS})",
        ),
        (
            lambda d: d.update(colour="red"),
            f"x.yaml: colour: unknown key 'colour' (allowed here: {TOP_KEYS})",
        ),
        (
            lambda d: d["entities"][0]["fields"][1].update(tpye=d["entities"][0]["fields"][1].pop("type")),
            f"x.yaml: entities[0].fields[1].tpye: unknown key 'tpye'; did you mean type? (allowed here: {FIELD_KEYS})",
        ),
    ],
)
def test_a_typo_in_a_key_is_an_unknown_key_with_a_suggestion(data: dict, mutate, expected: str) -> None:  # type: ignore[no-untyped-def]
    # a misspelt required key is reported as the misspelling, not as the required key it hides
    assert str(_error(data, mutate)) == expected  # the required key the typo hides is not counted again
