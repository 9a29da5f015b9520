"""The state linter: whether each task's initial state s0 holds together, measured from the records.

It reads only what a corpus stores (each task's state, core and distractor rows, its request
and user, and each app's blueprint) and shares no logic with synthesis, so it can catch rows
a person would find odd. Every check reads the rows the way a reviewer would, finding the
fields it needs by their names and types in the blueprint; a check whose fields an app does
not have never flags a task of that app. The classes (see each function's docstring):

- ``derived_arithmetic``: a total that is not its row's quantity times price, or not the sum
  of its children's totals;
- ``date_order``: a row dated before the row it belongs to, an event of a row before the row
  was made, or a period that ends after the document covering it was issued;
- ``completed_in_future``: a row in a finished state (completed, delivered, paid...) dated
  after the app's clock;
- ``upcoming_in_past``: a row in a scheduled state (scheduled, upcoming, booked) whose time
  is before the clock;
- ``several_active``: one owner with two default rows, or two active subscriptions or
  memberships;
- ``repeated_names_per_owner``: two rows of one person with the same name, nickname or title;
- ``filler_text``: lorem ipsum or Faker catch-phrase words in a visible text;
- ``balance_on_wrong_kind``: a balance on a kind of payment method that holds none (a credit
  card, PayPal);
- ``cents_in_threshold``: the request states a threshold with odd cents ("at most $61.81");
- ``title_in_name``: a person's name with a title or suffix ("Dr.", "Jr.", "PhD").
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import date
from typing import Any

from pydantic import BaseModel, Field

from envsynth.blueprint.entities import Entity
from envsynth.blueprint.models import Blueprint
from envsynth.tasks.model import Task

Row = dict[str, Any]

CLASSES = (
    "derived_arithmetic",
    "date_order",
    "completed_in_future",
    "upcoming_in_past",
    "several_active",
    "repeated_names_per_owner",
    "filler_text",
    "balance_on_wrong_kind",
    "cents_in_threshold",
    "title_in_name",
)
"""Every class of defect the state linter reports, in report order."""

_TOTAL = re.compile(r"^(?:total|subtotal|line_total|total_price|total_amount|amount_total)$")
_QUANTITY = re.compile(r"^(?:quantity|qty)$")
_PRICE = re.compile(r"^(?:unit_price|price)$")
_CREATED = re.compile(
    r"^(?:created|joined|placed|opened|issued|booked|registered|signed_up|sent|posted|applied|requested|reported|submitted)_(?:at|on)$"
)
_EVENT = re.compile(r"_(?:at|on)$")
_NOT_EVENT = re.compile(  # times ahead, not events; and a fixture's own history (a meter installed before the account)
    r"expire|due|until|next|send_at|starts_at|departs_at|arrives_at|scheduled|installed|serviced"
)
_AHEAD = re.compile(r"expire|due|until|next")  # dates a finished row may still have ahead of it
_HAPPENS = re.compile(
    r"^(?:starts?_at|start_time|departs_at|departure_date|slot_date|scheduled_(?:at|for|on)|event_date)$"
)  # when it takes place
_SCHEDULE = re.compile(rf"{_HAPPENS.pattern}|^(?:send_at|next_date|due_date)$")  # when it is to happen or be done
_FINISHED = frozenset(
    ("completed", "delivered", "done", "closed", "attended", "paid", "achieved", "ended", "landed", "resolved", "paid_off")
)
_UPCOMING = frozenset(("scheduled", "upcoming", "booked"))
_DEFAULT = re.compile(r"^(?:is_)?(?:default|primary)$")
_ONE_ACTIVE_TABLE = re.compile(r"subscription|membership")
_PLAN_TABLE = re.compile(r"plan|tier|product|catalog")
_NAME_FIELD = re.compile(r"^(?:name|nickname|display_name|handle)$")
_BALANCE = re.compile(r"^(?:balance|current_balance|stored_value)$")
_KIND = re.compile(r"^(?:kind|type|method|payment_type|method_type)$")
_NO_BALANCE_KINDS = frozenset(
    ("credit_card", "debit_card", "card", "credit", "debit", "paypal", "apple_pay", "google_pay", "bank_transfer", "direct_debit", "venmo")
)
_THRESHOLD = re.compile(
    r"\b(?:at most|at least|up to|under|over|below|above|more than|less than|fewer than|greater than|higher than|lower than|"
    r"cheaper than|exceeds?|exceeding|budget of|limit of|maximum of|minimum of|no more than|no less than)"
    r"\s+(?:\$|USD\s?|€|£)?\s?\d[\d,]*\.(\d{2})\b",
    re.IGNORECASE,
)
_THRESHOLD_AFTER = re.compile(
    r"(?:\$|€|£)\s?\d[\d,]*\.(\d{2})\s+or\s+(?:less|more|under|over|below|above|cheaper|lower|higher)\b", re.IGNORECASE
)
_ROUND_CENTS = frozenset(("00", "99", "50"))


def _wordset(*lines: str) -> frozenset[str]:
    """The words of ``lines``."""
    return frozenset(" ".join(lines).split())


_TITLE = re.compile(r"(?:^|\s)(?:Dr|Mr|Mrs|Ms|Mx|Miss|Prof|Rev)\.?\s|,?\s(?:Jr|Sr|MD|PhD|DDS|DVM|Esq|II|III|IV)\.?$")
_LOREM = _wordset(
    "lorem ipsum dolor amet consectetur adipiscing elit sed eiusmod tempor incididunt labore dolore magna aliqua enim minim "
    "veniam quis nostrud exercitation ullamco laboris nisi aliquip commodo consequat duis aute irure reprehenderit voluptate "
    "velit esse cillum fugiat nulla pariatur excepteur sint occaecat cupidatat proident sunt culpa officia deserunt mollit "
    "anim laborum accusamus accusantium doloremque laudantium totam aperiam eaque ipsa quae illo inventore veritatis quasi "
    "architecto beatae vitae dicta explicabo nemo ipsam voluptatem quia voluptas aspernatur aut odit fugit consequuntur "
    "magni dolores eos ratione sequi nesciunt neque porro quisquam dolorem adipisci numquam eius modi tempora incidunt"
)
_CATCH_PHRASE = _wordset(
    "paradigm synergy synergistic synergized leverage holistic incremental bandwidth bandwidth-monitored multi-tiered "
    "multi-layered multi-lateral multi-channeled multi-state multi-tasking mission-critical value-added web-enabled "
    "grid-enabled zero-defect fault-tolerant client-driven client-server demand-driven solution-oriented user-centric "
    "re-engineered reverse-engineered re-contextualized de-engineered open-architected future-proofed right-sized up-sized "
    "down-sized triple-buffered self-enabling public-key vision-oriented profit-focused quality-focused business-focused "
    "customer-focused team-oriented enterprise-wide cross-platform cross-group fully-configurable function-based "
    "object-based object-oriented context-sensitive contextually-based content-based attitude-oriented upward-trending "
    "even-keeled eco-centric bifurcated disintermediate didactic exuding heuristic methodology middleware groupware "
    "extranet intranet info-mediaries moratorium conglomeration superstructure parallelism knowledgebase data-warehouse "
    "neural-net task-force time-frame toolset ameliorated assimilated devolved persevering pre-emptive "
    "re-contextualized 3rdgeneration 4thgeneration 5thgeneration "
    "6thgeneration leadingedge system-worthy needs-based well-modulated"
)
_WORD = re.compile(r"[a-z0-9/]+(?:-[a-z0-9]+)*")
_VISIBLE_TYPES = frozenset(("string", "text"))


class StateLint(BaseModel):
    """The state defects found in one task, with the first finding of each class (what is wrong, and where)."""

    id: str
    app: str
    defects: list[str] = Field(default_factory=list)
    findings: dict[str, str] = Field(default_factory=dict)


class CoherenceReport(BaseModel):
    """Shares of a corpus's tasks whose initial state has each class of defect (0..1); ``any`` and ``any_rate``:
    the tasks with at least one."""

    tasks: int
    rates: dict[str, float]
    counts: dict[str, int]
    any: int = 0
    any_rate: float = 0.0
    examples: dict[str, list[str]] = Field(default_factory=dict, description="class -> up to three task ids")


class World:
    """One task's initial state read against its app's blueprint: rows by table and by id, and the clock."""

    def __init__(self, task: Task, blueprint: Blueprint) -> None:
        self.task = task
        self.entities = {e.name: e for e in blueprint.entities}
        self.rows: dict[str, list[Row]] = {}
        for part in (task.state.core, task.state.distractors):
            for table, rows in part.items():
                self.rows.setdefault(table, []).extend(r for r in rows if isinstance(r, dict))
        self.by_id: dict[tuple[str, Any], Row] = {}
        for table, rows in self.rows.items():
            ent = self.entities.get(table)
            for r in rows if ent is not None else ():
                key = r.get(ent.id_field)
                if isinstance(key, str):
                    self.by_id[(table, key)] = r
        self.today = blueprint.reference_date
        self.now = f"{blueprint.reference_date}T12:00:00"

    def tables(self) -> Iterator[tuple[Entity, list[Row]]]:
        """Each table of the state the blueprint knows, with its rows."""
        for table, rows in self.rows.items():
            ent = self.entities.get(table)
            if ent is not None and rows:
                yield ent, rows

    def parent(self, ent: Entity, row: Row, field: str) -> tuple[Entity, Row] | None:
        """The row ``field`` of ``row`` refers to, when it is in the state."""
        target, key = ent.field(field).ref, row.get(field)
        hit = self.by_id.get((target, key)) if target and isinstance(key, str) else None
        return (self.entities[target], hit) if hit is not None and target and hit is not row else None

    def key(self, ent: Entity, row: Row) -> str:
        """How a finding names a row: its table and id."""
        return f"{ent.name} {row.get(ent.id_field)}"

    def is_person(self, table: str | None) -> bool:
        """Whether a table holds people: it has a person-name or email field."""
        ent = self.entities.get(table or "")
        return ent is not None and any(f.type in ("name", "email") for f in ent.fields)


def _number(value: Any) -> float | None:
    """A finite number, or None (booleans and text are not numbers)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:  # an int too large for a float
        return None
    return number if math.isfinite(number) else None


