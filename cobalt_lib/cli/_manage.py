"""`cobalt clean`, `cobalt export` and `cobalt rescore`."""
