"""Classes of wording a linter does not see, each on real catalogue phrasing (issue 11: tasks read like requests).

Each test phrases a call of a catalogue app the way synthesis does (the app's real blueprint,
tool specs and language keys) and checks one way such requests used to read badly:
"the automatic renewal is yes", "the basic economy seats left is 9", "estimated at 1 hours",
"Please please update", a reason for a change the request does not make, "my savings open
account", "my playlist ... of listener <me>", "Tell me my personal training credits".
"""

from __future__ import annotations

import random
from functools import cache

from envsynth import catalog
from envsynth.blueprint.expand import expand
from envsynth.blueprint.models import Blueprint
from envsynth.compiler.compile import compile_app
from envsynth.runtime.app import App
from envsynth.tasks.model import Call, UserProfile
from envsynth.tasks.wording.describe import Description, render
from envsynth.tasks.wording.frames import STYLES
from envsynth.tasks.wording.instruction import Phraser, Requester, compose
from envsynth.tasks.wording.scenario import reason_for


@cache
def _bp(name: str) -> Blueprint:
    return catalog.load(name)


@cache
def _app(name: str) -> App:
    return compile_app(catalog.load(name), 0)


def _phraser(name: str, me: Description | None = None, me_key: str | None = None, **kw: object) -> Phraser:
    bp = _bp(name)
    return Phraser(bp, {s.name: s for s in expand(bp)}, random.Random(0), me, me_key, **kw)  # type: ignore[arg-type]


def test_a_yes_or_no_value_reads_as_words() -> None:
    """Not "...; the automatic renewal is yes": what it means for the row, "make sure it renews automatically"."""
    me = Description("member", {"full_name": "Lori West"})
    plan = Description("membership_plan", {"name": "Off-Peak Annual"})
    for on, words in ((True, "make sure it renews automatically"), (False, "make sure it does not renew automatically")):
        call = Call(tool="start_membership", args={"member_id": "mem_1", "plan_id": "pln_1", "auto_renew": on})
        text = _phraser("peak_fitness", me, "mem_1").clause(0, [call], {"member_id": me, "plan_id": plan})
        assert text == f'sign me up for the plan "Off-Peak Annual"; {words}', text


def test_a_yes_or_no_fact_and_a_filter_read_as_words() -> None:
    """A membership "that does not renew automatically", plans "that are freezable and on sale" (not "that is ... that is")."""
    bp = _bp("peak_fitness")
    assert render(bp, Description("membership", {"auto_renew": False}), "my") == "my membership that does not renew automatically"
    plan = Description("membership_plan", {"name": "Off-Peak Annual", "allows_freeze": True, "is_available": True})
    assert render(bp, plan) == 'the plan "Off-Peak Annual" that is freezable and on sale to new members'
    bills = _bp("brightline_utilities")
    assert render(bills, Description("service_plan", {"green_energy": True})).endswith("that uses green energy")


def test_counts_read_as_quantities() -> None:
    """Not "the basic economy seats left is 9" or "the attendees are 1": "with 9 basic economy seats left", "with 1 attendee"."""
    args = {
        "flight_number": "NS979",
        "departure_date": "2026-04-08",
        "origin": "SEA",
        "destination": "LAS",
        "departs_at": "2026-04-08T09:45:00",
        "arrives_at": "2026-04-08T11:50:00",
        "fare_band": "long",
        "basic_economy_left": 9,
        "economy_left": 20,
        "business_left": 1,
    }
    text = _phraser("northstar_air").clause(0, [Call(tool="schedule_flight", args=args)], {})
    assert text.endswith(", with 9 basic economy seats left, 20 economy seats left and 1 business seat left; the fare band is long"), text
    me = Description("member", {"full_name": "James Delacruz"})
    room = Description("meeting_room", {"name": "Juniper Lounge"})
    book = Call(
        tool="book_meeting_room",
        args={
            "room_id": "roo_1",
            "hours": 5,
            "organizer_id": "mem_1",
            "title": "Design review",
            "starts_at": "2026-03-15T07:00:00",
            "attendees": 1,
        },
    )
    text = _phraser("taskboard", me, "mem_1").clause(0, [book], {"room_id": room, "organizer_id": me})
    assert "with 1 attendee;" in text and "attendees are" not in text, text


