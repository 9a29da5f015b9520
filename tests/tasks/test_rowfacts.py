"""Plan-time row facts: continuations the earlier steps make impossible are refused, and only those."""

from __future__ import annotations

import random

import pytest

from envsynth import catalog
from envsynth.compiler.compile import compile_app
from envsynth.graph import build_graph
from envsynth.runtime.state import StateBuilder
from envsynth.tasks.building.instantiate import ChainFailed, instantiate
from envsynth.tasks.building.world import STEP_ATTEMPTS, WORLD_ROWS, value_pool, world_tables
from envsynth.tasks.model import Ref
from envsynth.tasks.planning import chain
from envsynth.tasks.planning.plan import KINDS, task_seed
from envsynth.tasks.planning.rowfacts import RowFacts


@pytest.fixture(scope="module")
def app():
    return compile_app(catalog.load("harbor_market"), 0)


def _facts(app, *steps):
    """RowFacts after ``steps`` ((tool, refs, pins) each); refuses to add a step it would not allow."""
    f = RowFacts(app)
    for tool, refs, pins in steps:
        assert f.allows(app.spec_by_name[tool], refs, pins), tool
        f.add(app.spec_by_name[tool], refs, pins)
    return f


def test_return_of_an_item_added_to_a_pending_order_is_refused(app):
    f = _facts(app, ("add_order_item", {}, {}))
    assert not f.allows(app.spec_by_name["request_return"], {"order_item_id": Ref(step=0, field="order_item_id")}, {})


def test_return_is_allowed_once_the_order_is_delivered(app):
    pin = {"order_id": (0, "customer_order")}
    f = _facts(app, ("add_order_item", {}, {}), ("pay_order", {}, pin), ("ship_order", {}, pin), ("deliver_order", {}, pin))
    assert f.allows(app.spec_by_name["request_return"], {"order_item_id": Ref(step=0, field="order_item_id")}, {})


def test_an_update_of_another_row_of_the_table_widens_what_is_known(app):
    # deliver_order on an unpinned order may hit the order of step 0: nothing is refused
    f = _facts(app, ("add_order_item", {}, {}), ("deliver_order", {}, {}))
    assert f.allows(app.spec_by_name["request_return"], {"order_item_id": Ref(step=0, field="order_item_id")}, {})


def test_created_rows_start_in_their_initial_state(app):
    new_product = {"product_id": Ref(step=0, field="product_id")}
    f = _facts(app, ("add_product", {}, {}))
    assert not f.allows(app.spec_by_name["discontinue_product"], new_product, {})
    f.add(app.spec_by_name["activate_product"], new_product, {})
    assert f.allows(app.spec_by_name["discontinue_product"], {}, {"product_id": (1, "product")})


def test_paying_a_new_order_needs_an_item_in_it(app):
    new_order = {"order_id": Ref(step=0, field="order_id")}
    f = _facts(app, ("place_order", {}, {}))
    assert not f.allows(app.spec_by_name["pay_order"], new_order, {})
    f.add(app.spec_by_name["add_order_item"], new_order, {})
    assert f.allows(app.spec_by_name["pay_order"], new_order, {})


@pytest.mark.parametrize("name", ["harbor_market", "northwind_bank", "taskboard"])
def test_refused_chains_are_never_instantiable(name, monkeypatch):
    """Soundness: chains planned without the check that it would refuse all fail to instantiate."""
    app = compile_app(catalog.load(name), 0)
    graph = build_graph(app)
    monkeypatch.setattr(chain, "_possible", lambda facts, c: True)
    refused = 0
    for i in range(120):
        base = task_seed(0, 0, i)
        rng = random.Random(base)
        kind = rng.choices([k for k, _ in KINDS], weights=[w for _, w in KINDS])[0]
        steps = chain.plan_chain(app, graph, rng, kind)
        if not steps:
            continue
        f = RowFacts(app)
        ok = True
        for st in steps:
            ok = f.allows(st.spec, st.refs, st.pins)
            if not ok:
                break
            f.add(st.spec, st.refs, st.pins)
        if ok:
            continue
        refused += 1
        world = StateBuilder(app.blueprint, base, app.order).use_pool(value_pool(app))
        world = world.fill(dict.fromkeys(world_tables(app, steps), WORLD_ROWS))
        with pytest.raises(ChainFailed):
            instantiate(app, steps, world, base, attempts=STEP_ATTEMPTS, pool=value_pool(app))
    assert refused > 0


def test_an_order_for_a_new_customer_needs_an_address_of_theirs(app):
    new_customer = {"customer_id": Ref(step=0, field="customer_id")}
    f = _facts(app, ("register_customer", {}, {}))
    assert not f.allows(app.spec_by_name["place_order"], new_customer, {})
    f.add(app.spec_by_name["add_address"], new_customer, {})
    assert f.allows(app.spec_by_name["place_order"], new_customer, {})


