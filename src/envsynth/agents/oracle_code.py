"""OracleCodeAgent: the task's oracle as one Python code block (code-acting mode)."""

from __future__ import annotations

import keyword

from envsynth.agents.codeloop import CODE_SYSTEM_PROMPT
from envsynth.llm.types import Message, Usage
from envsynth.runtime.answerpath import answer_expr
from envsynth.tasks.model import Task
from envsynth.tasks.planning.refs import source


def _arguments(items: list[tuple[str, str]]) -> str:
    """``k=v`` pairs, or a ``**{...}`` for names that are not Python identifiers."""
    plain = [f"{k}={v}" for k, v in items if k.isidentifier() and not keyword.iskeyword(k)]
    odd = [f"{k!r}: {v}" for k, v in items if not (k.isidentifier() and not keyword.iskeyword(k))]
    return ", ".join(plain + ([f"**{{{', '.join(odd)}}}"] if odd else []))


def oracle_code(task: Task) -> str:
    """The oracle solution as code: each call a function call, results passed on, then ``complete_task`` (a must-ask
    task asks the user first, with ``ask_user``).

    Example::

        r0 = search_orders(customer_email='ada@example.com')
        r1 = cancel_order(order_id=r0['id'])
        complete_task()
    """
    lines = ["ask_user(question='Could you tell me what your request leaves out?')"] if task.clarify else []  # a must-ask task
    for i, c in enumerate(task.oracle):
        items = [(k, repr(v)) for k, v in c.args.items()]
        items += [(k, source(ref)) for k, ref in c.refs.items()]
        lines.append(f"r{i} = {c.tool}({_arguments(items)})")
    if task.answer_step is not None and task.answer_field:
        lines.append(f"complete_task(answer={answer_expr(f'r{task.answer_step}', task.answer_field)})")
    else:
        lines.append("complete_task()")
    return "\n".join(lines) + "\n"


class OracleCodeAgent:
    """A code-mode policy that knows the answer: one block with the whole oracle program.

    It runs through :func:`~envsynth.agents.codeloop.converse_code` like a model; an
    admitted task scores 1.0 with it. If the block did not complete the task (it should
    not happen), the next reply has no code and the conversation ends.
    """

    name = "oracle-code"
    model = "oracle"
    system_prompt = CODE_SYSTEM_PROMPT
    max_turns = 2
    max_tokens = None

    def __init__(self, task: Task) -> None:
        self.task = task
        self.usage = Usage()

    def reply(self, messages: list[Message]) -> Message:
        """The oracle block on the first turn, then a closing text message."""
        if any(m.get("role") == "assistant" for m in messages):
            return {"role": "assistant", "content": "I could not complete the task."}
        return {"role": "assistant", "content": f"```python\n{oracle_code(self.task)}```"}

    async def next_message(self, messages: list[Message], tools: list[Message]) -> Message:
        """See :meth:`reply`."""
        return self.reply(messages)
