"""Finding the functions a call can reach runs none of the user's code.

Before a profiled call, the profiler looks at the arguments, the objects they hold and the
globals the code names.  Eager never touches them there, so a `__getattr__`, a
`__getattribute__`, a property or a metaclass hook that runs (and prints, or counts) would be a
side effect eager does not have.  Each object below records every hook that runs.
"""
import sys
import types

import tensorflow as tf

from profiler import profile_call
from profiler.discovery import reachable_functions
from tests.harness import differential

HOOKS = []


class Loud:
    """Every lookup hook records itself."""

    def __init__(self, v):
        self.v = v

    def __getattr__(self, name):
        HOOKS.append(("getattr", name))
        raise AttributeError(name)


class LoudGetattribute:
    def __init__(self, v):
        self.v = v

    def __getattribute__(self, name):
        HOOKS.append(("getattribute", name))
        return object.__getattribute__(self, name)

    def value(self):
        return self.v


class LoudDict:
    """A class that computes its own `__dict__`."""

    @property
    def __dict__(self):
        HOOKS.append(("property", "__dict__"))
        return {"v": 1}


class LoudMeta(type):
    def __getattribute__(cls, name):
        HOOKS.append(("metaclass", name))
        return type.__getattribute__(cls, name)


class Classy(metaclass=LoudMeta):
    def __init__(self, v):
        self.v = v

    def value(self):
        return self.v


LOUD_MODULE = types.ModuleType("loud_module")
LOUD_MODULE.__dict__["__getattr__"] = lambda name: HOOKS.append(("module", name)) or 0
del LOUD_MODULE.__dict__["__name__"]


class Inner:
    def __init__(self, v, left, right):
        self.v, self.left, self.right = v, left, right


class LoudLeaf(Loud):
    left = None


def total(node):
    if node.left is None:
        return tf.constant(1.0) * node.v
    return total(node.left) + total(node.right) * 2.0 + node.v


def reads(a, b, c, d, items):
    return a.v + b.value() + c.value() + len(items) + LOUD_MODULE.size


def _args():
    objs = (Loud(1), LoudGetattribute(2), Classy(3), LoudDict())
    return objs + ([Loud(4), LoudGetattribute(5), {"k": Classy(6)}],)


def test_discovery_runs_no_hook():
    args = _args()
    HOOKS.clear()
    found = reachable_functions(reads, args)
    assert HOOKS == []
    assert LoudGetattribute.value in found and Classy.value in found


def test_a_profiled_run_runs_only_the_programs_hooks():
    eager_args, profiled_args = _args(), _args()
    HOOKS.clear()
    reads(*eager_args)
    eager_hooks = list(HOOKS)
    HOOKS.clear()
    outcome, _ = profile_call(reads, profiled_args)
    assert outcome == ("return", reads(*_args()))
    HOOKS.clear()
    profile_call(reads, profiled_args)
    assert HOOKS == eager_hooks


def _tree(d, v=1):
    return LoudLeaf(v) if d == 0 else Inner(v, _tree(d - 1, v + 1), _tree(d - 1, v + 3))


def test_a_tree_with_a_getattr_leaf_prints_nothing_more_under_janus():
    def printing_leaf(v):
        leaf = LoudLeaf(v)
        return leaf

    calls = [(_tree(1),), (_tree(2),), (_tree(1),), (_tree(2),), (_tree(1),)]
    HOOKS.clear()
    differential(total, calls)
    assert HOOKS == [], f"hooks ran: {HOOKS[:5]}"
    assert printing_leaf(1).v == 1 and sys.getrecursionlimit() > 0
