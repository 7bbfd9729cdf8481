"""The command-line client: ``python -m minimcp`` (or the installed ``minimcp`` command).

Layer 8, the top: nothing in the package imports it. Skip it on a first reading.

::

    minimcp tools   TARGET                          list the server's tools
    minimcp call    TARGET TOOL [key=value ...]     call a tool, print its result
    minimcp connect TARGET                          an interactive session
    minimcp logout  URL                             forget the kept tokens of a server

``TARGET`` is a command that starts a server over stdio (one argument, split like a
shell would: ``"python examples/booking.py"``), an ``http(s)://`` URL (Streamable
HTTP) or a ``ws(s)://`` URL (WebSocket).

``key=value`` arguments are parsed as JSON when they are valid JSON (``2``, ``true``,
``{"a": 1}``), else taken as strings; when the tool's input schema says a parameter
is a string, the text is kept as typed (``name=42`` sends ``"42"``). ``--json
'{...}'`` gives the arguments as one JSON object (``key=value`` pairs override it).

An ``http(s)://`` server that answers ``401`` is signed in to in the browser, without asking
(``--scope``, ``--client-id``, ``--client-secret``, ``--client-metadata-url``, ``--no-store``);
the tokens are kept in the configuration directory, mode ``0600``, until ``logout URL``.

When the server asks a question mid-call (elicitation), it is asked in the terminal;
without one (stdin is not a TTY) questions are declined with a note on stderr,
unless ``--answers '{"field": value}'`` or ``--accept-defaults`` answer them, and
URL requests are declined unless ``--accept-urls`` consents. Nothing waits for a
person who is not there.

Results go to stdout; logs, progress, notes and ``--trace`` to stderr.

Exit status: 0 success; 1 the tool returned an error result; 2 a usage, connection
or protocol error; 130 interrupted.

The package, one job per module (each imports only those listed before it)::

    terminal.py       styled streams, lines read off the event loop, ctrl-C and ctrl-D
    server_stderr.py  a spawned server's stderr, relayed whole while the session runs, bounded after
    questions.py      the question flow: form and URL questions asked, or answered from the flags
    render.py         tools, results, progress, server logs and trace lines as text
    args.py           the command line's arguments, checked into Options before connecting
    loopback.py       the browser step's ends: the authorization URL checked and opened, the redirect caught
    signing_in.py     the sign-in at an http(s) server's authorization server: OAuthClient, browser, logout
    connecting.py     the client session a command runs in (transport, trace, logs, --diagram)
    commands.py       tools, call, connect, and one run of a command with its errors in one line
    diagram.py        ``minimcp diagram``: a wire trace drawn as a sequence diagram (needs no client)
    __init__.py       :func:`main`, the entry point
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence

import anyio

from minimcp.cli import commands
from minimcp.cli.args import EXIT_FAILURE, CliError, build_parser, options_from
from minimcp.cli.terminal import restore_terminal
from minimcp.hosting.run import EXIT_INTERRUPTED, is_interrupt

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_FAILURE
    if args.command == "diagram":  # (``python -m minimcp diagram`` goes there directly)
        from minimcp.cli.diagram import main as diagram_main

        return diagram_main(args.rest)
    if args.command == "logout":
        from minimcp.cli.signing_in import logout
        from minimcp.cli.terminal import Console

        if not args.url.lower().startswith(("http://", "https://")):
            parser.exit(EXIT_FAILURE, f"minimcp: error: logout takes the server's http(s):// URL, not {args.url!r}\n")
        return logout(args.url, Console(color=False if args.no_color else None))
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        stream=sys.stderr,
        format="minimcp: %(name)s: %(message)s",
    )
    try:
        options = options_from(args)
    except CliError as exc:
        parser.exit(EXIT_FAILURE, f"minimcp: error: {exc}\n")
    restore = restore_terminal() if sys.stdin.isatty() else (lambda: None)
    try:
        status = anyio.run(commands.run, options, backend=options.backend)
    except BaseException as exc:
        if not is_interrupt(exc):
            raise
        status = EXIT_INTERRUPTED
    finally:
        restore()
    if status == EXIT_INTERRUPTED or options.interrupted_while is not None:
        # One line: the event loop's, the server's and the question's own words are not shown.
        sys.stderr.write(f"\nminimcp: interrupted while {options.interrupted_while or options.doing}\n")
        return EXIT_INTERRUPTED
    return status
