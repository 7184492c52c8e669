"""``python -m attention_atlas.cli …``: the same command line as ``python -m attention_atlas``."""

import sys

from attention_atlas.cli import main

sys.exit(main())
