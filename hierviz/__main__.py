"""``python -m hierviz ...`` runs the command line (see :mod:`hierviz.cli`)."""

import sys

from hierviz.cli import main

if __name__ == "__main__":
    sys.exit(main())
