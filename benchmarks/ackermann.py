"""ackermann: the Ackermann function A(2, n) on tensor arguments.

Nested recursion (a call's argument is another call's result) whose
termination depends on tensors.  The symbolic way is the textbook iterative
Ackermann: one `tf.while_loop` over an explicit stack of pending `m` values,
one iteration per call.  Unit: calls of `ackermann`.
"""
import sys

import tensorflow as tf

from benchmarks.harness import SHORT_REPS, SHORT_WARMUP, Setup, Workload


def ackermann(m, n):
    if m == 0:
        return n + 1
    if n == 0:
        return ackermann(m - 1, 1)
    return ackermann(m - 1, ackermann(m, n - 1))


def calls(m, n):
    count = 0

    def a(m, n):
        nonlocal count
        count += 1
        if m == 0:
            return n + 1
        if n == 0:
            return a(m - 1, 1)
        return a(m - 1, a(m, n - 1))
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10000))
    try:
        a(m, n)
    finally:
        sys.setrecursionlimit(limit)
    return count


def ackermann_symbolic(depth, jit_compile=False):
    @tf.function(input_signature=[tf.TensorSpec([], tf.int32)] * 2, autograph=False, jit_compile=jit_compile)
    def run(m, n):
        stack = tf.tensor_scatter_nd_update(tf.zeros([depth], tf.int32), [[0]], [m])

        def body(sp, n, stack):
            m = stack[sp - 1]
            sp = sp - 1
            base = tf.equal(m, 0)
            zero_n = tf.logical_and(tf.logical_not(base), tf.equal(n, 0))
            general = tf.logical_not(tf.logical_or(base, zero_n))
            # A(0, n) = n + 1;  A(m, 0) = A(m-1, 1);  A(m, n) = A(m-1, A(m, n-1))
            stack = tf.where(zero_n, tf.tensor_scatter_nd_update(stack, [[sp]], [m - 1]), stack)
            stack = tf.where(general, tf.tensor_scatter_nd_update(stack, [[sp], [sp + 1]], [m - 1, m]), stack)
            new_n = tf.where(base, n + 1, tf.where(zero_n, 1, n - 1))
            new_sp = tf.where(base, sp, tf.where(zero_n, sp + 1, sp + 2))
            return new_sp, new_n, stack

        _, n, _ = tf.while_loop(lambda sp, n, stack: sp > 0, body, (tf.constant(1), n, stack))
        return n
    return run


def build(quick):
    m, n = (2, 2) if quick else (2, 20)
    args = (tf.constant(m), tf.constant(n))

    def make(way, wrap):
        f = ackermann_symbolic(2 * n + 8) if way == "symbolic" else wrap(ackermann)
        return lambda: f(*args)
    return Setup(units=calls(m, n), make=make, notes=f"A({m}, {n}), {calls(m, n)} calls per repetition")


WORKLOADS = [Workload("ackermann", "calls/s", build, warmup=SHORT_WARMUP, reps=SHORT_REPS,
                      recursion_limit=4000, tf_function_recursion_limit=500)]
