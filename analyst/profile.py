# The analyst's loader and profiler, run as one cell of the analysis's
# session (pandas 1.5, Python 3.11). main(config, namespace) loads each
# frame of config into namespace under its name (and df when config names
# one) and returns the profile as a JSON string; a file it cannot read
# gets a reason in its table's "error", never a traceback. The work is
# vectorised; inference runs on a sample and makes a full pass only over
# the columns the sample qualifies, reading dates and numbers written as
# text with textvalues.py (the module crucible_textvalues), the parser
# crucible_clean uses; each column is factorized once, and
# its missing, distinct and top values and its part of the duplicate
# rows' key all come from those codes. Bounds: a sniffing sample of
# SNIFF_BYTES (the encoding check reads the rest in blocks of
# BLOCK_BYTES), a first line of at most MAX_LINE_BYTES, at most
# MAX_COLUMNS columns, SAMPLE_ROWS sample rows, TOP_VALUES top values,
# strings cut to MAX_TEXT characters.
import codecs
import csv
import io
import itertools
import json
import math
import os
import re
import warnings

import crucible_textvalues as tv
import numpy as np
import pandas as pd

SNIFF_BYTES = 256 << 10
BLOCK_BYTES = 1 << 20
MAX_LINE_BYTES = 1 << 20
MAX_COLUMNS = 10_000
SAMPLE_ROWS = 5
TOP_VALUES = 5
LOW_CARDINALITY = 20
INFER_SAMPLE = 1000
MAX_TEXT = 80
DELIMITERS = [",", ";", "\t", "|"]


class Unreadable(Exception):
    """A dataset the profiler cannot read; the message is the reason."""


def cut(s):
    s = str(s)
    return s if len(s) <= MAX_TEXT else s[: MAX_TEXT - 1] + "…"


def num(x):
    """A finite float, or None (JSON has no NaN nor infinity)."""
    try:
        f = float(x)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


# Reading -----------------------------------------------------------------


def detect_format(path, head):
    ext = os.path.splitext(path)[1].lower()
    if ext == ".xls" or head.startswith(b"\xd0\xcf\x11\xe0"):
        raise Unreadable("an Excel 97-2003 (.xls) workbook, which is not supported: save it as .xlsx or CSV")
    if head.startswith(b"PK\x03\x04"):
        return "excel"
    if ext in (".jsonl", ".ndjson"):
        return "jsonl"
    if ext == ".json":
        return "json"
    if ext in (".tsv", ".tab"):
        return "tsv"
    stripped = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if stripped[:1] in (b"[", b"{"):
        first = stripped.split(b"\n", 1)[0].strip()
        if stripped[:1] == b"{" and first.endswith(b"}") and b"\n{" in stripped.replace(b"\r", b""):
            return "jsonl"
        return "json"
    return "csv"


def detect_encoding(path):
    """utf-8-sig for a UTF-8 BOM, utf-8 when every byte decodes, else
    cp1252 (latin-1 for the five bytes cp1252 leaves undefined). UTF-16
    and binary files are refused."""
    with open(path, "rb") as f:
        head = f.read(SNIFF_BYTES)
        if head.startswith((b"\xff\xfe", b"\xfe\xff")):
            raise Unreadable("UTF-16 text, which is not supported: save it as UTF-8")
        if b"\x00" in head:
            raise Unreadable("not a text file (it holds NUL bytes): expected CSV, TSV, JSON, JSON Lines or .xlsx")
        enc = "utf-8-sig" if head.startswith(b"\xef\xbb\xbf") else "utf-8"
        if decodes(head, f, enc):
            return enc
    with open(path, "rb") as f:
        data = f.read()
    if any(b in data for b in (b"\x81", b"\x8d", b"\x8f", b"\x90", b"\x9d")):
        return "latin-1"
    return "cp1252"


def decodes(head, f, encoding):
    """Whether head and the rest of f decode, read a block at a time; an
    ASCII block between whole characters needs no decoding."""
    dec = codecs.getincrementaldecoder(encoding)()
    block = head
    try:
        while block:
            if not block.isascii() or dec.getstate()[0]:
                dec.decode(block)
            block = f.read(BLOCK_BYTES)
        dec.decode(b"", final=True)
    except UnicodeDecodeError:
        return False
    return True


