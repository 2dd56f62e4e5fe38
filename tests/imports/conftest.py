"""The fixtures are sources in other tools' formats (a DeepEval test file among them), never collected."""

collect_ignore = ["fixtures"]
