"""``python -m minimcp`` and the ``minimcp`` command: the command-line client (see :mod:`minimcp.cli`)."""

from __future__ import annotations

import sys
from collections.abc import Sequence

__all__ = ["main"]


def _shadowed() -> str | None:
    """Why ``import minimcp`` found a plain directory instead of the package, if it did.

    ``python -m`` looks in the current directory first: a clone of the repository
    there (named ``minimcp`` too) hides a package installed with ``pip install -e``.
    """
    import minimcp

    if getattr(minimcp, "__file__", None) is not None:
        return None
    where = ", ".join(dict.fromkeys(str(p) for p in getattr(minimcp, "__path__", []))) or "a directory"
    return (
        f"'import minimcp' found the directory {where}, not the minimcp package: python -m looks in the "
        "current directory first, and a clone of the repository there is named minimcp too.\n"
        "Run it from another directory (or from inside the clone), or use the installed 'minimcp' command."
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command-line client; returns the exit status (the ``minimcp`` script exits with it)."""
    problem = _shadowed()
    if problem is not None:
        sys.stderr.write(f"minimcp: error: {problem}\n")
        return 2
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["diagram"]:  # drawing a trace needs no client: the light path
        from minimcp.cli.diagram import main as diagram_main

        return diagram_main(args[1:])
    from minimcp.cli import main as cli_main

    return cli_main(argv)


if __name__ == "__main__":
    sys.exit(main())
