"""The documents agree with the code: every option is in the reference, and every link resolves."""

import re
from pathlib import Path

import pytest

from ipython_cudatime.command import options
from ipython_cudatime.features import FEATURES

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "notebooks" / "README.md"]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def anchors(markdown):
    """The anchors GitHub makes of a page's headings: lower case, punctuation dropped, spaces as -."""
    found = set()
    for heading in re.findall(r"^#+ (.+)$", re.sub(r"```.*?```", "", markdown, flags=re.S), flags=re.M):
        found.add(re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-"))
    return found


def test_every_option_the_parser_knows_is_in_the_reference():
    reference = (ROOT / "docs" / "reference.md").read_text()
    flags = [name for flag in options.all_flags(FEATURES) for name in flag.names]
    missing = [flag for flag in flags if f"`{flag}" not in reference and f"{flag} " not in reference]
    assert missing == []


def test_the_readme_stays_an_introduction():
    assert len((ROOT / "README.md").read_text().splitlines()) <= 250


@pytest.mark.parametrize("page", DOCS, ids=lambda page: str(page.relative_to(ROOT)))
def test_links_resolve(page):
    text = re.sub(r"`[^`\n]*`", "", re.sub(r"```.*?```", "", page.read_text(), flags=re.S))  # prose only
    for target in LINK.findall(text):
        if target.startswith(("http://", "https://", "mailto:", "data:")):
            continue
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        assert linked.exists(), f"{page.name}: {target}"
        if anchor and linked.suffix == ".md":
            assert anchor in anchors(linked.read_text()), f"{page.name}: {target}"


def test_no_page_names_the_address_that_never_existed():
    """The project has no public repository yet: an install line, a badge or a project URL naming
    the one that was invented (a GitHub organisation called ipython-cudatime) would send a newcomer
    nowhere."""
    pages = [*DOCS, ROOT / "pyproject.toml", *sorted((ROOT / "notebooks").glob("*.ipynb")),
             *sorted((ROOT / "notebooks" / "src").glob("*.py")), ROOT / "scripts" / "build-notebooks.py"]
    assert [page.name for page in pages if "ipython-cudatime/" in page.read_text()] == []


def test_the_readme_report_is_one_real_run_whose_lines_agree():
    """README's example report is a real run's (labelled as such), not numbers put together from several
    machines: its Wall time is its cold run's wall time, the counterfactual names the cold run's host time
    as the first, and the synchronized warm median is the warm line's median."""
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"^```\w*\n(.*?)^```$", readme, flags=re.S | re.M)
    report = next(block for block in blocks if "cold run :" in block)
    assert "real text report" in readme
    wall = re.search(r"^Wall time: (.+)$", report, re.M).group(1)
    cold_host, cold_wall = re.search(r"^cold run : \S+ \S+  \(host ([^,]+), wall ([^,)]+)", report, re.M).groups()
    assert cold_wall == wall
    assert f"({cold_host} the first time)" in report
    warm = re.search(r"^warm     : (\S+ \S+) median", report, re.M).group(1)
    assert f"The synchronized time is {warm} (warm median)." in report
    for invented in ("490 ms", "468 ms", "471 ms"):  # the old illustrative report's numbers, in no seed
        assert invented not in readme