def test_one_of_a_counted_thing_is_singular() -> None:
    """ "estimated at 1 hour", "for 1 second", not "1 hours" (quoted text is left alone)."""
    bp = _bp("taskboard")
    assert render(bp, Description("task", {"title": "Update calendar sync", "estimate_hours": 1}), "my").endswith("estimated at 1 hour")
    shop = _bp("harbor_market")
    assert render(shop, Description("return_request", {"status": "approved", "quantity": 1})) == "the approved return for 1 unit"
    me = Description("listener", {"display_name": "Ryan Harrison"})
    song = Description("track", {"title": "1 Summers"})
    play = Call(tool="play_track", args={"listener_id": "lis_1", "track_id": "trk_1", "device": "phone", "seconds_played": 1})
    text = _phraser("tempo_music", me, "lis_1").clause(0, [play], {"listener_id": me, "track_id": song})
    assert text == 'play the song "1 Summers" for me on the phone for 1 second', text


def test_a_status_comes_first_and_a_phrase_value_is_hyphenated() -> None:
    """ "my open savings account", not "my savings open account"; "the in-progress service request"."""
    bank = _bp("northwind_bank")
    assert render(bank, Description("account", {"type": "savings", "status": "open"}), "my").startswith("my open savings account")
    bills = _bp("brightline_utilities")
    assert render(bills, Description("service_request", {"status": "in_progress"})).startswith("the in-progress ")
    chat = _bp("relay_chat")
    assert render(chat, Description("scheduled_message", {"status": "draft"}), "my") == "my draft"  # not "my draft draft"
    gym = _bp("peak_fitness")
    assert render(gym, Description("class_booking", {"status": "booked"}), "my") == "my booking that is booked"  # not "my booked booking"


def test_the_frame_is_polite_once() -> None:
    """A say phrase that starts with "please" in a frame that is polite already: never "Please please update"."""
    for style in STYLES:
        for seed in range(10):
            text = compose(["please update my profile"], None, random.Random(seed), "", style)
            assert "please please" not in text.lower() and "update my profile" in text.lower(), text


def test_a_reason_matches_what_the_request_changes() -> None:
    """A new display name and bio: the reason is about the bio, never "I moved to another part of town" (the city)."""
    app = _app("circle_social")
    me = Requester(UserProfile(name="Angela Wilson", role="member"), table="profile", key="pro_1")
    call = Call(tool="update_profile", args={"profile_id": "pro_1", "display_name": "Annette", "bio": "Painter"})
    reasons = {reason_for(app, [call], me, random.Random(seed)) for seed in range(20)}
    assert reasons == {"my bio is out of date"}
    city = Call(tool="update_profile", args={"profile_id": "pro_1", "city": "Riverside"})
    assert reason_for(app, [city], me, random.Random(0)) == "I moved to another part of town"


def test_a_reason_in_a_third_person_voice_is_not_the_requesters() -> None:
    """ "They're going on a long leave" is said of someone else: a member deactivating their own account does not give it."""
    app = _app("taskboard")
    me = Requester(UserProfile(name="Kevin Barton", role="member"), table="member", key="mem_1")
    call = Call(tool="deactivate_member", args={"member_id": "mem_1"})
    assert {reason_for(app, [call], me, random.Random(seed)) for seed in range(20)} == {None}


def test_the_requesters_own_row_is_not_named_through_them() -> None:
    """ "my private playlist "Chill Jams"", not "... of listener Rodney Gordon" (the requester)."""
    me = Description("listener", {"display_name": "Rodney Gordon"})
    playlist = Description("playlist", {"name": "Chill Jams", "visibility": "private"}, parent=("listener_id", me))
    song = Description("track", {"title": "Summer Letters"})
    call = Call(tool="add_track_to_playlist", args={"playlist_id": "pls_1", "track_id": "trk_1"})
    phraser = _phraser("tempo_music", None, "lis_1", mine=frozenset({"pls_1"}), me_table="listener")
    text = phraser.clause(0, [call], {"playlist_id": playlist, "track_id": song})
    assert text == 'add the song "Summer Letters" to my private playlist "Chill Jams"', text


def test_an_update_that_moves_a_row_to_another_says_so() -> None:
    """Not "change my account ... for the plan "Green Choice Plus"": "switch it to the plan ..."."""
    account = Description("service_account", {"account_number": "BL-5053-0955"})
    plan = Description("service_plan", {"plan_name": "Green Choice Plus"})
    call = Call(tool="update_service_account", args={"account_id": "acc_1", "plan_id": "pln_1", "autopay": False})
    phraser = _phraser("brightline_utilities", None, "cus_1", mine=frozenset({"acc_1"}), me_table="customer")
    text = phraser.clause(0, [call], {"account_id": account, "plan_id": plan})
    assert text.endswith('; switch it to the plan "Green Choice Plus" and make sure it does not pay bills by direct debit'), text
    assert " for the plan" not in text