def test_a_deleted_row_is_never_used_again(app):
    new_address = {"address_id": Ref(step=0, field="address_id")}
    f = _facts(app, ("add_address", {}, {}))
    assert f.allows(app.spec_by_name["place_order"], new_address, {})
    f.add(app.spec_by_name["delete_address"], new_address, {})
    assert not f.allows(app.spec_by_name["place_order"], new_address, {})
    assert not f.allows_one(app.spec_by_name["place_order"], "ref", "address_id", 0, "address_id")
    assert f.allows(app.spec_by_name["place_order"], {}, {})  # another address


def test_a_row_the_chain_gave_a_child_cannot_be_deleted(app):
    """delete_address needs ``not exists(customer_order, address_id=address.address_id)``."""
    new_address = {"address_id": Ref(step=0, field="address_id")}
    f = _facts(app, ("add_address", {}, {}))
    assert f.allows(app.spec_by_name["delete_address"], new_address, {})
    f.add(app.spec_by_name["place_order"], new_address, {})
    assert not f.allows(app.spec_by_name["delete_address"], new_address, {})
    assert f.allows(app.spec_by_name["delete_address"], {}, {})  # another address


def test_an_update_that_could_only_change_what_the_request_gave_a_made_row_is_refused():
    """Made a playlist called A, then renamed it B: the later step would take back what the request asked for."""
    tempo = compile_app(catalog.load("tempo_music"), 0)
    circle = compile_app(catalog.load("circle_social"), 0)
    bank = compile_app(catalog.load("northwind_bank"), 0)
    made = {"post_id": Ref(step=0, field="post_id")}
    assert not _facts(circle, ("draft_post", {}, {})).allows(circle.spec_by_name["edit_post"], made, {})  # body, visibility: both given
    playlist = _facts(tempo, ("create_playlist", {}, {}))  # an update may still set the description the request did not give
    assert playlist.allows_one(tempo.spec_by_name["update_playlist"], "ref", "playlist_id", 0, "playlist_id")
    card = _facts(bank, ("request_card", {}, {}), ("activate_card", {"card_id": Ref(step=0, field="card_id")}, {}))
    assert not card.allows_one(bank.spec_by_name["set_card_limit"], "pin", "card_id", 1, "card")  # the limit the request set
    existing = _facts(bank, ("activate_card", {}, {}))
    assert existing.allows_one(bank.spec_by_name["set_card_limit"], "pin", "card_id", 0, "card")  # a card the chain did not make


def test_an_update_of_a_made_row_leaves_alone_what_the_request_gave_it():
    tempo = compile_app(catalog.load("tempo_music"), 0)
    steps = [
        chain.Step(tempo.spec_by_name["create_playlist"]),
        chain.Step(tempo.spec_by_name["update_playlist"], refs={"playlist_id": Ref(step=0, field="playlist_id")}),
    ]
    changed = set()
    for seed in range(6):
        world = StateBuilder(tempo.blueprint, seed, tempo.order).use_pool(value_pool(tempo))
        world = world.fill(dict.fromkeys(world_tables(tempo, steps), WORLD_ROWS))
        _, calls, _ = instantiate(tempo, steps, world, seed, attempts=STEP_ATTEMPTS, pool=value_pool(tempo))
        assert calls[1].refs["playlist_id"] == Ref(step=0, field="playlist_id")
        assert not {"name", "visibility"} & set(calls[1].args), calls  # the name and visibility the request just gave
        changed |= set(calls[1].args)
    assert "description" in changed


def test_a_transition_that_rewrites_what_the_request_gave_a_made_row_is_refused():
    """Replied "A", then changed the reply to say "B": edit_message is a transition that sets the text."""
    relay = compile_app(catalog.load("relay_chat"), 0)
    replied = _facts(relay, ("reply_in_thread", {}, {}))
    assert not replied.allows_one(relay.spec_by_name["edit_message"], "ref", "message_id", 0, "message_id")
    scheduled = _facts(relay, ("schedule_huddle", {}, {}))  # a transition that only moves the state is a next step
    assert scheduled.allows_one(relay.spec_by_name["start_huddle"], "ref", "huddle_id", 0, "huddle_id")


def test_no_write_acts_on_a_row_an_earlier_step_ended() -> None:
    """A student withdrawn for good (a state no transition leaves) is not then invoiced or booked: the chain would
    read as "take the student off the school roll, then invoice the same student"."""
    school = compile_app(catalog.load("allegro_music_school"), 0)
    student = {"student_id": (0, "student")}
    f = RowFacts(school)
    f.add(school.spec_by_name["withdraw_student"], {}, {})
    assert not f.allows(school.spec_by_name["issue_term_invoice"], {}, student)
    assert not f.allows_one(school.spec_by_name["issue_term_invoice"], "pin", "student_id", 0, "student")
    # before the withdrawal, and for a row the withdrawal did not touch, the same write is allowed
    assert RowFacts(school).allows(school.spec_by_name["issue_term_invoice"], {}, {})
    assert f.allows(school.spec_by_name["issue_term_invoice"], {}, {})
