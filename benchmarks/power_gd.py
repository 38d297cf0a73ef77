"""power-gd-N: gradient descent through a recursively defined x^n (the recursion depth test).

`power(x, n)` is `x * power(x, n - 1)` down to `n == 0`, with `n` an int32
tensor, so the recursion depth (N = 10, 100, 1000) is data and termination
depends on a tensor.  One call of the speculated `gd_step` differentiates
`(x^n - 1/2)^2` through the whole recursion and takes one step; a repetition
is 100 steps (25 for depth 1000, to keep the suite's run time in bounds;
--quick: 20, 20, 2).  The symbolic way computes x^n by the same n
multiplications in a `tf.while_loop` and differentiates through it.  Unit:
calls of `power` (n + 1 per step).  The `-xla` rows ask janus and tf.function for
`jit_compile=True`; the hand-written loop stays without XLA.
"""
import tensorflow as tf

from benchmarks.harness import Setup, Workload


def power(x, n):
    if n == 0:
        return tf.ones_like(x)
    return x * power(x, n - 1)


def gd_step(x, n, lr):
    with tf.GradientTape() as tape:
        tape.watch(x)
        loss = (power(x, n) - 0.5) ** 2
    return x - lr * tape.gradient(loss, x), loss


@tf.function(input_signature=[tf.TensorSpec([], tf.float32), tf.TensorSpec([], tf.int32),
                              tf.TensorSpec([], tf.float32)], autograph=False)
def gd_step_symbolic(x, n, lr):
    with tf.GradientTape() as tape:
        tape.watch(x)
        _, p = tf.while_loop(lambda i, p: i < n, lambda i, p: (i + 1, x * p), (tf.constant(0), tf.ones_like(x)))
        loss = (p - 0.5) ** 2
    return x - lr * tape.gradient(loss, x), loss


def workload(n, jit_compile=False):
    """The row for depth `n`; with `jit_compile`, janus and tf.function are asked for XLA (janus then
    runs the recursion's two loops and their gradient compiled), the hand-written loop is not."""
    def build(quick):
        steps = min(20 if quick else 100, (2000 if quick else 25000) // n)   # depth 1000: 2 / 25 steps
        nt, lr = tf.constant(n), tf.constant(0.2 / n ** 2)     # stable step size for this depth

        def make(way, wrap):
            step = gd_step_symbolic if way == "symbolic" else wrap(gd_step, **options)
            state = {"x": tf.constant(0.95)}

            def rep():
                out = []
                for _ in range(steps):
                    state["x"], loss = step(state["x"], nt, lr)
                    out.append(loss)
                return out + [state["x"]]
            return rep
        return Setup(units=steps * (n + 1), make=make, notes=f"{steps} steps of depth {n} per repetition")
    options = {"jit_compile": True} if jit_compile else {}
    return Workload(f"power-gd-{n}" + ("-xla" if jit_compile else ""), "calls/s", build, warmup=1,
                    recursion_limit=max(1000, 4 * n + 500), tf_function_recursion_limit=1000)


WORKLOADS = [workload(10), workload(100), workload(1000), workload(10, True), workload(100, True), workload(1000, True)]
