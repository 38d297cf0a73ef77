"""An object of the program's own class made inside a speculated function: its `__init__` runs as
the program's code on every call (its reads of outside state checked, its prints and writes to
outside state made once per call), as in eager, not once when the graph is built."""
import abc

import pytest
import tensorflow as tf

from tests.harness import run_capturing

G = [0, 0, 0, 0]


class Boxed:
    made = 0

    def __init__(self, v, scale=1.0):
        Boxed.made += 1
        print("init", v)
        self.v = v * G[3] * scale


class Child(Boxed):
    def __init__(self, v):
        super().__init__(v, scale=2.0)
        self.w = G[0]


class Odd:
    def __init__(self, v):
        if v > G[1]:
            raise ValueError(f"too big: {v}")
        self.v = v


class Returns:
    def __init__(self):
        return G[2] or None


class Shape(abc.ABC):
    @abc.abstractmethod
    def area(self):
        ...


class Square(Shape):
    def __init__(self, v):
        Boxed.made += 1
        print("square", v)
        self.v = v * G[3]

    def area(self):
        return self.v * self.v


def abstract_base_made(x):
    return x, Square(2).area()


def abstract_class_made(x):
    try:
        Shape()
    except TypeError as exc:
        return x, str(exc)
    return x, "made"


def made_directly(x):
    return x, Boxed(1).v


def made_by_keyword(x):
    return x * 2.0, Boxed(2, scale=0.5).v


def subclass_made(x):
    c = Child(3)
    return x, c.v, c.w


def init_may_raise(x):
    return x, Odd(2).v


def init_returns(x):
    return x, type(Returns()).__name__


def mapped(x):
    return x, [b.v for b in map(Boxed, [1, 2])]


@pytest.mark.parametrize("fn", [made_directly, made_by_keyword, subclass_made, init_may_raise, init_returns, mapped,
                                abstract_base_made, abstract_class_made],
                         ids=lambda f: f.__name__)
def test_an_object_made_in_the_call_runs_its_init_every_call(fn):
    import janus
    spec = janus.speculate(fn)
    for i in range(9):
        G[:] = [i % 3, 5 if i < 6 else 1, 0 if i < 7 else 3, 0 if i < 4 else 7]
        Boxed.made = 0
        eager, eager_made = run_capturing(fn, (tf.constant(1.0),)), Boxed.made
        Boxed.made = 0
        got, got_made = run_capturing(spec, (tf.constant(1.0),)), Boxed.made
        (ek, ev), etext = eager
        (jk, jv), jtext = got
        assert (jk, jtext, got_made) == (ek, etext, eager_made), f"call {i}: {jv!r}"
        if ek == "raise":
            assert (type(jv), str(jv)) == (type(ev), str(ev))
        else:
            assert repr(jv[1:]) == repr(ev[1:]), f"call {i}"
    # (an abstract class's `TypeError`, caught by the function, runs in Python)
    assert spec.stats()["graph_runs"] > 0 or fn is abstract_class_made, spec.report()
