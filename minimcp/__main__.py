"""``python -m minimcp`` and the ``minimcp`` command: the command-line client (see :mod:`minimcp.cli`)."""

from __future__ import annotations

import sys
from collections.abc import Sequence

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command-line client; returns the exit status (the ``minimcp`` script exits with it)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["diagram"]:  # drawing a trace needs no client: the light path
        from minimcp.diagram_cmd import main as diagram_main

        return diagram_main(args[1:])
    from minimcp.cli import main as cli_main

    return cli_main(argv)


if __name__ == "__main__":
    sys.exit(main())
