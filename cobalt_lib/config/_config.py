"""Configuration: `cobalt.config.py`, `cobalt.toml` or `[tool.cobalt]`, with defaults for all."""

from __future__ import annotations

import difflib
import importlib.util
import math
import re
import sys
import tomllib
from pathlib import Path
from typing import Any, Literal, TypeGuard, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator

from .._errors import ConfigError

CONFIG_FILES = ("cobalt.config.py", "cobalt.toml", "pyproject.toml")

Provider = Literal["openai", "anthropic", "openrouter"]

#: The environment variable holding each provider's API key (as _providers.KEY_VARIABLES).
_KEY_VARIABLES = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY", "openrouter": "OPENROUTER_API_KEY"}


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class JudgeConfig(_Section):
    provider: Provider = "openai"
    model: str | None = Field(default=None, description="default: the provider's, see DEFAULT_MODELS")
    base_url: str | None = None
    api_key: SecretStr | None = Field(default=None, exclude=True, repr=False)
    temperature: float | None = 0.0
    max_tokens: int = 512
    max_retries: int = Field(default=4, ge=0, le=20, description="retries on 429, 5xx, connection errors")
    retry_max_seconds: float = Field(default=120.0, gt=0, description="total time budget for retries")
    timeout: float = Field(default=60.0, gt=0, description="seconds per judge request")
    #: Send the run's judge calls through the provider's batch API (OpenAI Batch, Anthropic Message Batches)
    #: at half the price, answers within hours instead of seconds: for scheduled runs (docs/judge.md).
    batch: bool = False
    #: How long a run waits on a batch before it stops, resumable (the providers' own window is 24 h).
    batch_deadline: str | int = "24h"
    #: A batch goes out once no judge call has joined it for this long (or it is full).
    batch_window: str | float = "2s"

    @field_validator("batch_deadline", "batch_window", mode="before")
    @classmethod
    def _check_durations(cls, value: Any, info: Any) -> Any:
        parse_duration(value, field=f"judge.{info.field_name}")
        return value

    @property
    def batch_window_seconds(self) -> float:
        return parse_duration(self.batch_window, field="judge.batch_window")

    @property
    def batch_deadline_seconds(self) -> float:
        return parse_duration(self.batch_deadline, field="judge.batch_deadline")

    def batch_mode(self) -> bool:
        """`batch`, unless COBALT_JUDGE_BATCH (1/true/yes or 0/false/no) says otherwise."""
        import os

        value = os.environ.get(BATCH_VARIABLE, "").strip().lower()
        if not value:
            return self.batch
        if value in ("1", "true", "yes", "on"):
            return True
        if value in ("0", "false", "no", "off"):
            return False
        raise ConfigError(f"{BATCH_VARIABLE}={value!r} is not a yes or no; set it to 1 or 0.")


#: The environment variable that overrides `[judge] batch` (a schedule's or a CI job's runs, say).
BATCH_VARIABLE = "COBALT_JUDGE_BATCH"


class EmbeddingsConfig(_Section):
    provider: Provider | None = None
    model: str = "text-embedding-3-small"
    base_url: str | None = None


class CacheConfig(_Section):
    enabled: bool = True
    ttl: str | int = "7d"

    @field_validator("ttl", mode="before")
    @classmethod
    def _check_ttl(cls, value: Any) -> Any:
        parse_duration(value, field="cache.ttl")
        return value

    @property
    def ttl_seconds(self) -> float:
        return parse_duration(self.ttl, field="cache.ttl")


class DashboardConfig(_Section):
    port: int = 4000
    #: cobalt's own pages (runs, run detail, compare, trends); default: `port` + 1.
    pages_port: int | None = None
    open: bool = False
    #: The Dagster definitions module `cobalt serve` loads (`--module` wins over it).
    module: str | None = None


RecordMode = Literal["daemon", "inline", "off"]
#: The environment variable that overrides `[dagster] record`.
RECORD_VARIABLE = "COBALT_DAGSTER_RECORD"


