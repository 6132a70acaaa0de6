"""``python -m rdl``: the ``rdl`` command (also what ``torchrun -m rdl`` runs)."""
import sys

from rdl.cli import main

sys.exit(main())
