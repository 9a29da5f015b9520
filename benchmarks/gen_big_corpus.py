"""A synthetic corpus of N task records (default 458,752, SynthAPI's size) made from a small built corpus.

Each app of the source corpus gets N / A records (A: its apps with tasks): its real records
repeated, each copy with a new task index (``rep * span + task``, where ``span`` is one more
than the largest task index of the app), so a new id (``<app>-t<task>-s<state>``) and new
coordinates, and its content hash recomputed. Everything else of a record (instruction,
state, oracle...) is the source's, so episodes on the copies run as on the originals. The
apps are copied; the manifest and the task index (``tasks/index.sqlite``) are written for
the new records. ``attempts.jsonl`` and ``state.json`` are not written (loading does not read
them). The same source and N always give the same bytes.

Usage (from the repository root)::

    python -m envsynth.cli build /tmp/src --tasks-per-app 10 --states 2 --distractors 4 --seed 0
    python benchmarks/gen_big_corpus.py /tmp/src /tmp/big [--records 458752]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import sys
import time
from pathlib import Path

from envsynth.corpus.index import IndexData, IndexEntry, Location, write_index
from envsynth.corpus.layout import APPS_DIR, MANIFEST, shard_name, shard_paths
from envsynth.corpus.manifest import CorpusManifest, digest
from envsynth.tasks.model import Task

SYNTHAPI_RECORDS = 458_752
_COORDS = re.compile(rb'"coordinates":\{"app":(\d+),"task":(\d+),"state":(\d+),"distractors":(\d+)\}')
_HASH = b',"hash":"'


def copy_record(line: bytes, app: str, task: int) -> tuple[bytes, IndexEntry]:
    """``line`` (a task record's JSON) with task index ``task``: new id, coordinates and hash."""
    coords = _COORDS.search(line)
    old_id = line[len(b'{"id":"') : line.index(b'"', len(b'{"id":"'))]
    if coords is None or not line.startswith(b'{"id":"') or line.count(_HASH) != 1:
        raise ValueError(f"record {old_id!r} is not laid out as expected (id first, one coordinates object, hash last)")
    a, _, s, d = (int(x) for x in coords.groups())
    new_id = f"{app}-t{task:05d}-s{s}".encode()
    body = b'{"id":"' + new_id + line[len(b'{"id":"') + len(old_id) : coords.start()]
    body += b'"coordinates":{"app":%d,"task":%d,"state":%d,"distractors":%d}' % (a, task, s, d)
    body += line[coords.end() : line.index(_HASH)] + b"}"
    h = hashlib.sha256(body).hexdigest().encode()
    kind = json.loads(line[: line.index(b',"instruction":')] + b"}")["kind"]
    return body[:-1] + _HASH + h + b'"}', IndexEntry(new_id.decode(), app, kind, a, task, s)


def source_lines(root: Path, tasks_path: str) -> list[bytes]:
    """The record lines of one app of the source corpus, in shard order."""
    return [line for p in shard_paths(root / tasks_path) for line in p.read_bytes().splitlines()]


def app_records(lines: list[bytes], app: str, count: int) -> tuple[list[bytes], list[IndexEntry]]:
    """``count`` records of ``app`` made from ``lines`` (repeated in order), with their index entries."""
    tasks = [json.loads(_COORDS.search(line).group(0)[len(b'"coordinates":') :])["task"] for line in lines]  # type: ignore[union-attr]
    span = max(tasks) + 1
    out: list[bytes] = []
    entries: list[IndexEntry] = []
    for j in range(count):
        k, rep = j % len(lines), j // len(lines)
        line, entry = copy_record(lines[k], app, rep * span + tasks[k])
        out.append(line)
        entries.append(entry)
    return out, entries


def write_shards(folder: Path, lines: list[bytes], shard_size: int, first_shard: int) -> tuple[list[tuple[str, int]], list[Location]]:
    """Write ``lines`` as shards of ``folder``; their (path, size) and each line's location."""
    folder.mkdir(parents=True, exist_ok=True)
    shards: list[tuple[str, int]] = []
    locs: list[Location] = []
    for n, start in enumerate(range(0, len(lines), shard_size)):
        chunk = lines[start : start + shard_size]
        offset = 0
        for line in chunk:
            locs.append(Location(first_shard + n, offset, len(line)))
            offset += len(line) + 1
        data = b"".join(line + b"\n" for line in chunk)
        (folder / shard_name(n)).write_bytes(data)
        shards.append((f"{folder.parent.name}/{folder.name}/{shard_name(n)}", len(data)))
    return shards, locs


def generate(source: Path, out: Path, records: int) -> CorpusManifest:
    """Write the synthetic corpus of ``records`` records made from ``source`` into ``out`` (which must not exist)."""
    manifest = CorpusManifest.model_validate_json((source / MANIFEST).read_bytes())
    apps = [a for a in manifest.apps if a.records]
    out.mkdir(parents=True)
    shutil.copytree(source / APPS_DIR, out / APPS_DIR)
    shards: list[tuple[str, int]] = []
    rows: list[tuple[IndexEntry, Location]] = []
    new_apps = []
    all_hashes: list[str] = []
    for i, a in enumerate(apps):
        count = records // len(apps) + (i < records % len(apps))
        lines, entries = app_records(source_lines(source, a.tasks_path), a.name, count)
        sample = Task.model_validate_json(lines[-1])
        if sample.hash != sample.content_hash() or sample.id != entries[-1].id:
            raise SystemExit(f"{a.name}: a copied record does not parse back to its id and hash")
        got, locs = write_shards(out / a.tasks_path, lines, manifest.shard_size, len(shards))
        shards += got
        rows += zip(entries, locs)
        hashes = [line[-66:-2].decode() for line in lines]
        all_hashes += hashes
        new_apps.append(
            a.model_copy(
                update={
                    "shards": [p for p, _ in got],
                    "records": count,
                    "admitted": count // manifest.composition.states,
                    "digest": digest(hashes),
                }
            )
        )
        print(f"{a.name}: {count} records in {len(got)} shards", file=sys.stderr)
    per_app = max(a.admitted for a in new_apps)
    big = manifest.model_copy(
        update={
            "apps": new_apps,
            "records": len(rows),
            "digest": digest(all_hashes),
            "composition": manifest.composition.model_copy(update={"apps": len(new_apps), "tasks_per_app": per_app}),
        }
    )
    (out / MANIFEST).write_text(json.dumps(big.model_dump(mode="json"), indent=2) + "\n", encoding="utf-8")
    write_index(out, big, IndexData(shards, rows))
    return big


def main() -> None:
    """Command line: ``gen_big_corpus.py SOURCE OUT [--records N]``."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("source", type=Path, help="a built corpus (envsynth build ... --tasks-per-app T)")
    ap.add_argument("out", type=Path, help="the folder to write (must not exist)")
    ap.add_argument("--records", type=int, default=SYNTHAPI_RECORDS, help=f"task records to write (default {SYNTHAPI_RECORDS:,})")
    args = ap.parse_args()
    if args.out.exists():
        raise SystemExit(f"{args.out} exists: give a new folder")
    started = time.perf_counter()
    big = generate(args.source, args.out, args.records)
    print(f"wrote {big.records} records of {len(big.apps)} apps to {args.out} in {time.perf_counter() - started:.1f}s", file=sys.stderr)


if __name__ == "__main__":
    main()
