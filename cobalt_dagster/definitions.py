"""The Definitions `workspace.yaml` and `dagster definitions validate -m cobalt_dagster.definitions` load.

The project is found from `COBALT_PROJECT_DIR` if set, else from the working directory upward.
"""

from cobalt_dagster._definitions import build_definitions

defs = build_definitions()
