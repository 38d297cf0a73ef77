"""`try/finally`: the finally block runs after a return in the try body, and a
`return` inside finally replaces the value the body returned, as in Python.
Branches on tensors inside both blocks are speculated like any other."""
import pytest
import tensorflow as tf

import janus
from codegen.errors import ConversionError
from tests.harness import differential

X = tf.constant([1.0, 2.0])


def finally_overrides_return(x):
    try:
        return 2
    finally:
        if tf.reduce_sum(x) > 0:
            return 1
        return 0


def finally_without_return_keeps_the_body_result(x, log):
    try:
        if tf.reduce_sum(x) > 0:
            return x * 2.0
        log.append("body")
    finally:
        log.append("finally")
    return x - 1.0


def loop_with_finally(x, n, log):
    for i in range(n):
        try:
            if tf.reduce_sum(x) > 0:
                return x * 2.0
            log.append(i)
        finally:
            log.append(-i)
            if i > 1:
                return x + 100.0
    return x - 1.0


def finally_reads_body_values(x):
    try:
        y = x * 2.0
    finally:
        if tf.reduce_sum(x) > 3:
            return y
    return -y


def test_a_return_in_finally_wins_over_the_body_return():
    calls = [(X,)] * 4 + [(X * 0,)] * 3 + [(-X,), (X,)]
    spec = differential(finally_overrides_return, calls)
    assert spec.stats()["graph_runs"] >= 3, spec.report()
    assert finally_overrides_return(X * 0) == 0


@pytest.mark.parametrize("signs", [(1, 1, 1, 1, -1, -1, 1), (-1, -1, -1, -1, 1, 1, -1)])
def test_finally_runs_after_the_body_returned(signs):
    eager_log, spec_log = [], []
    spec = janus.speculate(finally_without_return_keeps_the_body_result)
    for s in signs:
        want = finally_without_return_keeps_the_body_result(X * s, eager_log)
        got = spec(X * s, spec_log)
        assert want.numpy().tolist() == got.numpy().tolist()
        assert eager_log == spec_log
    assert spec.stats()["graph_runs"] >= 1, spec.report()


def test_returns_in_finally_inside_a_loop():
    log_e, log_j = [], []
    spec = janus.speculate(loop_with_finally)
    for s, n in [(1, 3)] * 4 + [(-1, 3)] * 3 + [(1, 1), (-1, 1), (-1, 0), (-1, 5)]:
        want = loop_with_finally(X * s, n, log_e)
        got = spec(X * s, n, log_j)
        assert want.numpy().tolist() == got.numpy().tolist() and log_e == log_j


def test_finally_sees_values_of_the_body():
    differential(finally_reads_body_values, [(X,)] * 4 + [(-X,)] * 3 + [(X * 5,)] * 2)


def leaves_a_loop_from_finally(x):
    for _ in range(3):
        try:
            x = x + 1.0
        finally:
            continue
    return x


def test_break_or_continue_in_finally_runs_in_python_and_says_why():
    spec = differential(leaves_a_loop_from_finally, [(X,)] * 5)
    assert spec.imperative is not None and spec.imperative.kind == "finally-exit", spec.report()
    with pytest.raises(ConversionError, match="finally"):
        janus.speculate(leaves_a_loop_from_finally).show_code()
