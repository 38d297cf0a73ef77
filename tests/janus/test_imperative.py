"""Constructs janus does not convert run eagerly, correctly, and the report says where and why."""
import pytest
import tensorflow as tf

import janus
from tests.harness import differential


def gen_user(x):
    def gen():
        yield x
    total = x
    for v in gen():
        total = total + v
    return total


def uses_yield(x):
    yield x * 2.0


def try_except(x):
    try:
        y = x / 0.0
    except ZeroDivisionError:
        y = x
    return y


def inline_import(x):
    import math
    return x * math.pi


def inline_class(x):
    class Box:
        pass
    return x + 1.0


class Holder:
    def __init__(self):
        self.last = None

    def remember(self, x):
        self.last = x * 2.0
        return self.last


def attribute_write(h, x):
    return h.remember(x)


CASES = {
    "try_except": (try_except, "try-except", 23),
    "inline_import": (inline_import, "import", 31),
    "inline_class": (inline_class, "class-def", 36),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_runs_eagerly_with_a_reason(name):
    fn, kind, line = CASES[name]
    x = tf.constant([1.0, 2.0])
    spec = differential(fn, [(x,)] * 5)
    assert spec.stats()["imperative"]
    assert f"[{kind}]" in spec.report() and f"test_imperative.py:{line}" in spec.report(), spec.report()
    assert spec.stats()["graph_runs"] == 0


class Guarded:
    def __init__(self):
        object.__setattr__(self, "log", [])
        object.__setattr__(self, "last", None)

    def __setattr__(self, name, value):
        self.log.append(name)
        object.__setattr__(self, name, value)


def test_attribute_write_in_a_callee_is_deferred_and_exact():
    x = tf.constant([1.0, 2.0])
    h_eager, h_janus = Holder(), Holder()
    spec = janus.speculate(attribute_write)
    for _ in range(5):
        attribute_write(h_eager, x)
        spec(h_janus, x)
    assert (h_eager.last.numpy() == h_janus.last.numpy()).all()
    assert spec.stats()["graph_runs"] == 2, spec.report()


def custom_setattr_write(g, x):
    g.last = x * 2.0
    return x


def test_custom_setattr_runs_imperatively_with_the_reason():
    x = tf.constant([1.0, 2.0])
    g_eager, g_janus = Guarded(), Guarded()
    spec = janus.speculate(custom_setattr_write)
    for _ in range(5):
        custom_setattr_write(g_eager, x)
        spec(g_janus, x)
    assert g_eager.log == g_janus.log
    assert spec.stats()["graph_runs"] == 0
    assert "custom-setattr" in spec.report() and "Guarded defines __setattr__" in spec.report(), spec.report()


def test_generator_function_is_refused_clearly():
    spec = janus.speculate(uses_yield)
    out = [list(spec(tf.constant(1.0))) for _ in range(5)]
    assert all(float(o[0]) == 2.0 for o in out)
    assert "[generator]" in spec.report()


def test_strict_mode_raises_with_the_line():
    spec = janus.speculate(try_except, strict=True, profile_runs=1)
    spec(tf.constant(1.0))
    with pytest.raises(janus.ConversionError, match=r"test_imperative.py:23"):
        spec(tf.constant(1.0))


def test_bad_options_are_named():
    with pytest.raises(TypeError, match="profile_run"):
        janus.speculate(try_except, profile_run=3)
    with pytest.raises(ValueError, match="profile_runs"):
        janus.speculate(try_except, profile_runs=0)
