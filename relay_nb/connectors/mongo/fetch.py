"""Read a ``find`` or ``aggregate`` one document at a time, within a byte budget, no further.

A row limit does not bound memory: five documents of 15 MB are five rows, and ``list(cursor)``
holds every one of them decoded. So the connector reads every cursor here:

* the driver holds one server batch at a time, and batches are sized to the bytes still
  allowed: the first from the byte limit at :data:`FIRST_BATCH_DOCUMENT_BYTES` a document,
  every later one from the room left at the largest document seen so far (at least two, the
  driver's floor). A server never puts more than 16 MiB in a batch (or one document of at
  most 16 MiB), so a batch is never larger than the limit or one document, whichever is
  larger, however large the result;
* the caller takes documents one at a time and stops when its budget is spent (no reference
  to a document it has taken is kept here); closing the cursor then kills it on the server
  (``killCursors``), so the rest of the result is never sent.

Documents are decoded by the driver as it receives them (its C decoder reads strings straight
from the reply: measured, raw ``RawBSONDocument`` reading held more, not less, since the
driver copies a raw document out of each reply level), and measured with the result
budget's own rule (:func:`~relay_nb.connectors.bounds.value_size`).

Commands go through ``Database.cursor_command``: exactly the checked ``find`` or
``aggregate`` document (plus ``batchSize``) is what runs, with the client's read preference
and codec options, and the driver's cursor handles sessions, getMore and killCursors.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from relay_nb.connectors.bounds import value_size

if TYPE_CHECKING:
    from pymongo.synchronous.command_cursor import CommandCursor

__all__ = ["FIRST_BATCH_DOCUMENT_BYTES", "Reading", "first_batch", "open_cursor", "read_documents"]

FIRST_BATCH_DOCUMENT_BYTES = 64 << 10
"""The size a document is assumed to have before any is seen, for the first batch's count:
16 MiB allows 256 documents (the whole of a 200-row result in one round trip), 1 MiB 16."""
_MIN_GETMORE = 2
"""pymongo turns a getMore batch size of 1 into 2 (1 used to mean "one batch, then close")."""


@dataclass
class Reading:
    """What one read saw: documents read, whether one existed past the limit, their size,
    and the largest document (which sizes the next batch)."""

    read: int = 0
    more: bool = False
    bytes: int = 0
    largest: int = 0


def first_batch(max_bytes: int, wanted: int) -> int:
    """The first batch's document count for a result of ``wanted`` documents within
    ``max_bytes`` (at least one)."""
    return max(1, min(wanted, max_bytes // FIRST_BATCH_DOCUMENT_BYTES))


def open_cursor(database: Any, command: dict[str, Any], *, batch: int) -> CommandCursor[Any]:
    """Run a ``find`` or ``aggregate`` command document as it is, asking for ``batch``
    documents first."""
    sent = dict(command)
    if "aggregate" in sent:
        sent["cursor"] = {"batchSize": batch}
    else:
        sent["batchSize"] = batch
    return database.cursor_command(
        sent, codec_options=database.codec_options, read_preference=database.read_preference
    )


def read_documents(
    cursor: CommandCursor[Any], *, limit: int, room: Callable[[], int], reading: Reading
) -> Iterator[Any]:
    """At most ``limit`` documents from ``cursor``; a document past them sets
    ``reading.more`` and ends the read. Before each document the next batch (if one must be
    fetched) is sized to what ``room()`` bytes hold at the largest document seen so far."""
    while True:
        if reading.largest:
            fits = max(0, room()) // reading.largest
            cursor.batch_size(max(_MIN_GETMORE, min(limit + 1 - reading.read, fits)))
        document = next(cursor, None)
        if document is None:
            return
        if reading.read >= limit:
            reading.more = True
            return
        size = value_size(document)
        reading.read += 1
        reading.bytes += size
        reading.largest = max(reading.largest, size)
        yield document
        document = None  # not held here while the next batch arrives
