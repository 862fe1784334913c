"""Dates and numbers written as text: the one parser of the analyst's
profile (profile.py) and of its crucible_clean helper (helpers.py), so
that both agree on which values are dates or numbers, and what they are.
It is shipped into the sandbox as the module crucible_textvalues, made
before either of them (textvalues.go). pandas 1.5, Python 3.11.

Dates. Each value is recognised on its own, whichever of these forms it
takes (a column may mix them):
- ISO 8601 year-month-day, with -, / or . between the parts, an optional
  time after T or a space (seconds and their fraction optional), and an
  optional zone (Z or an offset);
- day/month/year or month/day/year in numbers, with /, - or . and a year
  of 2 or 4 digits (2 digits: 00-68 is 20xx, 69-99 is 19xx, as strptime);
- dates with English month names, in full or abbreviated, in any case:
  Aug 20, 2024; August 20 2024; 20 Aug 2024; 20-Aug-2024; 20-Aug-24;
  1999-Feb-05; an era A.D. before them is dropped;
and the last two with an optional time, 24-hour or with AM/PM. Whether
03/04/2024 is 3 April or March 4 is decided once per column, not per
value (dayfirst_of). Anything else is not a date, nor is a date that does
not exist (2024-02-30). A value with a zone is converted to UTC; a
column's dates keep their zone when every one has the same, else are all
in UTC (a value without a zone taken as UTC); a column with no zone stays
without.

Numbers. A column's form is decided from its values (number_form): plain
(1234.5, 1e3), with thousands separators (30,849.83; or 30.849,83 with a
decimal comma), and, as one unit for the whole column, a percentage (5%,
kept as 5.0: the number as written, in percent) or one currency (a
symbol such as $ or a three-letter code such as EUR, before or after the
number: $1,200.50 is 1200.5); a minus sign or accounting parentheses make
it negative; a value without the unit is a number in it. parse_numbers
then reads each value in that form; a value in another form, or with
another unit, is not a number of the column. Text over MAX_CHARS
characters is neither a date nor a number.

The work is vectorised where pandas can; a per-value loop runs only over
distinct values, and only those the fast path did not settle.
"""

import re
import warnings

import numpy as np
import pandas as pd

# SHARE is the share of a column's values present that must parse for the
# column to count as dates or numbers, in the profile and in
# crucible_clean alike.
SHARE = 0.95
# MAX_CHARS bounds the text read as a date or a number: a longer value is
# neither, and no pattern ever sees it (some backtrack in time that grows
# faster than the text: a cell of 5,000 digits took seconds).
MAX_CHARS = 64

_TIME = r"(?:[ T]\d{1,2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?)"
_ISO_BODY = r"\d{4}[-/.]\d{1,2}[-/.]\d{1,2}" + _TIME + r"?(?:\s?(?:Z|[+-]\d{2}(?::?\d{2})?))?"
_MONTH = r"[A-Za-z]{3,9}\.?"
_REST_BODY = (
    r"(?:(?:A\.?D\.?\s*)?(?:\d{1,2}[-/.]\d{1,2}[-/.](?:\d{4}|\d{2})"
    r"|" + _MONTH + r"\s+\d{1,2},?\s+\d{4}"
    r"|\d{1,2}[\s-]+" + _MONTH + r",?[\s-]+(?:\d{4}|\d{2})"
    r"|\d{4}[-\s]" + _MONTH + r"[-\s]\d{1,2})"
    r"(?:(?:\s+|T)\d{1,2}(?::\d{2}(?::\d{2}(?:\.\d{1,9})?)?)?(?:\s*[AaPp]\.?[Mm]\.?)?)?)"
)
# ISO matches a value of the ISO form; DATE one of any form parse_dates
# reads (a value it matches may still not exist, such as 2024-02-30).
ISO = re.compile(r"^" + _ISO_BODY + r"$")
DATE = re.compile(r"^(?:" + _ISO_BODY + "|" + _REST_BODY + r")$")
_REST = re.compile(r"^" + _REST_BODY + r"$")

_SPACES = re.compile(r"\s+")
_ERA = re.compile(r"^A\.?D\.?\s*")
_NUMERIC = re.compile(r"^(\d{1,2})[-.](\d{1,2})[-.](\d{4}|\d{2})\b")
_WORD_DOT = re.compile(r"\b([A-Za-z]{3,9})\.")
_SEPT = re.compile(r"\bsept\b", re.IGNORECASE)
_AMPM = re.compile(r"\s*([AaPp])\.?[Mm]\.?$")
_T = re.compile(r"(\d)T(\d)")
_DAY_MONTH = re.compile(r"^(\d{1,2})/(\d{1,2})/\d{2,4}\b")

