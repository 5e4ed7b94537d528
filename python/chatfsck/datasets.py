"""Hugging Face ``datasets``: the findings and repairs of a ``Dataset`` of
conversations.

>>> from chatfsck.datasets import lint, repair
>>> findings = lint(ds, num_proc=2)        # a datasets.Dataset, a row a finding
>>> fixed = repair(ds, num_proc=2)         # ds's rows, messages repaired, + status

A thin adapter: ``Dataset.map(batched=True)`` hands each batch, as Arrow, to
``chatfsck.lint_batch`` / ``repair_batch``, in as many processes as
``num_proc`` says (forked: the engine starts no thread, so a fork child is
safe). Each finding's ``row`` is the row's index in ``ds`` (from the
batch's indices, handed to the core as its ``row_column``), so the
findings, their evidence included, do not change with ``num_proc`` or
``batch_size``.
"""

import pyarrow as pa

import chatfsck

_ROW = "__chatfsck_row"


def _lint_batch(messages_column, id_column):
    def lint_one(batch, indices):
        # The rows of a batch are in ds's order but need not be consecutive
        # (a selected or filtered dataset): name each by its index in ds.
        batch = batch.append_column(_ROW, pa.array(indices, pa.uint64()))
        return pa.table(chatfsck.lint_batch(batch, messages_column, id_column, row_column=_ROW))

    return lint_one


def lint(dataset, messages_column=None, id_column=None, *, num_proc=None, batch_size=1000):
    """The findings of every row of ``dataset`` (a ``datasets.Dataset``), as a
    ``datasets.Dataset`` with the columns of ``chatfsck.lint_batch``."""
    import datasets

    schema = pa.table(chatfsck.lint_batch(pa.table({"messages": pa.array([], pa.string())}))).schema
    return dataset.with_format("arrow").map(
        _lint_batch(messages_column, id_column),
        batched=True,
        batch_size=batch_size,
        with_indices=True,
        num_proc=num_proc,
        remove_columns=dataset.column_names,
        features=datasets.Features.from_arrow_schema(schema),
        desc="chatfsck lint",
    ).with_format(None)


def _messages_column(names, messages_column):
    if messages_column is not None:
        return messages_column
    for name in ("messages", "conversations"):
        if name in names:
            return name
    raise ValueError(
        "the dataset has no `messages` or `conversations` column "
        "(name the column of the conversations with messages_column)"
    )


def _repair_batch(messages_column, id_column, status_column):
    def repair_one(batch):
        rows, _, _ = chatfsck.repair_batch(batch, messages_column, id_column)
        rows = pa.table(rows)
        at = batch.schema.get_field_index(messages_column)
        batch = batch.set_column(at, pa.field(messages_column, pa.string()), rows["messages"])
        return batch.append_column(pa.field(status_column, pa.string()), rows["status"])

    return repair_one


def repair(dataset, messages_column=None, id_column=None, *, status_column="status", num_proc=None, batch_size=1000):
    """Every row of ``dataset`` repaired as ``chatfsck repair`` repairs a
    dataset: its columns, the conversations' as JSON text (byte for byte the
    cell of a text column where the row was not edited), and
    ``status_column`` (``unchanged``, ``repaired``, ``kept``). A row is never
    dropped; repairing the result again changes nothing."""
    import datasets

    column = _messages_column(dataset.column_names, messages_column)
    if status_column in dataset.column_names:
        raise ValueError(f"the dataset has a `{status_column}` column already (status_column)")
    features = datasets.Features(dataset.features)
    features[column] = datasets.Value("string")
    features[status_column] = datasets.Value("string")
    return dataset.with_format("arrow").map(
        _repair_batch(column, id_column, status_column),
        batched=True,
        batch_size=batch_size,
        num_proc=num_proc,
        features=features,
        desc="chatfsck repair",
    ).with_format(None)
