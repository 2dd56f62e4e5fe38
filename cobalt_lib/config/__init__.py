"""The project configuration: `cobalt.toml`, `[tool.cobalt]` or `cobalt.config.py`, validated."""

from __future__ import annotations

from ._config import (
    CONFIG_FILES,
    CacheConfig,
    CIConfig,
    Config,
    DagsterConfig,
    DashboardConfig,
    DatasetsConfig,
    EmbeddingsConfig,
    JudgeConfig,
    Price,
    Schedule,
    TracesConfig,
    define_config,
    find_project_root,
    load_config,
    parse_duration,
)

__all__ = [
    "CONFIG_FILES",
    "CIConfig",
    "CacheConfig",
    "Config",
    "DagsterConfig",
    "DashboardConfig",
    "DatasetsConfig",
    "EmbeddingsConfig",
    "JudgeConfig",
    "Price",
    "Schedule",
    "TracesConfig",
    "define_config",
    "find_project_root",
    "load_config",
    "parse_duration",
]
