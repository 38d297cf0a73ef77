"""A method speculated in its class body has one speculated function per instance (as tf.function
keeps one per instance): many instances each run their own graphs instead of rebuilding one
cache on every call, they share one profile, and the class-level stats and report cover them."""
import gc

import tensorflow as tf

import janus


class Cell:
    def __init__(self, k):
        self.w = tf.Variable(float(k))
        self.k = k

    @janus.speculate
    def step(self, x):
        if tf.reduce_sum(x) > 0:
            return x * self.w + self.k
        return x - self.w


def test_many_instances_each_run_their_graphs():
    cells = [Cell(k) for k in range(20)]
    x = tf.constant([1.0, 2.0])
    for _ in range(3):
        for c in cells:
            assert c.step(x).numpy().tolist() == Cell.step.python_function(c, x).numpy().tolist()
    for c in cells[::3]:                       # a branch flip on some instances
        assert c.step(-x).numpy().tolist() == Cell.step.python_function(c, -x).numpy().tolist()
    stats = Cell.step.stats()
    assert stats["profile_runs"] <= 3 + 7 and not stats["imperative"], Cell.step.report()   # + a re-profile per flip
    assert stats["graph_runs"] >= 3 * 20 - 3 and stats["graphs_built"] <= 20 + 7, Cell.step.report()
    report = Cell.step.report(format="json")
    assert len(report["instances"]) >= 20 and report["counters"]["calls"] == stats["calls"]


def test_instance_state_changes_are_seen():
    a, b = Cell(1), Cell(2)
    x = tf.constant([1.0])
    for _ in range(4):
        a.step(x), b.step(x)
    a.k = 10                                   # a Python attribute the graph took as a constant
    b.w.assign(5.0)
    assert a.step(x).numpy().tolist() == [11.0]
    assert b.step(x).numpy().tolist() == [7.0]


class Slotted:
    __slots__ = ("w",)

    def __init__(self):
        self.w = tf.constant(3.0)

    @janus.speculate
    def scale(self, x):
        return x * self.w


def test_instances_without_weak_references_share_the_class_function():
    objs = [Slotted() for _ in range(3)]
    for _ in range(3):
        for o in objs:
            assert o.scale(tf.constant(2.0)).numpy() == 6.0
    assert Slotted.scale.members() == [Slotted.scale]


class Fresh:
    def __init__(self, k):
        self.w = tf.Variable(float(k))

    @janus.speculate
    def step(self, x):
        return x * self.w


def test_an_instance_function_goes_with_its_instance():
    c = Fresh(3)
    c.step(tf.constant([1.0]))                 # profiling: no graph yet
    own = c.step.__func__
    assert own in Fresh.step.instances.all() and not own.graphs
    del c
    gc.collect()
    assert own not in Fresh.step.instances.all()


def test_an_instance_function_with_graphs_goes_with_its_instance():
    c = Cell(3)
    for _ in range(4):
        c.step(tf.constant([1.0]))
    own = c.step.__func__
    assert own in Cell.step.instances.all() and own.graphs
    del c
    gc.collect()
    assert own not in Cell.step.instances.all()


def test_counts_of_dropped_instances_stay_in_the_class_totals():
    class Temporary:
        def __init__(self):
            self.w = tf.Variable(2.0)

        @janus.speculate
        def step(self, x):
            return x * self.w

    for _ in range(3):
        t = Temporary()
        for _ in range(4):
            t.step(tf.constant([1.0]))
        del t
        gc.collect()
    stats = Temporary.step.stats()
    assert stats["calls"] == 12 and stats["graph_runs"] >= 6, stats
    assert Temporary.step.report(format="json")["counters"]["calls"] == 12