def _when(value: Any) -> str | None:
    """An ISO date or datetime string, or None."""
    if isinstance(value, str) and re.match(r"^\d{4}-\d{2}-\d{2}(?:$|[T ]\d{2}:\d{2})", value):
        return value[:19].replace(" ", "T")
    return None


def _before(a: str, b: str) -> bool:
    """Whether time ``a`` is before ``b``; a date against a datetime compares the days."""
    if len(a) == 10 or len(b) == 10:
        return a[:10] < b[:10]
    return a < b


def _fields(ent: Entity, pattern: re.Pattern[str], types: Iterable[str] | None = None) -> list[str]:
    """The names of ``ent``'s fields that match ``pattern`` (and have one of ``types``)."""
    allowed = set(types) if types is not None else None
    return [f.name for f in ent.fields if pattern.search(f.name) and (allowed is None or f.type in allowed)]


def _dates(ent: Entity) -> list[str]:
    """The date and datetime fields of ``ent``."""
    return [f.name for f in ent.fields if f.type in ("date", "datetime")]


def _refs(ent: Entity) -> list[str]:
    return [f.name for f in ent.fields if f.type == "ref" and f.ref]


def _states(ent: Entity, row: Row) -> set[str]:
    """The values of the row's state fields (and of enum fields named ``status``)."""
    return {
        row[f.name]
        for f in ent.fields
        if (f.type == "state" or (f.type == "enum" and f.name == "status")) and isinstance(row.get(f.name), str)
    }


