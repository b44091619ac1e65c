"""The SQL connector: any SQLAlchemy database, guarded, read-only, results as DataFrames."""