class DatasetsConfig(_Section):
    """Stored datasets (docs/datasets.md)."""

    #: Experiments Dagster runs whenever a new version of the stored dataset they follow appears
    #: (`Dataset.from_store("qa")`, not pinned), besides their schedules.
    evaluate_on_new_version: list[str] = Field(default_factory=list)


class DagsterConfig(_Section):
    """How runs meet Dagster (docs/dagster.md)."""

    #: How a run Dagster did not launch (`cobalt run`, `.run()`) is recorded in Dagster: by the record sensor
    #: of a running daemon (`daemon`), by the command before it exits (`inline`), or not at all (`off`).
    record: RecordMode = "daemon"
    #: Items per shard of a run Dagster launches (a run this small or smaller is one shard).
    shard_items: int = Field(default=2000, ge=1)
    #: Where shards leave their rows for `merge`: a directory (relative to the project) or an fsspec URL
    #: such as `s3://bucket/prefix`; default `<output_dir>/exchange`.
    exchange: str | None = None

    def record_mode(self) -> RecordMode:
        """`record`, unless COBALT_DAGSTER_RECORD says otherwise."""
        import os

        value = os.environ.get(RECORD_VARIABLE, "").strip()
        if not value:
            return self.record
        if value not in get_args(RecordMode):
            raise ConfigError(f"{RECORD_VARIABLE}={value!r} is not a record mode; set it to daemon, inline or off.")
        return value  # type: ignore[return-value]


class StoreConfig(_Section):
    """The results store (docs/store.md)."""

    #: A value (output, input, error, traceback, judge answer) longer than this many UTF-8 bytes is stored
    #: cut, with a marker and its length, and kept whole in `<output_dir>/values/`.
    max_value_bytes: int = Field(default=8 * 1024 * 1024, ge=1024, le=256 * 1024 * 1024)
    #: Seconds a write waits for another process's lock on the store before it gives up (a run's rows then
    #: wait on disk, in `<output_dir>/journal/`, for the next command).
    lock_timeout: float = Field(default=60.0, gt=0)
    #: The team store: a Postgres URL (`postgresql://user@host:5432/db`, docs/store.md); unset, the embedded
    #: `<output_dir>/cobalt.duckdb`. COBALT_STORE_URL wins over it. The password never goes in the file.
    url: str | None = None

    @field_validator("url")
    @classmethod
    def _no_password_in_file(cls, value: str | None) -> str | None:
        from urllib.parse import urlsplit

        if value is None or not value.strip():
            return None
        value = value.strip()
        if not value.startswith(("postgresql://", "postgres://")):
            raise ValueError("is not a Postgres URL; write postgresql://user@host:5432/database")
        if urlsplit(value).password is not None:
            raise ValueError("must not hold a password in a file; put the password in PGPASSWORD or ~/.pgpass, "
                             "or the whole URL in COBALT_STORE_URL")
        return value

    def team_url(self) -> str | None:
        """The team store's URL: COBALT_STORE_URL when set, else `url`; None for the embedded store."""
        import os

        return os.environ.get(STORE_URL_VARIABLE, "").strip() or self.url


#: The environment variable naming the team store (it wins over `[store] url`).
STORE_URL_VARIABLE = "COBALT_STORE_URL"


class MonitorConfig(_Section):
    """Production traces and the monitors that score them (docs/monitors.md)."""

    #: Production traces older than this many days are deleted when new ones arrive (0: kept forever).
    keep_days: int = Field(default=30, ge=0)
    #: `module:function` called on every received span (a dict: name, attributes, events...) before it is
    #: stored: it returns the span to store (changed as it likes), or None to drop it.
    redact: str | None = None
    #: The largest request body `cobalt collect` takes (bytes, after gzip too); larger ones get 413.
    max_body_bytes: int = Field(default=16 * 1024 * 1024, ge=1024)


#: The environment variable that turns on the export of evaluations (`[traces] export_evaluations`).
EXPORT_VARIABLE = "COBALT_EXPORT_EVALUATIONS"