def derived_arithmetic(w: World) -> Iterator[str]:
    """A row whose total disagrees with its inputs: ``line_total`` is not ``quantity * unit_price`` (within 0.01),
    or a parent's total is not the sum of its children's totals (``order.total`` vs the order's lines) when the
    state holds both the parent and some of its children."""
    for ent, rows in w.tables():
        totals, qty, price = _fields(ent, _TOTAL), _fields(ent, _QUANTITY), _fields(ent, _PRICE)
        if not (totals and qty and price):
            continue
        for r in rows:
            t, q, p = _number(r.get(totals[0])), _number(r.get(qty[0])), _number(r.get(price[0]))
            if t is not None and q is not None and p is not None and abs(t - q * p) > 0.01 + 1e-9:
                yield f"{w.key(ent, r)}: {totals[0]} {t:g} is not {q:g} * {p:g}"
    yield from _parent_totals_off(w)


def _line_amount(ent: Entity) -> str | None:
    """The field that holds what a child row adds to its parent's total: its own total, else the price of a line
    of one item (a line without a quantity)."""
    totals = _fields(ent, _TOTAL)
    if totals:
        return totals[0]
    prices = _fields(ent, _PRICE)
    return prices[0] if prices and not _fields(ent, _QUANTITY) else None


def _parent_totals_off(w: World) -> Iterator[str]:
    sums: dict[tuple[str, str, int], float] = {}  # (parent table, total field, id(parent row)) -> sum of children
    parents: dict[tuple[str, str, int], tuple[Entity, Row]] = {}
    for ent, rows in w.tables():
        amount = _line_amount(ent)
        for field in _refs(ent) if amount else ():
            target = w.entities.get(ent.field(field).ref or "")
            total = _fields(target, _TOTAL) if target is not None and target is not ent else []
            for r in rows if total else ():
                hit, v = w.parent(ent, r, field), _number(r.get(amount or ""))
                if hit is not None and v is not None:
                    key = (hit[0].name, total[0], id(hit[1]))
                    sums[key] = sums.get(key, 0.0) + v
                    parents[key] = hit
    for key, s in sums.items():
        p_ent, p_row = parents[key]
        t = _number(p_row.get(key[1]))
        if t is not None and abs(t - s) > 0.01 + 1e-9:
            yield f"{w.key(p_ent, p_row)}: {key[1]} {t:g} is not the sum of its lines, {s:.2f}"


