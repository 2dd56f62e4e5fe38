"""Human labels: set one on an item of a run, read a run's labels, the labelling queue of an evaluator.

A label is a number on its evaluator's scale (`calibration._scales`), stored by (experiment, evaluator,
item identity), so it applies to every later run of the same item. What the pages, `cobalt labels` and
`cobalt calibrate` call.
"""

from __future__ import annotations

import getpass
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from .._errors import ConfigError
from ..config._config import Config
from ..results._identity import content_hash, item_identity
from ..store._store import Store
from .calibration._scales import SCALE_TEXT, Scale, category, judged_value, label_value, scale_of
from .calibration._verdict import MIN_RELIABLE_SAMPLES

#: The longest note kept with a label (characters).
MAX_NOTE = 4000


class Label(BaseModel):
    """One current label: `value` on the evaluator's `scale`."""

    experiment: str
    evaluator: str
    item_id: str
    value: float
    note: str = ""
    who: str = ""
    set_at: str = ""
    run_id: str | None = None
    item_index: int | None = None
    #: A hash of the output the person saw when labelling (None: imported, output unknown).
    output_hash: str | None = None


class EvaluatorScale(BaseModel):
    """An evaluator of a run and the scale people label it on."""

    name: str
    type: str
    scale: Scale


class LabelQueue(BaseModel):
    """Which items of a run to label next for one evaluator: the unlabelled ones first, spread across the
    evaluator's score range, then the labelled ones; and the progress toward a reliable calibration."""

    run_id: str
    experiment: str
    evaluator: str
    scale: Scale
    order: list[int] = Field(default_factory=list)
    labelled: int = 0
    target: int = MIN_RELIABLE_SAMPLES
    items: int = 0

    @property
    def progress(self) -> str:
        """`23 of 50`, and how many items the run has when it has fewer than the target."""
        fewer = f" (this run has {self.items} items)" if self.items < self.target else ""
        return f"{self.labelled} of {self.target}{fewer}"


#: The environment variable naming the person labelling (wins over the user's config file).
USER_VARIABLE = "COBALT_USER"


def user_config_path() -> Path:
    """The user's own cobalt config (not the project's): `$XDG_CONFIG_HOME/cobalt/config.toml`, by default
    `~/.config/cobalt/config.toml`; its `[user] name` names the person labelling on this machine."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "cobalt" / "config.toml"


def who_default(root: Path | None = None) -> str:
    """The person labelling: `COBALT_USER`, else `[user] name` in the user's config file, else the repository's
    `git config user.email` (read in `root`), else the account the command or the pages server runs as."""
    named = os.environ.get(USER_VARIABLE, "").strip() or _configured_name()
    if named:
        return named
    email = _git_email(root)
    if email:
        return email
    try:
        return getpass.getuser()
    except Exception:  # no user name in this environment (a container without one)
        return ""


def _configured_name() -> str:
    import tomllib

    path = user_config_path()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return ""
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: the user config is not readable TOML ({exc}); fix it or remove it.") from None
    user = data.get("user")
    name = user.get("name") if isinstance(user, dict) else None
    if name is not None and not isinstance(name, str):
        raise ConfigError(f"{path}: [user] name must be text, such as name = \"Ana Lima\".")
    return (name or "").strip()


def _git_email(root: Path | None) -> str:
    """`git config user.email` as git reads it (the repository's config, then the user's global and XDG
    ones), read from the files: no git process per label, and none needed on a machine without git."""
    for path in _git_configs(root or Path.cwd()):
        email = _config_value(path, "user", "email")
        if email:
            return email
    return ""


def _git_configs(root: Path) -> list[Path]:
    found: list[Path] = []
    for directory in (root.resolve(), *root.resolve().parents):
        dot = directory / ".git"
        if dot.is_dir():
            found.append(dot / "config")
            break
        if dot.is_file():  # a worktree or submodule: `gitdir: PATH`, whose `commondir` holds the config
            text = dot.read_text(encoding="utf-8", errors="replace").strip()
            gitdir = (directory / text.removeprefix("gitdir:").strip()).resolve()
            common = gitdir / "commondir"
            base = (gitdir / common.read_text(encoding="utf-8").strip()).resolve() if common.is_file() else gitdir
            found.append(base / "config")
            break
    home = Path.home()
    found.append(Path(os.environ.get("GIT_CONFIG_GLOBAL") or home / ".gitconfig"))
    found.append(Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config") / "git" / "config")
    return found


def _config_value(path: Path, section: str, key: str) -> str:
    import configparser

    parser = configparser.ConfigParser(strict=False, interpolation=None)
    try:
        parser.read_string(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, configparser.Error):  # absent, or a syntax configparser does not read
        return ""
    value = parser.get(section, key, fallback="").strip().strip('"')
    return value


def evaluator_scales(run: dict[str, Any]) -> dict[str, EvaluatorScale]:
    """The run's evaluators by name, each with its label scale."""
    found = {}
    for described in (run.get("config") or {}).get("evaluators") or []:
        if isinstance(described, dict) and isinstance(described.get("name"), str):
            found[described["name"]] = EvaluatorScale(name=described["name"], type=str(described.get("type")),
                                                      scale=scale_of(described))
    return found