def sniff_text(path, encoding):
    with open(path, "rb") as f:
        raw = f.read(SNIFF_BYTES + 1)
    nl = raw.find(b"\n")
    if nl < 0 and len(raw) > MAX_LINE_BYTES:
        raise Unreadable("its first line is longer than %d bytes: not a table" % MAX_LINE_BYTES)
    if nl < 0 and len(raw) > SNIFF_BYTES:
        with open(path, "rb") as f:
            raw = f.read(MAX_LINE_BYTES + 1)
        if raw.find(b"\n") < 0 and len(raw) > MAX_LINE_BYTES:
            raise Unreadable("its first line is longer than %d bytes: not a table" % MAX_LINE_BYTES)
    if len(raw) > SNIFF_BYTES and b"\n" in raw:
        raw = raw[: raw.rfind(b"\n")]
    return raw.decode(encoding, errors="replace")


def sniff_delimiter(text, fmt):
    if fmt == "tsv":
        return "\t"
    best, best_score = ",", (-1.0, 0)
    for d in DELIMITERS:
        try:
            rows = [r for r in itertools.islice(csv.reader(io.StringIO(text, newline=None), delimiter=d), 60) if r][:50]
        except csv.Error:
            continue
        if len(rows) > 1:
            rows = rows[:-1]  # the last may be cut
        if not rows:
            continue
        counts = [len(r) for r in rows]
        mode = max(set(counts), key=counts.count)
        if mode < 2:
            continue
        score = (counts.count(mode) / len(counts), mode)
        if score > best_score:
            best, best_score = d, score
    return best


def sniff_decimal(text, delimiter):
    """',' when numbers in the sample are written 1.234,5 or 3,5 (only
    with a delimiter other than the comma), with '.' as thousands."""
    if delimiter == ",":
        return ".", None
    rows = itertools.islice(csv.reader(io.StringIO(text, newline=None), delimiter=delimiter), 1000)
    cells = [c.strip() for r in rows for c in r][:5000]
    comma = sum(1 for c in cells if re.match(r"^[+-]?\d+(\.\d{3})*,\d+$", c))
    dot = sum(1 for c in cells if re.match(r"^[+-]?\d+\.\d+$", c) and not re.match(r"^[+-]?\d{1,3}\.\d{3}$", c))
    if comma > dot:
        return ",", "."
    return ".", None


def read_csv(path, fmt, how):
    encoding = detect_encoding(path)
    text = sniff_text(path, encoding)
    if not text.strip():
        raise Unreadable("the file is empty")
    delimiter = sniff_delimiter(text, fmt)
    header = next(csv.reader(io.StringIO(text, newline=None), delimiter=delimiter), [])
    if len(header) > MAX_COLUMNS:
        raise Unreadable("it has %d columns, over the %d the profiler reads" % (len(header), MAX_COLUMNS))
    decimal, thousands = sniff_decimal(text, delimiter)
    how.update(encoding=encoding, delimiter=delimiter, decimal=decimal)
    if thousands:
        how["thousands"] = thousands
    try:
        return pd.read_csv(path, sep=delimiter, encoding=encoding, decimal=decimal, thousands=thousands,
                           low_memory=False, on_bad_lines="warn")
    except pd.errors.EmptyDataError:
        raise Unreadable("the file is empty")
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as e:
        raise Unreadable("not a readable %s file: %s" % ("TSV" if delimiter == "\t" else "CSV", cut(e)))


def read_json(path, fmt, how):
    encoding = detect_encoding(path)
    how["encoding"] = encoding
    with open(path, encoding=encoding) as f:
        text = f.read()
    if not text.strip():
        raise Unreadable("the file is empty")
    try:
        if fmt == "jsonl":
            records = [json.loads(line) for line in text.splitlines() if line.strip()]
        else:
            records = json.loads(text)
    except json.JSONDecodeError as e:
        raise Unreadable("not valid %s: %s" % ("JSON Lines" if fmt == "jsonl" else "JSON", e))
    if isinstance(records, dict):
        lists = [v for v in records.values() if isinstance(v, list)]
        if len(records) == 1 and lists:
            records = lists[0]  # {"data": [...]}
        elif all(isinstance(v, (list, dict)) for v in records.values()):
            return pd.DataFrame(records)  # columns
        else:
            records = [records]
    if not isinstance(records, list) or not records:
        raise Unreadable("JSON holding no records: expected a list of objects, or one object per line")
    if all(isinstance(r, dict) for r in records):
        return pd.json_normalize(records, max_level=1)
    return pd.DataFrame({"value": records})


def read_excel(path, sheets):
    try:
        return pd.read_excel(path, sheet_name=sheets, engine="openpyxl")
    except Exception as e:  # openpyxl raises many kinds for a broken file
        raise Unreadable("not a readable .xlsx workbook: %s" % cut(e))


