"""Connectors: each wraps one real system and contributes tools and prompt context.

Nothing here knows about the agent loop or notebooks. Drivers (psycopg, pymysql, duckdb,
pymongo, httpx) are imported only when a connector of that kind is created.
"""
