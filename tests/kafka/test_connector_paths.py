"""How connector names travel in URL path segments (pure functions, no Django)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from offsets.formats.connector_paths import from_segment, is_plain, to_segment

ANY_NAME = st.text(st.characters(codec=None, min_codepoint=0, max_codepoint=0x10FFFF))


@given(ANY_NAME)
def test_every_name_comes_back_from_its_segment(name):
    assert from_segment(to_segment(name)) == name


@given(ANY_NAME)
def test_no_segment_is_empty_a_dot_segment_or_holds_a_slash(name):
    segment = to_segment(name)
    assert segment not in ("", ".", "..")
    assert "/" not in segment and "\\" not in segment
    segment.encode("utf-8")  # no surrogate survives into a URL


@pytest.mark.parametrize("name", ["jdbc-source", "café", "a b", "a,b", "50%", "x.y", "..."])
def test_a_plain_name_stays_readable(name):
    assert is_plain(name)
    assert to_segment(name) == name


@pytest.mark.parametrize(
    "name", ["", ".", "..", "a/b", "a\\b", "~tilde", "line\nbreak", "nul\x00", "\ud800", "\x85"]
)
def test_any_other_name_is_encoded_behind_the_mark(name):
    assert not is_plain(name)
    assert to_segment(name).startswith("~")


@pytest.mark.parametrize("segment", ["~*", "~a", "~_w"])
def test_a_broken_encoding_is_no_name(segment):
    with pytest.raises(ValueError):
        from_segment(segment)
