"""minimcp.transports.http._sse: encoding events and decoding an event stream, with a bound on event size."""

from __future__ import annotations

import pytest

from minimcp.transports.http._sse import PING, Event, SSEDecoder, encode_event


def decode(data: bytes, *, limit: int = 1000, step: int = 0) -> tuple[list[Event], SSEDecoder]:
    """Decode ``data`` in one chunk, or ``step`` bytes at a time."""
    decoder = SSEDecoder(limit)
    chunks = [data[i : i + step] for i in range(0, len(data), step)] if step else [data]
    return [event for chunk in chunks for event in decoder.feed(chunk)], decoder


def test_encoding() -> None:
    assert encode_event(b'{"a":1}') == b'data: {"a":1}\n\n'
    assert encode_event(b"x", id="7", event="note", retry=500) == b"id: 7\nevent: note\nretry: 500\ndata: x\n\n"
    assert encode_event(None, id="p") == b"id: p\ndata: \n\n"  # a priming event
    assert encode_event(b"a\r\nb\rc") == b"data: a\ndata: b\ndata: c\n\n"
    for bad in ("a\nb", "a\rb", "a\0b"):
        with pytest.raises(ValueError, match="id"):
            encode_event(b"x", id=bad)


@pytest.mark.parametrize("step", [0, 1, 2, 5])
def test_what_is_encoded_decodes_back_in_any_chunking(step: int) -> None:
    stream = encode_event(b"one", id="1") + PING + encode_event(b"two\nlines", event="e", id="2", retry=250)
    events, decoder = decode(stream, step=step)
    assert events == [Event(b"one", "message", "1"), Event(b"two\nlines", "e", "2")]
    assert (decoder.last_event_id, decoder.retry) == ("2", 250)


@pytest.mark.parametrize("step", [0, 1])
def test_every_line_ending_and_a_leading_bom(step: int) -> None:
    events, _ = decode(b"\xef\xbb\xbfdata: a\r\n\r\ndata:b\r\rdata: c\n\n", step=step)
    assert [e.data for e in events] == [b"a", b"b", b"c"]


def test_an_event_without_data_is_not_dispatched_but_sets_id_and_retry() -> None:
    events, decoder = decode(b"id: 9\nretry: 3000\n\n: comment\n\n")
    assert events == []
    assert (decoder.last_event_id, decoder.retry) == ("9", 3000)


def test_an_empty_data_line_is_dispatched_empty() -> None:
    events, _ = decode(b"id: p\nretry: 10\ndata:\n\n")
    assert events == [Event(b"", "message", "p")]


def test_unknown_fields_bad_retry_and_nul_ids_are_ignored() -> None:
    events, decoder = decode(b"id: ok\nfoo: bar\nretry: soon\nid: a\0b\ndata: x\n\n")
    assert events == [Event(b"x", "message", "ok")]
    assert decoder.retry is None


def test_an_oversized_event_is_dropped_and_reported_and_the_stream_goes_on() -> None:
    big = b"data: " + b"x" * 40 + b"\n" + b"data: " + b"y" * 40 + b"\n\n"
    events, _ = decode(big + b"data: small\n\n", limit=64)
    assert events == [Event(b"", "message", "", oversized=True), Event(b"small")]


def test_a_line_that_never_ends_is_not_buffered() -> None:
    decoder = SSEDecoder(100)
    out = decoder.feed(b"data: " + b"z" * 10_000)
    assert out == [] and len(decoder._buffer) <= 164
    events = decoder.feed(b"zzz\n\ndata: next\n\n")
    assert events == [Event(b"", "message", "", oversized=True), Event(b"next")]


def test_an_empty_chunk_does_nothing() -> None:
    decoder = SSEDecoder(10)
    assert decoder.feed(b"") == []
    assert decoder.feed(b"data: a\n\n") == [Event(b"a")]
