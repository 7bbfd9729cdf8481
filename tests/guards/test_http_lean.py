"""The Streamable HTTP app's response streams are lean (issue 19).

The app is driven directly, as an ASGI server would drive it (no socket), so
that what it sends and the tasks it holds can be counted exactly:

* the last event of a response stream goes out with the end of the response,
  in one ``send`` (``more_body=False``), not as an event and then an empty end;
* a call waiting for an answer holds no task of its own in the app (no
  watcher per response stream): the ASGI server's request task and the tool's
  handler, nothing more;
* a response whose ASGI server does not wake a pending ``receive()`` once the
  response is complete still returns (the app wakes itself).
"""

from __future__ import annotations

import anyio

from minimcp.transports.http import StreamableHTTPApp
from tests.helpers.http_lean import accept, ask_call, ask_server, initialize

TIMEOUT = 30














async def test_last_event_goes_with_the_end_of_the_response() -> None:
    app = StreamableHTTPApp(ask_server())
    with anyio.fail_after(TIMEOUT):
        async with anyio.create_task_group() as tg:
            await tg.start(app.run)
            # This "server" never wakes receive() after the response: the app returns all the same.
            sid, init = await initialize(app)
            assert init.sent[0]["type"] == "http.response.start"
            bodies = init.sent[1:]
            assert bodies[-1]["more_body"] is False
            assert b'"protocolVersion"' in bodies[-1]["body"]  # the result, with the end
            assert all(m["more_body"] for m in bodies[:-1])
            # A call with a question: the question on the stream, then the result with the end.
            call = ask_call(sid)
            tg.start_soon(call.run, app)
            question = await call.wait_for("elicitation/create")
            answer = accept(question, sid, "yes")
            await answer.run(app)
            assert answer.sent[0]["status"] == 202
            result = await call.wait_for("result")
            assert result["result"]["content"][0]["text"] == "yes"
            last = call.sent[-1]
            assert last["more_body"] is False and b'"yes"' in last["body"]
            assert not any(m.get("body") == b"" for m in call.sent)  # no empty end-of-response write
            tg.cancel_scope.cancel()


async def test_a_waiting_call_holds_no_task_of_its_own_in_the_app() -> None:
    app = StreamableHTTPApp(ask_server())
    n = 10
    with anyio.fail_after(TIMEOUT):
        async with anyio.create_task_group() as tg:
            await tg.start(app.run)
            sid, _ = await initialize(app)
            before = len(anyio.get_running_tasks())
            calls = [ask_call(sid, i) for i in range(n)]
            for call in calls:
                tg.start_soon(call.run, app)  # the ASGI server's task for the request
            questions = [await call.wait_for("elicitation/create") for call in calls]
            grown = len(anyio.get_running_tasks()) - before
            # Per waiting call: the request's own task and the tool's handler; no watcher per stream.
            # (Plus, on trio, the session's deadline timer: a task from its first deadline on.)
            assert grown <= 2 * n + 1, f"{grown} tasks for {n} waiting calls"
            # The client of one call leaves: its call goes on (a dropped connection is not a cancel).
            calls[0].gone.set()
            for i, question in enumerate(questions):
                await accept(question, sid, f"a{i}").run(app)
            for i, call in enumerate(calls[1:], 1):
                assert (await call.wait_for("result"))["result"]["content"][0]["text"] == f"a{i}"
            tg.cancel_scope.cancel()
