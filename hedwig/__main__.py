"""`python -m hedwig ...` is the `hedwig` command."""

import sys

from hedwig.commands.main import main

sys.exit(main())
