"""`python -m hedwig ...` is the `hedwig` command."""

import sys

from hedwig.cli import main

sys.exit(main())
