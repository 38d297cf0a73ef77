"""fib: naive doubly-recursive Fibonacci on a tensor argument.

Recursion whose termination depends on a tensor (`n <= 1` on an int32
tensor).  The symbolic way is what a TensorFlow expert writes for the same
computation without recursion: one `tf.while_loop` over an explicit stack of
pending calls, one iteration per call, so every way makes the same calls.
Unit: calls of `fib` (2·fib(n+1) − 1 per evaluation).
"""
import tensorflow as tf

from benchmarks.harness import SHORT_REPS, SHORT_WARMUP, Setup, Workload


def fib(n):
    if n <= 1:
        return n
    return fib(n - 1) + fib(n - 2)


def _calls(n):
    a, b = 1, 1                      # calls(0) = calls(1) = 1; calls(n) = 1 + calls(n-1) + calls(n-2)
    for _ in range(n - 1):
        a, b = b, 1 + a + b
    return b if n >= 1 else 1


def fib_symbolic(max_n):
    @tf.function(input_signature=[tf.TensorSpec([], tf.int32)])
    def run(n):
        stack = tf.tensor_scatter_nd_update(tf.zeros([max_n + 2], tf.int32), [[0]], [n])

        def body(sp, acc, stack):
            top = stack[sp - 1]
            sp = sp - 1
            leaf = top <= 1
            acc = tf.where(leaf, acc + top, acc)
            pushed = tf.tensor_scatter_nd_update(stack, [[sp], [sp + 1]], [top - 1, top - 2])
            stack = tf.where(leaf, stack, pushed)
            sp = tf.where(leaf, sp, sp + 2)
            return sp, acc, stack

        _, acc, _ = tf.while_loop(lambda sp, acc, stack: sp > 0, body, (tf.constant(1), tf.constant(0), stack))
        return acc
    return run


def build(quick):
    n = 7 if quick else 14
    arg = tf.constant(n)

    def make(way, wrap):
        f = fib_symbolic(n) if way == "symbolic" else wrap(fib)
        return lambda: f(arg)
    return Setup(units=_calls(n), make=make, notes=f"fib({n}), {_calls(n)} calls per repetition")


WORKLOADS = [Workload("fib", "calls/s", build, warmup=SHORT_WARMUP, reps=SHORT_REPS,
                      tf_function_recursion_limit=500)]
