"""What a database holds, as the guard and the prompt see it: the catalog model
(``model.py``: tables, columns, keys, profiles) and the value profiles read with it
(``profile.py``). Reading a catalog from a live database is the connector's
(:mod:`relay_nb.connectors.sql.introspect`, Spark's ``catalog.py``)."""
