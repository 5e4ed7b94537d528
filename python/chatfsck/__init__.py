"""chatfsck: fsck for LLM conversation histories and datasets.

The engine of the ``chatfsck`` command, on Arrow record batches of
conversations (one conversation a row: a ``messages`` column of JSON text or
nested ``list<struct<role, content, tool_calls, tool_call_id>>``, or
ShareGPT's ``conversations``), as the CLI reads Parquet and Arrow files:

>>> import pyarrow as pa, chatfsck
>>> findings = pa.table(chatfsck.lint_batch(table))

``lint_batch`` takes any Arrow data (an object with ``__arrow_c_stream__``
or ``__arrow_c_array__``: a pyarrow Table or RecordBatch, polars, arro3,
DuckDB) and returns an ``ArrowBatch``, readable the same way, with a row
per finding and the fields of ``chatfsck lint --format json``: ``row`` (the
row's index, from ``first_row``), ``conversation`` (its ``id`` column, or
``row N``), ``rule``, ``severity``, ``message``, ``summary``, ``ids``,
``fixable``, ``applicability``, ``notes`` and ``evidence`` (JSON text).

``repair_batch`` repairs the rows as ``chatfsck repair`` repairs a dataset
file, and returns three batches: the rows (``row``, ``messages`` as JSON
text, ``status``: ``unchanged``, ``repaired``, or ``kept`` with findings it
leaves), the log's edits, and the findings left, each naming its row.

The work runs with the GIL released; the module starts no thread, at
import or after, so it is safe in a ``fork`` child. Adapters for engines,
each importing its engine only when called: ``chatfsck.spark`` (PySpark
``mapInArrow``, and ``groupBy().applyInArrow`` for a message a row),
``chatfsck.ray`` (Ray Data ``map_batches``) and ``chatfsck.datasets``
(Hugging Face ``datasets.map``).
"""

from chatfsck._native import ArrowBatch, __version__
from chatfsck._native import lint_batch as _lint_batch
from chatfsck._native import repair_batch as _repair_batch

__all__ = ["ArrowBatch", "__version__", "lint_batch", "repair_batch"]


def lint_batch(data, messages_column=None, id_column=None, *, first_row=0, source=None, row_column=None):
    """The findings of every row of ``data``, a row per finding.

    ``messages_column``: the conversations' column (default: ``messages``, or
    ``conversations`` for ShareGPT); ``id_column``: the rows' ids (default:
    ``id`` when there is one). ``first_row``: the index of ``data``'s first
    row in the whole dataset, so that partitions name their rows as the whole
    does. ``row_column``: instead, a column of ``data`` that holds each row's
    index in the whole dataset (integers, no null), for engines whose
    partitions are not slices of it in order (Spark, Ray, a shuffle): the
    findings, their evidence and the rows' names (``row N`` without an id)
    then do not change with the partitioning. ``source``: what the
    evidence's locations call the input.

    A row that does not parse is a finding of its row (``corrupt-record``),
    never an exception; a batch without the conversations' column raises
    ``ValueError``.
    """
    return _lint_batch(data, messages_column, id_column, first_row, source, row_column)


def repair_batch(data, messages_column=None, id_column=None, *, first_row=0, source=None, row_column=None):
    """Repair every row of ``data``; ``(rows, edits, left)``, three ``ArrowBatch``.

    ``rows`` has a row for each row of ``data``, in order: ``row``,
    ``messages`` (a text cell that was not edited, byte for byte; the repaired
    messages as JSON text otherwise; a nested cell as the JSON it stands for)
    and ``status``. ``edits`` holds every removed, replaced or inserted
    message, ``before`` and ``after``; ``left`` every finding the repair
    leaves, and why. A row is never dropped, and repairing ``rows`` again
    changes nothing. The arguments are those of ``lint_batch``.
    """
    return _repair_batch(data, messages_column, id_column, first_row, source, row_column)
