"""`cobalt history` and `cobalt compare`."""