class TracesConfig(_Section):
    """The agent's OpenTelemetry spans, and cobalt's scores sent out as OpenTelemetry events (docs/traces.md)."""

    #: Collect the spans the agent emits during a run, per item (the `spans` table).
    collect: bool = True
    #: The most spans kept per agent call; more are counted, not kept.
    max_spans: int = Field(default=1000, ge=1, le=1_000_000)
    #: Send every evaluation as a `gen_ai.evaluation.result` event to the OTLP endpoint that the standard
    #: OTEL_EXPORTER_OTLP_* variables name (COBALT_EXPORT_EVALUATIONS=1 turns it on too).
    export_evaluations: bool = False

    def exporting(self) -> bool:
        """`export_evaluations`, or COBALT_EXPORT_EVALUATIONS set to 1/true/yes (0/false/no turns it off)."""
        import os

        value = os.environ.get(EXPORT_VARIABLE, "").strip().lower()
        if not value:
            on = self.export_evaluations
        elif value in ("1", "true", "yes", "on"):
            on = True
        elif value in ("0", "false", "no", "off"):
            on = False
        else:
            raise ConfigError(f"{EXPORT_VARIABLE}={value!r} is not a yes or no; set it to 1 or 0.")
        if on:
            _no_credentials_in_endpoints(os.environ)
        return on


#: The variables naming where the OpenTelemetry SDK sends the exported evaluations.
_OTLP_ENDPOINTS = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT")


def _no_credentials_in_endpoints(environ: Any) -> None:
    """An OTLP endpoint with a user and password in it would be printed whole by the SDK's export errors."""
    from urllib.parse import urlsplit

    for name in _OTLP_ENDPOINTS:
        try:
            has_user = bool(urlsplit(environ.get(name, "")).username)
        except ValueError:
            has_user = False
        if has_user:
            raise ConfigError(f"{name} holds credentials in its URL, which the OpenTelemetry SDK prints in its export "
                              "errors; put them in OTEL_EXPORTER_OTLP_HEADERS instead (e.g. "
                              "authorization=Basic%20<base64>).")


class Bound(_Section):
    min: float | None = None
    max: float | None = None


class CIConfig(_Section):
    #: The largest share of errors a run may have and pass: failed or timed-out agent calls, eval-errors and
    #: items repeating an earlier item's id, over agent calls plus evaluations. 0: any error fails the run.
    max_error_rate: float = Field(default=0.0, ge=0, le=1)
    #: Kept so that `fail_on_error = true` (which is now the default) still loads; `false` is refused.
    fail_on_error: bool = True
    thresholds: dict[str, Bound] = Field(default_factory=dict)

    @field_validator("fail_on_error")
    @classmethod
    def _errors_fail_by_default(cls, value: bool) -> bool:
        if not value:
            raise ConfigError("ci.fail_on_error = false no longer exists: failed or timed-out agent calls, eval-errors "
                              "and duplicate item ids fail a run by default; remove the line and set "
                              "ci.max_error_rate = 0.05 (a share of attempts, 1 allows every error) to let some pass.")
        return value

    @field_validator("thresholds", mode="before")
    @classmethod
    def _tables_only(cls, value: Any) -> Any:
        for path, bound in value.items() if isinstance(value, dict) else ():
            if isinstance(bound, int | float) and not isinstance(bound, bool):
                raise ConfigError(f"ci.thresholds.{path} = {bound} needs a direction: write {{ min = {bound} }} "
                                  f"(must reach it) or {{ max = {bound} }} (must stay under it).")
        return value


class Schedule(_Section):
    cron: str
    timezone: str = "UTC"
    #: Judge this schedule's runs through the provider's batch API (half price, answers within hours);
    #: unset: as `[judge] batch` says.
    judge_batch: bool | None = None


class Price(_Section):
    """US dollars per million tokens."""

    input: float = Field(ge=0)
    output: float = Field(ge=0)


