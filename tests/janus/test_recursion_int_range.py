"""Python ints a recursion computes stay Python's, though a machine holds them in 32 bits.

Eager's Python ints have no bound; a machine's tables hold them in int32 and
TensorFlow's integer ops wrap.  Each int op a block computes from values that
may be Python ints is checked to fit its dtype: where it does, the call runs in
the graph; where it does not, the run fails and the call runs in Python, which
computes the big int, as eager does.  Each strategy is covered (chain, linear,
wavefront, levels), with a held and a broken case, and so is a recursion's int
result used in arithmetic after the machine.
"""
import functools
import math
import operator
import threading

import tensorflow as tf

import janus
from tests.harness import differential, run_capturing, assert_same_outcome
from tests.janus.test_recursion import ack
from tests.janus.test_recursion_kinds import WNode as Node


def pw(m, acc):
    """`acc` is a Python int in every frame (the root passes 1): 3**m, past int32 from m = 20."""
    if m == 0:
        return acc
    return pw(m - 1, acc * 3)


def pw_float(m, acc, x):
    """A float frame value: XLA may not run it, so the linear machine does."""
    if m == 0:
        return acc, x
    return pw_float(m - 1, acc * 3, x * 1.5)


def grow(m, j, p):
    """`j` is a tensor at the root and the Python int `p` of the caller below it; `p` is a Python
    int in every frame, ten times its caller's: the result is 10**(2m - 1), past int32 from m = 6."""
    if m == 0:
        return j * p
    return grow(m - 1, p, p * 10)


def spread(n, acc):
    """Two calls per frame (the wavefront machine), each multiplying a Python int."""
    if n <= 0:
        return acc
    return spread(n - 1, acc * 10) + spread(n - 2, acc * 7)


def tfact(n):
    """Tensor arithmetic: int32 wraps in eager too."""
    if n == 0:
        return 1
    return n * tfact(n - 1)


def weighted(node):
    """An int attribute of every node, scaled past int32 when it is large (the levels machine)."""
    if node is None:
        return 0
    return node.w * 100000 + weighted(node.left) + weighted(node.right)


def tree(w):
    return Node(w, Node(w + 1), Node(w + 2, Node(w + 3)))


def chained(node):
    """A node's int attribute plus the callee's Python int result (the machine's table value)."""
    if node is None:
        return 0
    return node.w + chained(node.left)


def scaled_by(node, k):
    """A frame's Python int times a node's int attribute."""
    if node is None:
        return k
    return scaled_by(node.left, k * node.w)


def pair(w):
    return Node(w, Node(w))


def start_scaled(node):
    return scaled_by(node, 1)


def big_step(m, acc):
    """`2**32` meets an int the machine holds: TensorFlow would wrap the literal to an int32 0;
    the machine adds it in int64, as Python's exact int."""
    if m == 0:
        return acc
    return big_step(m - 1, acc + 2**32)


def start_big_step(m):
    return big_step(m, 1)


def huge_step(m, acc):
    """Past 64 bits for m = 9: the machine's check fails, and Python computes it."""
    if m == 0:
        return acc
    return huge_step(m - 1, acc + 2**60)


def start_huge_step(m):
    return huge_step(m, 1)


def summed(m):
    """`sum` of the recursion's Python int results, after the machine."""
    r = pw(m, 1)
    return sum([r, r, r])


def past_literal(m):
    """The recursion's int result plus an int past 32 bits, after the machine."""
    return pw(m, 1) + 2**32, pw(m, 1) < 2**32


def sevenths(m, acc):
    if m == 0:
        return acc / 7
    return sevenths(m - 1, acc * 3)


def start_sevenths(m):
    return sevenths(m, 1)


def start(m):
    return pw(m, 1)


def start_float(m):
    return pw_float(m, 1, tf.constant(1.0))


def start_grow(m):
    return grow(m, tf.constant(3), 1)


def start_spread(n):
    return spread(n, 1)


def squared(m):
    """The recursion's int result, squared after the machine."""
    r = pw(m, 1)
    return r * r


def _ints(*values):
    return [(tf.constant(v),) for v in values]


def _strategy(spec) -> str:
    return next((line.strip() for line in spec.report().splitlines() if "runs as" in line), "")


