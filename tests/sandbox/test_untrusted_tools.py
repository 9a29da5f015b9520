"""Untrusted (LLM-written) custom tools: checked at load, run only in a sandboxed worker."""

from __future__ import annotations

import builtins
import copy
import gc
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from sandbox_helpers import FORCE_FALLBACK

from envsynth.blueprint.codecheck import check_tool_code
from envsynth.blueprint.errors import BlueprintError
from envsynth.blueprint.load import from_dict
from envsynth.compiler.compile import compile_app
from envsynth.runtime.app import App
from envsynth.runtime.episode import FAILURE, REJECTION, SUCCESS, Episode
from envsynth.runtime.state import read_rows
from envsynth.sandbox import Limits, detect, fallback_mode
from envsynth.sandbox.untrusted import SandboxedToolFailure, ToolWorkerPool, run_sandboxed, set_tool_pool
from envsynth.testing.procedural import test_app

BOOKSHOP = Path(__file__).parents[1] / "data" / "bookshop.yaml"
LIMITS = Limits(wall=3.0, cpu=1.0, memory=256 << 20, output=1 << 20)

ISSUE_GIFT_CARD = {
    "name": "issue_gift_card",
    "kind": "custom",
    "mode": "write",
    "entity": "gift_card",
    "params": [
        {"name": "customer_id", "type": "ref", "ref": "customer"},
        {"name": "amount", "type": "number", "min": 1, "max": 200, "description": "Initial balance."},
    ],
    "pre": [{"check": "customer.status == 'active'", "message": "Customer {customer.full_name} is suspended."}],
    "creates": ["gift_card"],
    "post": ["count(gift_card, customer_id=customer_id) == old(count(gift_card, customer_id=customer_id)) + 1"],
    "code": (
        "import math\n"
        "if ctx.count('gift_card', {'customer_id': customer_id}) >= 4:\n"
        "    raise ToolError(f\"{customer['full_name']} already holds 4 gift cards.\", code='too_many_cards')\n"
        "gift_card_id = ctx.new_id('gift_card', 'gift_card_id', 'gif')\n"
        "code = 'GIFT-' + str(ctx.rng.randrange(1000, 10000)) + '-' + ctx.today()[5:7]\n"
        'db.execute(\'INSERT INTO "gift_card" ("gift_card_id", "code", "customer_id", "balance") VALUES (?, ?, ?, ?)\',\n'
        "           (gift_card_id, code, customer_id, math.floor(amount * 100) / 100))\n"
        "return ctx.one('SELECT * FROM \"gift_card\" WHERE \"gift_card_id\" = ?', (gift_card_id,), 'gift_card')\n"
    ),
    "returns": "The new gift card.",
    "description": "Issue a new gift card to a customer.",
}


