"""The ``mongo`` connector kind: its options and its :class:`ConnectorType` (the
``mongodb://`` and ``mongodb+srv://`` schemes). Each option is declared once below, with the
default :class:`~relay_nb.connectors.mongo.connector.MongoConnector` takes."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from relay_nb.connectors.options import max_result_bytes, max_value_bytes, option, required
from relay_nb.connectors.types import ConnectorType, LazyFactory

__all__ = ["MONGO_TYPE", "MongoOptions", "MongoPythonOptions"]


class MongoOptions(BaseModel):
    """A ``mongo`` config entry's ``config``; a left-out option takes the connector's default."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    url: str = required("a ``mongodb://`` or ``mongodb+srv://`` URL (``relay.connect``'s target)")
    database: str = option(None, "the database to query; None: the URL's")
    collections: list[str] = option(
        None,
        "the only collections the model sees and may query; None: all but ``system.*``",
        "collections",
        "collectionAllowlist",
        "collection_allowlist",
    )
    sample_size: int = option(
        100, "documents sampled per collection to infer its fields", "sample_size", "sampleSize"
    )
    max_depth: int = option(3, "levels of nested fields described below the top-level ones")
    row_limit: int = option(
        200,
        "documents a query returns at most (its ``$limit`` is added or clamped)",
        "row_limit",
        "rowLimit",
    )
    timeout_s: float = option(30.0, "seconds a query may run on the server (``maxTimeMS``)")
    max_value_bytes: int = max_value_bytes("max_value_bytes", "maxValueBytes")
    max_result_bytes: int = max_result_bytes("max_result_bytes", "maxResultBytes")


class MongoPythonOptions(MongoOptions):
    """Every ``relay.connect`` / ``MongoConnector`` keyword: the config file's options, and
    the one only Python passes."""

    client: Any = option(
        None, "a ``pymongo.MongoClient`` to query through (left open); None: one from ``url``"
    )


MONGO_TYPE = ConnectorType(
    name="mongo",
    aliases=("mongodb",),
    factory=LazyFactory("relay_nb.connectors.mongo.connector:MongoConnector"),
    config_model=MongoOptions,
    keywords_model=MongoPythonOptions,
    url_schemes=("mongodb", "mongodb+srv"),
    description="MongoDB: find and aggregate",
    factory_defaults=True,
    python_keywords=True,
    builtin=True,
)
