"""``python -m vade``: the same CLI as the ``vade`` console script.

Workflow rules call it this way with the repository on ``PYTHONPATH``, so a job always runs the
checked-out code that Snakemake tracks, whichever environment (venv, conda, cluster image) it is in.
"""

import sys

from vade.cli import main

sys.exit(main())
