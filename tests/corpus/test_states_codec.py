"""The stored-state codec (corpus/states.py): decode gives back exactly the image encode was given."""

from __future__ import annotations

import random

import pytest

from envsynth.corpus.states import PAGE_SIZE, decode, encode


def _page(rng: random.Random, zeros: int) -> bytes:
    """A page of random bytes with a run of ``zeros`` zero bytes in its middle."""
    head = (PAGE_SIZE - zeros) // 2
    return rng.randbytes(head) + bytes(zeros) + rng.randbytes(PAGE_SIZE - zeros - head)


@pytest.mark.parametrize("seed", range(6))
def test_decode_gives_back_the_image(seed: int) -> None:
    rng = random.Random(seed)
    template = b"".join(_page(rng, rng.choice([0, 40, PAGE_SIZE - 8])) for _ in range(6))
    for pages in (3, 6, 9):  # shorter than the template, as long, longer (pages past its end)
        image = bytearray()
        for n in range(pages):
            same = n < 6 and rng.random() < 0.5
            image += template[n * PAGE_SIZE : (n + 1) * PAGE_SIZE] if same else _page(rng, rng.choice([0, 3, 100, PAGE_SIZE]))
        for data in (bytes(image), template[: pages * PAGE_SIZE] if pages <= 6 else None):
            if data is None:
                continue
            out = decode(template, encode(template, data))
            assert out == data and type(out) is bytes
