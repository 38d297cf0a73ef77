"""A Python int a recursion passes down (`fib(n - 1, a + b, a)`) is held in an int table of the
machine's frames, and still acts as Python's int: added to a float tensor it takes the tensor's
dtype, as eager converts it; where it grows past what the table holds, the call runs in Python and
gives eager's exact value."""
import tensorflow as tf

from tests.harness import differential


def fib_with_defaults(n, a=1, b=0):
    if n == 0:
        return tf.constant(0.0) + b
    return tf.cast(n, tf.float32) * 0.5 + a + fib_with_defaults(n - 1, a + b, a)


def fib_positional(n, a, b):
    if n == 0:
        return tf.constant(0.0, tf.float64) + b
    return tf.cast(n, tf.float64) + a + fib_positional(n - 1, a + b, a)


def scaled_by_depth(x, n, k):
    if n == 0:
        return x * k
    return scaled_by_depth(x, n - 1, k + 1) * 0.5 + k


def _graph_ran(spec):
    assert spec.stats()["graph_runs"] >= 1, spec.report()


def test_a_python_int_in_the_frames_added_to_a_float_tensor_takes_its_dtype():
    _graph_ran(differential(fib_with_defaults, [(tf.constant(n),) for n in (3, 5, 4, 6, 2, 7)]))


def test_a_python_int_in_the_frames_with_a_float64_tensor():
    _graph_ran(differential(fib_positional, [(tf.constant(n), 1, 0) for n in (3, 5, 4, 6, 2, 7)]))


def test_a_python_int_past_the_table_runs_in_python_with_eager_value():
    calls = [(tf.constant(n), 1, 0) for n in (3, 5, 4, 6)] + [(tf.constant(60), 1, 0), (tf.constant(5), 1, 0)]
    spec = differential(fib_positional, calls)
    _graph_ran(spec)


def test_a_python_int_scaling_a_float_tensor_through_the_returns():
    _graph_ran(differential(scaled_by_depth, [(tf.constant([1.5, -2.0]), tf.constant(n), 1) for n in (2, 4, 3, 5, 1, 6)]))


def windowed(n, a):
    if n == 0:
        return tf.constant(1.0) * (0 < a < 10) + ~a
    return windowed(n - 1, a + 3) * 0.5


def test_a_comparison_chain_and_invert_on_a_frame_int():
    _graph_ran(differential(windowed, [(tf.constant(n), 1) for n in (1, 2, 4, 3, 5, 2)]))


def indexed_by_depth(x, i):
    if i == 0:
        return x[0]
    return x[i] * 0.5 + indexed_by_depth(x, i - 1)


def labelled_by_depth(x, i):
    if i == 0:
        return x
    return tf.identity(labelled_by_depth(x, i - 1), name=f"level{i}")


def _reasons(spec) -> str:
    return " ".join(r["explanation"] for r in spec.report(format="json")["fallbacks"])


def test_a_frame_int_indexing_a_tensor_runs_in_python_and_says_so():
    """`x[i]` needs `i` as a constant while the graph is built: the call runs in Python, with
    eager's values, and the reason names the index (not the number's text)."""
    x = tf.constant([1.0, 2.0, 3.0, 4.0, 5.0])
    spec = differential(indexed_by_depth, [(x, k) for k in (3, 4, 2, 4, 3, 1)])
    assert "index or slice bound of a tensor" in _reasons(spec), spec.report()


def test_the_text_of_a_frame_int_runs_in_python_and_says_so():
    spec = differential(labelled_by_depth, [(tf.constant(1.0), k) for k in (3, 4, 2, 4, 3, 1)])
    assert "the text of a Python number" in _reasons(spec), spec.report()


def threshold(x, n, k):
    if n == 0:
        return x * 2.0 if k > 5 else x
    return threshold(x, n - 1, k) + 1.0


def countdown(x, n, k):
    if n == 0:
        return x * 2.0 if k > 5 else x
    return countdown(x, n - 1, k - 1) + 1.0


def shifted_threshold(x, n, k):
    """`k * 2 ** 20 + 1` is an int the graph computes in int64 (2 ** 32 + 1 for k = 4096)."""
    return threshold(x, n, k * 2 ** 20 + 1)


def shifted_countdown(x, n, k):
    return countdown(x, n, k * 2 ** 20 + 1)


_BIG = [(3, 0), (4, 1), (2, 0), (5, 7), (3, 6), (2, 7), (4, 0), (3, 4096), (3, 8193), (2, 9)]