# Counting ----------------------------------------------------------------


class Factorized:
    """A column's values, counted once: codes index uniques (-1 marks a
    missing value), counts[i] counts uniques[i], in order of first
    appearance. A column holding unhashable values (nested JSON) is
    counted as text."""

    def __init__(self, s):
        try:
            codes, uniques = pd.factorize(s)
        except TypeError:
            s = s.astype(str).where(s.notna())
            codes, uniques = pd.factorize(s)
        counts = np.bincount(codes + 1, minlength=len(uniques) + 1)
        self.s, self.codes, self.uniques = s, codes, uniques
        self.missing, self.counts = int(counts[0]), counts[1:]

    def top(self, n):
        """The n most frequent values and their counts, most frequent
        first, ties in order of first appearance (as nlargest keeps them)."""
        counts = self.counts
        if len(counts) > n:
            kth = np.partition(counts, len(counts) - n)[len(counts) - n]
            picked = np.flatnonzero(counts >= kth)
        else:
            picked = np.arange(len(counts))
        picked = picked[np.argsort(-counts[picked], kind="stable")[:n]]
        return zip(self.uniques.take(picked).tolist(), counts[picked].tolist())


class RowKey:
    """An exact key of each row over the columns folded into it: two rows
    have the same key if and only if they are equal in every such column
    (missing equal to missing). Each column's codes fold in mixed radix;
    the key is renumbered by factorizing it whenever the next column would
    overflow int64. No hashing of rows, so no collisions."""

    def __init__(self, rows):
        self.key, self.size, self.all_distinct = np.zeros(rows, dtype=np.int64), 1, rows < 2

    def fold(self, f):
        if self.all_distinct:
            return
        if f.missing <= 1 and len(f.uniques) + f.missing == len(self.key):  # a column of distinct values
            self.all_distinct = True
            return
        radix = len(f.uniques) + 1
        if self.size > (1 << 63) // radix:
            self.renumber()
            if self.all_distinct:
                return
        self.key = self.key * radix + (f.codes + 1)
        self.size *= radix

    def renumber(self):
        self.key, uniques = pd.factorize(self.key)
        self.size = len(uniques)
        self.all_distinct = self.size == len(self.key)

    def duplicates(self):
        """Rows equal to an earlier one."""
        if not self.all_distinct:
            self.renumber()
        return 0 if self.all_distinct else len(self.key) - self.size


# Inference ---------------------------------------------------------------


def sample_of(s):
    """Up to INFER_SAMPLE of s's values that are not missing, picked at
    random positions (a fixed seed) without a pass over s."""
    if len(s) <= 4 * INFER_SAMPLE:
        return s.dropna().head(INFER_SAMPLE)
    pos = np.random.default_rng(0).integers(0, len(s), 2 * INFER_SAMPLE)
    picked = s.iloc[np.unique(pos)].dropna()
    if len(picked) < INFER_SAMPLE // 10:  # mostly missing: look at all
        picked = s.dropna()
    return picked.head(INFER_SAMPLE)


def examples(values, counts, n=3):
    """The n most frequent of values (given their counts), quoted."""
    order = np.argsort(-np.asarray(counts), kind="stable")[:n]
    return ", ".join(repr(cut(values[i])) for i in order)


def text_to_number(s, sample, decimal=None):
    """(numbers, warnings) when at least textvalues.SHARE of s's values
    are numbers written in one form (textvalues.number_form, decided on
    the sample: thousands separators, a decimal comma, a percent sign or
    one currency), read by the parser crucible_clean uses; else (None,
    []). decimal is the file's decimal separator."""
    form = tv.number_form(sample.str.strip().tolist(), decimal=decimal)
    if form is None:
        return None, []
    f = Factorized(s)
    values = f.uniques.str.strip()
    nums = tv.parse_numbers(values, form)
    ok = ~np.isnan(nums)
    total = int(f.counts.sum())
    parsed = int(f.counts[ok].sum())
    if parsed < tv.SHARE * total:
        return None, []
    out = pd.Series(np.where(f.codes >= 0, nums[np.maximum(f.codes, 0)], np.nan), index=s.index, name=s.name)
    warns = []
    if form.kind == "percent":
        warns.append("numbers written as percentages: 5% is read as 5.0 (the unit is percent)")
    elif form.kind == "currency":
        warns.append("amounts in %s: the currency is dropped, the number kept" % form.unit)
    if parsed < total:
        warns.append("%d of %d values (%.1f%%) are numbers; the other %d are missing now, such as %s" % (
            parsed, total, 100 * parsed / total, total - parsed, examples(f.uniques[~ok], f.counts[~ok])))
    return out, warns


