"""Charts over every row of a completed result: one column's summary, counted from the result's typed copy.

The Parquet copy (:mod:`s3task.exports.parquet`) already gives each column a type over every row of the
output; a column's chart follows it. A number column (``int64``, ``float64``) gets a histogram of about 20
bars of a round width, a date column (``date32``, ``timestamp``) a bar per day, month or year(s) as its span
asks (:mod:`.bins`), and any other column (text, true/false) its most common values with their counts and the
count of all other values. Empty cells are counted in every case. Only the one column is read from the copy,
a batch at a time, and a text value is kept by a key of bounded size, at most :data:`EXACT_VALUES` of them
(:mod:`.text`), so the memory needed grows neither with the rows nor with the values' length or number.

A summary is a few KB of JSON (:class:`.ColumnSummary`), kept in the store next to the output
(:meth:`s3task.layout.Layout.chart_key`) with a create-only put, like the copies: made once, then read.
"""

from __future__ import annotations

from .bins import DateBins, NumberBins, date_bins, number_bins
from .count import kind_of, summarise
from .summary import VERSION, Bar, ColumnSummary, bars_in_words, describe, digest, number
from .text import EXACT_VALUES, SHOW_CHARS, TOP_VALUES

__all__ = [
    "EXACT_VALUES",
    "SHOW_CHARS",
    "TOP_VALUES",
    "VERSION",
    "Bar",
    "ColumnSummary",
    "DateBins",
    "NumberBins",
    "bars_in_words",
    "date_bins",
    "describe",
    "digest",
    "kind_of",
    "number",
    "number_bins",
    "summarise",
]
