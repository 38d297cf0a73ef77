"""takeuchi: the Takeuchi function tak(x, y, z) on tensor arguments.

Three independent recursive calls feeding a fourth, termination on a tensor
comparison.  The symbolic way runs the same calls on an explicit stack of
frames `(x, y, z, stage, a, b)` in one `tf.while_loop` (stage = which of the
four calls the frame waits for; the last one is a tail call that reuses the
frame).  Unit: calls of `tak`.
"""
import tensorflow as tf

from benchmarks.harness import SHORT_REPS, SHORT_WARMUP, Setup, Workload


def tak(x, y, z):
    if y < x:
        return tak(tak(x - 1, y, z), tak(y - 1, z, x), tak(z - 1, x, y))
    return z


def calls(x, y, z):
    count = 0

    def t(x, y, z):
        nonlocal count
        count += 1
        if y < x:
            return t(t(x - 1, y, z), t(y - 1, z, x), t(z - 1, x, y))
        return z
    t(x, y, z)
    return count


def tak_symbolic(depth):
    @tf.function(input_signature=[tf.TensorSpec([], tf.int32)] * 3, autograph=False)
    def run(x, y, z):
        frames = tf.tensor_scatter_nd_update(tf.zeros([depth, 6], tf.int32), [[0]], [tf.stack([x, y, z, 0, 0, 0])])

        def body(sp, ret, frames):
            x, y, z, stage, a, b = tf.unstack(frames[sp - 1])

            def put(frames, i, row):
                return tf.tensor_scatter_nd_update(frames, [[i]], [tf.stack(row)])

            def start():                     # a new call: base case returns z, else call tak(x-1, y, z)
                return tf.cond(y < x,
                               lambda: (sp + 1, ret, put(put(frames, sp - 1, [x, y, z, 1, a, b]), sp,
                                                         [x - 1, y, z, 0, 0, 0])),
                               lambda: (sp - 1, z, frames))

            def first():                     # got a; call tak(y-1, z, x)
                return sp + 1, ret, put(put(frames, sp - 1, [x, y, z, 2, ret, b]), sp, [y - 1, z, x, 0, 0, 0])

            def second():                    # got b; call tak(z-1, x, y)
                return sp + 1, ret, put(put(frames, sp - 1, [x, y, z, 3, a, ret]), sp, [z - 1, x, y, 0, 0, 0])

            def third():                     # got c; tail call tak(a, b, c) in this frame
                return sp, ret, put(frames, sp - 1, [a, b, ret, 0, 0, 0])

            return tf.switch_case(stage, [start, first, second, third])

        _, ret, _ = tf.while_loop(lambda sp, ret, frames: sp > 0, body, (tf.constant(1), tf.constant(0), frames))
        return ret
    return run


def build(quick):
    xyz = (4, 2, 0) if quick else (8, 4, 0)
    args = tuple(tf.constant(v) for v in xyz)

    def make(way, wrap):
        f = tak_symbolic(4 * xyz[0] + 16) if way == "symbolic" else wrap(tak)
        return lambda: f(*args)
    return Setup(units=calls(*xyz), make=make, notes=f"tak{xyz}, {calls(*xyz)} calls per repetition")


WORKLOADS = [Workload("takeuchi", "calls/s", build, warmup=SHORT_WARMUP, reps=SHORT_REPS,
                      tf_function_recursion_limit=500)]
