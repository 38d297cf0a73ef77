"""A variable a tensor `if` sets on one side only, where it was None before (None or a tensor,
depending on the side taken), has no one value in the relaxed `tf.cond` graph: a test of what it
is (`is None`, `== None`, `isinstance`, `type`, `hasattr`) stops the build and runs in Python,
where eager's answer for the side taken is given."""
import tensorflow as tf

from tests.harness import differential

# Positive first (the branch is speculated), then a negative fails its guard and the `if` is
# relaxed to a `tf.cond`; the later calls run what that relaxation builds.
CALLS = [(tf.constant(float(k)),) for k in (1, 2, 3, 4, -1, 5, -2, -3, 6, -4)]


def test_is_none_after_a_tensor_if_that_may_leave_none():
    def f(x):
        r = None
        if x > 0:
            r = x * 2
        return r is None

    differential(f, CALLS)


def test_is_not_none_and_equals_none_after_a_tensor_if():
    def f(x):
        r = None
        if x > 0:
            r = x * 2
        return r is not None, r == None  # noqa: E711 - the comparison under test

    differential(f, CALLS)


def test_isinstance_type_and_hasattr_after_a_tensor_if():
    def f(x):
        r = None
        if x > 0:
            r = x * 2
        return isinstance(r, tf.Tensor), type(r).__name__, hasattr(r, "shape")

    differential(f, CALLS)


def test_a_list_or_none_after_a_tensor_if():
    def f(x):
        r = None
        if x > 0:
            r = [x]
        return r is None

    differential(f, CALLS)


def test_none_on_both_sides_still_builds_the_cond():
    def f(x):
        r = None
        y = x
        if x > 0:
            y = x * 2
        return r is None, y

    spec = differential(f, CALLS)
    assert spec.stats()["graph_runs"] > 0, spec.report()
