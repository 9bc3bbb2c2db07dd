"""`python -m nxe` is the `nxe` command."""

import sys

from .cli import main

sys.exit(main())