def _evaluator(run: dict[str, Any], name: str) -> EvaluatorScale:
    scales = evaluator_scales(run)
    if name not in scales:
        listed = ", ".join(scales) or "none"
        raise ConfigError(f"Run {run['run_id']} of {run['experiment']!r} has no evaluator {name!r} (its evaluators: "
                          f"{listed}).")
    return scales[name]


def set_label(config: Config, run_id: str, index: int, evaluator: str, value: Any, *, note: str = "",
              who: str | None = None) -> Label | None:
    """Label item `index` of run `run_id` for `evaluator` (value None clears it); returns the label now set."""
    store = Store.for_config(config)
    with store.reading():  # one read-only connection for both reads; the write opens its own
        run = store.require_run(run_id)
        records = store.item_records(run_id, index)
    scale = _evaluator(run, evaluator).scale
    stored = None if value is None else label_value(scale, value)
    if value is not None and stored is None:
        raise ConfigError(f"Label {value!r} is not on the scale of evaluator {evaluator!r}: it takes "
                          f"{SCALE_TEXT[scale]}.")
    if not isinstance(note, str) or len(note) > MAX_NOTE:
        raise ConfigError(f"A label's note must be text of at most {MAX_NOTE} characters.")
    if not records:
        raise ConfigError(f"Run {run_id} has no item {index}; `cobalt show {run_id}` lists its items.")
    row = {"experiment": run["experiment"], "evaluator": evaluator, "item_id": identity_of(records[0]),
           "value": stored, "note": note.strip(), "who": who_default(config.root) if who is None else who,
           "set_at": datetime.now(UTC).isoformat(), "run_id": run_id, "item_index": index,
           "output_hash": output_hash(records[0].get("output"))}
    store.add_labels([row])
    return None if stored is None else Label(**row)


def output_hash(output: Any) -> str:
    """What a label was set on: the hash of the output the person read."""
    return content_hash({"output": output})


def identity_of(record: dict[str, Any]) -> str:
    return str(record.get("item_id") or record.get("input_hash") or item_identity(record.get("input") or {}))


def current_labels(config: Config, experiment: str, evaluator: str | None = None) -> list[Label]:
    """The experiment's current labels (of one evaluator), oldest first."""
    rows = Store.for_config(config).labels(experiment, evaluator)
    return [_label(r) for r in rows]


def _label(row: dict[str, Any]) -> Label:
    at = row.get("set_at")
    return Label(experiment=row["experiment"], evaluator=row["evaluator"], item_id=row["item_id"],
                 value=float(row["value"]), note=row.get("note") or "", who=row.get("who") or "",
                 set_at=at.isoformat() if isinstance(at, datetime) else str(at or ""), run_id=row.get("run_id"),
                 item_index=row.get("item_index"), output_hash=row.get("output_hash"))


def run_labels(config: Config, run_id: str, indices: list[int] | None = None) -> dict[str, Any]:
    """The labels of a run's items: `{"scales": {evaluator: scale}, "labels": {index: {evaluator: label}}}`,
    for the items `indices` (default: every item)."""
    store = Store.for_config(config)
    with store.reading():  # one read-only connection for every read
        return _run_labels(config, store, run_id, indices)


