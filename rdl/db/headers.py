"""The header row a person wrote (a CSV file's first line, a sheet's first
row, or the first below a title) and column names from it: unique, none
empty, and a report for each one changed; and the notes below a table's data."""
from __future__ import annotations

from collections.abc import Sequence

from rdl.db.issues import DataIssue


def unique_column_names(header: list[str]) -> list[str]:
    """The header's names without the spaces around them (``id, amount``),
    an empty one as ``column_<n>`` and a repeated one as ``<name>_2``,
    ``<name>_3``, ... (never a name the header holds)."""
    typed = [name.strip() for name in header]
    names: list[str] = []
    for i, name in enumerate(typed):
        base = name or f"column_{i + 1}"
        candidate, k = base, 1
        while candidate in names or (candidate != name and candidate in typed):
            k += 1
            candidate = f"{base}_{k}"
        names.append(candidate)
    return names


def header_issues(table: str, header: list[str], names: list[str], where: str) -> list[DataIssue]:
    """A report per header name given twice or left empty (a delimiter at the
    end of every line, a blank cell), which would otherwise hide a column;
    ``where`` names the file (or sheet) in the message."""
    issues = []
    for i, (written, read_as) in enumerate(zip(header, names)):
        written = written.strip()  # spaces around a name are how it was typed
        if written == read_as:
            continue
        why = (f"column {i + 1} has no name in the header" if not written else
               f"the header names {written!r} again in column {i + 1}")
        issues.append(DataIssue("csv_header", table, read_as, 0, f"read as {read_as!r}",
                                f"{why} of {where}"))
    return issues


def header_row(filled: Sequence[int]) -> int:
    """Which of a table's first rows is its header, given how many cells each
    fills: the first to fill more than half of the widest row's cells, so
    that a title above it ("Table 4: Sales by region", or "Sales, by region"
    split by its comma) or a blank line is not taken for the header."""
    width = max(filled, default=0)
    need = width // 2 + 1
    return next((i for i, count in enumerate(filled) if count >= need), 0)


def notes_start(filled: Sequence[int]) -> int | None:
    """Which of a table's rows (header first), given how many cells each
    fills, begins its notes ("Source: ONS"): rows of at most one cell at the
    end, set apart from the data by a blank row and not all blank; ``None``
    where there are none."""
    end = next((i + 1 for i in range(len(filled) - 1, -1, -1) if filled[i] > 1), 0)
    below = filled[end:]
    if not end or not below or below[0] != 0 or not any(below):
        return None
    return end


def around_table_issues(table: str, kind: str, titles: list[str], notes: list[str],
                        where: str, unit: str) -> list[DataIssue]:
    """A report each for the lines of title above a table's header and of
    notes below its data that were not read as rows (``kind`` ``csv`` or
    ``sheet``; ``unit`` ``fields`` or ``cells``), with the first one's text."""
    return [DataIssue(f"{kind}_{what}", table, None, len(lines), "not read as rows",
                      f"{len(lines)} line(s) {place} of {where} fill too few {unit} to be rows "
                      f"(first: {lines[0][:60]!r})")
            for what, lines, place in (("title", titles, "above the header"),
                                       ("notes", notes, "below the data")) if lines]
