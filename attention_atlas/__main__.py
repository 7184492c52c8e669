"""``python -m attention_atlas …``: the ``atlas`` command line."""

import sys

from attention_atlas.cli import main

sys.exit(main())