def date_order(w: World) -> Iterator[str]:
    """A row dated before the row it refers to (a child's dates against its parent's created, placed, joined,
    booked or issued date: an order placed before its customer joined), an event of a row before the row itself
    was made (paid before placed), or a period that ends after the document covering it was issued (a statement
    for March issued in February)."""
    for ent, rows in w.tables():
        events = [f for f in _dates(ent) if _EVENT.search(f) and not _NOT_EVENT.search(f)]
        created = [f for f in _dates(ent) if _CREATED.match(f)]
        for r in rows:
            yield from _before_parent(w, ent, r, events)
            yield from _before_made(w, ent, r, created, events)
            yield from _period_after_issue(w, ent, r)


def _times(row: Row, fields: Iterable[str]) -> list[tuple[str, str]]:
    """(field, time) for each of ``fields`` holding an ISO date or datetime."""
    return [(f, t) for f in fields if (t := _when(row.get(f)))]


def _before_parent(w: World, ent: Entity, row: Row, events: list[str]) -> Iterator[str]:
    mine = _times(row, events)
    for field in _refs(ent) if mine else ():
        hit = w.parent(ent, row, field)
        if hit is None:
            continue
        p_ent, p_row = hit
        for pf, born in _times(p_row, [f for f in _dates(p_ent) if _CREATED.match(f)]):
            for f, t in mine:
                if _before(t, born):
                    yield f"{w.key(ent, row)}: {f} {t} is before {w.key(p_ent, p_row)}'s {pf} {born}"


def _before_made(w: World, ent: Entity, row: Row, created: list[str], events: list[str]) -> Iterator[str]:
    for cf, born in _times(row, created):
        for f, t in _times(row, [f for f in events if f not in created]):
            if _before(t, born):
                yield f"{w.key(ent, row)}: {f} {t} is before its {cf} {born}"


