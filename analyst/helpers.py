"""The analyst's helpers, defined in an analysis's session before its
first question: show_table, which records a DataFrame for the user (as
HTML and as data), and crucible_clean, which normalises a dataset (trim
whitespace, numbers written with separators, percent signs or a currency,
dates, the case of categories; remove duplicates) into a cleaned file and
returns a summary of the changes. Dates and numbers are read by
textvalues.py (the module crucible_textvalues), the profile's parser.

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

import crucible_textvalues as tv
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

CATEGORIES = 50          # distinct spellings, case ignored, of a column whose case is unified
MAX_SPELLINGS = 20       # groups of spellings listed per column in the summary
MAX_REPORT_LINES = 40    # lines of the summary's text (str(summary))
MAX_LINE = 500           # characters of one of its lines
MAX_VALUE = 200          # characters of a value quoted in the summary


def _source(data):
    """(what was cleaned, its DataFrame as text where it came from a
    file, the file's decimal separator or None). data: a DataFrame, or the
    name of a loaded DataFrame, its dataset's file name or its path."""
    if isinstance(data, pd.DataFrame):
        return "DataFrame", data.copy(), None
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
    return frame["path"], df, reading.get("decimal")


def _texts(s):
    """The values of s that are text with more than spaces, as a Series."""
    return s[s.map(lambda v: isinstance(v, str) and v.strip() != "")]


def _trim(df, changed):
    for col in df.columns[df.dtypes == object]:
        s = df[col]
        stripped = s.map(lambda v: v.strip() if isinstance(v, str) else v)
        n = int((stripped != s).sum() - (stripped.isna() & s.isna()).sum())
        if n:
            df[col] = stripped
            changed[str(col)] = changed.get(str(col), 0) + n


def _changed(df, col, texts, new, changed):
    """Puts new (a Series over texts' index) in df[col]; counts the values
    that differ."""
    n = int((new != texts).sum())
    if n:
        df.loc[new.index, col] = new
        changed[str(col)] = changed.get(str(col), 0) + n
    return n


def _fail(df, warnings, col, texts, reason):
    for pos, value in zip(texts.index, texts):
        warnings.append({"row": int(df.index.get_loc(pos)) + 1, "column": str(col), "value": str(value)[:MAX_VALUE],
                         "reason": reason})


def _number_text(v):
    """A number as the cleaned file writes it: 1200 for 1200.0."""
    return "%d" % v if v.is_integer() and abs(v) < 1e15 else "%.15g" % v


def _numbers(df, col, decimal, changed, warnings):
    """Rewrites a column whose values are numbers written with thousands
    separators, a decimal comma, a percent sign or a currency (at least
    textvalues.SHARE of its values, in one form: textvalues.number_form)
    as plain numbers; a percentage keeps its number (5% is 5). Returns
    the column's report, or None when it is not such a column (plain
    numbers are left as written)."""
    texts = _texts(df[col])
    if not len(texts):
        return None
    stripped = texts.str.strip()
    counts = stripped.value_counts(sort=False)
    form = tv.number_form(counts.index.tolist(), counts.to_numpy(), decimal)
    if form is None:
        return None
    nums = tv.parse_numbers(counts.index.tolist(), form)
    ok = ~np.isnan(nums)
    plain = np.asarray(counts.index.str.match(tv.PLAIN_NUMBER), dtype=bool)
    if not (ok & ~plain).any():
        return None
    text_of = {v: _number_text(float(n)) for v, n, good in zip(counts.index, nums, ok) if good}
    good = stripped.isin(list(text_of))
    _changed(df, col, texts[good], stripped[good].map(text_of), changed)
    _fail(df, warnings, col, texts[~good], "not a number")
    kind = "thousands" if form.kind == "plain" else form.kind  # plain numbers alone were left as written
    return {"converted": int(good.sum()), "failed": int((~good).sum()), "kind": kind, "unit": form.unit}


def _date_columns(df, dates, skip):
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
        if str(col) in skip:
            continue
        values = pd.Series(pd.unique(_texts(df[col])), dtype=object)
        if len(values) and values.map(lambda v: tv.looks_like_date(v.strip())).mean() >= 0.5:
            found.append(col)
    return found


def _standardise(df, col, dayfirst, default_dayfirst, changed, warnings):
    """Rewrites a column's dates as ISO 8601, each value read on its own
    by textvalues.parse_dates (the profile's parser); a value that is not
    a date is kept, and warned about."""
    texts = _texts(df[col])
    distinct = pd.unique(texts)
    parsed, dayfirst = tv.parse_dates([v.strip() for v in distinct], dayfirst, default_dayfirst)
    ok = parsed.notna()
    stamps = parsed[ok]
    timed = bool(len(stamps)) and bool((stamps != stamps.normalize()).any())
    fmt = "%Y-%m-%d %H:%M:%S" if timed else "%Y-%m-%d"
    if timed and parsed.tz is not None:
        fmt += "%z"
    text_of = dict(zip(distinct[ok], stamps.strftime(fmt)))
    good = texts.isin(list(text_of))
    _changed(df, col, texts[good], texts[good].map(text_of), changed)
    failed = texts[~good]
    _fail(df, warnings, col, failed, "not a date")
    return {"parsed": int(good.sum()), "failed": int(len(failed)),
            "rate": round(int(good.sum()) / len(texts), 4) if len(texts) else 1.0,
            "format": fmt, "dayfirst": bool(dayfirst)}


def _unify_case(df, col, changed):
    """Writes each value of a categorical text column in the most frequent
    of its spellings that differ only in case and surrounding spaces
    (ties: the first in the column). A column is categorical when, case
    and spaces ignored, it has at most CATEGORIES distinct values and
    holds each at least twice on average. Returns the report, or None
    when nothing changed."""
    texts = _texts(df[col])
    if not len(texts):
        return None
    keys = texts.map(lambda v: v.strip().casefold())
    n_keys = keys.nunique()
    if n_keys > CATEGORIES or 2 * n_keys > len(texts):
        return None
    counts = pd.DataFrame({"key": keys, "text": texts}).groupby(["key", "text"], sort=False).size()
    spelling, variants = {}, {}
    for key, group in counts.groupby(level=0, sort=False):
        if len(group) < 2:
            continue
        best = group.idxmax()[1]  # the first of the most frequent, in the order they appear
        spelling[key] = best
        variants[best] = [t for _, t in group.index if t != best]
    if not spelling:
        return None
    todo = keys.isin(spelling.keys())
    n = _changed(df, col, texts[todo], keys[todo].map(spelling), changed)
    listed = itertools.islice(variants.items(), MAX_SPELLINGS)
    return {"changed": n, "groups": len(variants),
            "spellings": {k[:MAX_VALUE]: [v[:MAX_VALUE] for v in vs[:MAX_SPELLINGS]] for k, vs in listed}}


class CleanSummary(dict):
    """crucible_clean's summary: a dict of the changes (json.dumps it for
    them all), which prints as a short report (at most MAX_REPORT_LINES
    lines, every count included)."""

    def __str__(self):
        lines = ["cleaned %s -> %s: %d rows in, %d out, %d duplicates removed"
                 % (self["source"], self["output"], self["rows_in"], self["rows_out"], self["duplicates_removed"])]
        if self["changed"]:
            lines.append("values changed: " + ", ".join("%s %d" % kv for kv in sorted(self["changed"].items())))
        for col, d in self["dates"].items():
            lines.append("dates %s: %d parsed, %d not dates (%.1f%% parsed), written %s, %s first"
                         % (col, d["parsed"], d["failed"], 100 * d["rate"], d["format"], "day" if d["dayfirst"] else "month"))
        for col, d in self["numbers"].items():
            unit = {"percent": " (percent: 5% is written 5)", "currency": " (currency %s, dropped)" % d["unit"]}.get(d["kind"], "")
            lines.append("numbers %s: %d converted from %s text%s, %d not numbers" % (col, d["converted"], d["kind"], unit, d["failed"]))
        for col, d in self["case"].items():
            pairs = "; ".join("%s <- %s" % (k, ", ".join(map(repr, v))) for k, v in d["spellings"].items())
            lines.append("case %s: %d values rewritten, %d groups: %s" % (col, d["changed"], d["groups"], pairs))
        if len(lines) > MAX_REPORT_LINES - 1:
            more = len(lines) - (MAX_REPORT_LINES - 2)
            lines = lines[:MAX_REPORT_LINES - 2] + ["... %d more lines: the summary's dates, numbers and case hold every column" % more]
        lines = [line if len(line) <= MAX_LINE else line[:MAX_LINE - 3] + "..." for line in lines]
        room = MAX_REPORT_LINES - len(lines) - 1
        for w in self["warnings"][:max(0, room)]:
            lines.append("warning: row %d, %s: %r %s" % (w["row"], w["column"], w["value"][:80], w["reason"]))
        if self["warnings_total"] > max(0, room):
            lines.append("... %d warnings in all (summary['warnings'] lists the first %d)" % (self["warnings_total"], MAX_WARNINGS))
        return "\n".join(lines)

    __repr__ = __str__


def crucible_clean(data, trim=True, dates="auto", dedupe=True, out="cleaned.csv", dayfirst=None, numbers=True, case=True):
    """Normalise a dataset and write it to out (CSV, no index).

    data is the name of a loaded DataFrame (or its file's name or path:
    a CSV is read again as text, so nothing is lost to type inference),
    or a DataFrame. In order:
    - trim strips leading and trailing whitespace from text values;
    - numbers rewrites the text columns whose values are (at least 95%)
      numbers written with thousands separators, a decimal comma, a
      percent sign or one currency as plain numbers: "30,849.83" is
      30849.83, "$1,200" is 1200, and "5%" is 5 (the number as written:
      the unit stays percent, and the summary names it);
    - dates standardises dates to ISO 8601 ("auto": the text columns where
      most distinct values look like dates; or a column name or a list),
      each value read on its own (2024-02-23, 14/06/2024 and Aug 20, 2024
      may mix): the parser the profile uses; dayfirst reads 03/04/2024 as
      3 April (None: decided for the column from its values, else day
      first in a file read with a decimal comma);
    - case writes the values of a categorical text column (at most 50
      distinct values once case and spaces are ignored, each held twice
      on average) that differ only in case in the most frequent of their
      spellings: North, north and NORTH become North when North is the
      most frequent;
    - dedupe removes rows equal to an earlier one.
    A value that is not a date in a date column, or not a number in a
    number column, is kept as it was, and warned about with its row (1 is
    the first data row).

    Returns the summary, a dict that prints as a short report: source,
    output, rows_in, rows_out, duplicates_removed, changed (values changed
    per column), dates (per date column: parsed, failed, rate, format,
    dayfirst), numbers (per number column: converted, failed, kind:
    "thousands", "decimal comma", "percent" or "currency"; and unit: "%",
    the currency or ""), case (per column: changed, groups, and
    spellings: each kept spelling and those it replaced, at most 20),
    warnings (at most 1000) and warnings_total.
    """
    out = str(out)
    if os.path.normpath(out).split(os.sep)[0] == "data":
        raise ValueError("out must not be under data/: the datasets there are read-only")
    source, df, decimal = _source(data)
    df = df.reset_index(drop=True)
    rows_in = int(len(df))
    changed, warnings, date_stats, number_stats, case_stats = {}, [], {}, {}, {}
    if trim:
        _trim(df, changed)
    if numbers:
        for col in df.columns[df.dtypes == object]:
            got = _numbers(df, col, decimal, changed, warnings)
            if got:
                number_stats[str(col)] = got
    for col in _date_columns(df, dates, skip=number_stats):
        date_stats[str(col)] = _standardise(df, col, dayfirst, decimal == ",", changed, warnings)
    if case:
        for col in df.columns[df.dtypes == object]:
            if str(col) in number_stats or str(col) in date_stats:
                continue
            got = _unify_case(df, col, changed)
            if got:
                case_stats[str(col)] = got
    removed = 0
    if dedupe:
        dup = df.duplicated(keep="first")
        removed = int(dup.sum())
        df = df[~dup]
    folder = os.path.dirname(out)
    if folder:
        os.makedirs(folder, exist_ok=True)
    df.to_csv(out, index=False)
    summary = CleanSummary({
        "source": source, "output": out, "rows_in": rows_in, "rows_out": int(len(df)),
        "duplicates_removed": removed, "changed": changed, "dates": date_stats, "numbers": number_stats,
        "case": case_stats, "warnings": warnings[:MAX_WARNINGS], "warnings_total": len(warnings),
    })
    _record("cleaning", summary)
    return summary
