"""RequestIntake: whole frames reserved from one budget; holders that do not fit wait
in order and are granted as reservations come back."""

from hedwig.hub.intake import RequestIntake


class Holder:
    def __init__(self):
        self.granted = 0

    def intake_granted(self):
        self.granted += 1


def test_reservations_fit_the_budget_and_waiters_are_granted_in_order():
    intake = RequestIntake(100)
    a, b, c, d = Holder(), Holder(), Holder(), Holder()
    assert intake.hold(a, 60) and intake.reserved == 60
    assert not intake.hold(b, 50)  # does not fit: waits
    assert not intake.hold(c, 10)  # fits, but b asked first: waits behind it
    assert intake.stats()["waiting"] == 2 and intake.waits == 2
    intake.hold(a, 0)  # a's frame completed
    assert (b.granted, c.granted) == (1, 1) and intake.reserved == 60
    assert not intake.hold(d, 45)
    intake.release(b)  # b's connection closed
    assert d.granted == 1 and intake.reserved == 55 and intake.held_by(b) == 0


def test_a_holder_that_shrinks_or_leaves_while_waiting_is_forgotten():
    intake = RequestIntake(100)
    a, b = Holder(), Holder()
    intake.hold(a, 100)
    assert not intake.hold(b, 20)
    intake.release(b)
    intake.release(a)
    assert b.granted == 0 and intake.reserved == 0 and intake.stats()["waiting"] == 0
    assert intake.hold(b, 100) and not intake.is_waiting(b)
