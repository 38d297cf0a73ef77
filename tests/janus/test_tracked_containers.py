"""A `tf.Module` (or Keras layer) keeps its list and dict attributes in TensorFlow's tracking
wrappers (`ListWrapper`, a list subclass written in Python).  Appending to one inside a speculated
function must happen once per call, as in eager: it ran once, when the graph was built."""
import tensorflow as tf

import janus
from tests.harness import assert_same_outcome, run_capturing


class Mod(tf.Module):
    def __init__(self):
        super().__init__()
        self.v = tf.Variable(1.5)
        self.log = []

    @property
    def scale(self):
        self.log.append(len(self.log))
        return self.v * 2.0

    def direct(self, x):
        self.log.append(1)
        return x * self.v

    def through_property(self, x):
        return x * self.scale

    def reads(self, x):
        return x * self.v + float(len(self.log))


def _pair(method, graph_runs=0):
    eager_obj, janus_obj = Mod(), Mod()
    spec = janus.speculate(getattr(janus_obj, method))
    for i in range(8):
        x = tf.constant(float(i))
        assert_same_outcome(run_capturing(getattr(eager_obj, method), (x,)), run_capturing(spec, (x,)))
        assert list(janus_obj.log) == list(eager_obj.log)
    assert spec.stats()["graph_runs"] >= graph_runs, spec.report()


def test_an_append_to_a_modules_list_happens_on_every_call():
    _pair("direct")
    _pair("through_property")


def test_a_modules_list_only_read_still_runs_as_a_graph():
    _pair("reads", graph_runs=3)


def appends_to_an_argument_module(m, x):
    m.log.append(1)
    return x * m.v


def test_an_append_to_the_list_of_a_module_passed_as_an_argument_happens_on_every_call():
    eager_obj, janus_obj = Mod(), Mod()
    spec = janus.speculate(appends_to_an_argument_module)
    for i in range(8):
        x = tf.constant(float(i))
        assert_same_outcome(run_capturing(appends_to_an_argument_module, (eager_obj, x)),
                            run_capturing(spec, (janus_obj, x)))
    assert list(janus_obj.log) == list(eager_obj.log)


class Configured(tf.Module):
    def __init__(self):
        super().__init__()
        self.cfg = {"scale": 2.0}           # kept in TensorFlow's dict wrapper, a proxy


def reads_a_module_dict(m, x):
    return x * m.cfg.get("scale", 1.0) + m.cfg.get("shift", 0.5)


def test_get_on_a_modules_dict_keeps_the_graph_and_sees_changes():
    """`m.cfg.get` is a C method bound to the dict the proxy wraps: the entry check is that the
    name still gives a method bound to that dict (it checked the fresh method object, which a
    later call never is, and every build failed)."""
    eager_obj, janus_obj = Configured(), Configured()
    spec = janus.speculate(reads_a_module_dict, profile_runs=2)
    for i in range(8):
        for obj in (eager_obj, janus_obj):
            if i == 5:
                obj.cfg["shift"] = 3.0
        x = tf.constant(float(i))
        assert_same_outcome(run_capturing(reads_a_module_dict, (eager_obj, x)), run_capturing(spec, (janus_obj, x)))
    assert spec.stats()["graph_runs"] >= 3, spec.report()
