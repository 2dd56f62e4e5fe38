"""cobalt on Dagster: experiments as partitioned assets, gates as asset checks (coming next)."""

__all__: list[str] = []