def bookshop(untrusted: bool, extra: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    data = yaml.safe_load(BOOKSHOP.read_text(encoding="utf-8"))
    data["actions"] += copy.deepcopy(extra if extra is not None else [ISSUE_GIFT_CARD])
    for action in data["actions"]:
        if action["kind"] == "custom":
            action["untrusted"] = untrusted
    return data


def app_with(code: str, name: str = "probe", mode: str = "read") -> App:
    """An untrusted app with one extra custom tool running ``code`` (which must pass the checker)."""
    action = {"name": name, "kind": "custom", "mode": mode, "entity": "book", "params": [], "code": code, "description": "A probe."}
    return compile_app(from_dict(bookshop(True, [action])))


@pytest.fixture(scope="module", autouse=True)
def tool_pool() -> Iterator[ToolWorkerPool]:
    mode = fallback_mode("ENVSYNTH_SANDBOX_FALLBACK=1") if FORCE_FALLBACK else None
    pool = ToolWorkerPool(size=1, limits=LIMITS, mode=mode)
    previous = set_tool_pool(pool)
    yield pool
    set_tool_pool(previous)
    pool.close()


@pytest.fixture(scope="module")
def apps() -> tuple[App, App]:
    return compile_app(from_dict(bookshop(False))), compile_app(from_dict(bookshop(True)))


def isolated() -> bool:
    return detect().isolated and not FORCE_FALLBACK


# --- the checker ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "reason"),
    [
        ("import os\nreturn os.getpid()", "import of 'os' is not allowed"),
        ("import socket", "import of 'socket' is not allowed"),
        ("from subprocess import run", "import from 'subprocess' is not allowed"),
        ("import math, sys", "import of 'sys' is not allowed"),
        ("return open('/etc/passwd').read()", "'open' is not allowed"),
        ("return eval('1 + 1')", "'eval' is not allowed"),
        ("return ().__class__.__bases__[0].__subclasses__()", "access to attribute '__class__' is not allowed"),
        ("return getattr(ctx, 'db')", "'getattr' is not allowed"),
        ("return __builtins__", "dunder name '__builtins__' is not allowed"),
        ("return '{0.__class__}'.format(db)", "format fields reaching attributes"),
        ("import datetime\nreturn datetime.datetime.now().isoformat()", "the host clock (now())"),
        ("return ctx._dict", "access to attribute '_dict' is not allowed"),
        ("from . import x", "relative imports are not allowed"),
        ("import statistics\nreturn statistics.sys.modules['os'].getcwd()", "access to attribute 'sys' is not allowed"),
        ("import json\nreturn json.codecs.open('/etc/passwd').read()", "access to attribute 'codecs' is not allowed"),
        ("g = (x for x in [1])\nreturn g.gi_frame.f_globals", "access to attribute 'gi_frame' is not allowed"),
        ("db.enable_load_extension(True)", "access to attribute 'enable_load_extension' is not allowed"),
        ("return {}['__builtins__']", "dunder name '__builtins__' is not allowed, even as text"),
        ("return (", "does not parse"),
    ],
)
def test_checker_rejects_with_a_reason(code: str, reason: str) -> None:
    problems = check_tool_code(code)
    assert any(reason in p for p in problems), problems
    assert all(p.startswith("line ") for p in problems)


def test_checker_accepts_ordinary_tool_code() -> None:
    assert check_tool_code(ISSUE_GIFT_CARD["code"]) == []
    assert (
        check_tool_code(
            "from collections import Counter\nimport datetime as dt\nd = dt.date.fromisoformat(ctx.today())\nreturn {'n': Counter('ab')['a'], 'day': d.isoformat(), 't': ctx.now()}"
        )
        == []
    )


def test_every_custom_action_of_the_catalogue_passes_the_checker() -> None:
    root = Path(__file__).parents[2]
    files = [
        *(root / "src" / "envsynth" / "catalog").glob("*.yaml"),
        *(root / "tests" / "data").glob("*.yaml"),
        *(root / "tests" / "data" / "examples").glob("*.yaml"),
    ]
    codes = [a["code"] for f in sorted(files) for a in yaml.safe_load(f.read_text())["actions"] if a["kind"] == "custom"]
    assert len(codes) >= 5  # the catalogue keeps 3 (the rest are archetypes), the test blueprints and doc examples add theirs
    assert [check_tool_code(c) for c in codes] == [[] for _ in codes]


def test_checker_reports_line_numbers() -> None:
    assert check_tool_code("x = 1\ny = 2\nimport os") == ["line 3: import of 'os' is not allowed"]


def test_blueprint_with_refused_untrusted_code_does_not_load() -> None:
    bad = dict(ISSUE_GIFT_CARD, code="import subprocess\nreturn subprocess.run(['id']).returncode")
    with pytest.raises(BlueprintError) as err:
        from_dict(bookshop(True, [bad]))
    assert "issue_gift_card" in str(err.value) and "untrusted code refused" in str(err.value)
    assert "import of 'subprocess' is not allowed" in str(err.value)
    assert err.value.path.endswith(".code")
    from_dict(bookshop(False, [bad]))  # trusted (hand-written) code is not checked


# --- same behaviour as trusted code -------------------------------------------------------


