"""``python -m minimcp`` and the ``minimcp`` command: the command-line client (see :mod:`minimcp.cli`)."""

from __future__ import annotations

import sys
from collections.abc import Sequence

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command-line client; returns the exit status (the ``minimcp`` script exits with it)."""
    from minimcp.cli import main as cli_main

    return cli_main(argv)


if __name__ == "__main__":
    sys.exit(main())
