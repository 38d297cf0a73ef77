"""A class attribute written on a class whose metaclass keeps `type`'s attribute hooks (an
`abc.ABC` subclass) is a deferred write like a plain class's, in the graph; a metaclass with a
`__setattr__` of its own is refused, and the function runs in Python.  Compared with eager."""
import abc

import tensorflow as tf

import janus


class Base(abc.ABC):
    calls = 0

    @abc.abstractmethod
    def f(self):
        ...


class Loud(type):
    def __setattr__(cls, name, value):
        print("set", name, value)
        super().__setattr__(name, value)


class Watched(metaclass=Loud):
    calls = 0


def counts_on_abc(x):
    Base.calls += 1
    return x * float(Base.calls)


def counts_on_loud(x):
    Watched.calls += 1
    return x * float(Watched.calls)


def _compare(fn, cls, capsys):
    out = []
    for f in (fn, janus.speculate(fn)):
        cls.calls = 0
        run = []
        for i in range(8):
            r = f(tf.constant(float(i)))
            run.append((r.numpy().item(), cls.calls, capsys.readouterr().out))
        out.append(run)
    assert out[0] == out[1]
    return f


def test_abc_class_attribute_written_in_the_graph(capsys):
    spec = _compare(counts_on_abc, Base, capsys)
    assert spec.stats()["graph_runs"] > 0, spec.report()


def test_metaclass_with_own_setattr_runs_in_python(capsys):
    spec = _compare(counts_on_loud, Watched, capsys)
    assert spec.stats()["graph_runs"] == 0, spec.report()
