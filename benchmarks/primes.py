"""primes: counting primes by trial division, as two mutually recursive functions.

`count(n)` (primes in [2, n]) calls `trial(n, 2)`, which calls itself with the
next divisor and `count(n - 1)` when it has decided: mutual recursion whose
termination depends on tensors.  The symbolic way is the same state machine
as one `tf.while_loop` over `(n, d, found, in_trial)`, one iteration per call.
Unit: calls of `count` and `trial`.
"""
import tensorflow as tf

from benchmarks.harness import SHORT_REPS, SHORT_WARMUP, Setup, Workload


def count(n):
    if n < 2:
        return 0
    return trial(n, 2)


def trial(n, d):
    if d * d > n:
        return 1 + count(n - 1)
    if n % d == 0:
        return count(n - 1)
    return trial(n, d + 1)


def calls(n):
    total = 0

    def c(n):
        nonlocal total
        total += 1
        return 0 if n < 2 else t(n, 2)

    def t(n, d):
        nonlocal total
        total += 1
        if d * d > n:
            return 1 + c(n - 1)
        if n % d == 0:
            return c(n - 1)
        return t(n, d + 1)
    c(n)
    return total


@tf.function(input_signature=[tf.TensorSpec([], tf.int32)], autograph=False)
def count_symbolic(n):
    def body(n, d, found, in_trial):
        # in count: n < 2 ends the loop (cond), else go to trial(n, 2)
        # in trial: d*d > n → found+1, count(n-1); n % d == 0 → count(n-1); else trial(n, d+1)
        prime = d * d > n
        divides = tf.logical_and(tf.logical_not(prime), tf.equal(n % d, 0))
        leave = tf.logical_or(prime, divides)
        return (tf.where(in_trial & leave, n - 1, n),
                tf.where(in_trial, tf.where(leave, d, d + 1), 2),
                tf.where(in_trial & prime, found + 1, found),
                tf.logical_and(tf.logical_not(in_trial), True) | (in_trial & tf.logical_not(leave)))

    _, _, found, _ = tf.while_loop(lambda n, d, found, in_trial: tf.logical_or(in_trial, n >= 2), body,
                                   (n, tf.constant(2), tf.constant(0), tf.constant(False)))
    return found


def build(quick):
    n = 20 if quick else 100
    arg = tf.constant(n)

    def make(way, wrap):
        f = count_symbolic if way == "symbolic" else wrap(count)
        return lambda: f(arg)
    return Setup(units=calls(n), make=make, notes=f"count({n}), {calls(n)} calls per repetition")


WORKLOADS = [Workload("primes", "calls/s", build, warmup=SHORT_WARMUP, reps=SHORT_REPS,
                      recursion_limit=2500, tf_function_recursion_limit=500)]
