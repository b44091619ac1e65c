"""``python -m relay_nb.cli``: the ``relay-nb`` command without the console script."""

from relay_nb.cli import main

raise SystemExit(main())
