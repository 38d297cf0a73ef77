"""The arguments of calls a loop makes over a list, read ahead of the loop to see whether the calls
join into one machine: where reading them runs code with effects (a property that prints or
counts), the calls run one by one, and the effects happen once per item, in eager's order."""
import contextlib
import io

import tensorflow as tf

import janus

COUNT = [0]


class Item:
    def __init__(self, k):
        self.k = k

    @property
    def weight(self):
        print("weight", self.k)
        COUNT[0] += 1
        return float(self.k)


def scaled(w, x):
    return x * w


def all_scaled(x, items):
    return [scaled(item.weight, x) for item in items]


def summed(x, items):
    total = x * 0.0
    for item in items:
        total = total + scaled(item.weight, x)
    return total


def _calls(fn):
    COUNT[0] = 0
    out, text = [], io.StringIO()
    with contextlib.redirect_stdout(text):
        for _ in range(6):
            got = fn(tf.constant(2.0), [Item(1), Item(2), Item(3)])
            out.append(repr([float(v) for v in got]) if isinstance(got, list) else float(got))
    return out, text.getvalue(), COUNT[0]


def test_a_property_read_by_a_comprehensions_calls_runs_once_per_item():
    spec = janus.speculate(all_scaled)
    assert _calls(spec) == _calls(all_scaled)
    assert spec.stats()["graph_runs"] >= 2, spec.report()


def test_a_property_read_by_a_loops_calls_runs_once_per_item():
    spec = janus.speculate(summed)
    assert _calls(spec) == _calls(summed)
    assert spec.stats()["graph_runs"] >= 2, spec.report()
