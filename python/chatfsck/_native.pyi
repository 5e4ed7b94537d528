from typing import Any, Optional

__version__: str

class ArrowBatch:
    """A record batch: read it with ``pyarrow.table(x)`` or any Arrow PyCapsule consumer."""

    def __arrow_c_stream__(self, requested_schema: Optional[object] = None) -> object: ...
    def __arrow_c_array__(self, requested_schema: Optional[object] = None) -> tuple[object, object]: ...
    def __len__(self) -> int: ...

def lint_batch(
    data: Any,
    messages_column: Optional[str] = None,
    id_column: Optional[str] = None,
    first_row: int = 0,
    source: Optional[str] = None,
    row_column: Optional[str] = None,
) -> ArrowBatch: ...
def repair_batch(
    data: Any,
    messages_column: Optional[str] = None,
    id_column: Optional[str] = None,
    first_row: int = 0,
    source: Optional[str] = None,
    row_column: Optional[str] = None,
) -> tuple[ArrowBatch, ArrowBatch, ArrowBatch]: ...
def main(argv: list[str]) -> int: ...