_DATE_FORMATS = ["%b %d %Y", "%B %d %Y", "%d %b %Y", "%d %B %Y", "%d-%b-%Y", "%d-%B-%Y", "%d-%b-%y",
                 "%d-%B-%y", "%Y-%b-%d", "%Y-%B-%d", "%Y %b %d", "%Y %B %d"]
_TIME_FORMATS = ["", " %H:%M", " %H:%M:%S", " %H:%M:%S.%f", " %I:%M %p", " %I:%M:%S %p", " %I %p"]


def looks_like_date(text):
    """Whether text (stripped) has one of the forms parse_dates reads."""
    return isinstance(text, str) and len(text) <= MAX_CHARS and DATE.match(text) is not None


def looks_like_dates(texts):
    """looks_like_date of each of texts, as an array of booleans."""
    return _matches(texts, DATE)


def _matches(texts, pattern):
    """Whether pattern matches each of texts (strings of at most
    MAX_CHARS; anything else does not match), as an array of booleans."""
    s = pd.Series(texts, dtype=object)
    short = s.str.len().le(MAX_CHARS).to_numpy(dtype=bool)  # False for what is not text
    out = np.zeros(len(s), dtype=bool)
    out[short] = s[short].str.match(pattern, na=False).to_numpy(dtype=bool)
    return out


def _normal(text):
    """A date of the non-ISO forms in the shape the formats expect: one
    space between words, no commas nor era, month abbreviations without
    their dot, numbers separated by /, a space before the time."""
    t = _ERA.sub("", text.replace(",", " "))
    t = _SPACES.sub(" ", t).strip()
    t = _SEPT.sub("Sep", _WORD_DOT.sub(r"\1", t))
    t = _NUMERIC.sub(r"\1/\2/\3", t)
    t = _T.sub(r"\1 \2", t)
    return _AMPM.sub(lambda m: " " + m.group(1).upper() + "M", t)


def dayfirst_of(texts, default=False):
    """Whether the column's day/month/year dates in numbers put the day
    first: yes when some have a first number over 12 and none a second,
    no in the opposite case, the more frequent when both occur, and
    default when no value tells (or both are as frequent). texts are in
    the normal shape (_normal)."""
    parts = pd.Series(texts, dtype=object).str.extract(_DAY_MONTH).dropna().astype(int)
    if not len(parts):
        return bool(default)
    first, second = int((parts[0] > 12).sum()), int((parts[1] > 12).sum())
    if first == second:
        return bool(default)
    return first > second


