"""Results that outlive the kernel: ``--save FILE`` appends them to a JSON Lines file, and
``%cudatime_compare --load FILE`` reads them back beside the live ones.

One line per result, or per sweep point: a JSON object, the point's ``to_dict()`` plus
``"format": "ipython_cudatime"`` (a line without it is foreign) and ``"schema": SCHEMA``.
Appending never rewrites what is there, so two machines' files can simply be concatenated.
A line that cannot be read is reported by file and line number and skipped; a file written
by a newer schema is refused whole, since its lines may mean something this version cannot tell.
"""

import json
import os

from .compare import Point, Results

FORMAT = "ipython_cudatime"
SCHEMA = 1  # raise it when a field changes meaning or goes; adding a field keeps it


def save(points, path):
    """Append one line per point to ``path`` (created if missing)."""
    lines = [json.dumps({"format": FORMAT, "schema": SCHEMA, **point.to_dict()}, ensure_ascii=False)
             for point in points]
    with open(os.path.expanduser(path), "a", encoding="utf-8") as file:
        file.writelines(line + "\n" for line in lines)


def _object(text):
    """A line as our JSON object, or the reason it is not one."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        return None, f"not JSON ({exc})"
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return None, f"not a line --save wrote (no \"format\": \"{FORMAT}\")"
    if not isinstance(data.get("schema"), int):
        return None, "no schema version"
    return data, None


def _point(data):
    """The point on a line, or the reason it could not be rebuilt."""
    try:
        return Point.from_dict(data), None
    except (KeyError, TypeError, ValueError, SyntaxError, AttributeError) as exc:
        return None, f"a {FORMAT} line with missing or unexpected fields ({type(exc).__name__}: {exc})"


def _read(path, problems):
    """The points of one file; bad lines are added to ``problems``, and a newer file's lines all are."""
    try:
        with open(os.path.expanduser(path), encoding="utf-8") as file:
            lines = file.read().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        problems.append(f"{path}: cannot read it ({exc})")
        return []
    points, newest = [], 0
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        data, why = _object(text)
        if data is not None:
            newest = max(newest, data["schema"])
            point, why = _point(data) if data["schema"] <= SCHEMA else (None, None)
            points += [point] if point is not None else []
        if why:
            problems.append(f"{path}, line {number}: {why}; skipped")
    if newest > SCHEMA:
        problems.append(f"{path}: written with schema {newest}, newer than this ipython_cudatime reads "
                        f"({SCHEMA}); not loaded: upgrade ipython_cudatime to read it")
        return []
    return points


def load(paths):
    """(Results of every good line of ``paths``, in order; one message per line or file that did not
    load: the lines around a bad one still do)."""
    problems = []
    points = []
    for path in paths:
        points += _read(path, problems)
    return Results(points), problems
