"""The value-size rule: how large a value a query can build, bounded from the parsed tree
before the query runs (DuckDB and SQLite run in the analyst's kernel; DESIGN §11).

A subsystem of its own inside the guard: the policies of the in-process families give it a
table of functions and limits, the guard runs it once on the whole tree. The parts:

- :mod:`model`: sizes as ``A + Σ m_c·|c|`` bounds, value kinds, limits, the family's table;
- :mod:`sizer`: the walk over the tree (scopes, CTEs, aliases, lambdas) and the rule itself;
- :mod:`nodes`: how each expression node's size follows from its children;
- :mod:`call` and :mod:`kinds`: a function call and the handler for each kind of function,
  with :mod:`patterns` (format strings, replace), :mod:`series` and :mod:`text` (printed and
  escaped text) for the larger kinds;
- :mod:`counts`: counts taken from the data (``repeat(x, n)``), bounded or rewritten;
- :mod:`expansion`: functions the dialect writes out as other SQL, sized as that SQL;
- :mod:`scope` and :mod:`steps`: relations in scope, and growth across recursive steps.
"""

from relay_nb.sql.guard.sizes.model import SizeLimits, SizeRule, size_table
from relay_nb.sql.guard.sizes.sizer import RULE, bound_value_sizes

__all__ = ["RULE", "SizeLimits", "SizeRule", "bound_value_sizes", "size_table"]