class Config(_Section):
    """The whole configuration. Build one in Python with `define_config(...)`."""

    test_dir: str = "experiments"
    test_match: list[str] = Field(default_factory=lambda: ["**/*.cobalt.py", "**/*_experiment.py"])
    output_dir: str = ".cobalt"
    concurrency: int = Field(default=5, ge=1)
    judge_concurrency: int | None = Field(default=None, ge=1)
    timeout: float = Field(default=30.0, gt=0)
    webhooks: list[str] = Field(default_factory=list)
    judge: JudgeConfig = Field(default_factory=JudgeConfig)
    embeddings: EmbeddingsConfig = Field(default_factory=EmbeddingsConfig)
    cache: CacheConfig = Field(default_factory=CacheConfig)
    dashboard: DashboardConfig = Field(default_factory=DashboardConfig)
    ci: CIConfig = Field(default_factory=CIConfig)
    dagster: DagsterConfig = Field(default_factory=DagsterConfig)
    datasets: DatasetsConfig = Field(default_factory=DatasetsConfig)
    store: StoreConfig = Field(default_factory=StoreConfig)
    traces: TracesConfig = Field(default_factory=TracesConfig)
    monitor: MonitorConfig = Field(default_factory=MonitorConfig)
    schedules: dict[str, Schedule] = Field(default_factory=dict)
    prices: dict[str, Price] = Field(default_factory=dict)

    #: Where the configuration was found; not a config key.
    root: Path = Field(default_factory=Path.cwd, exclude=True)
    source: Path | None = Field(default=None, exclude=True)
    #: Other config files beside `source`, which it shadows (only the first of CONFIG_FILES counts).
    shadowed: list[Path] = Field(default_factory=list, exclude=True)

    @property
    def output_path(self) -> Path:
        out = Path(self.output_dir)
        return out if out.is_absolute() else self.root / out

    def public_dict(self) -> dict[str, Any]:
        """The configuration as JSON-safe data, without secrets."""
        return self.model_dump(mode="json")


def define_config(**options: Any) -> Config:
    """Declare the configuration in `cobalt.config.py`: `config = define_config(concurrency=10)`.

    The same keys as `cobalt.toml`. API keys may be passed here (`judge={"api_key": ...}`), read
    from wherever you keep secrets; they are never written anywhere.
    """
    return _validate(options, "define_config(...)")


#: What marks a project without a config file: its experiments (the default `test_dir`) or its store
#: (the default `output_dir`).
_PROJECT_MARKERS = ("experiments", ".cobalt")


def find_project_root(start: Path | None = None) -> tuple[Path, Path | None]:
    """The nearest directory upward from `start` holding a config file, and that file; without one, the
    nearest holding `experiments/` or `.cobalt/` (so a command run from a subdirectory opens the
    project's store, not a second one there); else `start` itself."""
    here = (start or Path.cwd()).resolve()
    for directory in (here, *here.parents):
        for name in CONFIG_FILES:
            candidate = directory / name
            if candidate.is_file() and (name != "pyproject.toml" or _has_tool_cobalt(candidate)):
                return directory, candidate
    return _marked_root(here) or here, None


def _marked_root(here: Path) -> Path | None:
    for directory in (here, *here.parents):
        if any((directory / marker).is_dir() for marker in _PROJECT_MARKERS) and not _is_test_dir(directory):
            return directory
    return None


def _is_test_dir(directory: Path) -> bool:
    """`experiments/` itself (a store an earlier run left in it does not make it a project), unless it holds
    an `experiments/` of its own (a project that happens to be named so)."""
    return directory.name == _PROJECT_MARKERS[0] and not (directory / _PROJECT_MARKERS[0]).is_dir()


def load_config(start: Path | None = None) -> Config:
    """Find and load the project's configuration; defaults when there is none."""
    root, source = find_project_root(start)
    if source is None:
        config = Config()
    elif source.name == "cobalt.config.py":
        config = _load_python(source)
    elif source.name == "cobalt.toml":
        config = _validate(_read_toml(source), str(source))
    else:
        config = _validate(_read_toml(source).get("tool", {}).get("cobalt", {}), f"{source} [tool.cobalt]")
    config.root = root
    config.source = source
    if source is not None:
        config.shadowed = [root / name for name in CONFIG_FILES[CONFIG_FILES.index(source.name) + 1:]
                           if (root / name).is_file() and (name != "pyproject.toml" or _has_tool_cobalt(root / name))]
    return config


