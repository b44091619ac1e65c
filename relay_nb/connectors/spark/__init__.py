"""Spark: a ``SparkSession`` as a guarded, read-only connector.

``SparkConnector`` is in :mod:`.connector`, the kind's record (what ``relay.connect`` asks
whether it takes a target) in :mod:`.kind`; nothing here imports them, so listing the kinds
stays cheap and pyspark is never imported by relay_nb itself.
"""
