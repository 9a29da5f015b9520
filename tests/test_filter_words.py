"""The blueprint's filter words and the runtime toolkit's copy of them mean the same.

The toolkit is loaded alone by path in the sandbox, so it cannot import
``envsynth.blueprint.filters``; the checks at load time and the tools must still agree.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from envsynth.blueprint import filters
from envsynth.runtime import toolkit


def test_the_operators_are_the_same() -> None:
    assert toolkit.LOOKUPS == filters.LOOKUPS


@given(st.text(alphabet="abz_", max_size=12) | st.sampled_from(["price__gt", "a__ne", "__lt", "x__", "status__in", "a__b__lte"]))
def test_keys_split_alike(key: str) -> None:
    assert toolkit.split_key(key) == filters.split_key(key)


@given(st.booleans() | st.integers() | st.text(max_size=8) | st.floats(allow_nan=False))
def test_table_keys_alike(k: object) -> None:
    assert toolkit.table_key(k) == filters.table_key(k)
