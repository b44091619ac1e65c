"""A catalog as prompt context: one line per table (``lines.py``), rendered within a token
budget (``render.py``), the tables ranked by the question when it does not all fit
(``ranking.py``, with the glossary in ``synonyms.py``), and the full details the
``describe_<id>`` tool answers with (``describe.py``)."""