def test_generated_module_keeps_the_body_as_text(apps: tuple[App, App]) -> None:
    _, app_u = apps
    assert "UNTRUSTED_CODE_issue_gift_card = " in app_u.module_source
    assert "from envsynth.sandbox.untrusted import run_sandboxed" in app_u.module_source
    assert "return run_sandboxed(ctx, 'issue_gift_card', UNTRUSTED_CODE_issue_gift_card, {'customer_id': customer_id" in app_u.module_source
    assert "\n    gift_card_id = ctx.new_id(" not in app_u.module_source  # not inlined
    assert app_u.spec_by_name["issue_gift_card"].untrusted
    assert "untrusted" not in apps[0].manifest["tools"][-1]  # trusted manifests unchanged


def _calls(ep: Episode) -> list[tuple[str, dict[str, Any]]]:
    customers = [r[0] for r in ep.db.execute("SELECT customer_id FROM customer WHERE status = 'active' ORDER BY customer_id")]
    book = ep.db.execute("SELECT book_id FROM book ORDER BY book_id").fetchone()[0]
    calls = [("restock_book", {"book_id": book, "copies": 3}), ("restock_book", {"book_id": "boo_missing", "copies": 1})]
    calls += [("issue_gift_card", {"customer_id": customers[0], "amount": 25.5 + i}) for i in range(5)]
    calls += [("issue_gift_card", {"customer_id": customers[1], "amount": 10}), ("restock_book", {"book_id": book, "copies": 2})]
    return calls


@pytest.mark.parametrize("seed", [0, 7])
def test_trusted_and_untrusted_give_the_same_results_and_states(apps: tuple[App, App], seed: int) -> None:
    app_t, app_u = apps
    ep_t, ep_u = app_t.episode(seed=seed), app_u.episode(seed=seed)
    outcomes = []
    for name, args in _calls(ep_t):
        r_t, r_u = ep_t.call(name, args), ep_u.call(name, args)
        assert (r_u.outcome, r_u.content, r_u.code, r_u.data) == (r_t.outcome, r_t.content, r_t.code, r_t.data), name
        assert read_rows(ep_u.db, app_u.blueprint) == read_rows(ep_t.db, app_t.blueprint)
        outcomes.append((r_u.outcome, r_u.code))
    assert outcomes.count((SUCCESS, None)) == 7
    assert (REJECTION, "exists:book") in outcomes and (REJECTION, "too_many_cards") in outcomes
    assert not ep_u.tainted


def test_new_ids_are_deterministic_per_episode_seed(apps: tuple[App, App]) -> None:
    _, app_u = apps

    def ids(seed: int) -> list[str]:
        ep = app_u.episode(seed=seed)
        customer = ep.db.execute("SELECT customer_id FROM customer WHERE status = 'active'").fetchone()[0]
        return [ep.call("issue_gift_card", {"customer_id": customer, "amount": 5}).data["gift_card_id"] for _ in range(2)]

    assert ids(3) == ids(3)
    assert ids(3) != ids(4)


def test_procedural_tester_passes_on_the_untrusted_version(apps: tuple[App, App]) -> None:
    app_t, app_u = apps
    report_u, report_t = test_app(app_u), test_app(app_t)
    assert report_u.passed, report_u.failures[:3]
    assert report_u.counts() == report_t.counts()
    assert report_u.by_tool()["issue_gift_card"]["positive"] > 0


# --- never in the main process --------------------------------------------------------------


