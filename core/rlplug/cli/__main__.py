"""``python -m rlplug.cli`` (what torchrun runs on every rank, and what the tests call)."""

import sys

from . import main

sys.exit(main())
