"""The analyst's helpers, defined in an analysis's session before its
first question: show_table, which records a DataFrame for the user (as
HTML and as data), and crucible_clean, which normalises a dataset (trim
whitespace, standardise dates, remove duplicates) into a cleaned file and
returns a summary of the changes.

What they record for the host is written as JSON files under .crucible/
in the working directory, one per call: they come back as the cell's
artifacts, which the host reads (bounded, as anything the sandbox wrote)
and keeps out of the user's files.

This module runs inside the sandbox, as the model's code does: it is a
convenience, not a security boundary.
"""

import difflib
import itertools
import json
import math
import os
import re

import numpy as np
import pandas as pd

RECORDS = ".crucible"
MAX_ROWS = 200          # rows of a table kept as data and HTML
MAX_COLUMNS = 100       # columns of a table kept
MAX_CELL = 1000         # characters of one cell kept
MAX_WARNINGS = 1000     # warnings listed by crucible_clean (all are counted)

_seq = itertools.count(1)
FRAMES = {}  # DataFrame name -> its frame (path, sheet, format, reading)


def setup(config):
    """Learn the analysis's frames: name, path, sheet, format, reading."""
    for f in config.get("frames", []):
        FRAMES[f["name"]] = f


def _record(kind, record):
    """Write record as .crucible/<kind>/<n>.json; return its path."""
    folder = os.path.join(RECORDS, kind)
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "%d.json" % next(_seq))
    with open(path, "w", encoding="utf-8") as f:
        json.dump(record, f, allow_nan=False, ensure_ascii=False)
    return path


def _cell(v):
    """A table cell as a JSON value: numbers and booleans as such,
    missing values as null, anything else as text."""
    if v is None or v is pd.NaT:
        return None
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        f = float(v)
        if math.isnan(f):
            return None
        return f if math.isfinite(f) else str(f)
    if isinstance(v, pd.Timestamp):
        return v.isoformat()
    text = v if isinstance(v, str) else str(v)
    return text[:MAX_CELL]


def _label(c):
    if isinstance(c, tuple):
        return " / ".join(str(x) for x in c)
    return str(c)


def show_table(frame, name=None):
    """Show frame (a DataFrame or a Series) to the user as a table named
    name: its first 200 rows and 100 columns, as HTML and as data."""
    if isinstance(frame, pd.Series):
        frame = frame.to_frame()
    if not isinstance(frame, pd.DataFrame):
        raise TypeError("show_table needs a DataFrame or a Series, got %s" % type(frame).__name__)
    head = frame.iloc[:MAX_ROWS, :MAX_COLUMNS]
    html = head.to_html(max_rows=MAX_ROWS, max_cols=MAX_COLUMNS)
    data = head
    if not isinstance(head.index, pd.RangeIndex) or head.index.name is not None:
        data = head.reset_index()  # a meaningful index is a column of the data
    rows = [[_cell(v) for v in row] for row in data.itertuples(index=False, name=None)]
    _record("tables", {
        "name": "" if name is None else str(name)[:200],
        "columns": [_label(c) for c in data.columns],
        "rows": rows,
        "total_rows": int(frame.shape[0]),
        "total_columns": int(frame.shape[1]),
        "html": html,
    })


def value_table(value):
    """Record a cell's last value as a table when it is a DataFrame."""
    if isinstance(value, pd.DataFrame):
        show_table(value)


# Cleaning -------------------------------------------------------------------

_DATE_LIKE = re.compile(
    r"^\s*(\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{1,2}[-/.]\d{1,2}[-/.]\d{2,4}"
    r"|\d{1,2}\s+[A-Za-z]{3,9}\.?,?\s+\d{2,4}|[A-Za-z]{3,9}\.?\s+\d{1,2},?\s+\d{2,4})"
    r"([ T]\d{1,2}:\d{2}(:\d{2})?)?\s*$")
_ISO = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_DAY_FIRST = re.compile(r"^\s*(\d{1,2})[-/.](\d{1,2})[-/.]\d{2,4}")


def _source(data):
    """(what was cleaned, its DataFrame as text where it came from a
    file). data: a DataFrame, or the name of a loaded DataFrame, its
    dataset's file name or its path."""
    if isinstance(data, pd.DataFrame):
        return "DataFrame", data.copy()
    if not isinstance(data, str):
        raise TypeError("crucible_clean needs a DataFrame or the name of one, got %s" % type(data).__name__)
    frame = FRAMES.get(data) or next((f for f in FRAMES.values() if data in (f["path"], f["dataset"])), None)
    if frame is None:
        known = list(dict.fromkeys(n for f in FRAMES.values() for n in (f["name"], f["dataset"])))
        near = difflib.get_close_matches(data, known, n=3, cutoff=0.6)
        hint = " (did you mean %s?)" % " or ".join(repr(n) for n in near) if near else ""
        raise ValueError("no dataset %r%s: the DataFrames are %s" % (data, hint, ", ".join(sorted(FRAMES)) or "none"))
    reading = frame.get("reading") or {}
    if frame.get("format") in ("csv", "tsv"):
        # Read again as text, so that nothing inference converted is lost.
        df = pd.read_csv(frame["path"], sep=reading.get("delimiter", ","), encoding=reading.get("encoding", "utf-8"),
                         dtype=str, keep_default_na=False, na_values=[], low_memory=False)
    elif frame.get("format") == "excel":
        df = pd.read_excel(frame["path"], sheet_name=frame.get("sheet") or 0, dtype=str, engine="openpyxl")
    else:
        df = pd.read_json(frame["path"], lines=frame.get("format") == "jsonl", dtype=False)
    return frame["path"], df


