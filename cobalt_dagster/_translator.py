"""`CobaltTranslator`: how an experiment's stages and gates become Dagster asset and check specs, as
`DagsterDbtTranslator` does for dbt models. Subclass it to follow a host project's conventions (key
prefixes, groups, owners, tags) and pass it to `build_definitions(translator=...)`; `CobaltComponent`
builds one from the `translation:` block of its `defs.yaml`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import dagster as dg

from cobalt_lib import Experiment
from cobalt_lib.gates import Assertion
from cobalt_lib.links import dagster_check_name, dagster_name

#: The stages of every experiment, in the order they run.
STAGES = ("dataset", "outputs", "scores", "aggregates")

_SENTENCES = {
    "dataset": "The dataset items of each run",
    "outputs": "The agent's output for every item",
    "scores": "Every evaluator's score of every output",
    "aggregates": "Statistics per evaluator, run metrics and the gates' verdicts",
}


class CobaltTranslator:
    """The specs of an experiment's assets and gate checks. The defaults: keys `<experiment>/<stage>`,
    one group per experiment named like its key prefix, and a check per gate on `aggregates`."""

    def get_asset_spec(self, experiment: Experiment, stage: str) -> dg.AssetSpec:
        """The spec of `stage` (one of `STAGES`) of `experiment`: key, group, description, owners, tags."""
        name = dagster_name(experiment.name)
        own = (experiment.description or "").strip()
        head = f"{_SENTENCES[stage]} (cobalt experiment {experiment.name!r})."
        return dg.AssetSpec(key=[name, stage], group_name=name, description=f"{head}\n\n{own}" if own else head)

    def get_check_spec(self, experiment: Experiment, gate: Assertion) -> dg.AssetCheckSpec:
        """The blocking check of one quality gate, on the experiment's `aggregates` asset (as translated)."""
        return dg.AssetCheckSpec(
            name=dagster_check_name(gate.name), asset=self.get_asset_spec(experiment, "aggregates").key,
            blocking=True, description=f"Quality gate `{gate.name}`: the verdict cobalt stored for the run "
                                       "(the partition). A failed gate blocks what is downstream of `aggregates`.")


#: What a component's `translation:` resolves to (Dagster's `TranslationFn`): the default spec and the
#: stage's template variables in, the spec to use out.
TranslationFn = Callable[[dg.AssetSpec, Mapping[str, Any]], dg.AssetSpec]


class TranslatedCobaltTranslator(CobaltTranslator):
    """`base`'s specs, each passed through a component's `translation:` (checks follow `aggregates`)."""

    def __init__(self, base: CobaltTranslator, translation: TranslationFn) -> None:
        self.base, self.translation = base, translation

    def get_asset_spec(self, experiment: Experiment, stage: str) -> dg.AssetSpec:
        return self.translation(self.base.get_asset_spec(experiment, stage), template_vars(experiment, stage))

    def get_check_spec(self, experiment: Experiment, gate: Assertion) -> dg.AssetCheckSpec:
        spec = self.base.get_check_spec(experiment, gate)
        return dg.AssetCheckSpec(name=spec.name, asset=self.get_asset_spec(experiment, "aggregates").key,
                                 description=spec.description, blocking=spec.blocking, metadata=spec.metadata)


def template_vars(experiment: Experiment, stage: str) -> dict[str, Any]:
    """The variables a `translation:` block sees: `{{ experiment }}` (its Dagster name), `{{ stage }}`,
    and `{{ data }}` (both, with the experiment's own name and tags)."""
    name = dagster_name(experiment.name)
    return {"experiment": name, "stage": stage,
            "data": {"experiment": name, "name": experiment.name, "stage": stage, "tags": list(experiment.tags)}}


def unique_check_specs(specs: list[dg.AssetCheckSpec]) -> list[dg.AssetCheckSpec]:
    """The specs with a repeated name on the same asset made unique (`_2`, `_3`...), as `dagster_check_names`
    does for the default names."""
    seen: dict[tuple[dg.AssetKey, str], int] = {}
    out = []
    for spec in specs:
        count = seen[(spec.asset_key, spec.name)] = seen.get((spec.asset_key, spec.name), 0) + 1
        out.append(spec if count == 1 else dg.AssetCheckSpec(
            name=f"{spec.name}_{count}", asset=spec.asset_key, description=spec.description, blocking=spec.blocking,
            metadata=spec.metadata))
    return out
