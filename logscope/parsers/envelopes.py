"""Lines a log collector or a web page wrapped whole: each is read as the line it carries.

A container runtime or a log shipper stores each line a process printed as a record: Docker's
``json-file`` driver as ``{"log":"<line>\\n","stream":"stderr","time":"<RFC 3339>"}`` (moby,
daemon/logger/jsonfilelog), fluentd, Vector or a cloud's export as ``{"message": ...}`` or
``{"msg": ...}``, ``journalctl -o json`` as ``{"MESSAGE": ...}``. Inside, quotes and backslashes are
escaped, so a message's own words (``File "train.py", line 3``) are not there as the process
wrote them. A page's HTML source escapes ``<``, ``>``, ``&`` and quotes (``&lt;stderr&gt;``).

A file (``by``: the column of the file each line is of; None: the frame is one file's chunk) is
read through its envelope when nearly all of its first lines have one; the line's time, where
the record holds one, is put in front of what it carries, as a shipper's stamp (an outer clock:
logscope.parsers.lines). Line numbers stay those of the file. Vectorised: polars reads the JSON.
"""

from __future__ import annotations

import polars as pl

ENVELOPE_SAMPLE = 64
ENVELOPE_SHARE = 0.9  # of a file's first non-empty lines, for it to be read through the envelope
MESSAGE_FIELDS = ("$.log", "$.message", "$.msg", "$.MESSAGE")
TIME_FIELDS = ("$.time", "$.timestamp", "$['@timestamp']", "$.ts")
# named entities of HTML that a page's source writes for characters a log holds; &amp; last
ENTITIES = (("&lt;", "<"), ("&gt;", ">"), ("&quot;", '"'), ("&#39;", "'"), ("&#x27;", "'"), ("&amp;", "&"))
_ENTITY = r"&(?:lt|gt|quot|amp|#39|#x27);"


def opened(frame: pl.DataFrame, column: str = "raw", by: str | None = None) -> pl.DataFrame:
    """``frame`` with ``column`` read through the envelope of its file, where it has one."""
    key = by or "_whole"
    keyed = frame if by is not None else frame.with_columns(pl.lit(0, dtype=pl.UInt32).alias(key))
    line = pl.col(column)
    sample = (keyed.group_by(key, maintain_order=True).head(ENVELOPE_SAMPLE).select(key, column)
              .filter(line.str.strip_chars().str.len_chars() > 0))
    if sample.height == 0:
        return frame
    kinds = sample.group_by(key).agg(
        (line.str.starts_with("{") & _message(line).is_not_null()).mean().alias("_json"),
        line.str.contains(_ENTITY).any().alias("_entities"),
        line.str.contains(r"[<>\"]").any().alias("_raw_marks"),
    ).select(
        key,
        (pl.col("_json") >= ENVELOPE_SHARE).alias("_json"),
        (pl.col("_entities") & ~pl.col("_raw_marks")).alias("_html"),
    ).filter(pl.col("_json") | pl.col("_html"))
    if kinds.height == 0:
        return frame
    marked = keyed.join(kinds, on=key, how="left", maintain_order="left")
    carried = _message(line).str.strip_chars_end("\r\n")
    stamp = pl.coalesce(*[line.str.json_path_match(path) for path in TIME_FIELDS])
    from_json = pl.concat_str([stamp, pl.lit(" "), carried], ignore_nulls=False)
    unescaped = line
    for entity, character in ENTITIES:
        unescaped = unescaped.str.replace_all(entity, character, literal=True)
    marked = marked.with_columns(
        pl.when(pl.col("_json") & carried.is_not_null()).then(pl.coalesce(from_json, carried))
        .when(pl.col("_html")).then(unescaped)
        .otherwise(line).alias(column))
    return marked.select(frame.columns)


def _message(line: pl.Expr) -> pl.Expr:
    return pl.coalesce(*[line.str.json_path_match(path) for path in MESSAGE_FIELDS])


__all__ = ["ENTITIES", "MESSAGE_FIELDS", "TIME_FIELDS", "opened"]
