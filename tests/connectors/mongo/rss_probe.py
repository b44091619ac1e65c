"""Peak memory of one Mongo read, measured in a process of its own (run by
``test_mongo_bounds.py``): :class:`relay_nb.testing.memory.PeakGrowth` around the read, after
everything it needs is imported and warmed up.

    python rss_probe.py URL DATABASE COLLECTION MODE [PIPELINE_JSON]

MODE is ``raw-find`` / ``raw-aggregate`` (plain pymongo, ``list(cursor)``) or
``connector-find`` / ``connector-aggregate`` (a ``MongoConnector`` with its default byte
limits, its catalog pass included). Everything both need is imported and warmed up before the
baseline is taken. Prints one JSON line: the peak growth in bytes, and what was read.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from relay_nb.testing.memory import PeakGrowth


def main(url: str, database: str, collection: str, mode: str, pipeline: str = "[]") -> None:
    import pandas as pd
    import pymongo

    from relay_nb.connectors.mongo import MongoConnector
    from relay_nb.connectors.mongo.values import documents_frame

    stages: list[dict[str, Any]] = json.loads(pipeline)
    client: pymongo.MongoClient = pymongo.MongoClient(url, serverSelectionTimeoutMS=10_000)
    coll = client[database][collection]
    list(coll.find({}, {"n": 1}))  # connected, pools warm, the decoder loaded
    documents_frame([{"a": 1}], max_depth=1)
    pd.DataFrame({"a": [1]}).to_csv()
    report: dict[str, Any] = {"mode": mode}
    with PeakGrowth() as growth:
        if mode == "raw-find":
            documents = list(coll.find({}))
            report["rows"] = len(documents)
            report["bytes_held"] = sum(len(d.get("text", "")) for d in documents)
        elif mode == "raw-aggregate":
            documents = list(coll.aggregate(stages))
            report["rows"] = len(documents)
            report["bytes_held"] = sum(len(d.get("text", "")) for d in documents)
        else:
            connector = MongoConnector("big", url, database=database, collections=[collection])
            connector.object_names()  # the catalog pass samples the large documents too
            if mode == "connector-find":
                result = connector.find(collection)
            else:
                result = connector.aggregate(collection, stages)
            report["rows"] = result.row_count
            report["limit"] = result.limit
            report["longest_value"] = max(len(text.encode()) for text in result.df["text"])
            connector.close()
    report["baseline"] = growth.baseline
    report["growth"] = growth.bytes
    print(json.dumps(report))


if __name__ == "__main__":
    main(*sys.argv[1:])
