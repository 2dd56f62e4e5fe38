"""A support bot whose quality gate decides whether it may be deployed.

`SUPPORT_BOT_BROKEN=1` makes it answer badly, so the gate fails and the deploy is blocked.
"""

import os

from cobalt_lib import Dataset, Evaluator, experiment, threshold

FAQ = {
    "reset password": "Use the 'Forgot password' link on the sign-in page.",
    "cancel subscription": "Go to Settings > Billing and choose Cancel.",
    "contact support": "Write to support@example.com.",
    "change email": "Go to Settings > Account and edit your email.",
}

dataset = Dataset([{"input": f"How do I {topic}?", "expected_output": answer, "topic": topic}
                   for topic, answer in FAQ.items()])


def actionable(ctx):
    """1 when the answer names the place to go (a link, a menu or an address)."""
    return any(marker in str(ctx.output) for marker in ("Settings", "link", "@"))


@experiment(
    "support-bot",
    dataset,
    evaluators=[
        Evaluator(name="exact", type="exact-match", field="expected_output"),
        Evaluator(name="actionable", type="function", fn=actionable),
    ],
    assertions=[threshold("exact", 0.75)],
    tags=["dagster-example"],
)
def support_bot(ctx):
    """Answers from the FAQ table."""
    if os.environ.get("SUPPORT_BOT_BROKEN") == "1":
        return "Please try again later."
    return FAQ[ctx.item["topic"]]
