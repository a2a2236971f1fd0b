"""The parts of a text report that a test reads, so that no test counts lines: a sentence that a
busy machine adds under a table (a noise cause) is then never taken for one of its rows."""

import re


def table(text):
    """The table at the top of a comparison's or a sweep's text report: (header cells, rows), each
    row a list of its cells. The table's columns are padded and joined by two spaces; a row is a
    line that reaches the second column with those two spaces at every column's start, and the
    table ends at the first line that is not one (the sentences under it: each row against the
    first, the noise causes, the check)."""
    header, *lines = text.splitlines()
    starts = [match.start() for match in re.finditer(r"(?:^|(?<=  ))\S", header)]
    rows = []
    for line in lines:
        reached = [start for start in starts[1:] if start < len(line)]
        if not reached or any(line[start - 2:start] != "  " for start in reached):
            break
        rows.append([line[start:end].strip() for start, end in zip(starts, [*starts[1:], None])])
    return [cell.strip() for cell in re.split(r"  +", header.strip())], rows