def text_to_date(s, sample, dayfirst_default=False):
    """(dates, parsed, total, not_dates) when at least 80% of the sampled
    values look like dates (textvalues.DATE), else None. Each distinct
    value is stripped and read on its own by textvalues.parse_dates, the
    parser crucible_clean uses (forms may mix in a column; day first or
    month first is decided for the whole column, dayfirst_default when
    its values do not tell: day first in a file written with a decimal
    comma). parsed counts the values that are dates, total those present;
    not_dates quotes the most frequent others."""
    if tv.looks_like_dates(sample.str.strip()).mean() < 0.8:
        return None
    f = Factorized(s)
    dates, _ = tv.parse_dates(f.uniques.str.strip(), None, dayfirst_default)
    ok = dates.notna()
    total, parsed = int(f.counts.sum()), int(f.counts[ok].sum())
    out = pd.Series(dates.take(f.codes, allow_fill=True, fill_value=pd.NaT), index=s.index, name=s.name)
    return out, parsed, total, examples(f.uniques[~ok], f.counts[~ok])


def infer(df, warns, decimal=None):
    """Converts text columns holding numbers or dates (at least
    textvalues.SHARE of their values present); returns the conversions
    made, by column. A column of likely dates too few of whose values
    parse is kept as text, with a warning; a converted column whose
    values did not all parse says how many became missing."""
    inferred = {}
    for col in df.columns[df.dtypes == object]:
        s = df[col]
        sample = sample_of(s)
        if not len(sample) or not sample.map(type).eq(str).all():
            continue
        out, w = text_to_number(s, sample, decimal)
        if out is not None:
            df[col], inferred[col] = out, "number from text"
            warns.setdefault(col, []).extend(w)
            continue
        got = text_to_date(s, sample, dayfirst_default=decimal == ",")
        if got is None:
            continue
        out, parsed, total, others = got
        share = "%d of %d values (%.1f%%) parse as dates" % (parsed, total, 100 * parsed / max(1, total))
        if parsed >= tv.SHARE * total:
            df[col], inferred[col] = out, "date from text"
            if parsed < total:
                warns.setdefault(col, []).append("%s; the other %d are missing now, such as %s" % (share, total - parsed, others))
        else:
            warns.setdefault(col, []).append("likely dates kept as text: %s; not dates: %s" % (share, others))
    return inferred


# Profile -----------------------------------------------------------------


def column_warnings(f, sample, rows):
    """The warnings of a column, given a sample of it and its counts: the
    checks over every value look at each distinct one once."""
    out = []
    distinct = len(f.uniques)
    if rows > 1 and distinct <= 1:
        out.append("constant column: one value" if distinct else "constant column: every value is missing")
    if f.s.dtype != object or not len(sample):
        return out
    kinds = sample.map(lambda v: type(v).__name__).value_counts()
    if len(kinds) > 1:
        out.append("mixed types: " + ", ".join("%s %d" % (k, n) for k, n in kinds.items()) + " in a sample")
    elif kinds.index[0] == "str":
        isnum = sample.str.strip().str.match(tv.PLAIN_NUMBER)
        if 0.05 <= isnum.mean() < 0.98:
            others = sample[~isnum].head(3).tolist()
            out.append("mixed types: %.0f%% numbers and text such as %s" % (100 * isnum.mean(), ", ".join(repr(cut(v)) for v in others)))
    values = f.uniques.to_numpy(dtype=object)
    spaced = np.fromiter((isinstance(v, str) and v != v.strip() for v in values), dtype=bool, count=len(values))
    n = int(f.counts[spaced].sum())
    if n:
        out.append("leading or trailing spaces in %d values" % n)
    return out


def summary(s):
    if pd.api.types.is_bool_dtype(s):
        return None
    if pd.api.types.is_numeric_dtype(s):
        d = s.describe()
        return {k: num(d.get(src)) for k, src in
                (("mean", "mean"), ("std", "std"), ("min", "min"), ("p25", "25%"), ("median", "50%"), ("p75", "75%"), ("max", "max"))}
    if pd.api.types.is_datetime64_any_dtype(s):
        v = s.dropna()
        if not len(v):
            return None
        return {"min_text": str(v.min()), "max_text": str(v.max())}
    return None


def shown(v):
    """A sample cell as text: "" for a missing value."""
    return "" if pd.api.types.is_scalar(v) and pd.isna(v) else cut(v)


