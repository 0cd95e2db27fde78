"""`python -m devtool` is the `devtool` command."""

from __future__ import annotations

import sys

from devtool.cli import main

if __name__ == "__main__":
    sys.exit(main())
