"""One attribute reached two ways in one call: written through the class, `type(obj)`,
`object.__setattr__`, `obj.__setattr__`, `vars(obj)` or `obj.__dict__`, and read another way.
Every call sees its own writes, as eagerly; nothing is written while the graph is built, and
no graph tensor ends up in the object."""
import pytest
import tensorflow as tf

import janus


class Model:
    steps = 0

    def __init__(self):
        self.n = 0


class Sub(Model):
    pass


def class_then_instance(o, x):
    Model.steps += 1
    return x * o.steps


def base_then_subclass(o, x):
    Model.steps += 1
    return x * Sub.steps


def through_type(o, x):
    type(o).steps += 1
    return x * o.steps


def setattr_on_type(o, x):
    setattr(type(o), "steps", Model.steps + 1)
    return x * o.steps


def object_setattr(o, x):
    object.__setattr__(o, "n", o.n + 1)
    return x * o.n


def bound_setattr(o, x):
    o.__setattr__("n", o.n + 1)
    return x * o.n


def through_vars(o, x):
    vars(o)["n"] = vars(o)["n"] + 1
    return x * o.n


def through_dict(o, x):
    o.__dict__["n"] += 1
    return x * o.n


def dict_update(o, x):
    o.__dict__.update(n=o.n + 1)
    return x * o.n


def _run(fn, calls=6):
    Model.steps = 0
    if "steps" in vars(Sub):            # (`type(o).steps += 1` gives the subclass its own)
        del Sub.steps
    o = Sub()
    out = []
    for i in range(calls):
        out.append((float(fn(o, tf.constant(float(i + 1)))), type(o.n).__name__, o.n, Model.steps, Sub.steps))
    return out


@pytest.mark.parametrize("fn", [class_then_instance, base_then_subclass, through_type, setattr_on_type,
                                object_setattr, bound_setattr, through_vars, through_dict, dict_update])
def test_each_call_reads_what_it_wrote(fn):
    eager = _run(fn)
    spec = janus.speculate(fn, profile_runs=2)
    assert _run(spec) == eager


@pytest.mark.parametrize("fn", [class_then_instance, base_then_subclass, through_type, object_setattr,
                                bound_setattr])
def test_these_keep_the_graph(fn):
    spec = janus.speculate(fn, profile_runs=2)
    _run(spec)
    assert spec.stats()["graph_runs"] >= 3


def test_vars_of_an_outside_object_runs_that_statement_in_python():
    spec = janus.speculate(through_vars, profile_runs=2)
    _run(spec)
    assert "object-dict" in spec.report()


def test_an_instance_that_gains_its_own_attribute_reads_it_after_a_class_write():
    """The class write is what `o.steps` reads while `o` has no `steps` of its own; once the
    caller gives it one, that is what Python reads (the graph checks the instance still lacks it)."""
    def run(fn):
        Model.steps = 0
        o, out = Model(), []
        for i in range(7):
            if i == 4:
                o.steps = 50
            out.append((float(fn(o, tf.constant(1.0))), Model.steps, vars(o).get("steps")))
        return out

    spec = janus.speculate(class_then_instance, profile_runs=2)
    assert run(spec) == run(class_then_instance)
    assert spec.stats()["graph_runs"] >= 3
