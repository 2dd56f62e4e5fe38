"""A second experiment: a one-line summariser scored on length."""

from cobalt_lib import Dataset, Evaluator, experiment

texts = Dataset([
    {"input": "The meeting moved from Monday to Wednesday because the room was booked."},
    {"input": "Sales grew 12% in the third quarter, driven by the new subscription plan."},
])


@experiment("my-summarizer-agent", texts,
            evaluators=[Evaluator(name="short", type="function", fn=lambda ctx: len(ctx.output) <= 60)])
def summarize(ctx):
    return ctx.input.split(",")[0].split(" because ")[0][:60]
