"""Multi-turn conversations: scripted chats that run offline, and a simulated user when a judge is configured.

    python examples/conversations.py              # the scripted chats, offline
    python examples/conversations.py --simulate   # also the simulated user (needs OPENAI_API_KEY or
                                                  # OPENAI_BASE_URL: the judge's model plays the user)

The agent is called once per user turn with the conversation so far (`ctx.messages`). Run it twice with
--simulate: the second run replays the same conversation from the cache, with no model call for the user.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from cobalt_lib import ConversationContext, Dataset, Evaluator, experiment

HERE = Path(__file__).parent
CHATS = Dataset.from_file(HERE / "data" / "support_chats.jsonl")


def support_bot(ctx: ConversationContext) -> str:
    """A rule-based shop assistant: it remembers the order number the user gave in any earlier turn."""
    said = " ".join(m["content"] for m in ctx.messages if m["role"] == "user")
    order = re.search(r"\b(\d{4})\b", said)
    if order is None:
        return "Happy to help! What is your order number?"
    number = order.group(1)
    text = ctx.input.lower()
    if "money" in text or "refund" in text:
        return f"The refund for order {number} reaches your account within 5 working days."
    if "street" in text or "address" in text:
        return f"Done: order {number} now goes to the new address."
    if "where" in text or "parcel" in text:
        return f"Order {number} is at the local depot and arrives tomorrow."
    return f"Thanks, I found order {number}. What would you like to do?"


def polite(ctx) -> dict[str, object]:
    """Per turn: the answer thanks, greets or offers help."""
    found = re.search(r"\b(thanks|happy to help|done)\b", str(ctx.output), re.IGNORECASE)
    return {"score": 1.0 if found else 0.0, "reason": "polite" if found else "no courtesy"}


def names_order(ctx) -> dict[str, object]:
    """Per turn: the answer names the order number the script expects that turn (a turn expecting none passes)."""
    if ctx.expected_output is None:
        return {"score": 1.0, "reason": "no order number expected yet"}
    found = str(ctx.expected_output) in str(ctx.output)
    return {"score": 1.0 if found else 0.0, "reason": f"{'names' if found else 'lacks'} {ctx.expected_output}"}


def never_asks_twice(ctx) -> dict[str, object]:
    """Per conversation: the assistant asks for the order number at most once."""
    asked = sum("order number?" in m["content"] for m in ctx.output if m["role"] == "assistant")
    return {"score": 1.0 if asked <= 1 else 0.0, "reason": f"asked for the order number {asked} times"}


def main() -> int:
    simulate = "--simulate" in sys.argv[1:]
    data = CHATS if simulate else CHATS.filter(lambda item: "turns" in item["conversation"])
    evaluators = [
        # per turn: each assistant answer scored on its own, the conversation gets the turns' mean (or min)
        Evaluator("polite", type="function", fn=polite, per_turn="mean"),
        Evaluator("names-order", type="function", fn=names_order, per_turn="min"),
        Evaluator("asks-once", type="function", fn=never_asks_twice),
    ]
    if simulate:  # judged kinds over the whole conversation
        evaluators += [Evaluator("goal", type="goal_completion"), Evaluator("in-role", type="role_adherence")]
    report = experiment("support-chats", data, support_bot, evaluators=evaluators, tags=["example"]).run()
    for item in report.items:
        print(f"\n{item.item['id']}: {item.status}")
        for message in item.output or []:
            print(f"  {message['role']:>9}: {message['content']}")
        for name, evaluation in item.evaluations.items():
            per_turn = ", ".join(f"turn {t.turn} {t.score:.2f}" for t in evaluation.turns or [] if t.score is not None)
            score = "eval-error" if evaluation.score is None else f"{evaluation.score:.2f}"
            print(f"  {name}: {score}" + (f" ({per_turn})" if per_turn else ""))
        simulator = item.metadata.get("conversation", {}).get("simulator")
        if simulator:
            print(f"  simulated user: {simulator['turns']} turns, {simulator['calls']} model calls, "
                  f"{simulator['cached']} from the cache")
    print(f"\nrun id:  {report.id}")
    print(f"results: {report.results_path}")
    return 0 if report.passed else 1


if __name__ == "__main__":
    sys.exit(main())