def test_a_python_int_accumulator_that_fits_runs_in_the_chain():
    spec = differential(start, _ints(3, 5, 4, 6, 15, 2), profile_runs=1)
    stats = spec.stats()
    assert stats["graph_runs"] == 5 and stats["guard_failures"] == 0, spec.report()
    assert "runs as chain" in _strategy(spec), spec.report()


def test_a_python_int_accumulator_past_int32_runs_in_python_and_gives_eagers_int():
    spec = differential(start, _ints(3, 5, 4, 20, 25, 40, 6), profile_runs=1)
    stats = spec.stats()
    assert stats["guard_failures"] == 3 and stats["graph_runs"] == 3, spec.report()
    assert "python-int" in spec.report() and "fit the machine's int tables" in spec.report()


def test_the_linear_machine_checks_its_python_ints():
    spec = differential(start_float, _ints(3, 5, 4, 20, 2), profile_runs=1)
    assert "runs as linear" in _strategy(spec), spec.report()
    assert spec.stats()["guard_failures"] == 1 and spec.stats()["graph_runs"] == 3, spec.report()


def test_a_python_int_in_some_frames_only_is_checked_there():
    spec = differential(start_grow, _ints(2, 3, 2, 6, 4, 7), profile_runs=1)
    stats = spec.stats()
    assert stats["graph_runs"] == 3 and stats["guard_failures"] == 2, spec.report()


def test_ackermann_with_python_ints_below_the_root_still_runs_in_the_graph():
    spec = differential(ack, [(tf.constant(m), tf.constant(n)) for m, n in [(1, 2), (2, 1), (2, 3), (1, 0)]],
                        profile_runs=1)
    assert spec.stats()["graph_runs"] == 3 and spec.stats()["guard_failures"] == 0, spec.report()


def test_the_wavefront_machine_checks_its_python_ints():
    spec = differential(start_spread, _ints(4, 6, 5, 3, 10, 7), profile_runs=1)
    assert "runs as wavefront" in _strategy(spec), spec.report()
    stats = spec.stats()
    assert stats["guard_failures"] == 1 and stats["graph_runs"] == 4, spec.report()


def test_a_node_attribute_scaled_past_int32_runs_in_python():
    calls = [(tree(1),), (tree(5),), (tree(2),), (tree(30000),), (tree(7),)]
    spec = differential(weighted, calls, profile_runs=1)
    assert "runs as levels" in _strategy(spec), spec.report()
    stats = spec.stats()
    assert stats["guard_failures"] == 1 and stats["graph_runs"] == 3, spec.report()


def test_tensor_ints_wrap_in_the_graph_as_in_eager():
    """The kinds resolution proves `n` a tensor in every frame, so `n * r` needs no check."""
    spec = differential(tfact, _ints(3, 5, 4, 15, 20, 6), profile_runs=1)
    assert spec.stats()["graph_runs"] == 5 and spec.stats()["guard_failures"] == 0, spec.report()


def test_the_result_used_after_the_machine_is_checked_too():
    spec = differential(squared, _ints(3, 5, 4, 16, 6), profile_runs=1)
    stats = spec.stats()
    assert stats["guard_failures"] == 1 and stats["graph_runs"] == 3, spec.report()


def test_a_recursion_that_keeps_overflowing_runs_in_python_with_the_reason():
    spec = differential(start, _ints(3, 5, 4) + _ints(*range(20, 32)), profile_runs=1)
    report = spec.report()
    assert "an int left its tables" in report, report


