"""Peak memory of one Mongo read, measured in a process of its own (run by
``test_mongo_bounds.py``: a peak is a high-water mark, so every measurement needs a fresh
process).

The peak is the one ``getrusage(RUSAGE_SELF).ru_maxrss`` reports, read from the process's own
address space (``VmHWM`` in ``/proc/self/status``): Linux starts a new program's ``ru_maxrss``
at the resident size of the process it was spawned from (pytest, well over 100 MB), which
would hide any growth below it. Both are printed.

    python rss_probe.py URL DATABASE COLLECTION MODE [PIPELINE_JSON]

MODE is ``raw-find`` / ``raw-aggregate`` (plain pymongo, ``list(cursor)``) or
``connector-find`` / ``connector-aggregate`` (a ``MongoConnector`` with its default byte
limits, its catalog pass included). Everything both need is imported and warmed up before the
baseline is taken. Prints one JSON line: the peak growth in bytes, and what was read.
"""

from __future__ import annotations

import json
import resource
import sys
from typing import Any


def _peak() -> int:
    """This address space's peak resident bytes (``VmHWM``; ``ru_maxrss`` without what the
    spawning process left in it)."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return _maxrss()


def _maxrss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux


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
    baseline = _peak()
    report: dict[str, Any] = {"mode": mode}
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
    report["baseline"] = baseline
    report["growth"] = _peak() - baseline
    report["ru_maxrss"] = _maxrss()
    print(json.dumps(report))


if __name__ == "__main__":
    main(*sys.argv[1:])