_MONTHS = {
    m: i
    for i, m in enumerate(
        ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december"), 1
    )
}


def _period_end(text: Any) -> str | None:
    """The last day a period names ("2026-02", "February 2026", "2026-02-01 to 2026-02-28"), as an ISO date."""
    if not isinstance(text, str):
        return None
    days = re.findall(r"\d{4}-\d{2}-\d{2}", text)
    if days:
        return max(days)
    m = re.search(r"(\d{4})-(\d{2})\b", text)
    year_month = (int(m.group(1)), int(m.group(2))) if m else None
    if year_month is None:
        m = re.search(r"([A-Za-z]+)\s+(\d{4})", text)
        month = _MONTHS.get(m.group(1).lower()) if m else None
        year_month = (int(m.group(2)), month) if m and month else None
    if year_month is None or not 1 <= year_month[1] <= 12 or not 1 <= year_month[0] < 9999:
        return None
    y, mo = year_month
    nxt = date(y + mo // 12, mo % 12 + 1, 1)
    return date.fromordinal(nxt.toordinal() - 1).isoformat()


def _period_after_issue(w: World, ent: Entity, row: Row) -> Iterator[str]:
    periods = [f.name for f in ent.fields if "period" in f.name and f.type in _VISIBLE_TYPES]
    issued = [f for f in _dates(ent) if f.startswith("issued")]
    for p in periods:
        end = _period_end(row.get(p))
        for i, t in _times(row, issued) if end else ():
            if t[:10] < (end or ""):
                yield f"{w.key(ent, row)}: {p} {row.get(p)!r} ends {end}, after its {i} {t}"


def _after_clock(w: World, t: str) -> bool:
    return _before(w.now, t) if len(t) > 10 else t > w.today


def _before_clock(w: World, t: str) -> bool:
    return _before(t, w.now) if len(t) > 10 else t < w.today


def _parent_times(w: World, ent: Entity, row: Row, pattern: re.Pattern[str]) -> list[tuple[str, str]]:
    """(where, time) of the rows ``row`` refers to, for their fields matching ``pattern`` (a booking's session
    start, an appointment's slot day)."""
    out: list[tuple[str, str]] = []
    for field in _refs(ent):
        hit = w.parent(ent, row, field)
        if hit is not None:
            out += [(f"{w.key(*hit)}'s {f}", t) for f, t in _times(hit[1], [f for f in _dates(hit[0]) if pattern.match(f)])]
    return out


def completed_in_future(w: World) -> Iterator[str]:
    """A row in a finished state (completed, delivered, done, closed, attended, paid, achieved, ended...) with a
    time after the app's clock (noon on the blueprint's reference date): one of its own event dates, when it took
    place (``starts_at``...), or when the row it belongs to took place (a class attended whose session is next
    week). Dates a finished row may have ahead of it (due, expiry, until, next) do not count."""
    for ent, rows in w.tables():
        own = [f for f in _dates(ent) if (_EVENT.search(f) and not _NOT_EVENT.search(f)) or _HAPPENS.match(f)]
        own = [f for f in own if not _AHEAD.search(f)]
        for r in rows:
            done = sorted(_states(ent, r) & _FINISHED)
            if not done:
                continue
            for where, t in [(f, t) for f, t in _times(r, own)] + _parent_times(w, ent, r, _HAPPENS):
                if _after_clock(w, t):
                    yield f"{w.key(ent, r)}: {done[0]} but {where} is {t}, after the clock {w.now}"


def upcoming_in_past(w: World) -> Iterator[str]:
    """A row in a scheduled state (scheduled, upcoming, booked) whose time is before the app's clock: a session
    still scheduled that started yesterday, a milestone upcoming past its due date, a booking of a past slot.
    The time is the row's own scheduled field (starts_at, departs_at, due_date...), else when the row it belongs
    to takes place."""
    for ent, rows in w.tables():
        own = [f for f in _dates(ent) if _SCHEDULE.match(f)]
        for r in rows:
            states = sorted(_states(ent, r) & _UPCOMING)
            if not states:
                continue
            for where, t in _times(r, own) or _parent_times(w, ent, r, _HAPPENS):
                if _before_clock(w, t):
                    yield f"{w.key(ent, r)}: {states[0]} but {where} is {t}, before the clock {w.now}"


def several_active(w: World) -> Iterator[str]:
    """One owner with two rows where the app allows one: two rows with a ``default``/``is_default`` (or primary)
    flag set among the rows of one owner (two default addresses), or two active rows of a subscription or
    membership table for one owner (the owner: the rows it refers to, plans and products aside)."""
    for ent, rows in w.tables():
        owners = [f for f in _refs(ent) if not _PLAN_TABLE.search(ent.field(f).ref or "")]
        for flag in _fields(ent, _DEFAULT, ("bool",)) if owners else ():
            yield from (
                f"{ent.name}: {flag} on {n} rows of {key}" for key, n in _per_owner([r for r in rows if r.get(flag) is True], owners)
            )
        if owners and _ONE_ACTIVE_TABLE.search(ent.name):
            live = [r for r in rows if "active" in _states(ent, r)]
            yield from (f"{ent.name}: {n} active rows of {key}" for key, n in _per_owner(live, owners))


def _per_owner(rows: list[Row], owners: list[str]) -> Iterator[tuple[tuple[Any, ...], int]]:
    """Each owner (the values of the ``owners`` fields) with more than one of ``rows``."""
    keys = Counter(tuple(r.get(f) if isinstance(r.get(f), str) else None for f in owners) for r in rows)
    yield from ((key, n) for key, n in keys.items() if n > 1 and all(k is not None for k in key))


def repeated_names_per_owner(w: World) -> Iterator[str]:
    """Two rows of one person sharing the name a person calls them by (the same customer's two accounts both
    called "Travel Wallet", two playlists of one listener named alike), compared without case or surrounding
    spaces. The name: a short text field that is the table's label or is called name, nickname or handle. The
    person: a row a reference points to in a table of people (with a person-name or email field)."""
    for ent, rows in w.tables():
        names = [f.name for f in ent.fields if f.type in ("string", "name") and (_NAME_FIELD.match(f.name) or f.name == ent.label)]
        owners = [f for f in _refs(ent) if w.is_person(ent.field(f).ref)]
        for name, owner in ((n, o) for n in names for o in owners):
            keys = Counter(
                (r[owner], r[name].strip().lower())
                for r in rows
                if isinstance(r.get(name), str) and r[name].strip() and isinstance(r.get(owner), str)
            )
            yield from (f"{ent.name}: {n} rows of {who} with {name} {value!r}" for (who, value), n in keys.items() if n > 1)


def filler_text(w: World) -> Iterator[str]:
    """A visible text (a string or text field) with lorem ipsum words or Faker catch-phrase vocabulary
    ("Multi-tiered incremental paradigm")."""
    for ent, rows in w.tables():
        fields = [f.name for f in ent.fields if f.type in _VISIBLE_TYPES]
        for r in rows:
            yield from (f"{w.key(ent, r)}: {f} {r[f]!r}" for f in fields if _is_filler(r.get(f)))


def _is_filler(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    words = set(_WORD.findall(value.lower()))
    return bool(words & _CATCH_PHRASE) or len(words & _LOREM) >= 2 or "lorem" in words


def balance_on_wrong_kind(w: World) -> Iterator[str]:
    """A non-zero balance on a row whose kind holds no balance: a payment method or account of kind credit_card,
    card, PayPal or a phone wallet (Apple Pay, Google Pay), in a table that also has a balance column for the kinds
    that do hold one (gift cards, certificates, store credit)."""
    for ent, rows in w.tables():
        balances = _fields(ent, _BALANCE, ("money", "float", "int"))
        kinds = _fields(ent, _KIND, ("enum", "state", "string"))
        for r in rows if balances and kinds else ():
            kind = next((r[k] for k in kinds if isinstance(r.get(k), str)), None)
            for b in balances if kind in _NO_BALANCE_KINDS else ():
                if (_number(r.get(b)) or 0.0) != 0.0:
                    yield f"{w.key(ent, r)}: a {kind} with {b} {r[b]}"


def cents_in_threshold(w: World) -> Iterator[str]:
    """The request states a threshold amount with cents other than .00, .99 or .50 ("at most $61.81", "$12.37 or
    less"): a person sets round limits."""
    text = w.task.instruction if isinstance(w.task.instruction, str) else ""
    for m in [*_THRESHOLD.finditer(text), *_THRESHOLD_AFTER.finditer(text)]:
        if m.group(1) not in _ROUND_CENTS:
            yield f"the request says {m.group(0)!r}"


def title_in_name(w: World) -> Iterator[str]:
    """A person's name with a title or suffix (Dr., Mr., Mrs., Ms., Prof.; Jr., Sr., MD, PhD, DDS, III): in the
    user's profile, or in a person-name field (type ``name``, or a ``full_name``) of a row."""
    if _titled(w.task.user.name):
        yield f"the user is {w.task.user.name!r}"
    for ent, rows in w.tables():
        fields = [f.name for f in ent.fields if f.type == "name" or (f.type in _VISIBLE_TYPES and f.name.endswith("full_name"))]
        yield from (f"{w.key(ent, r)}: {f} {r[f]!r}" for r in rows for f in fields if _titled(r.get(f)))


def _titled(value: Any) -> bool:
    return isinstance(value, str) and bool(_TITLE.search(value.strip()))


CHECKS: dict[str, Callable[[World], Iterator[str]]] = {
    "derived_arithmetic": derived_arithmetic,
    "date_order": date_order,
    "completed_in_future": completed_in_future,
    "upcoming_in_past": upcoming_in_past,
    "several_active": several_active,
    "repeated_names_per_owner": repeated_names_per_owner,
    "filler_text": filler_text,
    "balance_on_wrong_kind": balance_on_wrong_kind,
    "cents_in_threshold": cents_in_threshold,
    "title_in_name": title_in_name,
}
"""Each class's check, by name (the order of :data:`CLASSES`): it yields what it finds wrong, row by row."""


def first_defect(task: Task, blueprint: Blueprint) -> str | None:
    """The first defect of any class in a task's initial state (``<class>: <finding>``), or None when it holds together:
    admission refuses a task whose state has one (``incoherent_state``, envsynth.tasks.admission.admit)."""
    world = World(task, blueprint)
    for name in CLASSES:
        found = next(CHECKS[name](world), None)
        if found is not None:
            return f"{name}: {found}"
    return None


def lint_state(task: Task, blueprint: Blueprint) -> StateLint:
    """Every class of state defect one task's initial state has, with the first finding of each."""
    world = World(task, blueprint)
    findings = {name: found for name in CLASSES if (found := next(CHECKS[name](world), None)) is not None}
    return StateLint(id=task.id, app=task.app, defects=list(findings), findings=findings)


def lint_states(tasks: Iterable[Task], blueprints: Mapping[str, Blueprint]) -> CoherenceReport:
    """Lint every task's initial state; per class, the count and share of tasks with it and up to three examples."""
    linted = [lint_state(t, blueprints[t.app]) for t in tasks]
    n = max(len(linted), 1)
    counts = Counter(d for t in linted for d in t.defects)
    examples: dict[str, list[str]] = {}
    for t in linted:
        for d in t.defects:
            if len(examples.setdefault(d, [])) < 3:
                examples[d].append(t.id)
    return CoherenceReport(
        tasks=len(linted),
        rates={d: counts[d] / n for d in CLASSES},
        counts={d: counts[d] for d in CLASSES},
        any=sum(bool(t.defects) for t in linted),
        any_rate=sum(bool(t.defects) for t in linted) / n,
        examples=examples,
    )
