"""The MongoDB connector: sampled collection shapes, ``find`` and a guarded ``aggregate``.

Importing this package imports neither pymongo nor the connector's module (loaded on first
access), so the kind's record (:mod:`.kind`) stays cheap to list.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from relay_nb.connectors.mongo.connector import MongoConnector

__all__ = ["MongoConnector"]


def __getattr__(name: str) -> Any:
    if name == "MongoConnector":
        from relay_nb.connectors.mongo.connector import MongoConnector

        return MongoConnector
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