def profile_frame(df, frame, fmt, how, warns_by_col, inferred):
    rows, ncols = df.shape
    table = {"name": frame["name"], "dataset": frame["dataset"], "format": fmt, "reading": how,
             "rows": int(rows), "columns": int(ncols), "memory_bytes": int(df.memory_usage(deep=False).sum())}
    cols = []
    key = RowKey(rows)
    for i, col in enumerate(df.columns):
        f = Factorized(df.iloc[:, i])
        key.fold(f)
        s, distinct = f.s, len(f.uniques)
        sample = sample_of(s) if s.dtype == object else s.iloc[:0]
        c = {"name": cut(col), "dtype": str(s.dtype), "missing": f.missing, "distinct": distinct}
        if col in inferred:
            c["inferred"] = inferred[col]
        st = summary(s)
        if st:
            c["summary"] = st
        if 0 < distinct <= LOW_CARDINALITY or (s.dtype == object and distinct):
            c["top"] = [{"value": cut(v), "count": n} for v, n in f.top(TOP_VALUES)]
        w = warns_by_col.get(col, []) + column_warnings(f, sample, rows)
        if w:
            c["warnings"] = w
        cols.append(c)
    table["column_profiles"] = cols
    head = df.head(SAMPLE_ROWS)
    table["sample"] = [[shown(v) for v in row] for row in head.itertuples(index=False, name=None)] if ncols else []
    warns = []
    dups = key.duplicates() if ncols else 0
    table["duplicate_rows"] = dups
    if dups:
        warns.append("%d duplicate rows" % dups)
    if rows == 0:
        warns.append("no rows: only a header")
    table["warnings"] = warns
    return table


def load(path, frames):
    """[(frame, DataFrame | None, format, how, error)] for one file."""
    how = {}
    try:
        if not os.path.getsize(path):
            raise Unreadable("the file is empty")
        with open(path, "rb") as f:
            head = f.read(SNIFF_BYTES)
        fmt = detect_format(path, head)
        if fmt == "excel":
            sheets = [f["sheet"] for f in frames if f.get("sheet")]
            if not sheets:
                raise Unreadable("a zip file that is not an .xlsx workbook")
            books = read_excel(path, sheets)
            return [(f, books[f["sheet"]], fmt, {"sheet": f["sheet"]}, None) for f in frames]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            df = read_json(path, fmt, how) if fmt in ("json", "jsonl") else read_csv(path, fmt, how)
        if df.shape[1] > MAX_COLUMNS:
            raise Unreadable("it has %d columns, over the %d the profiler reads" % (df.shape[1], MAX_COLUMNS))
        return [(frames[0], df, fmt, how, None)]
    except Unreadable as e:
        return [(f, None, "", how, "cannot be read: " + str(e)) for f in frames]
    except MemoryError:
        return [(f, None, "", how, "cannot be read: it does not fit in the session's memory") for f in frames]
    except (OSError, ValueError, csv.Error) as e:
        return [(f, None, "", how, "cannot be read: " + cut(e)) for f in frames]
    except Exception as e:  # a reader's failure this profiler did not foresee
        return [(f, None, "", how, "cannot be read: %s: %s" % (type(e).__name__, cut(e))) for f in frames]


def main(config, namespace):
    by_path = {}
    for f in config["frames"]:
        by_path.setdefault(f["path"], []).append(f)
    tables = []
    for path, frames in by_path.items():
        for frame, df, fmt, how, err in load(path, frames):
            if err:
                tables.append({"name": frame["name"], "dataset": frame["dataset"], "sheet": frame.get("sheet", ""),
                               "error": err, "rows": 0, "columns": 0})
                continue
            df.columns = [c if isinstance(c, str) else str(c) for c in df.columns]
            namespace[frame["name"]] = df
            try:
                warns_by_col = {}
                inferred = infer(df, warns_by_col, decimal=how.get("decimal"))
                table = profile_frame(df, frame, fmt, how, warns_by_col, inferred)
            except Exception as e:  # the DataFrame is loaded; only its profile failed
                table = {"name": frame["name"], "dataset": frame["dataset"], "format": fmt, "reading": how,
                         "rows": int(df.shape[0]), "columns": int(df.shape[1]),
                         "warnings": ["the profile failed: %s: %s" % (type(e).__name__, cut(e))]}
            table["sheet"] = frame.get("sheet", "")
            tables.append(table)
    profile = {"tables": tables}
    if config.get("df") and config["df"] in namespace:
        namespace["df"] = namespace[config["df"]]
        profile["df"] = config["df"]
    return json.dumps(profile, allow_nan=False, default=str)