def test_a_computed_int_past_32_bits_passed_down_unchanged_does_not_wrap():
    """The frames see it in int32: 2 ** 32 + 1 would be 1 there, and `k > 5` would flip."""
    x = tf.constant([1.5, 2.0])
    _graph_ran(differential(shifted_threshold, [(x, n, k) for n, k in _BIG]))


def test_a_computed_int_past_32_bits_in_the_frame_tables_does_not_wrap():
    x = tf.constant([1.5, 2.0])
    _graph_ran(differential(shifted_countdown, [(x, n, k) for n, k in _BIG]))


def one_deeper(x, n):
    """`n + 1` and `n * 2` are ints the graph computes from the fed `n`."""
    return countdown(x, n + 1, n * 2)


def test_a_computed_int_into_the_frames_keeps_one_graph():
    """Its int32 check is a guard before the machine, not a value to specialise on."""
    x = tf.constant([1.5, 2.0])
    spec = differential(one_deeper, [(x, n) for n in range(1, 12)])
    assert spec.stats()["graphs_built"] <= 3 and spec.stats()["graph_runs"] >= 6, spec.report()


class Pair:
    def __init__(self, left=None, right=None):
        self.left, self.right = left, right


def pairs(depth):
    return None if depth == 0 else Pair(pairs(depth - 1), pairs(depth - 1))


def plus_big(node, k):
    """Returns an int the block computes in int64 (`+ 2**40`) into the int32 result table."""
    if node is None:
        return k
    return plus_big(node.left, k + 1) + plus_big(node.right, k) + 2 ** 40


def passes_big(node, k):
    """Passes an int the block computes in int64 into the callee's int32 parameter table."""
    if node is None:
        return k * 3
    return passes_big(node.left, k + 2 ** 40) + passes_big(node.right, k)


def max_big(node, k):
    if node is None:
        return k
    return max(max_big(node.left, k + 1), 2 ** 40, max_big(node.right, k - 1))


_PAIRS = [(1, 1), (2, 2), (1, 3), (2, 1), (3, 5), (1, 7)]


def test_an_int_past_32_bits_returned_into_the_frames_is_eagers():
    differential(plus_big, [(pairs(d), k) for d, k in _PAIRS])


def test_an_int_past_32_bits_passed_to_a_call_is_eagers():
    differential(passes_big, [(pairs(d), k) for d, k in _PAIRS])


def test_max_with_an_int_past_32_bits_is_eagers():
    differential(max_big, [(pairs(d), k) for d, k in _PAIRS])


def thirds(n, a):
    """`a` is a Python int at the root and an int32 tensor below (`a // 3 - n`): one packed table."""
    if n == 0:
        return a + tf.constant(0, tf.int32)
    return thirds(n - 1, a // 3 - n) + n + tf.cast(a > 100, tf.int32)


def tripled(n, a):
    if n == 0:
        return a + tf.constant(0, tf.int32)
    return tripled(n - 1, a * 3 - n) + n


def test_a_root_python_int_past_32_bits_in_a_table_it_shares_with_tensors_is_eagers():
    """The packed int32 table kept the root's low 32 bits: `2**40 + 5` became 5 (`a > 100` False,
    `a // 3` wrong), and `2**62 * 3`, which eager cannot convert (ValueError), wrapped."""
    differential(thirds, [(tf.constant(n), 2 ** 40 + 5) for n in (1, 2, 3, 2, 1, 3)])
    differential(thirds, [(tf.constant(n), k) for n, k in
                          ((1, 7), (2, 9), (3, 11), (2, 2 ** 40), (1, 2 ** 62), (3, 4), (3, 2 ** 62), (2, 5))])
    differential(tripled, [(tf.constant(n), 2 ** 62) for n in (1, 2, 3, 2, 1, 3)])


def quotient(node, k):
    if node is None:
        return (k + 2 ** 60) / 3 + (k + 7) / 3
    return quotient(node.left, k + 1) + quotient(node.right, k * 2)


def small_quotient(node, k):
    if node is None:
        return (k + 7) / 3
    return small_quotient(node.left, k + 1) + small_quotient(node.right, k * 2)


def test_a_quotient_of_python_ints_past_53_bits_in_a_recursion_is_pythons():
    """Python divides the ints exactly and rounds once; the machine cast them to float64 first
    (1.5372286728091297e+18 for eager's ...295e+18)."""
    calls = [(pairs(d), k) for d, k in [(1, 1), (2, 3), (1, -2), (2, 100), (1, 5), (2, 4), (1, 29)]]
    differential(quotient, calls)
    _graph_ran(differential(small_quotient, calls))
