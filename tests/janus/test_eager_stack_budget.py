"""A speculated function run in Python gets eager's recursion budget (janus.stack_budget).

Each test finds, eagerly, the deepest chain the recursion can walk before `RecursionError`
(`n_max`), then calls the speculated function on chains of `n_max` and `n_max + 1` nodes on
every path that runs the user's Python: profiled runs, re-runs after the graph's recursion
check failed, an imperative function, and each of them called from deep in the user's stack.
Eager returns on the first and raises on the second; so must janus.
"""
import sys
import threading

import pytest
import tensorflow as tf

import janus
from janus import stack_budget
from tests.harness import differential, run_capturing

LIMIT = 1200


class Link:
    def __init__(self, v, next=None):
        self.v, self.next = v, next


def walk(node):
    if node.next is None:
        return tf.constant(1.0) * node.v
    return walk(node.next) + node.v


def walk_imperative(node):
    if node.next is None:
        return tf.constant(1.0) * node.v
    try:                                   # a reachable `except`: no graph, runs in Python
        rest = walk_imperative(node.next)
    except ZeroDivisionError:
        rest = 0.0
    return rest + node.v


def chain(n):
    node = Link(1.0)
    for i in range(n - 1):
        node = Link(float(i % 3), node)
    return node


@pytest.fixture(autouse=True)
def recursion_limit():
    saved = sys.getrecursionlimit()
    sys.setrecursionlimit(LIMIT)
    yield
    assert sys.getrecursionlimit() == LIMIT, "janus left the recursion limit raised"
    sys.setrecursionlimit(saved)


def _returns(fn, n):
    """Whether eager `fn(chain(n))` returns, called as `differential` calls it (same depth)."""
    return run_capturing(fn, (chain(n),))[0][0] == "return"


def _n_max(fn):
    """The longest chain eager walks, called at the depth `differential` calls from."""
    _returns(fn, 5)                        # (TensorFlow's first call of an op goes deeper)
    lo, hi = 5, LIMIT
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if _returns(fn, mid) else (lo, mid)
    assert _returns(fn, lo) and not _returns(fn, lo + 1)
    return lo


def _at_depth(frames, run):
    """Call `run()` from `frames` more frames of the user's own down the stack."""
    return run() if frames == 0 else _at_depth(frames - 1, run)


def _edges(fn, n_max):
    return [(chain(n_max),), (chain(n_max + 1),), (chain(n_max),), (chain(n_max + 1),)]


@pytest.mark.parametrize("frames", [0, 300])
def test_profiled_runs_stop_where_eager_stops(frames):
    def run():
        n_max = _n_max(walk)
        differential(walk, _edges(walk, n_max), profile_runs=10)
    _at_depth(frames, run)


@pytest.mark.parametrize("frames", [0, 300])
def test_reruns_after_the_graphs_depth_check_stop_where_eager_stops(frames):
    def run():
        n_max = _n_max(walk)
        calls = [(chain(3),), (chain(5),), (chain(4),), (chain(6),)]       # profile, then a graph
        spec = differential(walk, calls + _edges(walk, n_max)[:3])
        assert spec.stats()["graph_runs"] >= 1
        assert spec.counters["eager_runs"] >= 3 + 3       # each edge re-ran in Python
    _at_depth(frames, run)


@pytest.mark.parametrize("frames", [0, 300])
def test_an_imperative_function_stops_where_eager_stops(frames):
    def run():
        n_max = _n_max(walk_imperative)
        spec = differential(walk_imperative, [(chain(3),)] * 3 + _edges(walk_imperative, n_max))
        assert spec.stats()["graph_runs"] == 0
    _at_depth(frames, run)


def test_a_method_stops_where_eager_stops():
    class Walker:
        def walk(self, node):
            if node.next is None:
                return tf.constant(1.0) * node.v
            return self.walk(node.next) + node.v

    class SpecWalker:
        walk = janus.speculate(Walker.walk, profile_runs=10)

    plain, spec = Walker().walk, SpecWalker().walk
    n_max = _n_max(plain)
    assert _both_return(plain, spec, n_max) == (True, True)
    assert _both_return(plain, spec, n_max + 1) == (False, False)


def _both_return(plain, spec, n):
    """(called at the depth `_n_max` calls from)"""
    return _returns(plain, n), _returns(spec, n)


def test_the_limit_the_user_sets_inside_the_function_stays():
    def set_limit(n):
        sys.setrecursionlimit(n)
        return n

    spec = janus.speculate(set_limit)
    for n in (LIMIT + 100, LIMIT + 200, LIMIT + 300, LIMIT + 400):
        spec(n)
        assert sys.getrecursionlimit() == n
    sys.setrecursionlimit(LIMIT)


def test_concurrent_runs_leave_the_users_limit():
    spec = janus.speculate(walk, profile_runs=1000)
    errors = []

    def worker():
        try:
            for n in (50, 400, 80):
                spec(chain(n))
        except Exception as exc:           # noqa: BLE001 - reported below
            errors.append(exc)
    threads = [threading.Thread(target=worker) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert not stack_budget._RAISED and sys.getrecursionlimit() == LIMIT
