"""What keeps an explanation from sinking a measurement: a probe, cause, counter or view that raises
becomes one line saying what was not read and why, and the timed numbers stand.

The cell's own exceptions are never caught here: they are the user's traceback.
"""

from __future__ import annotations

MESSAGE_LIMIT = 160  # characters of the exception's message kept in the line


def failure_text(error: BaseException) -> str:
    """``RuntimeError: PyTorch is checking …``: the exception's type and the first line of its
    message, shortened, so that the report stays one line per failure (torch's messages run to
    several sentences and a URL)."""
    try:
        lines = str(error).strip().splitlines()
    except Exception:  # an exception that cannot be printed still has a type
        lines = []
    message = lines[0] if lines else ""
    if len(message) > MESSAGE_LIMIT:
        message = message[:MESSAGE_LIMIT - 1].rstrip() + "…"
    return type(error).__name__ + (f": {message}" if message else "")


def failure_line(what: str, error: BaseException) -> str:
    """``roofline not recorded: RuntimeError: …``: what failed, then why (``failure_text``)."""
    return f"{what}: {failure_text(error)}"
