"""The MongoDB connector: sampled collection shapes, ``find`` and a guarded ``aggregate``.

Importing this package imports neither pymongo nor the connector's module nor the kind's
record (:mod:`.kind`: :data:`MONGO_TYPE` and the options models); each loads on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from relay_nb._lazy import lazy_exports

__all__ = ["MONGO_TYPE", "MongoConnector", "MongoOptions", "MongoPythonOptions"]

_EXPORTS = {
    "MONGO_TYPE": "relay_nb.connectors.mongo.kind",
    "MongoConnector": "relay_nb.connectors.mongo.connector",
    "MongoOptions": "relay_nb.connectors.mongo.kind",
    "MongoPythonOptions": "relay_nb.connectors.mongo.kind",
}

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)


if TYPE_CHECKING:
    from relay_nb.connectors.mongo.connector import MongoConnector
    from relay_nb.connectors.mongo.kind import MONGO_TYPE, MongoOptions, MongoPythonOptions
