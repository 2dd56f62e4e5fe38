"""`python -m cobalt_lib.worker`: the run worker process (see `_daemon`)."""

from ._daemon import main

main()
