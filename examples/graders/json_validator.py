"""A grader for assistants asked to answer in JSON: `cobalt grade --grader examples/graders/json_validator.py`.

Use it as an evaluator too: Evaluator(name="json", type="grader", grader="examples/graders/json_validator.py").
"""

from cobalt_lib import grader

grader = (
    grader("json-validator")
    .spec("The user asked the assistant for data in JSON. Grade whether the response is JSON a program "
          "can use as it stands, holding what the user asked for.")
    .card("Syntax", lambda c: c
          .spec("The response is one valid JSON value: double-quoted keys and strings, no trailing commas, "
                "no comments.")
          .spec("Prose or a Markdown code fence around the JSON is a flaw: a program parsing the response "
                "as it stands would fail."))
    .card("Content", lambda c: c
          .spec("Every field the user asked for is present, with the name the user used.")
          .spec("Values have the type the request implies: numbers as numbers, lists as arrays, booleans "
                "as true or false.")
          .spec("Nothing is invented: no value that the user message does not support."))
    .card("Scoring", lambda c: c
          .spec("3: valid, complete, exact. 2: valid and complete, one small naming or type slip. "
                "1: valid but missing a field or wrapped in a fence. 0: half right.")
          .spec("-1: invalid JSON that is almost right. -2: invalid and incomplete. "
                "-3: no JSON at all, or a refusal."))
    .context("style guide", "Field names are snake_case unless the user spelled them otherwise.")
)
