"""``python -m sleuth``: the same as the ``sleuth`` command."""

from sleuth.launcher import main

main()
