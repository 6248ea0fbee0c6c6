"""Outcomes of Deferreds that must already have fired: the unit tests drive Clocks and
StringTransports by hand, so whatever they wait for has happened by the time they look."""


def fired(d):
    """The result of a Deferred that must have fired (its Failure is raised)."""
    out = []
    d.addBoth(out.append)
    assert out, "the Deferred has not fired"
    result = out[0]
    if hasattr(result, "raiseException"):
        result.raiseException()
    return result


def failure_of(d):
    """The Failure of a Deferred that must have failed already."""
    out = []
    d.addBoth(out.append)
    assert out and hasattr(out[0], "check"), f"expected a failure, got {out}"
    return out[0]
