"""minimcp's HTTP/1.1 connection without sockets: h11's parsing plus the server's own checks, byte for byte."""

from __future__ import annotations

import pytest

from minimcp.transports.h1_connection import CLOSED, NEED_DATA, Body, H1Connection, Head, Reject

pytest.importorskip("h11")


def events(conn: H1Connection, data: bytes) -> list[object]:
    """Feed ``data``, then every event until the connection asks for more (or ends)."""
    conn.receive_data(data)
    out: list[object] = []
    while True:
        event = conn.next_event()
        out.append(event)
        if event is NEED_DATA or event is CLOSED or isinstance(event, Reject) or (
            isinstance(event, Body) and not event.more
        ):
            return out


def test_a_whole_body_comes_in_one_piece_with_its_end_and_a_response_gets_a_length() -> None:
    conn = H1Connection(1024)
    head, body = events(conn, b"POST /x HTTP/1.1\r\nhost: h\r\ncontent-length: 3\r\n\r\nabc")
    assert isinstance(head, Head) and (head.method, head.path, head.http_version) == ("POST", "/x", "1.1")
    assert isinstance(body, Body) and (body.data, body.more) == (b"abc", False)
    conn.response_start(200, [(b"content-type", b"application/json")])
    out = conn.response_body(b"{}", False)
    assert out == b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}"
    assert conn.reusable
    conn.next_cycle()
    assert conn.next_event() is NEED_DATA


def test_a_streamed_response_is_chunked_and_a_head_request_gets_no_body() -> None:
    conn = H1Connection(1024)
    events(conn, b"GET / HTTP/1.1\r\nhost: h\r\n\r\n")
    conn.response_start(200, [])
    assert conn.response_body(b"a", True).lower().endswith(b"transfer-encoding: chunked\r\n\r\n1\r\na\r\n")
    assert conn.response_body(b"", False) == b"0\r\n\r\n"
    conn.next_cycle()
    events(conn, b"HEAD / HTTP/1.1\r\nhost: h\r\n\r\n")
    conn.response_start(200, [(b"content-length", b"5")])
    assert conn.response_body(b"hello", False).endswith(b"content-length: 5\r\n\r\n")


def test_100_continue_only_while_the_client_waits_for_it() -> None:
    conn = H1Connection(1024)
    events(conn, b"POST / HTTP/1.1\r\nhost: h\r\nexpect: 100-continue\r\ncontent-length: 2\r\n\r\n")
    assert conn.continue_bytes() == b"HTTP/1.1 100 \r\n\r\n"
    assert conn.continue_bytes() == b""


def test_a_head_over_the_bound_in_one_read_is_refused_like_one_that_trickles() -> None:
    big = b"GET / HTTP/1.1\r\nhost: h\r\nx: " + b"a" * 2000 + b"\r\n\r\n"
    whole = events(H1Connection(1024), big)[-1]
    trickled = H1Connection(1024)
    last: object = NEED_DATA
    for i in range(len(big)):
        last = events(trickled, big[i : i + 1])[-1]
        if last is not NEED_DATA:
            break
    assert isinstance(whole, Reject) and whole.status == 431 and whole.data.startswith(b"HTTP/1.1 431 ")
    assert isinstance(last, Reject) and last.status in (400, 431)  # h11's own bound: 431 as well
    assert trickled.buffered <= 1024 + 1


def test_the_peer_closing_between_requests_is_closed_and_mid_head_a_400() -> None:
    conn = H1Connection(1024)
    assert events(conn, b"")[-1] is CLOSED
    half = events(H1Connection(1024), b"GET / HTTP/1.1\r\nho")
    assert half[-1] is NEED_DATA
    conn = H1Connection(1024)
    events(conn, b"GET / HTTP/1.1\r\nho")
    last = events(conn, b"")[-1]
    assert isinstance(last, Reject) and last.status == 400


def test_body_over_takes_the_end_of_an_empty_body_and_keeps_a_piece_still_to_return() -> None:
    get = H1Connection(1024)
    get.receive_data(b"GET / HTTP/1.1\r\nhost: h\r\n\r\n")
    assert isinstance(get.next_event(), Head)
    assert get.body_over() and get.request_done  # a GET's end, never read by the app
    post = H1Connection(1024)
    post.receive_data(b"POST / HTTP/1.1\r\nhost: h\r\ntransfer-encoding: chunked\r\n\r\n")
    assert isinstance(post.next_event(), Head)
    assert not post.body_over()  # nothing of the body here yet: nothing taken
    post.receive_data(b"2\r\nab\r\n")
    assert not post.body_over()  # a piece of body: kept for next_event
    piece = post.next_event()
    assert isinstance(piece, Body) and piece.data == b"ab" and not post.request_done
    post.receive_data(b"0\r\n\r\n")
    assert post.body_over() and post.request_done
