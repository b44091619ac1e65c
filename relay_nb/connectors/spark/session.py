"""What a Spark session is, told without importing pyspark; and a Spark Connect session
opened from an ``sc://`` URL (the one place relay_nb imports pyspark)."""

from __future__ import annotations

import re
from typing import Any

from relay_nb.errors import ConfigurationError
from relay_nb.redaction import register_secret

__all__ = ["is_spark_session", "open_connect_session", "redact_connect_url"]

_CONNECT_URL = re.compile(r"^sc://(?P<host>[^/:;?#\s]+)(?::(?P<port>\d{1,5}))?/?(?P<params>;.*)?$")
_SECRET_PARAMS = ("token",)


def is_spark_session(value: object) -> bool:
    """A PySpark ``SparkSession`` (classic or Spark Connect)."""
    cls = type(value)
    return cls.__name__ == "SparkSession" and cls.__module__.startswith("pyspark")


def redact_connect_url(url: str) -> str:
    """``sc://host:port`` without its parameters (``;token=…``, ``;user_id=…``)."""
    match = _CONNECT_URL.match(url.strip())
    if match is None:
        return "sc://…"
    port = f":{match.group('port')}" if match.group("port") else ""
    return f"sc://{match.group('host')}{port}"


def open_connect_session(url: str) -> Any:
    """A new Spark Connect session on the server at ``url`` (``sc://host:15002``, with
    ``;token=…`` and other parameters as Spark Connect reads them). A token is registered as a
    secret first, so it is redacted wherever it could appear."""
    match = _CONNECT_URL.match(url.strip())
    if match is None:
        raise ConfigurationError(
            f"{redact_connect_url(url)!s} is not a Spark Connect URL; write "
            "sc://host:port (e.g. sc://localhost:15002), parameters after '/;'"
        )
    for param in (match.group("params") or "").split(";"):
        key, _, value = param.partition("=")
        if key.strip().lower() in _SECRET_PARAMS and value:
            register_secret(value)
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise ConfigurationError(
            "Spark Connect needs PySpark with its Connect client: pip install 'relay_nb[spark]'"
        ) from None
    builder = SparkSession.builder.remote(url.strip())
    try:
        return builder.create()  # a session of its own (getOrCreate could hand back yours)
    except ImportError as exc:  # grpcio, pyarrow … missing
        raise ConfigurationError(
            f"Spark Connect needs {exc.name or 'its client libraries'}: "
            "pip install 'relay_nb[spark]'"
        ) from None
