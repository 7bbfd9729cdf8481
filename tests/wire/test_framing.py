"""Tests for minimcp.wire.framing.LineFramer: newline framing with a bound on buffered bytes."""

from __future__ import annotations

import itertools
from collections.abc import Iterable

from hypothesis import given
from hypothesis import strategies as st

from minimcp.wire.framing import OVERSIZED, LineFramer, Oversized

Item = bytes | Oversized


def feed_all(framer: LineFramer, chunks: Iterable[bytes]) -> list[Item]:
    """Feed every chunk, checking the buffer bound after each; return all lines, then the tail."""
    out: list[Item] = []
    for chunk in chunks:
        out += framer.feed(chunk)
        assert framer.buffered <= framer.max_line
    tail = framer.end()
    if tail is not None:
        out.append(tail)
    return out


def bytewise(data: bytes) -> list[bytes]:
    """``data`` as one-byte chunks."""
    return [data[i : i + 1] for i in range(len(data))]


def model(stream: bytes, max_line: int) -> list[Item]:
    """What the framer should produce for ``stream`` fed in full and then ended.

    Each ``\\n``-terminated line longer than max_line (its ``\\r`` included) is one
    OVERSIZED; otherwise one trailing ``\\r`` is dropped and blank lines are skipped.
    The unterminated tail is returned stripped, or OVERSIZED if it is too long.
    """
    *lines, tail = stream.split(b"\n")
    out: list[Item] = []
    for line in lines:
        if len(line) > max_line:
            out.append(OVERSIZED)
            continue
        if line.endswith(b"\r"):
            line = line[:-1]
        if line.strip():
            out.append(line)
    if len(tail) > max_line:
        out.append(OVERSIZED)
    elif tail.strip():
        out.append(tail.strip())
    return out


# --- examples ----------------------------------------------------------------------------------


def test_lines_split_at_newline() -> None:
    """Each ``\\n`` ends a line; the newline is not part of it."""
    f = LineFramer(100)
    assert f.feed(b'{"a":1}\n{"b":2}\n') == [b'{"a":1}', b'{"b":2}']
    assert f.buffered == 0


def test_crlf_is_stripped() -> None:
    """A ``\\r`` right before the ``\\n`` is dropped; other ``\\r`` bytes stay."""
    f = LineFramer(100)
    assert f.feed(b"one\r\ntwo\n\rthree\r\n") == [b"one", b"two", b"\rthree"]
    assert f.feed(b"a\rb\n") == [b"a\rb"]


def test_crlf_split_across_feeds_is_stripped() -> None:
    """A ``\\r`` fed separately from its ``\\n`` is still dropped."""
    f = LineFramer(100)
    assert f.feed(b"abc\r") == []
    assert f.feed(b"\n") == [b"abc"]


def test_empty_and_blank_lines_are_skipped() -> None:
    """Empty lines, bare ``\\r\\n`` and whitespace-only lines yield nothing."""
    f = LineFramer(100)
    assert f.feed(b"\n\n\r\nx\n \t \n\r\n\ny\n") == [b"x", b"y"]


def test_line_split_across_many_feeds() -> None:
    """A line delivered in many pieces comes out once, whole, when its newline arrives."""
    f = LineFramer(100)
    pieces = [b'{"json', b'rpc":', b'"2.0",', b'"method"', b':"x"}']
    for p in pieces:
        assert f.feed(p) == []
    assert f.buffered == len(b"".join(pieces))
    assert f.feed(b"\nnext") == [b"".join(pieces)]
    assert f.buffered == 4


def test_byte_at_a_time_matches_whole() -> None:
    """Feeding one byte at a time gives the same lines as feeding everything at once."""
    data = b'{"a":1}\r\n\n{"b":"x y"}\n  \nlast'
    assert feed_all(LineFramer(50), bytewise(data)) == feed_all(LineFramer(50), [data])
    assert feed_all(LineFramer(50), [data]) == [b'{"a":1}', b'{"b":"x y"}', b"last"]


def test_line_of_exactly_max_line_is_accepted() -> None:
    """max_line bytes is allowed; one more is oversized."""
    f = LineFramer(5)
    assert f.feed(b"12345\n123456\nok\n") == [b"12345", OVERSIZED, b"ok"]


def test_oversized_line_yields_one_marker_then_continues() -> None:
    """An oversized line is replaced by exactly one OVERSIZED; the next line is framed normally."""
    f = LineFramer(10)
    assert f.feed(b"x" * 100 + b"\nok\n") == [OVERSIZED, b"ok"]
    assert f.buffered == 0