def test_questions_about_my_own_numbers_and_dates() -> None:
    """ "How many personal training credits do I have?", "When did I join?", "When was the product ... added?" (not "Tell me my
    ...", "the date joined of my account", "the date added of the product ...")."""
    me = Description("member", {"full_name": "William Chandler"})
    phraser = _phraser("peak_fitness", me, "mem_1")
    get = Call(tool="get_member", args={"member_id": "mem_1"})
    assert phraser.question(get, "pt_credits", {"member_id": me}, [get]) == "How many personal training credits do I have?"
    assert phraser.question(get, "joined_on", {"member_id": me}, [get]) == "When did I join?"
    shop = _phraser("harbor_market")
    get = Call(tool="get_product", args={"product_id": "prd_1"})
    mug = Description("product", {"name": "Forest Green Ceramic Mug"})
    assert shop.question(get, "created_on", {"product_id": mug}, [get]) == 'When was the product "Forest Green Ceramic Mug" added?'


def test_a_kind_of_row_comes_before_its_noun_in_a_count() -> None:
    """ "How many open business accounts are there ...", not "... that are open and where the account type is business"."""
    call = Call(tool="search_accounts", args={"type": "business", "status": "open", "nickname": "holiday"})
    text = _phraser("northwind_bank").question(call, "total", {}, [call])
    assert "open business accounts" in text and "where the account type" not in text and "that are open" not in text, text
    trials = Call(tool="search_subscriptions", args={"status": "trial"})
    text = _phraser("tempo_music").question(trials, "total", {}, [trials])
    assert "trial subscriptions" in text and "that are trial" not in text, text
    east = Call(tool="list_warehouses", args={"region": "northeast"})
    text = _phraser("harbor_market").question(east, "total", {}, [east])
    assert "northeast warehouses" in text and "where the region" not in text, text
    urgent = Call(tool="search_service_requests", args={"priority": "urgent"})
    text = _phraser("brightline_utilities").question(urgent, "total", {}, [urgent])
    assert "urgent-priority service requests" in text, text


def test_a_kind_said_by_its_value_alone_comes_before_the_noun() -> None:
    """ "my round-trip reservation", not "my reservation round trip" (an enum whose say is its bare value)."""
    bp = _bp("northstar_air")
    assert render(bp, Description("reservation", {"trip_type": "round_trip", "insurance": False}), "my") == (
        "my round-trip reservation that is not insured"
    )


def test_a_person_signing_up_says_it_in_the_first_person() -> None:
    """The call that signs the requester up reads as its say phrase ("sign me up as a member at ..."), not "register a member
    for the club ..., with full name ..."."""
    club = Description("club", {"name": "Peak Fitness North"})
    args = {"home_club_id": "clb_1", "full_name": "Maria Gibson", "email": "maria@example.net", "phone": "+1-216-385-2554"}
    call = Call(tool="register_member", args=args)
    text = _phraser("peak_fitness", me_step=0).clause(0, [call], {"home_club_id": club})
    assert text == (
        'sign me up as a member at the club "Peak Fitness North": my name is Maria Gibson, my email is maria@example.net '
        "and my phone number is +1-216-385-2554"
    ), text


def test_my_own_new_parent_row_is_said_as_mine() -> None:
    """The requester's own row moved to another: "my new home club is the club ...", not "switch my account to the club ..."."""
    me = Description("member", {"full_name": "Nicole Allen"})
    club = Description("club", {"name": "Peak Fitness Port Melissaberg"})
    call = Call(tool="update_member_contact", args={"member_id": "mem_1", "home_club_id": "clb_1"})
    text = _phraser("peak_fitness", me, "mem_1").clause(0, [call], {"member_id": me, "home_club_id": club})
    assert text == 'update my contact details; my new home club is the club "Peak Fitness Port Melissaberg"', text


def test_a_clause_saying_that_of_a_row_named_that_is_not_doubled() -> None:
    """ "record that that customer has passed the identity check" (a say phrase "record that {customer} ...", the row made
    earlier in the request): the doubled_word lint found it in northwind_bank."""
    import random as _random

    from envsynth.tasks.wording.instruction import compose

    text = compose(["record that that customer has passed the identity check"], None, _random.Random(0), "")
    assert "that that" not in text.lower() and "that the same customer has passed" in text
    assert "that that" not in compose(["That that works"], None, _random.Random(1), "").lower()
