"""``benchmarks/README.md`` stays a page a user reads: short, every script and results file it names
exists, every figure says which commit it comes from, and the project README's performance table
quotes it (one figure, one place). The dated engineering log lives in ``docs/perf-notes.md``, which
nothing else cites."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks"
PAGE = BENCH / "README.md"
NOTES = ROOT / "docs" / "perf-notes.md"

#: At most this many lines: a page, not a log.
MAX_LINES = 300

#: Sections of the page without figures of their own (how to run, what is measured, the summary
#: that names the sections it quotes, the limits of the figures).
NO_FIGURES = {"Read this first", "What is measured, and how it is kept fair", "The figures in brief",
              "How to run", "What the figures do not say"}


def named_files(text: str) -> set[str]:
    """Every file a text names in backticks or in a command: ``x.py``, ``dir/x.json``, ``deploy/x.cfg``."""
    found = set(re.findall(r"`([\w./*-]+\.(?:py|json|md|cfg|png))\b", text))
    found |= set(re.findall(r"python (?:-m \w+ )?([\w./-]+\.py)\b", text))
    return {name for name in found if not name.startswith(".")}


def missing_files(text: str) -> list[str]:
    """Names of ``named_files`` found neither under ``benchmarks/`` nor at the repository root."""
    out = []
    for name in sorted(named_files(text)):
        if not any(any(base.glob(name)) for base in (BENCH, ROOT)):
            out.append(name)
    return out


def commands(text: str) -> list[str]:
    """The script of every ``python benchmarks/...`` command on the page."""
    return re.findall(r"python (benchmarks/[\w./-]+\.py)", text)


def sections(text: str) -> dict[str, str]:
    parts = re.split(r"^## (.+)$", text, flags=re.MULTILINE)
    return {parts[i].strip(): parts[i + 1] for i in range(1, len(parts), 2)}


def undated_sections(text: str) -> list[str]:
    """Sections with a table or figures that name no commit (7 hex digits)."""
    out = []
    for title, body in sections(text).items():
        if title in NO_FIGURES:
            continue
        if re.search(r"\d", body) and not re.search(r"\b[0-9a-f]{7}\b", body):
            out.append(title)
    return out


def table_rows(section: str) -> list[str]:
    return [line.strip() for line in section.splitlines() if line.startswith("| ") and "---" not in line]


def figures(text: str) -> set[str]:
    """The figures of a text: numbers with their unit or ``x`` where one follows."""
    return set(re.findall(r"\d[\d,.]*(?: ?(?:KB|MB|GB|µs|ms|s|x))?(?![\w.])", text))


def diary_words(text: str) -> list[str]:
    """Work-log language: branch names, "round" (not "round trip"), "stop", "tonight"."""
    return re.findall(r"`h/\w+`|\bh/[a-z]\w*|\bround\b(?!\s+trips?)|\bstop\b|\btonight\b|\bthe night\b", text)


def readme_performance() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return text.split("## Performance\n", 1)[1].split("\n## ", 1)[0]


def test_the_page_is_short() -> None:
    lines = PAGE.read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_LINES, f"benchmarks/README.md has {lines} lines (at most {MAX_LINES}): a page, not a log"


def test_every_file_the_page_names_exists() -> None:
    text = PAGE.read_text(encoding="utf-8")
    assert len(named_files(text)) > 20  # the scan finds them
    assert missing_files(text) == []


def test_every_command_on_the_page_runs_a_script_that_exists() -> None:
    scripts = commands(PAGE.read_text(encoding="utf-8"))
    assert len(scripts) >= 10
    assert [s for s in scripts if not (ROOT / s).is_file()] == []


def test_every_section_with_figures_names_its_commit() -> None:
    assert undated_sections(PAGE.read_text(encoding="utf-8")) == []


def test_the_page_is_not_a_work_log() -> None:
    assert diary_words(PAGE.read_text(encoding="utf-8")) == []


def test_the_readme_quotes_the_page() -> None:
    """The README's performance table is the page's "The figures in brief", row for row, and every
    figure the README's performance section gives is on the page."""
    page = PAGE.read_text(encoding="utf-8")
    brief = sections(page)["The figures in brief"]
    readme = readme_performance()
    assert table_rows(readme) == table_rows(brief)
    assert len(table_rows(readme)) >= 8
    assert "benchmarks/README.md" in readme
    assert sorted(figures(readme) - figures(page)) == []


def test_the_log_is_marked_and_cited_by_nothing() -> None:
    assert NOTES.read_text(encoding="utf-8").startswith("# Performance notes: a historical log")
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True)
    citing = []
    for name in tracked.stdout.splitlines():
        path = ROOT / name
        # (the log itself, and the document checks that name it only to leave it out)
        if name in {"docs/perf-notes.md", "tests/docs/test_benchmarks_page.py", "tests/docs/test_doc_paths.py"}:
            continue
        if not path.is_file():
            continue
        if path.suffix in {".md", ".py", ".cfg", ".toml", ""} and "perf-notes" in path.read_text(errors="replace"):
            citing.append(name)
    assert citing == []


# The checks above can fail: each catches what it is for.

def test_the_checks_catch_a_stale_page() -> None:
    assert missing_files("run `servers/nowhere.py` and `results/none-*.json`") == [
        "results/none-*.json", "servers/nowhere.py"]
    assert missing_files("`driver.py`, `tools/walk.py`, `examples/booking.py`, `results/scaleout-*.json`") == []
    assert commands("python benchmarks/gone.py --quick") == ["benchmarks/gone.py"]
    assert undated_sections("## stdio\n\n| a | 1 |\n\n## WebSocket\n\n(abc1234) 2 KB\n") == ["stdio"]
    assert diary_words("measured on `h/path2` in the seventh round, at the stop") == ["`h/path2`", "round", "stop"]
    assert diary_words("round trips/s, one round trip") == []
    assert sorted(figures("2.4 KB and 48,380 round trips, 0.75x")) == ["0.75x", "2.4 KB", "48,380"]
    assert figures("3.9 KB") - figures("3.84 KB") == {"3.9 KB"}
