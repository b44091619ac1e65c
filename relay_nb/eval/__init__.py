"""Measuring answers on the analyst's own questions (issue 20): the result-set comparison
first (:mod:`relay_nb.eval.compare`); the question bank, runs and reports build on it."""

from __future__ import annotations

from relay_nb.eval.compare import ColumnPolicy, Comparison, MissReason, Table, compare_results

__all__ = ["ColumnPolicy", "Comparison", "MissReason", "Table", "compare_results"]
