"""The one error an invalid selector raises, pointing at where it went wrong."""

from hedwig.protocol.status import Status, StatusError

# How much of the selector an error quotes around its position: enough to find the
# place, never the whole of a long (or hostile) selector.
_EXCERPT_BEFORE = 20
_EXCERPT_AFTER = 20


class SelectorError(StatusError):
    """A selector that does not parse, or cannot be true of any message as written.

    `position` is the offset (0-based) of the character at fault in the selector's text
    and `column` the same counted from 1, as the reason says it; `reason` is one line a
    user can act on, with a short excerpt of the selector around that place. The hub
    answers it with INVALID_MESSAGE_FILTER (Hedwig's status for a bad filter)."""

    def __init__(self, text: str, position: int, problem: str):
        self.position = max(0, min(position, len(text)))
        self.column = self.position + 1
        self.problem = problem
        super().__init__(
            Status.INVALID_MESSAGE_FILTER,
            f"invalid selector at column {self.column}: {problem} (near {_excerpt(text, self.position)})",
        )


def _excerpt(text: str, position: int) -> str:
    """The selector around `position`, quoted on one line, with `>>>` where the error is."""
    before = text[max(0, position - _EXCERPT_BEFORE) : position]
    after = text[position : position + _EXCERPT_AFTER]
    head = "..." if position > _EXCERPT_BEFORE else ""
    tail = "..." if position + _EXCERPT_AFTER < len(text) else ""
    return repr(f"{head}{before}>>>{after}{tail}")