def test_the_body_never_compiles_or_runs_in_the_main_process(apps: tuple[App, App], monkeypatch: pytest.MonkeyPatch) -> None:
    _, app_u = apps
    assert app_u.functions  # the generated module is loaded (trusted, generated code) before the guard
    marker = "ctx.new_id('gift_card'"
    real_compile, real_exec = builtins.compile, builtins.exec

    def guarded_compile(source: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(source, (str, bytes)) and marker in (source if isinstance(source, str) else source.decode()):
            raise AssertionError("untrusted code compiled in the main process")
        return real_compile(source, *args, **kwargs)

    def guarded_exec(source: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(source, str) and marker in source:
            raise AssertionError("untrusted code executed in the main process")
        return real_exec(source, *args, **kwargs)

    monkeypatch.setattr(builtins, "compile", guarded_compile)
    monkeypatch.setattr(builtins, "exec", guarded_exec)
    ep = app_u.episode(seed=1)
    customer = ep.db.execute("SELECT customer_id FROM customer WHERE status = 'active'").fetchone()[0]
    res = ep.call("issue_gift_card", {"customer_id": customer, "amount": 12})
    assert res.outcome == SUCCESS and res.data["gift_card_id"].startswith("gif_")


def test_the_code_runs_in_another_process(apps: tuple[App, App]) -> None:
    ep = apps[1].episode()
    pid = run_sandboxed(ep.ctx, "probe", "import os\nreturn os.getpid()", {}, check=False)
    assert isinstance(pid, int) and pid != os.getpid()


def test_the_worker_checks_the_code_again(apps: tuple[App, App]) -> None:
    ep = apps[1].episode()
    with pytest.raises(SandboxedToolFailure, match="import of 'os' is not allowed"):
        run_sandboxed(ep.ctx, "probe", "import os\nreturn os.getpid()", {})


def test_changes_outside_the_declared_writes_are_refused(apps: tuple[App, App]) -> None:
    ep = apps[1].episode()
    code = 'db.execute(\'UPDATE "book" SET "price" = 1\')\nreturn {}'
    with pytest.raises(SandboxedToolFailure, match="does not declare in writes"):
        run_sandboxed(ep.ctx, "probe", code, {}, writes={"book": ["stock"]}, creates=[], deletes=[])
    assert ep.db.execute("SELECT COUNT(*) FROM book WHERE price = 1").fetchone()[0] == 0


def test_main_side_constraints_apply_and_roll_back() -> None:
    app = app_with(
        'db.execute(\'INSERT INTO "purchase" ("purchase_id", "customer_id", "book_id", "quantity", "status", "placed_at") VALUES (?, ?, ?, ?, ?, ?)\', (\'pur_1\', \'nobody\', \'nothing\', 1, \'placed\', \'2025-01-01T00:00:00\'))\nreturn {}',
        mode="write",
    )
    ep = app.episode()
    before = read_rows(ep.db, app.blueprint)
    res = ep.call("probe", {})
    assert res.outcome == FAILURE  # the worker's own foreign keys refuse it; nothing reaches the episode
    assert read_rows(ep.db, app.blueprint) == before


# --- escape attempts that get past the checker -----------------------------------------------


@pytest.mark.skipif(not isolated(), reason="filesystem isolation needs bubblewrap")
@pytest.mark.parametrize("path", ["/etc/passwd", str(BOOKSHOP), str(Path(__file__).parents[2] / "pyproject.toml")])
def test_files_of_the_host_cannot_be_read(apps: tuple[App, App], path: str) -> None:
    ep = apps[1].episode()
    with pytest.raises(SandboxedToolFailure, match=r"FileNotFoundError|PermissionError"):
        run_sandboxed(ep.ctx, "probe", f"return open({path!r}).read()", {}, check=False)


def test_no_network(apps: tuple[App, App]) -> None:
    if not isolated() and "unshare" not in detect().prefix:
        pytest.skip("the fallback has no network namespace here")
    ep = apps[1].episode()
    code = "import socket\ns = socket.create_connection(('1.1.1.1', 80), timeout=1)\nreturn 'connected'"
    with pytest.raises(SandboxedToolFailure, match=r"OSError|unreachable|timed out|gaierror"):
        run_sandboxed(ep.ctx, "probe", code, {}, check=False)


def test_infinite_loop_is_an_unexpected_failure_and_the_next_call_works() -> None:
    # a long wall time: on a busy machine 1 s of CPU can take longer than the usual 3 s
    mode = fallback_mode("ENVSYNTH_SANDBOX_FALLBACK=1") if FORCE_FALLBACK else None
    with ToolWorkerPool(size=1, limits=Limits(wall=20.0, cpu=1.0, memory=256 << 20, output=1 << 20), mode=mode) as pool:
        previous = set_tool_pool(pool)
        try:
            app = app_with("while True:\n    pass", name="spin")
            ep = app.episode()
            res = ep.call("spin", {})
            assert res.outcome == FAILURE and res.code == "unexpected_failure"
            assert "CPUTimeExceeded" in (ep.log[-1].trace or "")
            book = ep.db.execute("SELECT book_id FROM book").fetchone()[0]
            assert ep.call("restock_book", {"book_id": book, "copies": 1}).outcome == SUCCESS
        finally:
            set_tool_pool(previous)


def test_sleeping_past_the_wall_time_replaces_the_worker(apps: tuple[App, App], tool_pool: ToolWorkerPool) -> None:
    ep = apps[1].episode()
    with pytest.raises(SandboxedToolFailure, match="wall-time limit"):
        run_sandboxed(ep.ctx, "probe", "import time\ntime.sleep(60)", {}, check=False)
    assert run_sandboxed(ep.ctx, "probe", "return 2 + 2", {}) == 4


def test_unbounded_allocation_is_an_unexpected_failure() -> None:
    app = app_with("x = []\nwhile True:\n    x.append(' ' * 10000000)", name="hog")
    ep = app.episode()
    res = ep.call("hog", {})
    assert res.outcome == FAILURE
    assert "MemoryError" in (ep.log[-1].trace or "")
    assert ep.call("probe_after", {}).outcome == REJECTION  # unknown tool: the episode goes on
    assert run_sandboxed(ep.ctx, "probe", "return len('ok')", {}) == 2


def test_a_crashed_worker_is_an_unexpected_failure(apps: tuple[App, App]) -> None:
    ep = apps[1].episode()
    with pytest.raises(SandboxedToolFailure, match="died"):
        run_sandboxed(ep.ctx, "probe", "import os\nos._exit(3)", {}, check=False)
    assert run_sandboxed(ep.ctx, "probe", "return 'fresh'", {}) == "fresh"


def test_uncommitted_changes_of_an_open_transaction_are_seen(apps: tuple[App, App]) -> None:
    # Task episodes run inside one BEGIN: the worker must see rows no commit has written yet.
    ep = apps[1].episode()
    book = ep.db.execute("SELECT book_id FROM book").fetchone()[0]
    ep.db.execute("BEGIN")
    ep.db.execute("UPDATE book SET stock = 100 WHERE book_id = ?", (book,))
    res = ep.call("restock_book", {"book_id": book, "copies": 5})
    assert res.data == {"book_id": book, "stock": 105}
    assert ep.db.execute("SELECT stock FROM book WHERE book_id = ?", (book,)).fetchone()[0] == 105
    ep.db.execute("ROLLBACK")
    assert ep.db.execute("SELECT stock FROM book WHERE book_id = ?", (book,)).fetchone()[0] != 105


# --- issue 13: one worker per episode, deterministic whatever the path, CPU of threads ------------


def _balance(app: App, seed: int) -> float:
    ep = app.episode(seed=seed)
    customer = ep.db.execute("SELECT customer_id FROM customer WHERE status = 'active'").fetchone()[0]
    res = ep.call("issue_gift_card", {"customer_id": customer, "amount": 25.5})
    assert res.outcome == SUCCESS, res.content
    return res.data["balance"]


def test_a_tool_patching_module_state_does_not_reach_a_later_episode() -> None:
    poison = {
        "name": "poison",
        "kind": "custom",
        "mode": "read",
        "entity": "book",
        "params": [],
        "code": "import math\nmath.floor = lambda x: 0\nreturn 'patched'",  # passes the checker
        "description": "Patches a module.",
    }
    app = compile_app(from_dict(bookshop(True, [ISSUE_GIFT_CARD, poison])))
    assert _balance(app, 1) == 25.5
    for seed in range(3):
        ep = app.episode(seed=seed)
        assert ep.call("poison", {}).data == "patched"
        assert _balance(app, seed) == 25.5  # another episode: another worker
        del ep


def test_one_worker_per_episode_and_released_with_it(apps: tuple[App, App], tool_pool: ToolWorkerPool) -> None:
    ep1, ep2 = apps[1].episode(seed=1), apps[1].episode(seed=1)
    count = "import math\nmath.calls = math.__dict__.get('calls', 0) + 1\nreturn math.calls"
    assert [run_sandboxed(ep1.ctx, "probe", count, {}, check=False) for _ in range(2)] == [1, 2]  # one worker per episode
    assert run_sandboxed(ep2.ctx, "probe", count, {}, check=False) == 1  # another episode, another worker
    workers = tool_pool.bound
    del ep1
    gc.collect()
    assert tool_pool.bound == workers - 1


DETERMINISM_PROBE = """
import operator, string
b = print.__self__
imp = b.__import__
dt, t, rnd, os_, uuid, secrets = (imp(m) for m in ('datetime', 'time', 'random', 'os', 'uuid', 'secrets'))
out = {}
out['attrgetter_now'] = str(operator.attrgetter('datetime.now')(dt)())
out['attrgetter_utcnow'] = str(operator.attrgetter('datetime.utcnow')(dt)())
out['formatter_time'] = string.Formatter().get_field('0.time', (t,), {})[0]()
out['time'] = [t.time(), t.time_ns(), t.monotonic(), t.perf_counter(), list(t.localtime()), t.strftime('%c'), t.ctime()]
out['today'] = str(dt.date.today())
out['random'] = [rnd.random(), rnd.Random().random(), rnd.SystemRandom().random(), rnd.randrange(10**9)]
out['urandom'] = [os_.urandom(8).hex(), b.__import__('posix').urandom(8).hex()]
out['uuid'] = [str(uuid.uuid4()), str(uuid.uuid1())]
out['secrets'] = [secrets.token_hex(8), secrets.randbelow(10**9)]
out['hash'] = hash('abc')
walk = type(0).__mro__[-1].__subclasses__()
out['walk_today'] = str([c for c in walk if c.__name__ == 'date'][0].today())
out['walk_random'] = [c for c in walk if c.__module__ == '_random'][0]().random()
out['sql'] = db.execute('SELECT random(), hex(randomblob(8))').fetchone()
return out
"""


@pytest.mark.skipif(
    not (isolated() and detect().seccomp), reason="the kernel's randomness is made zeros only under bubblewrap with seccomp"
)
def test_clock_and_randomness_are_the_episodes_whatever_the_path(apps: tuple[App, App]) -> None:
    def probe(seed: int) -> dict[str, Any]:
        ep = apps[1].episode(seed=seed)
        return run_sandboxed(ep.ctx, "probe", DETERMINISM_PROBE, {}, check=False)

    first, second, other = probe(5), probe(5), probe(6)
    assert first == second
    ep = apps[1].episode(seed=5)
    assert first["attrgetter_now"] == ep.ctx.now().replace("T", " ")
    assert first["formatter_time"] == first["time"][0]
    assert first["random"] != other["random"] and first["uuid"] != other["uuid"]  # from the episode seed


def test_threads_ignoring_sigxcpu_are_stopped_by_the_parent(apps: tuple[App, App]) -> None:
    limits = Limits(wall=20.0, cpu=1.0, memory=256 << 20, output=1 << 20)
    mode = fallback_mode("ENVSYNTH_SANDBOX_FALLBACK=1") if FORCE_FALLBACK else None
    code = (
        "import signal, threading\n"
        "signal.signal(signal.SIGXCPU, signal.SIG_IGN)\n"
        "def spin():\n"
        "    while True:\n"
        "        pass\n"
        "threading.Thread(target=spin, daemon=True).start()\n"
        "spin()\n"
    )
    with ToolWorkerPool(size=1, limits=limits, mode=mode) as pool:
        ep = apps[1].episode()
        with pytest.raises(SandboxedToolFailure, match="CPU time"):
            run_sandboxed(ep.ctx, "probe", code, {}, check=False, pool=pool)
        assert run_sandboxed(ep.ctx, "probe", "return 1", {}, pool=pool) == 1


def test_garbage_on_the_pipe_is_a_sandboxed_tool_failure(apps: tuple[App, App]) -> None:
    ep = apps[1].episode()
    code = (
        "import os, time\n"
        "for fd in range(3, 12):\n"
        "    try:\n"
        "        os.write(fd, b'[' * 5000 + b'\\n')\n"
        "    except OSError:\n"
        "        pass\n"
        "time.sleep(0.2)\n"
        "return 1\n"
    )
    with pytest.raises(SandboxedToolFailure, match="broke the protocol"):
        run_sandboxed(ep.ctx, "probe", code, {}, check=False)
    assert run_sandboxed(ep.ctx, "probe", "return 'fresh'", {}) == "fresh"
