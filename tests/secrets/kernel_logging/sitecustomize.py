"""Put on ``PYTHONPATH`` by the secrets suite: relay_nb's log at DEBUG, in a file.

Python imports ``sitecustomize`` at start-up, so every process the suite starts — notebook
kernels, the ``relay-nb`` command and the kernel it starts for ``demo --notebook`` — logs
relay_nb's records (all levels) and every other logger's warnings to
``$RELAY_SECRETS_LOG_DIR/python-<pid>.log``, where the suite scans them. Without that
variable this file does nothing.
"""

import logging
import os

_directory = os.environ.get("RELAY_SECRETS_LOG_DIR")
if _directory:
    _handler = logging.FileHandler(
        os.path.join(_directory, f"python-{os.getpid()}.log"), encoding="utf-8"
    )
    _handler.setLevel(logging.DEBUG)
    _handler.setFormatter(logging.Formatter("%(process)d %(name)s %(levelname)s %(message)s"))
    logging.getLogger().addHandler(_handler)
    logging.getLogger("relay_nb").setLevel(logging.DEBUG)