def _trim(df, changed):
    for col in df.columns[df.dtypes == object]:
        s = df[col]
        stripped = s.map(lambda v: v.strip() if isinstance(v, str) else v)
        n = int((stripped != s).sum() - (stripped.isna() & s.isna()).sum())
        if n:
            df[col] = stripped
            changed[str(col)] = changed.get(str(col), 0) + n


def _date_columns(df, dates):
    if dates in (None, False):
        return []
    if dates != "auto":
        cols = [dates] if isinstance(dates, str) else list(dates)
        missing = [c for c in cols if c not in df.columns]
        if missing:
            raise ValueError("no column %s; the columns are %s" % (", ".join(map(repr, missing)), list(df.columns)))
        return cols
    found = []
    for col in df.columns[df.dtypes == object]:
        values = pd.Series(pd.unique(df[col].dropna()))
        values = values[values.map(lambda v: isinstance(v, str) and v.strip() != "")]
        if len(values) and values.map(lambda v: bool(_DATE_LIKE.match(v))).mean() >= 0.5:
            found.append(col)
    return found


def _parse_dates(values, dayfirst):
    """{value: Timestamp or None} for distinct texts."""
    out = {}
    for v in values:
        text = v.strip()
        if not _DATE_LIKE.match(text):
            out[v] = None
            continue
        try:
            if _ISO.match(text):
                out[v] = pd.Timestamp(text)
            else:
                out[v] = pd.to_datetime(text, dayfirst=dayfirst)
        except (ValueError, OverflowError, TypeError):
            out[v] = None
    return out


def _standardise(df, col, dayfirst, changed, warnings):
    s = df[col]
    present = s.map(lambda v: isinstance(v, str) and v.strip() != "")
    texts = s[present]
    if dayfirst is None:
        firsts = texts.str.extract(_DAY_FIRST, expand=True).dropna().astype(int)
        dayfirst = bool(len(firsts)) and bool((firsts[0] > 12).any()) and not bool((firsts[1] > 12).any())
    parsed = _parse_dates(pd.unique(texts), dayfirst)
    stamps = [t for t in parsed.values() if t is not None]
    timed = any(t != t.normalize() for t in stamps)
    fmt = "%Y-%m-%d %H:%M:%S" if timed else "%Y-%m-%d"
    text_of = {v: (t.strftime(fmt) if t is not None else v) for v, t in parsed.items()}
    new = s.where(~present, texts.map(text_of))
    n = int((new[present] != s[present]).sum())
    if n:
        changed[str(col)] = changed.get(str(col), 0) + n
    df[col] = new
    failed = texts[texts.map(lambda v: parsed[v] is None)]
    for pos, value in zip(failed.index, failed):
        warnings.append({"row": int(df.index.get_loc(pos)) + 1, "column": str(col), "value": str(value)[:200],
                         "reason": "not a date"})
    return {"parsed": int(len(texts) - len(failed)), "failed": int(len(failed)),
            "rate": round((len(texts) - len(failed)) / len(texts), 4) if len(texts) else 1.0,
            "format": fmt, "dayfirst": dayfirst}


def crucible_clean(data, trim=True, dates="auto", dedupe=True, out="cleaned.csv", dayfirst=None):
    """Normalise a dataset and write it to out (CSV, no index).

    data is the name of a loaded DataFrame (or its file's name or path:
    a CSV is read again as text, so nothing is lost to type inference),
    or a DataFrame. trim strips leading and trailing whitespace from text
    values; dates standardises dates to ISO 8601 ("auto": the text columns
    where most values look like dates; or a column name or a list);
    dayfirst reads 03/04/2024 as 3 April (None: guessed from the values);
    dedupe removes rows equal to an earlier one, after trimming and
    standardising. A value in a date column that is not a date is kept as
    it was, and warned about with its row (1 is the first data row).

    Returns the summary: source, output, rows_in, rows_out,
    duplicates_removed, changed (values changed per column), dates (per
    date column: parsed, failed, rate), warnings (at most 1000) and
    warnings_total.
    """
    out = str(out)
    if os.path.normpath(out).split(os.sep)[0] == "data":
        raise ValueError("out must not be under data/: the datasets there are read-only")
    source, df = _source(data)
    df = df.reset_index(drop=True)
    rows_in = int(len(df))
    changed, warnings, date_stats = {}, [], {}
    if trim:
        _trim(df, changed)
    for col in _date_columns(df, dates):
        date_stats[str(col)] = _standardise(df, col, dayfirst, changed, warnings)
    removed = 0
    if dedupe:
        dup = df.duplicated(keep="first")
        removed = int(dup.sum())
        df = df[~dup]
    folder = os.path.dirname(out)
    if folder:
        os.makedirs(folder, exist_ok=True)
    df.to_csv(out, index=False)
    summary = {
        "source": source, "output": out, "rows_in": rows_in, "rows_out": int(len(df)),
        "duplicates_removed": removed, "changed": changed, "dates": date_stats,
        "warnings": warnings[:MAX_WARNINGS], "warnings_total": len(warnings),
    }
    _record("cleaning", summary)
    return summary
