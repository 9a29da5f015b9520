"""How a request is framed, by the requester's style: the sentences around what they ask for.

A request is its clauses ("cancel my pending order placed on March 3") and its question, each put in
a frame ("Could you {x}?", "Then {x}.", "Also, {q}"). The frames depend on how the person talks
(:data:`STYLES`, the scenario's ``style``, which a user simulator also plays): a brief person says
"Cancel ..." and stops, a polite one asks and thanks, a chatty one wraps the request in a few words
of their own, one in a hurry says so, one unsure of the details hedges. Every style has several
frames of each place, so no one frame opens most of an app's requests.
"""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True)
class Frames:
    """The frames of one style: the first clause's, the middle ones', the last of three or more, the question's, a sign-off,
    and the first clause of a further goal of a multi-goal request (``also``: something else the person wants done)."""

    first: tuple[str, ...]
    then: tuple[str, ...]
    last: tuple[str, ...]
    ask: tuple[str, ...]
    ask_alone: tuple[str, ...] = ("{q}",)
    sign_off: tuple[str, ...] = ("",)
    also: tuple[str, ...] = ("Also, {x}.",)


_THEN = ("Then {x}.", "After that, {x}.", "Next, {x}.", "Once that's done, {x}.")
_LAST = ("Finally, {x}.", "And lastly, {x}.", "To finish, {x}.")

FRAMES: dict[str, Frames] = {
    "brief": Frames(
        first=("{X}.", "Please {x}.", "I need to {x}.", "{X}, please."),
        then=("Then {x}.", "Also {x}.", "Next, {x}."),
        last=("Finally, {x}.", "Last, {x}."),
        ask=("{q}", "Also: {q_lower}"),
        also=("Also, {x}.", "Separately, {x}.", "And {x}."),
    ),
    "polite": Frames(
        first=("Could you please {x}?", "Would you be able to {x}?", "I'd be grateful if you could {x}.", "May I ask you to {x}?"),
        then=_THEN,
        last=_LAST,
        ask=("I'd also like to know: {q_lower}", "Could you also tell me: {q_lower}", "{q}"),
        ask_alone=("{q}", "Could you tell me: {q_lower}", "I'd like to know: {q_lower}"),
        sign_off=("Thank you.", "Thank you very much.", "Many thanks."),
        also=("Separately, could you also {x}?", "I'd also like you to {x}.", "While you're at it, could you {x}?"),
    ),
    "chatty": Frames(
        first=("I was hoping you could {x}.", "Any chance you could {x}?", "So, I'd like you to {x}.", "Can you {x}?"),
        then=("Oh, and then {x}.", "After that, {x}.", "Once that's done, {x}.", "Then {x}."),
        last=("And to finish, {x}.", "Finally, {x}.", "And lastly, {x}."),
        ask=("Oh, and one more thing: {q_lower}", "Also, I was wondering: {q_lower}", "{q}"),
        ask_alone=("{q}", "I was wondering: {q_lower}", "Quick question: {q_lower}"),
        sign_off=("Thanks so much!", "Thanks a lot, I appreciate it!", "Thanks!"),
        also=("Oh, and while you're at it, {x}.", "Something else: can you {x}?", "And another thing, {x}."),
    ),
    "in a hurry": Frames(
        first=("Quick one: {x}.", "I need you to {x}, please.", "Can you {x}? It's urgent.", "Please {x} as soon as you can."),
        then=("Then {x}.", "Right after, {x}.", "Next, {x}."),
        last=("Then finally {x}.", "Last thing: {x}."),
        ask=("And quickly: {q_lower}", "{q}"),
        ask_alone=("{q}", "Quick question: {q_lower}"),
        sign_off=("Thanks, I'm short on time.", "Thanks, I'm in a rush.", ""),
        also=("Also, {x}.", "One more: {x}.", "And {x}, please."),
    ),
    "unsure of the details": Frames(
        first=("I think I need to {x}, if that's possible.", "Could you help me {x}?", "I'm not sure how this works, but I'd like to {x}."),
        then=("Then I think {x}.", "After that, {x}, if you can.", "Then {x}."),
        last=("And finally, {x}, I believe.", "Finally, {x}."),
        ask=("Also, I'm not sure: {q_lower}", "And could you check: {q_lower}", "{q}"),
        ask_alone=("I'm not sure, so could you check: {q_lower}", "{q}", "I can't remember: {q_lower}"),
        sign_off=("I hope that makes sense.", "Thanks for your patience.", ""),
        also=("Also, I think I need to {x}.", "And separately, could you {x}?", "There's one more thing: I'd like to {x}."),
    ),
}
"""The frames of each style (the scenario's ``style``)."""

STYLES: tuple[str, ...] = tuple(FRAMES)
"""How requesters talk, drawn once per request."""


def framed(clauses: list[str], question: str | None, rng: random.Random, style: str, goals: frozenset[int] = frozenset()) -> list[str]:
    """The sentences of a request in ``style``: each clause and the question in a frame of that style, then a sign-off.

    ``goals`` are the indexes of the clauses that start a further goal (framed as something else asked for).
    """
    frames = FRAMES[style]
    out: list[str] = []
    for i, clause in enumerate(clauses):
        if i and i in goals:  # a further goal: a frame no earlier goal of the request took, while any is left
            pool = tuple(f for f in frames.also if not any(s.startswith(f.split("{x}")[0]) for s in out)) or frames.also
        else:
            pool = frames.first if i == 0 else frames.last if i == len(clauses) - 1 and i > 1 else frames.then
        x = clause.removeprefix("please ")  # the frame is polite already: never "Please please"
        out.append(rng.choice(pool).format(x=x, X=x[:1].upper() + x[1:]))
    if question:
        pick = rng.choice(frames.ask if clauses else frames.ask_alone)
        if question.lower().startswith(_ASKS_ALREADY):  # "Could you tell me how many ...?" is framed already
            pick = "Also, {q_lower}" if clauses and not question.lower().startswith("also") else "{q}"
        out.append(pick.format(q=question, q_lower=question[0].lower() + question[1:]))
    sign_off = rng.choice(frames.sign_off)
    return [*out, sign_off] if sign_off else out


_ASKS_ALREADY = ("could you", "can you", "would you", "tell me", "i'd like to know", "i want to know", "please")

SIGN_OFFS: frozenset[str] = frozenset(s for f in FRAMES.values() for s in f.sign_off if s)
"""Every style's sign-offs: a request ends with one, or with its last clause or question."""


def before_sign_off(text: str, sentence: str) -> str:
    """``text`` with ``sentence`` added at its end, before its sign-off if it has one ("... Also, remove ... Thanks!")."""
    for sign in SIGN_OFFS:
        if text.endswith(" " + sign):
            return f"{text[: -len(sign) - 1]} {sentence} {sign}"
    return f"{text} {sentence}"