def _iso(texts):
    """The ISO values parsed by pandas (its C parser); mixed zones in UTC."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = pd.to_datetime(pd.Index(texts, dtype=object), errors="coerce", dayfirst=False)
        if got.dtype == object:  # zones that differ, or zoned and naive values
            got = pd.to_datetime(pd.Index(texts, dtype=object), errors="coerce", dayfirst=False, utc=True)
    return pd.DatetimeIndex(got)


def _by_formats(texts, dayfirst):
    """Values in the normal shape parsed by strict formats, each tried on
    the values no earlier one read."""
    dm = "%d/%m" if dayfirst else "%m/%d"
    index = pd.Index(texts, dtype=object)
    out = np.full(len(index), np.datetime64("NaT"), dtype="M8[ns]")
    todo = np.ones(len(index), dtype=bool)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for date in [dm + "/%Y", dm + "/%y"] + _DATE_FORMATS:
            for time in _TIME_FORMATS:
                if not todo.any():
                    return out
                got = pd.to_datetime(index[todo], format=date + time, errors="coerce", exact=True)
                ok = got.notna()
                if ok.any():
                    pos = np.flatnonzero(todo)[ok]
                    out[pos] = got[ok].to_numpy(dtype="M8[ns]")
                    todo[pos] = False
    return out


def parse_dates(texts, dayfirst=None, default_dayfirst=False):
    """(dates, dayfirst): texts (distinct, stripped strings) as a
    DatetimeIndex in the same order, NaT where a value is not a date, and
    whether day/month/year values were read day first (dayfirst when
    given, else dayfirst_of those values with default_dayfirst)."""
    texts = pd.Index(texts, dtype=object)
    n = len(texts)
    stamps = np.full(n, np.datetime64("NaT"), dtype="M8[ns]")
    iso = _matches(texts, ISO)
    zone = None
    if iso.any():
        got = _iso(texts[iso])
        if got.tz is not None:
            zone = got.tz
            got = got.tz_convert("UTC").tz_localize(None)
        stamps[iso] = got.to_numpy(dtype="M8[ns]")
    rest = ~iso & _matches(texts, _REST)
    if rest.any():
        normal = [_normal(t) for t in texts[rest]]
        if dayfirst is None:
            dayfirst = dayfirst_of(normal, default_dayfirst)
        stamps[rest] = _by_formats(normal, bool(dayfirst))
    dates = pd.DatetimeIndex(stamps)
    if zone is not None:
        dates = dates.tz_localize("UTC")
        if not pd.notna(stamps[rest]).any():
            dates = dates.tz_convert(zone)
    return dates, bool(dayfirst) if dayfirst is not None else bool(default_dayfirst)


# Numbers -----------------------------------------------------------------

# PLAIN_NUMBER matches a number as Python writes it (no separators nor
# unit): a column of only those needs no conversion.
PLAIN_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")  # no two ways to match: linear

_CURRENCY = "$€£¥₹"
_UNIT = r"(?:[" + _CURRENCY + r"]|[A-Z]{3}|%)"
_LOOSE = re.compile(r"^\(?\s*[-+]?\s*(?P<pre>" + _UNIT + r")?\s*[-+]?\s*(?P<num>[\d.,]*\d[\d.,]*(?:[eE][-+]?\d+)?)\s*(?P<post>" + _UNIT + r")?\s*\)?$")
_PLAIN = r"(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
_STYLES = {
    ".": (r"(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?|" + _PLAIN + ")", ",", "."),
    ",": (r"(?:\d{1,3}(?:\.\d{3})+(?:,\d+)?|\d+(?:,\d*)?|,\d+)", ".", ","),
}


class NumberForm:
    """How a column writes its numbers: decimal is its decimal separator
    ("." or ","), unit its percent sign or currency ("" for none)."""

    def __init__(self, decimal, unit):
        self.decimal, self.unit = decimal, unit
        body, self.thousands, _ = _STYLES[decimal]
        u = "" if not unit else r"(?:\s*" + re.escape(unit) + r"\s*)?"
        self.pattern = re.compile(r"^(?P<open>\(\s*)?(?P<s1>[-+])?\s*" + u + r"(?P<s2>[-+])?(?P<num>" + body + r")" + u + r"(?P<close>\s*\))?$")

    @property
    def kind(self):
        """percent, currency, decimal comma or plain."""
        if self.unit == "%":
            return "percent"
        if self.unit:
            return "currency"
        return "decimal comma" if self.decimal == "," else "plain"

    def number(self, text):
        """text (stripped) as a float, or None when it is not written in
        this form."""
        m = self.pattern.match(text) if len(text) <= MAX_CHARS else None
        if m is None or bool(m.group("open")) != bool(m.group("close")) or (m.group("s1") and m.group("s2")):
            return None
        digits = m.group("num").replace(self.thousands, "")
        if self.decimal == ",":
            digits = digits.replace(",", ".")
        try:
            v = float(digits)
        except ValueError:
            return None
        if m.group("open") or "-" in (m.group("s1"), m.group("s2")):
            v = -v
        return v


def number_form(texts, counts=None, decimal=None):
    """The NumberForm in which at least SHARE of the values are numbers,
    or None. texts are stripped strings, each counts[i] times (once
    without counts). The unit is the one most values carry, when at least
    half do; the decimal separator is decimal when given (a file read
    with a decimal comma), else the point unless only the comma reads
    enough of them."""
    if counts is None:
        counts = [1] * len(texts)
    pairs = [(t, int(c)) for t, c in zip(texts, counts) if isinstance(t, str)]
    total = sum(c for _, c in pairs)
    if not total:
        return None
    units, loose = {}, 0
    for t, c in pairs:
        m = _LOOSE.match(t) if len(t) <= MAX_CHARS else None
        if m is None:
            continue
        loose += c
        u = m.group("pre") or m.group("post")
        if u:
            units[u] = units.get(u, 0) + c
    if loose < SHARE * total:
        return None  # most of them are not even shaped like numbers
    unit = max(units, key=units.get) if units else ""
    if unit and units[unit] < total / 2:
        unit = ""  # a few values with a unit: not the column's
    for dec in ([decimal] if decimal in _STYLES else []) + [d for d in (".", ",") if d != decimal]:
        form = NumberForm(dec, unit)
        if sum(c for t, c in pairs if form.number(t) is not None) >= SHARE * total:
            return form
    return None


def parse_numbers(texts, form):
    """texts (distinct, stripped strings) as floats in form, in the same
    order; NaN where a value is not a number in that form."""
    out = np.full(len(texts), np.nan)
    for i, t in enumerate(texts):
        v = form.number(t) if isinstance(t, str) else None
        if v is not None:
            out[i] = v
    return out
