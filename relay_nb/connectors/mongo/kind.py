"""The ``mongo`` connector kind: its config options and its :class:`ConnectorType` (the
``mongodb://`` and ``mongodb+srv://`` schemes; defaults are
:class:`~relay_nb.connectors.mongo.connector.MongoConnector`'s)."""

from __future__ import annotations

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

from relay_nb.connectors.types import ConnectorType, LazyFactory

__all__ = ["MONGO_TYPE", "MongoOptions"]


class MongoOptions(BaseModel):
    """A ``mongo`` config entry's ``config``; a left-out option takes the connector's default."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    url: str
    database: str = Field(default=None)
    collections: list[str] = Field(
        default=None,
        validation_alias=AliasChoices("collections", "collectionAllowlist", "collection_allowlist"),
    )
    sample_size: int = Field(
        default=None, validation_alias=AliasChoices("sample_size", "sampleSize")
    )
    max_depth: int = Field(default=None)
    row_limit: int = Field(default=None, validation_alias=AliasChoices("row_limit", "rowLimit"))
    timeout_s: float = Field(default=None)
    max_value_bytes: int = Field(
        default=None, validation_alias=AliasChoices("max_value_bytes", "maxValueBytes")
    )
    max_result_bytes: int = Field(
        default=None, validation_alias=AliasChoices("max_result_bytes", "maxResultBytes")
    )


MONGO_TYPE = ConnectorType(
    name="mongo",
    aliases=("mongodb",),
    factory=LazyFactory("relay_nb.connectors.mongo.connector:MongoConnector"),
    config_model=MongoOptions,
    url_schemes=("mongodb", "mongodb+srv"),
    description="MongoDB: find and aggregate",
    factory_defaults=True,
    python_keywords=True,
    builtin=True,
)
