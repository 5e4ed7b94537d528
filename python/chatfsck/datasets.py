"""Hugging Face ``datasets``: the findings of a ``Dataset`` of conversations.

>>> from chatfsck.datasets import lint
>>> findings = lint(ds, num_proc=2)        # a datasets.Dataset, a row a finding

A thin adapter: ``Dataset.map(batched=True)`` hands each batch, as Arrow, to
``chatfsck.lint_batch``, in as many processes as ``num_proc`` says (forked:
the engine starts no thread, so a fork child is safe). Each finding's ``row``
is the row's index in ``ds`` (from the batch's indices), so the findings do
not change with ``num_proc`` or ``batch_size``.
"""

import pyarrow as pa
import pyarrow.compute as pc

import chatfsck


def _lint_batch(messages_column, id_column):
    def lint_one(batch, indices):
        found = pa.table(chatfsck.lint_batch(batch, messages_column, id_column))
        # The rows of a batch are in ds's order but need not be consecutive
        # (a selected or filtered dataset): name each by its index in ds.
        rows = pc.take(pa.array(indices, pa.uint64()), found["row"])
        return found.set_column(0, found.schema.field("row"), rows)

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
