"""The MongoDB connector: sampled collection shapes, ``find`` and a guarded ``aggregate``.

Importing this package imports neither pymongo nor the connector's module nor the kind's
record (:mod:`.kind`: :data:`MONGO_TYPE` and the options models); each loads on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__all__ = ["MONGO_TYPE", "MongoConnector", "MongoOptions", "MongoPythonOptions"]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = "connector" if name == "MongoConnector" else "kind"
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


if TYPE_CHECKING:
    from relay_nb.connectors.mongo.connector import MongoConnector
    from relay_nb.connectors.mongo.kind import MONGO_TYPE, MongoOptions, MongoPythonOptions
