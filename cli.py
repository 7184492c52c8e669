"""``python cli.py …`` from a checkout: the same command line as the installed ``atlas`` script."""

import sys

from attention_atlas.cli import main

if __name__ == "__main__":
    sys.exit(main())
