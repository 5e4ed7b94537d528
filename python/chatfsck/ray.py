"""Ray Data: the findings and repairs of a ``ray.data.Dataset`` of
conversations, a conversation a row::

    >>> from chatfsck import ray as cr
    >>> found = cr.lint(ds, row_column="row")   # a Dataset, a row a finding
    >>> fixed = cr.repair(ds)                  # ds's rows, messages repaired, + status

Thin: ``Dataset.map_batches(batch_format="pyarrow")`` hands each batch, as an
Arrow table, to ``chatfsck.lint_batch`` / ``repair_batch`` in Ray's workers;
memory is bounded by ``batch_size`` rows. The findings have the columns of
``chatfsck.lint_batch``. A Dataset's blocks are not slices of it in a known
order: a finding's ``row`` is the row's value in ``row_column`` (its index
in the dataset), or null without one, when the id column names the rows.
Ray is imported by Ray itself when the Dataset runs; this module imports
nothing of it.
"""

import pyarrow as pa

import chatfsck


def _check(ds, messages_column, id_column, row_column, named=True):
    names = ds.schema().names
    for name, what in ((messages_column, "messages_column"), (id_column, "id_column"), (row_column, "row_column")):
        if name is not None and name not in names:
            raise ValueError(f"the Dataset has no `{name}` column ({what})")
    if messages_column is None and not {"messages", "conversations"} & set(names):
        raise ValueError(
            "the Dataset has no `messages` or `conversations` column "
            "(name the column of the conversations with messages_column)"
        )
    if named and row_column is None and (id_column or "id") not in names:
        raise ValueError(
            "a Dataset's blocks have no order: name the column that numbers its rows "
            "(row_column) or the one that names them (id_column)"
        )


class _Lint:
    """The batch function (a class, so Ray pickles it by reference)."""

    def __init__(self, messages_column, id_column, row_column):
        self.args = (messages_column, id_column, row_column)

    def __call__(self, batch):
        messages_column, id_column, row_column = self.args
        found = pa.table(chatfsck.lint_batch(batch, messages_column, id_column, row_column=row_column))
        if row_column is None:
            found = found.set_column(0, found.schema.field("row").with_nullable(True), pa.nulls(found.num_rows, pa.uint64()))
        return found


class _Repair:
    def __init__(self, messages_column, id_column, status_column):
        self.args = (messages_column, id_column, status_column)

    def __call__(self, batch):
        messages_column, id_column, status_column = self.args
        rows, _, _ = chatfsck.repair_batch(batch, messages_column, id_column)
        rows = pa.table(rows)
        column = messages_column or ("messages" if "messages" in batch.column_names else "conversations")
        at = batch.schema.get_field_index(column)
        batch = batch.set_column(at, pa.field(column, pa.string()), rows["messages"])
        return batch.append_column(pa.field(status_column, pa.string(), False), rows["status"])


def lint(ds, messages_column=None, id_column=None, row_column=None, *, batch_size=4096):
    """The findings of every row of ``ds`` (a ``ray.data.Dataset``, a
    conversation a row), as a Dataset with the columns of
    ``chatfsck.lint_batch``. ``row_column`` (each row's index in the dataset)
    names the findings' rows; ``id_column`` (default ``id``) their
    conversations; one of the two must be there."""
    _check(ds, messages_column, id_column, row_column)
    return ds.map_batches(
        _Lint(messages_column, id_column, row_column),
        batch_format="pyarrow",
        batch_size=batch_size,
        zero_copy_batch=True,
    )


def repair(ds, messages_column=None, id_column=None, *, status_column="status", batch_size=4096):
    """Every row of ``ds`` repaired as ``chatfsck repair`` repairs a dataset:
    ``ds``'s columns, the conversations' as JSON text (byte for byte the
    cell of a text column where the row was not edited), and
    ``status_column`` (``unchanged``, ``repaired``, ``kept``). A row is never
    dropped; repairing the result again changes nothing."""
    names = ds.schema().names
    if status_column in names:
        raise ValueError(f"the Dataset has a `{status_column}` column already (status_column)")
    _check(ds, messages_column, id_column, None, named=False)
    return ds.map_batches(
        _Repair(messages_column, id_column, status_column),
        batch_format="pyarrow",
        batch_size=batch_size,
        zero_copy_batch=True,
    )
