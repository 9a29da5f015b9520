"""Frames by style: how a person talks shows in the request, and no one frame opens most requests of an app."""

from __future__ import annotations

import random
import re
from collections import Counter
from functools import cache

from envsynth import catalog
from envsynth.compiler.compile import compile_app
from envsynth.graph import build_graph
from envsynth.tasks import Rejection, Task, synthesize
from envsynth.tasks.wording.frames import FRAMES, STYLES, framed
from envsynth.tasks.wording.instruction import compose

APPS = ("harbor_market", "relay_chat", "tempo_music")


@cache
def _tasks(name: str) -> list[Task]:
    app = compile_app(catalog.load(name), 0)
    graph = build_graph(app)
    out: list[Task] = []
    for t in range(40):
        made = synthesize(app, graph, app_index=catalog.names().index(name), task_index=t, states=1, depth=2)
        if not isinstance(made, Rejection):
            out += made
    return out


def _frame_of(text: str) -> str | None:
    """The frame of the request's first clause or question, as the frame's text (which style's, which one)."""
    for style, frames in FRAMES.items():
        for frame in (*frames.first, *frames.ask_alone):
            head, _, tail = frame.partition("{")
            tail = tail.partition("}")[2]
            pattern = re.escape(head) + r"\S.*?" + re.escape(tail)
            if head and re.search(r"(?:^|[.!?)] )" + pattern, text, re.IGNORECASE):
                return f"{style}: {frame}"
    return None


def test_every_style_frames_the_same_clause_its_own_way() -> None:
    texts = {style: {compose(["cancel my order"], None, random.Random(seed), "", style) for seed in range(30)} for style in STYLES}
    for style, seen in texts.items():
        assert len(seen) >= 3, (style, seen)  # several frames per style
        assert all("cancel my order" in t.lower() for t in seen)
    for a in STYLES:
        for b in STYLES:
            if a < b:
                assert texts[a] != texts[b]  # a style is visible in the wording
    polite = " ".join(texts["polite"])
    assert "Thank" in polite and "Thank" not in " ".join(texts["brief"])


def test_a_question_alone_and_a_sign_off_keep_the_question_mark() -> None:
    for style in STYLES:
        for seed in range(20):
            sentences = framed([], "How many orders do I have?", random.Random(seed), style)
            assert any(s.rstrip().endswith("?") and "orders do i have" in s.lower() for s in sentences), sentences


def test_the_scenario_style_is_the_style_the_request_is_worded_in() -> None:
    for name in APPS:
        tasks = _tasks(name)
        assert {t.scenario.style for t in tasks} <= set(STYLES)
        assert len({t.scenario.style for t in tasks}) >= 3, name
        for task in tasks:
            signs = [s for s in FRAMES[task.scenario.style].sign_off if s]
            others = {s for style, f in FRAMES.items() if style != task.scenario.style for s in f.sign_off if s} - set(signs)
            assert not any(task.instruction.endswith(s) for s in others), (task.scenario.style, task.instruction)


def test_no_frame_opens_more_than_a_quarter_of_an_apps_requests() -> None:
    for name in APPS:
        tasks = _tasks(name)
        frames = Counter(_frame_of(t.instruction) for t in tasks)
        frames.pop(None, None)  # a bare "{X}." or a frame after a policy's or a staff member's opening: not told apart here
        top, n = frames.most_common(1)[0]
        assert len(tasks) >= 20 and n / len(tasks) <= 0.25, (name, top, n, len(tasks))


def test_a_question_framed_already_is_not_framed_twice() -> None:
    for style in STYLES:
        for seed in range(20):
            alone = " ".join(framed([], "Could you tell me how many orders there are?", random.Random(seed), style))
            assert alone.lower().count("could you tell me") == 1, alone
            after = " ".join(framed(["cancel my order"], "Tell me the priority of that task.", random.Random(seed), style))
            assert "wondering: tell me" not in after and "tell me the priority" in after.lower(), after


def test_a_sentence_added_later_goes_before_the_sign_off() -> None:
    from envsynth.tasks.wording.frames import SIGN_OFFS, before_sign_off

    assert (
        before_sign_off("Cancel my order. Thanks so much!", "Also, remove my card.")
        == "Cancel my order. Also, remove my card. Thanks so much!"
    )
    assert before_sign_off("Cancel my order.", "Also, remove my card.") == "Cancel my order. Also, remove my card."
    assert "Thanks!" in SIGN_OFFS and "" not in SIGN_OFFS
