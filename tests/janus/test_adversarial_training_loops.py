"""Training and evaluation steps written as users write them for `@tf.function` (a warmup
learning-rate schedule on a Python step counter, gradient accumulation in a list of tensors on
the trainer, a greedy decoder that stacks its tokens batch-major and stops on a tensor
condition), compared with eager call by call. Each keeps eager's values; the tests here check
that the step also keeps running as a graph where one graph can repeat every call."""
import tensorflow as tf

import janus
from tests.harness import compare_call, compare_on_states


# -- a warmup schedule: a Python `if` on the step counter, past the warmup --------------------

class _Warmup:
    def __init__(self):
        self.step = 0
        self.base = 0.2
        self.warmup = 3


def _warmup_step(s, x):
    if s.step < s.warmup:
        lr = s.base * (s.step + 1) / s.warmup
    else:
        lr = s.base
    s.step += 1
    return x * lr, lr


def test_a_warmup_schedule_past_its_warmup_keeps_reusing_a_graph():
    """The rate ramps up for three steps (`step < warmup`), then stays at `base`; `step` is a
    Python int the step increments. Eagerly the rate is 0.0667, 0.133, 0.2, then 0.2 on every
    call. Past the warmup the graph's body does not depend on `step` at all, yet every call
    builds a new graph specialised on `step`'s value (the cache misses on `CONSTANT
    args[0].step`), and after 33 builds the function runs in Python (`keeps-recompiling`)."""
    spec, _ = compare_on_states(_warmup_step, _Warmup, [tf.constant(1.0)] * 24)
    stats = spec.stats()
    assert not stats["imperative"], spec.report()
    assert stats["graphs_built"] <= 4, spec.report()


# -- gradient accumulation: the trainer's list of summed gradients is replaced each call ------

class _Accumulator:
    def __init__(self):
        self.acc = [tf.zeros([2]), tf.zeros([3])]


def _accumulate(s, g):
    s.acc = [a + g[: a.shape[0]] for a in s.acc]
    return s.acc[0]


def _accumulate_in_place(s, g):
    for i in range(len(s.acc)):
        s.acc[i] = s.acc[i] + g[: s.acc[i].shape[0]]
    return s.acc[0]


def _acc_state(s):
    return s.acc


def test_an_accumulator_list_the_step_replaces_reuses_one_graph():
    """`s.acc = [a + g for a in s.acc]` on every call (the usual gradient accumulation). Eagerly
    `acc[0]` is [1, 2], [2, 4], ... The list is a new one after each call: its tensors are fed,
    and only its length, dtypes and shapes are checked, so one graph serves every call."""
    spec, _ = compare_on_states(_accumulate, _Accumulator, [tf.constant([1.0, 2.0, 3.0])] * 12,
                                state=_acc_state)
    assert spec.stats()["graphs_built"] <= 2, spec.report()


def test_an_accumulator_list_updated_in_place_reuses_one_graph():
    """`s.acc[i] = s.acc[i] + g` for each item. Eagerly `acc[0]` is [1, 2], [2, 4], ... Every
    item read is fed and each item written is set back by index, so one graph serves."""
    spec, _ = compare_on_states(_accumulate_in_place, _Accumulator, [tf.constant([1.0, 2.0, 3.0])] * 12,
                                state=_acc_state)
    assert spec.stats()["graphs_built"] <= 2, spec.report()


# -- a decoder that stacks its tokens batch-major and stops on a tensor condition ------------

def _decode(x):
    done = tf.zeros([2], tf.bool)
    outs = []
    for t in range(4):
        x = x * 2.0
        outs.append(x)
        done = done | (x > 5.0)
        if tf.reduce_all(done):
            break
    return tf.stack(outs, axis=1), t


def test_a_decoder_stacking_its_steps_with_an_axis_keyword_runs_as_a_graph():
    """A Python `for t in range(4)` that appends each step's tensor to a local list and breaks
    when `tf.reduce_all(done)`; the result is `tf.stack(outs, axis=1)`. Eagerly x=[1, 1] gives
    4 steps, x=[9, 9] one. With `tf.stack(outs)` or `tf.stack(outs, 1)` janus carries the list
    and runs a graph; with the keyword `axis=1` the list is not recognised, the append inside
    the unrolled iteration's `tf.cond` stops every build (`write-in-tf.cond`) and the function
    runs in Python (`keeps-failing`)."""
    spec = janus.speculate(_decode)
    for v in (1.0, 9.0, 2.0, 0.1, 9.0, 0.5, 3.0):
        compare_call(_decode, spec, tf.constant([v, v]))
    assert spec.stats()["graph_runs"] > 0, spec.report()


# -- a constant divisor on one side of a relaxed `if` --------------------------------------

class _Ratio:
    def __init__(self):
        self.step = 0
        self.den = 2.0


def _ratio_step(s, x):
    if s.step < 3:
        r = s.step / s.den
    else:
        r = 1.0
    s.step += 1
    return x * r


def _zero_den_later(s, i):
    if i == 8:
        s.step, s.den = 1, 0.0


def test_a_constant_divisor_on_a_side_of_a_relaxed_if_still_raises_when_it_is_zero():
    """`s.step / s.den` inside an `if` on the varying `step`, `den` a constant 2.0: one graph
    serves past the warmup; when the caller sets `den = 0.0` and winds `step` back, eager raises
    ZeroDivisionError, and so does the call."""
    spec, _ = compare_on_states(_ratio_step, _Ratio, [tf.constant(1.0)] * 10, between=_zero_den_later,
                                state=lambda s: (s.step, s.den))
    assert spec.stats()["cache_hits"] >= 2, spec.report()
