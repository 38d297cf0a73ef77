"""Speculated functions that are closures made by factories, and the functions they define,
compared with eager call by call: values, dtypes, Python types, printed text and the state
held in closure cells."""
import tensorflow as tf

import janus
from tests.harness import compare_call


_compare = compare_call


# -- a helper the function defines rebinds one of its locals (`nonlocal`) in tensor control flow

def _mode_switch(x):
    mode = "add"

    def switch():
        nonlocal mode
        mode = "sub"
    if x > 0:
        switch()
    if mode == "add":
        return x + 1.0
    return x - 1.0


def test_a_helper_rebinding_a_local_inside_a_tensor_if_only_rebinds_it_when_the_if_runs():
    """`_mode_switch` sets its local `mode` to "sub" through a nested helper (`nonlocal mode`)
    only when the tensor `x > 0`; the result depends on `mode`. Eagerly x=1 gives 0.0 and
    x=-1 gives 0.0 (-1 + 1), alternating for eight calls."""
    spec = janus.speculate(_mode_switch)
    for i in range(8):
        _compare(_mode_switch, spec, tf.constant(1.0 if i % 2 == 0 else -1.0))


def _count_positive(x):
    k = 0

    def bump():
        nonlocal k
        k += 1
    if x > 0:
        bump()
    return x, k


def test_a_helper_counting_in_a_local_inside_a_tensor_if_counts_only_taken_branches():
    """`bump` adds 1 to the function's local `k` (`nonlocal k`) and is called under the tensor
    `if x > 0`. Eagerly the int `k` is 1 for x=1 and 0 for x=-1, on every call."""
    spec = janus.speculate(_count_positive)
    for i in range(8):
        _compare(_count_positive, spec, tf.constant(1.0 if i % 2 == 0 else -1.0))


def _count_rounds(x, n):
    k = 0

    def bump():
        nonlocal k
        k += 1
    s = tf.constant(0.0)
    for _ in tf.range(n):
        bump()
        s += x
    return s, k


def test_a_helper_counting_in_a_local_inside_a_tensor_loop_counts_every_round():
    """`bump` adds 1 to the function's local `k` on each round of `for _ in tf.range(n)`.
    Eagerly n=3 gives (3.0, 3) on every call."""
    spec = janus.speculate(_count_rounds)
    for _ in range(8):
        _compare(_count_rounds, spec, tf.constant(1.0), tf.constant(3))


def _map_count(x):
    n = 0

    def g(e):
        nonlocal n
        n += 1
        return e * 2.0
    y = tf.map_fn(g, x)
    return y, n


def test_a_map_fn_function_counting_in_a_local_counts_every_element():
    """`tf.map_fn(g, x)` where `g` adds 1 to the enclosing function's local `n`. Eagerly
    `tf.map_fn` calls `g` once per element: three elements give ([2, 4, 6], 3) on every call."""
    spec = janus.speculate(_map_count)
    for _ in range(8):
        _compare(_map_count, spec, tf.constant([1.0, 2.0, 3.0]))


def _cond_count(x):
    hits = 0

    def a():
        nonlocal hits
        hits += 1
        return x + 1.0

    def b():
        nonlocal hits
        hits += 10
        return x - 1.0
    y = tf.cond(x > 0, a, b)
    return y, hits


def test_a_tf_cond_branch_counting_in_a_local_counts_only_the_branch_taken():
    """`tf.cond(x > 0, a, b)` where `a` adds 1 and `b` adds 10 to the enclosing function's
    local `hits`. Eagerly only the taken branch runs: x=1 gives (2.0, 1), x=-1 gives (-2.0, 10)."""
    spec = janus.speculate(_cond_count)
    for i in range(8):
        _compare(_cond_count, spec, tf.constant(1.0 if i % 2 == 0 else -1.0))


def _while_count(x, n):
    rounds = 0

    def body(i, s):
        nonlocal rounds
        rounds += 1
        return i + 1, s + x
    _, s = tf.while_loop(lambda i, s: i < n, body, (tf.constant(0), tf.constant(0.0)))
    return s, rounds


def test_a_while_loop_body_counting_in_a_local_counts_every_round():
    """`tf.while_loop` whose body adds 1 to the enclosing function's local `rounds`. Eagerly
    the body runs once per round: n=4 gives (4.0, 4) on every call."""
    spec = janus.speculate(_while_count)
    for _ in range(8):
        _compare(_while_count, spec, tf.constant(1.0), tf.constant(4))
