"""PySpark: the findings and repairs of a DataFrame of conversations.

A conversation a row (a ``messages`` column of JSON text or nested
``array<struct<role, content, tool_calls, tool_call_id>>``, or ShareGPT's
``conversations``)::

    >>> from chatfsck import spark as cs
    >>> found = cs.lint(df, row_column="row")     # a DataFrame, a row a finding
    >>> fixed = cs.repair(df)                     # df's rows, messages repaired, + status

A message a row (a conversation's id, the message's place in it, and the
message: JSON text or a struct)::

    >>> found = cs.lint_messages(msgs, "conversation_id", "idx", "message")

Thin: ``DataFrame.mapInArrow`` hands each Arrow record batch straight to
``chatfsck.lint_batch`` / ``repair_batch`` (no pandas, no row objects);
``groupBy(...).applyInArrow`` hands each conversation's messages, ordered by
the order column, to the same core. The findings have the columns of
``chatfsck.lint_batch`` (``row`` and ``message`` as ``bigint``). Memory is
bounded by Spark's Arrow batch (``spark.sql.execution.arrow.maxRecordsPerBatch``)
or, for a message a row, by the largest conversation.

A DataFrame has no row order: a finding's ``row`` is the row's value in
``row_column`` (its index in the dataset, added before any shuffle), or
null without one, when the id column names the rows. PySpark is imported
when a function is called, never at import. ``mapInArrow`` needs PySpark
3.3 or later, ``applyInArrow`` 4.0 or later.
"""

import pyarrow as pa
import pyarrow.compute as pc

import chatfsck

# The findings' columns, as chatfsck.lint_batch returns them but with
# Spark's signed integers (Spark has no unsigned type).
FINDINGS_DDL = (
    "row bigint, conversation string, rule string, severity string, message bigint, "
    "summary string, ids array<string>, fixable boolean, applicability string, "
    "notes array<string>, evidence string"
)
_FINDINGS = pa.schema(
    [
        ("row", pa.int64()),
        ("conversation", pa.string()),
        ("rule", pa.string()),
        ("severity", pa.string()),
        ("message", pa.int64()),
        ("summary", pa.string()),
        ("ids", pa.list_(pa.string())),
        ("fixable", pa.bool_()),
        ("applicability", pa.string()),
        ("notes", pa.list_(pa.string())),
        ("evidence", pa.string()),
    ]
)


def _messages_column(df, messages_column):
    if messages_column is not None:
        if messages_column not in df.columns:
            raise ValueError(f"the DataFrame has no `{messages_column}` column (messages_column)")
        return messages_column
    for name in ("messages", "conversations"):
        if name in df.columns:
            return name
    raise ValueError(
        "the DataFrame has no `messages` or `conversations` column "
        "(name the column of the conversations with messages_column)"
    )


def _named_rows(df, id_column, row_column):
    """Check that the rows are named by data, not by their place in a
    partition: by ``row_column`` or by an id column."""
    for name, what in ((row_column, "row_column"), (id_column, "id_column")):
        if name is not None and name not in df.columns:
            raise ValueError(f"the DataFrame has no `{name}` column ({what})")
    if row_column is None and (id_column or "id") not in df.columns:
        raise ValueError(
            "a DataFrame's rows have no order: name the column that numbers them "
            "(row_column) or the one that names them (id_column)"
        )


def _for_spark(found, has_rows):
    """A findings batch of the core, as the Spark schema's Arrow types;
    ``row`` null when the rows are not numbered."""
    if not has_rows:
        found = found.set_column(0, "row", pa.nulls(found.num_rows, pa.uint64()))
    return found.cast(_FINDINGS)


def _lint_rows(messages_column, id_column, row_column):
    def run(batches):
        for batch in batches:
            found = pa.table(chatfsck.lint_batch(batch, messages_column, id_column, row_column=row_column))
            yield from _for_spark(found, row_column is not None).to_batches()

    return run


def lint(df, messages_column=None, id_column=None, row_column=None):
    """The findings of every row of ``df`` (a conversation a row), as a
    DataFrame with the columns of ``chatfsck.lint_batch`` (``FINDINGS_DDL``).

    ``row_column``: a column with each row's index in the dataset (integers),
    which names the findings' rows; ``id_column``: the rows' ids (default
    ``id``). One of the two must be there: a partition's rows have no place
    of their own. Only these columns and the conversations' go to Python.
    """
    column = _messages_column(df, messages_column)
    _named_rows(df, id_column, row_column)
    wanted = [c for c in (column, id_column or ("id" if "id" in df.columns else None), row_column) if c]
    return df.select(*dict.fromkeys(wanted)).mapInArrow(
        _lint_rows(column, id_column, row_column), FINDINGS_DDL
    )


