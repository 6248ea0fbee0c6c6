"""The typed errors of hedwig.protocol.errors, where applications import them from.

Statuses and their exceptions are the protocol's (hedwig.protocol.errors holds them, so
that the protocol session and its redirect rule raise them without depending on a
client); this module keeps the name every client application and the CLI use.
"""

from hedwig.protocol.errors import *  # noqa: F403
from hedwig.protocol.errors import __all__  # noqa: F401