def _run_labels(config: Config, store: Store, run_id: str, indices: list[int] | None) -> dict[str, Any]:
    run = store.require_run(run_id)
    scales = evaluator_scales(run)
    identities = _identities(store, run_id)
    wanted = identities if indices is None else {i: identities[i] for i in indices if i in identities}
    by_id: dict[str, list[int]] = {}
    for index, ident in wanted.items():
        by_id.setdefault(ident, []).append(index)
    labels: dict[int, dict[str, Any]] = {}
    for label in current_labels(config, run["experiment"]):
        for index in by_id.get(label.item_id, []):
            labels.setdefault(index, {})[label.evaluator] = label.model_dump(mode="json")
    return {"experiment": run["experiment"], "scales": {n: s.scale for n, s in scales.items()},
            "labels": labels, "target": MIN_RELIABLE_SAMPLES}


def _identities(store: Store, run_id: str) -> dict[int, str]:
    """`{item_index: identity}` of the run's items."""
    return store.item_identities(run_id)


def label_queue(config: Config, run_id: str, evaluator: str, *, second_for: str | None = None) -> LabelQueue:
    """The run's items in labelling order for `evaluator`: unlabelled items whose score is usable first,
    taken in turn from each of the scale's score bands (so the first labels span the range), then
    unlabelled items without a usable score, then the labelled ones (by index).

    `second_for` (a person): a second opinion first, the items only one other person labelled (by index),
    so that agreement between people can be measured; then the order above, without the items that person
    labelled already."""
    store = Store.for_config(config)
    with store.reading():  # one read-only connection for every read
        return _label_queue(config, store, run_id, evaluator, second_for)


def _label_queue(config: Config, store: Store, run_id: str, evaluator: str,
                 second_for: str | None = None) -> LabelQueue:
    run = store.require_run(run_id)
    scale = _evaluator(run, evaluator).scale
    identities = _identities(store, run_id)
    people: dict[str, set[str]] = {}
    for label in current_labels(config, run["experiment"], evaluator):
        people.setdefault(label.item_id, set()).add(label.who)
    if second_for is not None:
        return _second_opinion(run, evaluator, scale, identities, people, second_for)
    labelled = set(people)
    judged: dict[int, float] = {}
    for row in store.evaluator_scores(run_id, evaluator):
        value = judged_value(scale, row.get("score"), row.get("raw_score"), row.get("passed"))
        if value is not None:
            judged[int(row["item_index"])] = value
    bands: dict[int, list[int]] = {}
    for index in sorted(i for i in identities if identities[i] not in labelled and i in judged):
        bands.setdefault(category(scale, judged[index]), []).append(index)
    order = _round_robin([bands[b] for b in sorted(bands)])
    order += sorted(i for i in identities if identities[i] not in labelled and i not in judged)
    done = sorted(i for i in identities if identities[i] in labelled)
    return LabelQueue(run_id=run_id, experiment=run["experiment"], evaluator=evaluator, scale=scale,
                      order=order + done, labelled=len({identities[i] for i in done}),
                      items=len(set(identities.values())))


def _second_opinion(run: dict[str, Any], evaluator: str, scale: Scale, identities: dict[int, str],
                    people: dict[str, set[str]], who: str) -> LabelQueue:
    alone = sorted(i for i, ident in identities.items() if len(people.get(ident, set())) == 1
                   and who not in people[ident])
    theirs = sorted(i for i, ident in identities.items() if who in people.get(ident, set()))
    rest = sorted(i for i in identities if i not in alone and i not in theirs)
    return LabelQueue(run_id=run["run_id"], experiment=run["experiment"], evaluator=evaluator, scale=scale,
                      order=alone + rest + theirs, labelled=len({identities[i] for i in theirs}),
                      items=len(set(identities.values())))


def _round_robin(bands: list[list[int]]) -> list[int]:
    order: list[int] = []
    for turn in range(max((len(b) for b in bands), default=0)):
        order += [band[turn] for band in bands if turn < len(band)]
    return order
