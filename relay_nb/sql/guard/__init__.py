"""The SQL guard: one model-written query in, the checked and re-serialised SQL that may run
out, or ``UnsafeQueryError(rule, message)``.

- ``query.py`` — the pipeline (:func:`~relay_nb.sql.guard.query.guard_query`), its result,
  and table references resolved against the allowlist;
- ``text.py`` — the text front end: characters, tokens, one statement, the parse;
- ``walk.py`` — every node once, with CTE names in scope, handed to the family's rules;
- ``limit.py`` — the LIMIT injected or clamped in the tree;
- ``output.py`` — the tree written out within a budget;
- ``readback.py`` — the written text must read back as the checked tree;
- ``rules.py`` — what every dialect refuses, as data; ``lookups.py`` — PostgreSQL's
  catalog-lookup functions and casts, as data;
- ``policies/`` — one policy class per dialect family (its functions, table functions,
  rules); ``sizes/`` — the bound on the values a query can build (DuckDB, SQLite).
"""
