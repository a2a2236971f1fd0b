"""Stored expected text, kept as torch's ``expecttest`` keeps it: a report is compared with
``tests/expected/NAME.txt``; ``make expected`` (``EXPECTTEST_ACCEPT=1 pytest ...``) rewrites
the files from what the code prints now, and the change shows as a diff in review."""

import difflib
import os
import pathlib

import pytest

FOLDER = pathlib.Path(__file__).parent / "expected"


def assert_expected(text, name, suffix=".txt"):
    """``text`` must equal the stored ``NAME.txt`` (or ``NAME`` + ``suffix``), or is stored when
    EXPECTTEST_ACCEPT=1."""
    path = FOLDER / f"{name}{suffix}"
    if os.environ.get("EXPECTTEST_ACCEPT") == "1":
        path.write_text(text + "\n", encoding="utf-8")
        return
    if not path.exists():
        pytest.fail(f"no stored text {path.name}: `make expected` writes it", pytrace=False)
    stored = path.read_text(encoding="utf-8").rstrip("\n")
    if text != stored:
        diff = difflib.unified_diff(stored.splitlines(), text.splitlines(), "stored", "now", lineterm="")
        pytest.fail(f"{path.name} differs (`make expected` if the change is meant):\n" + "\n".join(diff),
                    pytrace=False)