def test_oversized_line_over_many_chunks_stays_bounded() -> None:
    """A huge line in many chunks never buffers more than max_line and yields one OVERSIZED."""
    f = LineFramer(16)
    out: list[Item] = []
    for _ in range(1000):
        out += f.feed(b"abcdefg")
        assert f.buffered <= 16
    out += f.feed(b"tail-of-huge\nnext\n")
    assert f.buffered <= 16
    assert out == [OVERSIZED, b"next"]
    assert out.count(OVERSIZED) == 1


def test_oversized_detected_when_buffer_plus_chunk_exceeds_limit() -> None:
    """Buffered bytes count toward the limit: 6 + 5 bytes over two feeds is oversized at 10."""
    f = LineFramer(10)
    assert f.feed(b"abcdef") == []
    assert f.feed(b"ghijk") == [OVERSIZED]
    assert f.buffered == 0
    assert f.feed(b"still the same line\nfine\n") == [b"fine"]


def test_oversized_marker_repr_and_identity() -> None:
    """OVERSIZED is a single marker object, distinct from any bytes."""
    assert isinstance(OVERSIZED, Oversized)
    assert repr(OVERSIZED) == "OVERSIZED"
    assert OVERSIZED != b"OVERSIZED"  # type: ignore[comparison-overlap]  # (that they never meet is the point)


def test_end_returns_unterminated_tail() -> None:
    """end() returns the bytes after the last newline (stripped), then the framer is empty."""
    f = LineFramer(100)
    assert f.feed(b"a\npartial ") == [b"a"]
    assert f.end() == b"partial"
    assert f.buffered == 0
    assert f.end() is None


def test_end_returns_none_without_tail() -> None:
    """end() is None when nothing or only whitespace is pending."""
    f = LineFramer(100)
    assert f.end() is None
    f.feed(b"a\n")
    assert f.end() is None
    f.feed(b"  \r")
    assert f.end() is None


def test_end_after_oversized_tail_is_none_and_resets() -> None:
    """An oversized unterminated tail was already reported; end() gives None and framing restarts."""
    f = LineFramer(4)
    assert f.feed(b"toolong") == [OVERSIZED]
    assert f.end() is None
    assert f.feed(b"ok\n") == [b"ok"]


# --- properties --------------------------------------------------------------------------------

# Message bodies without newlines (a \r inside is allowed and kept).
bodies = st.binary(max_size=40).map(lambda b: b.replace(b"\n", b""))
terminators = st.sampled_from([b"\n", b"\r\n", b"\n\n", b"\r\n\r\n"])
streams = st.lists(st.tuples(bodies, terminators), max_size=12).map(lambda ls: b"".join(b + t for b, t in ls))
streams_with_tail = st.tuples(streams, bodies).map(lambda p: p[0] + p[1])


@st.composite
def chunkings(draw: st.DrawFn, data: bytes) -> list[bytes]:
    """``data`` cut at random places."""
    cuts = sorted(draw(st.sets(st.integers(min_value=0, max_value=len(data)), max_size=20)))
    bounds = [0, *cuts, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds)]


@given(streams_with_tail, st.integers(min_value=1, max_value=48), st.data())
def test_any_chunking_matches_whole_feeding(stream: bytes, max_line: int, data: st.DataObject) -> None:
    """Random chunkings, byte-at-a-time and whole feeding all give the same lines, as the model says."""
    whole = feed_all(LineFramer(max_line), [stream])
    assert whole == model(stream, max_line)
    assert feed_all(LineFramer(max_line), bytewise(stream)) == whole
    assert feed_all(LineFramer(max_line), data.draw(chunkings(stream))) == whole


@given(st.lists(st.binary(min_size=1, max_size=30).filter(lambda b: b.strip() and b"\n" not in b), max_size=10))
def test_messages_come_back_in_order(messages: list[bytes]) -> None:
    """Newline-joined messages (none ending in ``\\r``) come back exactly, in order."""
    messages = [m for m in messages if not m.endswith(b"\r")]
    stream = b"".join(m + b"\n" for m in messages)
    assert feed_all(LineFramer(30), bytewise(stream)) == messages
    assert feed_all(LineFramer(30), [stream]) == messages


@given(
    st.integers(min_value=5, max_value=64),
    st.lists(st.integers(min_value=1, max_value=50), min_size=1, max_size=60),
)
def test_long_line_in_random_chunks_is_bounded(max_line: int, sizes: list[int]) -> None:
    """However a line is chunked, ``buffered`` never exceeds max_line; too long means one OVERSIZED."""
    total = sum(sizes)
    f = LineFramer(max_line)
    out: list[Item] = []
    for size in sizes:
        out += f.feed(b"z" * size)
        assert f.buffered <= max_line
    out += f.feed(b"\nafter\n")
    assert f.buffered == 0
    first = OVERSIZED if total > max_line else b"z" * total
    assert out == [first, b"after"]