def _repair_rows(messages_column, id_column, status_column):
    def run(batches):
        for batch in batches:
            rows, _, _ = chatfsck.repair_batch(batch, messages_column, id_column)
            rows = pa.record_batch(rows)
            # The batch's own columns and types (those Spark handed over),
            # the conversations' as JSON text, then the status.
            names, columns = [], []
            for name in batch.schema.names:
                names.append(name)
                columns.append(rows.column("messages") if name == messages_column else batch.column(name))
            names.append(status_column)
            columns.append(rows.column("status"))
            yield pa.RecordBatch.from_arrays(columns, names=names)

    return run


def repair(df, messages_column=None, id_column=None, status_column="status"):
    """Every row of ``df`` repaired as ``chatfsck repair`` repairs a dataset:
    ``df``'s columns in order, the conversations' column as JSON text
    (byte for byte the cell of a text column where the row was not edited),
    and ``status_column``: ``unchanged``, ``repaired``, or ``kept`` (not
    edited, with findings the repair leaves). A row is never dropped, and
    repairing the result again changes nothing. What a row becomes does not
    depend on the other rows, so neither on the partitioning.
    """
    from pyspark.sql.types import StringType, StructField, StructType

    column = _messages_column(df, messages_column)
    if id_column is not None and id_column not in df.columns:
        raise ValueError(f"the DataFrame has no `{id_column}` column (id_column)")
    if status_column in df.columns:
        raise ValueError(f"the DataFrame has a `{status_column}` column already (status_column)")
    fields = [
        StructField(f.name, StringType(), True) if f.name == column else f for f in df.schema.fields
    ]
    fields.append(StructField(status_column, StringType(), False))
    return df.mapInArrow(_repair_rows(column, id_column, status_column), StructType(fields))


def _one_conversation(conversation_column, order_column, message_column, row_column):
    def run(key, table):
        table = table.take(pc.sort_indices(table, [(order_column, "ascending")]))
        message = table.column(message_column).combine_chunks()
        if pa.types.is_struct(message.type):
            messages = pa.ListArray.from_arrays(pa.array([0, len(message)], pa.int32()), message)
        elif pa.types.is_string(message.type) or pa.types.is_large_string(message.type):
            # JSON text: the conversation is the array of its messages; a
            # message that does not parse makes a row that does not parse,
            # a finding of its conversation.
            texts = pc.fill_null(message.cast(pa.string()), "null").to_pylist()
            messages = pa.array(["[" + ",".join(texts) + "]"], pa.string())
        else:
            raise ValueError(
                f"the `{message_column}` column is {message.type}, neither a message's JSON text nor a struct"
            )
        one = {"id": pa.array([key[0].as_py()]).cast(pa.string()), "messages": messages}
        if row_column is not None:
            one["row"] = table.column(row_column).slice(0, 1)
        found = pa.table(
            chatfsck.lint_batch(
                pa.table(one), "messages", "id", row_column="row" if row_column is not None else None
            )
        )
        return _for_spark(found, row_column is not None)

    return run


def lint_messages(df, conversation_column, order_column, message_column="message", row_column=None):
    """The findings of a DataFrame with a message a row, by conversation.

    ``conversation_column`` names each message's conversation (its id in the
    findings); ``order_column`` orders the messages of a conversation (any
    order of the rows, before or after a shuffle, gives the same findings);
    ``message_column`` is the message, JSON text (``{"role": ..., ...}``)
    or a struct of ``role``, ``content``, ``tool_calls``, ``tool_call_id``.
    ``row_column``: the conversation's row index, the same on each of its
    messages, for the findings' ``row`` (null without it). A conversation's
    messages are held in memory together (``applyInArrow``).
    """
    for name, what in (
        (conversation_column, "conversation_column"),
        (order_column, "order_column"),
        (message_column, "message_column"),
        (row_column, "row_column"),
    ):
        if name is not None and name not in df.columns:
            raise ValueError(f"the DataFrame has no `{name}` column ({what})")
    wanted = [c for c in (conversation_column, order_column, message_column, row_column) if c]
    return (
        df.select(*dict.fromkeys(wanted))
        .groupBy(conversation_column)
        .applyInArrow(
            _one_conversation(conversation_column, order_column, message_column, row_column), FINDINGS_DDL
        )
    )
