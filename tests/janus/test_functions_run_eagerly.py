"""`tf.config.run_functions_eagerly(True)` makes every call run the plain Python, as it does for
`tf.function` (a breakpoint or a debugger in the function stops on every call); switched off
again, graphs run."""
import sys

import tensorflow as tf

import janus

LINES = []


def step(x, box):
    box["n"] += 1
    y = x * 2.0
    if tf.reduce_sum(y) > 5.0:
        y = y - 1.0
    return y


def tracer(frame, event, arg):
    if event == "call" and frame.f_code is step.__code__:
        LINES.append(frame.f_lineno)
    return None


def test_run_functions_eagerly_runs_the_python_on_every_call():
    spec = janus.speculate(step)
    eager_box, janus_box = {"n": 0}, {"n": 0}
    xs = [tf.constant([float(i), 1.0]) for i in range(6)]
    for x in xs:
        assert spec(x, janus_box).numpy().tolist() == step(x, eager_box).numpy().tolist()
    assert spec.stats()["graph_runs"] >= 1, spec.report()
    runs = spec.stats()["graph_runs"]
    tf.config.run_functions_eagerly(True)
    try:
        LINES.clear()
        sys.settrace(tracer)
        try:
            for x in xs:
                assert spec(x, janus_box).numpy().tolist() == step(x, eager_box).numpy().tolist()
        finally:
            sys.settrace(None)
        assert len(LINES) == 2 * len(xs)                 # the Python ran for janus's call as for eager's
        assert spec.stats()["graph_runs"] == runs, spec.report()
    finally:
        tf.config.run_functions_eagerly(False)
    for x in xs:
        assert spec(x, janus_box).numpy().tolist() == step(x, eager_box).numpy().tolist()
    assert spec.stats()["graph_runs"] > runs, spec.report()
    assert janus_box == eager_box
