"""The MongoDB connector: sampled collection shapes, ``find`` and a guarded ``aggregate``.

Importing this package does not import pymongo; creating a connector does.
"""

from relay_nb.connectors.mongo.connector import MongoConnector

__all__ = ["MongoConnector"]