def test_threads_sharing_a_function_get_eagers_ints():
    spec = janus.speculate(start)
    for m in (3, 5, 4):
        spec(tf.constant(m))
    ms = [3, 20, 7, 33, 12, 25] * 3
    got, errors = {}, []

    def worker(k):
        try:
            for i in range(k, len(ms), 3):
                got[i] = spec(tf.constant(ms[i]))
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
    threads = [threading.Thread(target=worker, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for i, m in enumerate(ms):
        assert_same_outcome(run_capturing(start, (tf.constant(m),)), (("return", got[i]), ""))


def test_a_node_int_attribute_plus_a_callee_result_past_int32_runs_in_python():
    """Found by adversarial programs: the attribute and the table value were each 'the other
    operand', so neither the attribute's arithmetic nor the machine's walk checked the add."""
    spec = differential(chained, [(pair(w),) for w in (1, 5, 2, 3, 2000000000, 4)], profile_runs=1)
    assert spec.stats()["graph_runs"] == 4 and spec.stats()["guard_failures"] == 1, spec.report()


def test_a_frame_int_times_a_node_attribute_past_int32_runs_in_python():
    spec = differential(start_scaled, [(pair(w),) for w in (1, 5, 2, 3, 50000, 4)], profile_runs=1)
    assert spec.stats()["graph_runs"] == 4 and spec.stats()["guard_failures"] == 1, spec.report()


def test_an_int_literal_past_32_bits_inside_the_recursion_is_exact():
    """TensorFlow wraps `2**32` to the int32 0 where it meets an int32 tensor; the machine's int
    there is a Python int, which adds it exactly (in int64)."""
    spec = differential(start_big_step, _ints(2, 3, 4, 1, 5, 0, 2), profile_runs=1)
    assert spec.stats()["graph_runs"] >= 5, spec.report()


def test_an_int_past_64_bits_inside_the_recursion_runs_that_call_in_python():
    spec = differential(start_huge_step, _ints(1, 0, 1, 2, 9, 3), profile_runs=1)
    assert spec.stats()["graph_runs"] >= 2 and spec.stats()["guard_failures"] >= 1, spec.report()


def test_sum_of_the_recursions_ints_after_the_machine_is_checked():
    spec = differential(summed, _ints(1, 2, 3, 4, 19, 5), profile_runs=1)
    assert spec.stats()["graph_runs"] == 4 and spec.stats()["guard_failures"] == 1, spec.report()


def test_an_int_literal_past_32_bits_after_the_machine_is_exact():
    spec = differential(past_literal, _ints(1, 2, 3, 4, 19, 5), profile_runs=1)
    assert spec.stats()["graph_runs"] == 5, spec.report()


def test_a_python_int_divided_by_a_constant_in_the_machine_is_eagers_float():
    """TensorFlow's constant folding would multiply by the reciprocal: 9 / 7 one ulp off."""
    spec = differential(start_sevenths, _ints(2, 3, 4, 1, 2, 3), profile_runs=1)
    assert spec.stats()["graph_runs"] == 5, spec.report()


def divided(m, acc, d):
    if m == 0:
        return acc / d
    return divided(m - 1, acc * 3, d)


def start_divided(m, d):
    return divided(m, 1, d)


def divided_after(m, d):
    return pw(m, 1) / d


def test_a_python_int_divided_by_zero_in_the_machine_raises_as_eager():
    """Python raises ZeroDivisionError where TensorFlow's float division gives inf."""
    calls = [(tf.constant(m), d) for m, d in [(1, 2), (2, 3), (3, 4), (2, 0), (3, 5), (1, 0)]]
    spec = differential(start_divided, calls, profile_runs=1)
    assert spec.stats()["graph_runs"] >= 1, spec.report()


def test_the_recursions_int_divided_by_a_fed_zero_after_the_machine_raises_as_eager():
    calls = [(tf.constant(m), d) for m, d in [(1, 2), (2, 3), (3, 4), (2, 0), (3, 5), (1, 0)]]
    differential(divided_after, calls, profile_runs=1)


BIG = 2**35


def global_step(m, acc):
    """A global int past 32 bits: the converted code reads it as `jn.ld('BIG')`."""
    if m == 0:
        return acc
    return global_step(m - 1, acc + BIG)


def start_global_step(m):
    return global_step(m, 1)


def library_products(m):
    """Library code that multiplies the recursion's Python ints by their own operators."""
    r = pw(m, 1)
    return math.prod([r, r]), operator.mul(r, r), functools.reduce(operator.add, [r, r, r]), r.__mul__(r)


def test_a_global_int_past_32_bits_inside_the_recursion_is_exact():
    spec = differential(start_global_step, _ints(1, 2, 3, 4, 0, 2), profile_runs=1)
    assert spec.stats()["graph_runs"] >= 4, spec.report()


def test_library_arithmetic_on_the_recursions_ints_is_checked():
    spec = differential(library_products, _ints(1, 2, 3, 4, 19, 5), profile_runs=1)
    assert spec.stats()["graph_runs"] == 4, spec.report()