def parse_duration(value: str | int | float, *, field: str = "duration") -> float:
    """Seconds in `30`, `"90s"`, `"15m"`, `"12h"`, `"7d"`, `"2w"`."""
    hint = "write it like '90s', '15m', '12h' or '7d'"
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ConfigError(f"{field} = {value!r} is not a duration; {hint}.")
    if isinstance(value, int | float):
        if not math.isfinite(value) or value < 0:
            raise ConfigError(f"{field} = {value!r} is not a duration; use zero or more seconds, or {hint}.")
        return float(value)
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*", value)
    if not match:
        raise ConfigError(f"{field} = {value!r} is not a duration; {hint}.")
    unit = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}[match.group(2)]
    return float(match.group(1)) * unit


def _has_tool_cobalt(pyproject: Path) -> bool:
    try:
        return "cobalt" in _read_toml(pyproject).get("tool", {})
    except ConfigError:
        return False


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8-sig"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML ({exc}).") from None


def _load_python(path: Path) -> Config:
    spec = importlib.util.spec_from_file_location("_cobalt_user_config", path)
    if spec is None or spec.loader is None:
        raise ConfigError(f"{path}: cannot be loaded as a Python file.")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    except Exception as exc:
        raise ConfigError(f"{path} raised {type(exc).__name__}: {exc}.") from exc
    finally:
        sys.modules.pop("_cobalt_user_config", None)
    config = getattr(module, "config", None)
    if not isinstance(config, Config):
        raise ConfigError(f"{path} must define `config = define_config(...)`.")
    return config


def _validate(data: dict[str, Any], where: str) -> Config:
    if where.endswith(".toml") or "[tool.cobalt]" in where:
        _reject_keys_in_file(data, where)
    _check_unknown_keys(data, Config, where, prefix="")
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(part) for part in first["loc"])
        # Never echo a secret back, even a malformed one.
        got = "a hidden value" if "api_key" in first["loc"] else repr(first.get("input"))
        raise ConfigError(f"{where}: {loc}: {first['msg']} (got {got}).") from None
    except ConfigError as exc:  # raised by a field validator, e.g. a bad cache.ttl
        raise ConfigError(f"{where}: {exc}") from None


def _reject_keys_in_file(data: dict[str, Any], where: str) -> None:
    judge = data.get("judge")
    if isinstance(judge, dict) and "api_key" in judge:
        variable = _KEY_VARIABLES.get(str(judge.get("provider", "openai")))
        instead = (f"set {variable}" if variable
                   else "set OPENAI_API_KEY, ANTHROPIC_API_KEY or OPENROUTER_API_KEY")
        raise ConfigError(
            f"{where}: judge.api_key must not be stored in a file; {instead} in the environment instead."
        )


def _check_unknown_keys(data: Any, model: type[BaseModel], where: str, prefix: str) -> None:
    if not isinstance(data, dict):
        return
    known = [name for name in model.model_fields if name not in {"root", "source"}]
    for key, value in data.items():
        if key not in known:
            close = difflib.get_close_matches(str(key), known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else f"; known keys: {', '.join(known)}."
            if prefix and key in Config.model_fields and key not in {"root", "source"} and where.endswith(".toml"):
                # TOML puts a key written below a [table] line into that table: usually one appended at the end
                hint = f"; {key!r} is a top-level key: move it above the first [table] line"
            raise ConfigError(f"{where}: unknown key {prefix + str(key)!r}{hint}")
        annotation = model.model_fields[key].annotation
        if _is_model(annotation):
            _check_unknown_keys(value, annotation, where, prefix=f"{prefix}{key}.")
        elif get_origin(annotation) is dict and isinstance(value, dict):
            # dict[str, Model] tables such as ci.thresholds, schedules and prices
            inner = get_args(annotation)[1]
            if _is_model(inner):
                for name, entry in value.items():
                    _check_unknown_keys(entry, inner, where, prefix=f"{prefix}{key}.{name}.")


def _is_model(annotation: Any) -> TypeGuard[type[BaseModel]]:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)
