"""Bugs the differential fuzzer found, each as a named regression test (minimised program,
the call sequence that exposed it)."""
import json
import sys
from pathlib import Path

import numpy as np
import tensorflow as tf

import janus
from tests.fuzz import runner
from tests.harness import differential
from tests.janus.test_recursion import ack
from tests.janus.test_recursion_kinds import mixed

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "janus" / "library" / "site-packages"))
import toyenv  # noqa: E402  (a library that acts on the world; see tests/janus/test_outside_calls.py)

BRANCH_FLIPS = [tf.constant([-2.0, -2.0]), tf.constant([-2.0, -2.0]), tf.constant([-2.0, 3.0]),
                tf.constant([-2.0, -2.0]), tf.constant([3.0, 3.0])]


def int_assigned_in_a_tensor_if(x, n):
    k = n
    if tf.reduce_sum(x) > -1.0:
        x = x + 1.0
    else:
        k = k + n
    print("k", k)
    return x, k


def float_assigned_in_a_tensor_if(x):
    s = 0.5
    if tf.reduce_sum(x) > -1.0:
        x = x + 1.0
    else:
        s = s * 0.1
    return x, s


def python_numbers_through_a_tensor_while(x):
    i, k, s = 0, 1, 0.5
    while i < tf.reduce_sum(x):
        i += 1
        k = k + 2
        s = s * 1.5
    return i, k, s


def number_on_one_side_tensor_on_the_other(x):
    y = 0.0
    if tf.reduce_sum(x) > 0.0:
        y = tf.reduce_sum(x) * 2.0
    return y


def test_a_python_int_assigned_in_a_tf_cond_stays_an_int():
    differential(int_assigned_in_a_tensor_if, [(x, n) for x, n in zip(BRANCH_FLIPS, (0, 0, 0, 1, 2))])


def test_a_python_float_assigned_in_a_tf_cond_stays_a_64_bit_float():
    differential(float_assigned_in_a_tensor_if, [(x,) for x in BRANCH_FLIPS])


def test_python_numbers_carried_by_a_tf_while_loop_stay_python_numbers():
    calls = [(tf.constant(v),) for v in ([2.0, 1.0], [1.0], [3.0], [0.0], [4.0], [2.0])]
    spec = differential(python_numbers_through_a_tensor_while, calls)
    assert spec.stats()["graph_runs"] >= 2, spec.report()


def test_a_variable_whose_type_depends_on_the_branch_follows_eager():
    calls = [(tf.constant(v),) for v in ([1.0], [1.0], [-1.0], [2.0], [-3.0], [1.0])]
    differential(number_on_one_side_tensor_on_the_other, calls)


class Box:
    def __init__(self):
        self.n = 0
        self.items = []


def write_under_a_relaxed_number(x, n, box):
    box.n += 1
    if n > 3:                  # n varies, so it is fed: this `if` is on a tensor
        box.n += 1
        box.items.append(n)
    return x


def test_a_write_inside_a_tf_cond_happens_only_on_the_taken_side():
    eager_box, janus_box = Box(), Box()
    spec = janus.speculate(write_under_a_relaxed_number)
    for n in (0, 0, 5, 0, 7, 1, 9, 2):
        write_under_a_relaxed_number(tf.constant(1.0), n, eager_box)
        spec(tf.constant(1.0), n, janus_box)
        assert (eager_box.n, eager_box.items) == (janus_box.n, janus_box.items), spec.report()


def doubled_then_shifted_in_a_tensor_loop(x, n):
    t = x * 1.0
    j = tf.constant(0)
    while j < tf.constant(abs(n) % 3 + 1):
        t = t + t
        t = t + tf.reduce_sum(x)
        j = j + 1
    return t


def test_a_loop_tensorflows_arithmetic_optimizer_miscompiles_gives_eagers_answer():
    # TF 2.21's arithmetic optimizer returns an empty tensor for this loop; janus turns it off.
    x = tf.constant([-2.0, -2.0])
    spec = differential(doubled_then_shifted_in_a_tensor_loop, [(x, n) for n in (0, 0, 1, 0, 2, 0)])
    assert spec.stats()["graph_runs"] >= 1, spec.report()


def scaled_twice_in_a_tensor_loop(x, n):
    s = 0.5
    j = tf.constant(0)
    while j < tf.constant(abs(n) % 3 + 1):
        s = s * 0.1
        s = s * 0.1
        j = j + 1
    return x, s


def test_python_float_arithmetic_is_not_reassociated_by_the_graph():
    x = tf.constant([-2.0, -2.0])
    differential(scaled_twice_in_a_tensor_loop, [(x, n) for n in (0, 0, 1, 1, 2, 0)])


class Layer:
    def __init__(self, w):
        self.w = tf.constant(w)


LAYERS = [Layer(2.0), Layer(3.0)]


def through_layers(x):
    for layer in LAYERS:
        x = x * layer.w
    return x


def test_a_tensor_attribute_of_an_object_in_a_list_is_read_fresh():
    spec = janus.speculate(through_layers)
    x = tf.constant([1.0])
    try:
        for w in (2.0, 2.0, 2.0, 2.0, 50.0, 7.0):
            LAYERS[1].w = tf.constant(w)
            expected = through_layers(x)
            assert float(spec(x)[0]) == float(expected[0]), spec.report()
    finally:
        LAYERS[1].w = tf.constant(3.0)
    assert spec.stats()["graph_runs"] >= 3, spec.report()


TABLE = {}
ITEMS = []


def assigns_a_dict_item_and_clears_a_list(x, n):
    k = n
    TABLE[k % 3] = k
    ITEMS.clear()
    return x * 1.0


def test_a_write_equal_to_the_build_time_value_is_still_written():
    """Found after 12,600 programs: `TABLE[k % 3] = k` built when TABLE already held that value
    planned no write, so after `TABLE.clear()` outside the graph left TABLE empty."""
    runs = []
    for fn in (assigns_a_dict_item_and_clears_a_list, janus.speculate(assigns_a_dict_item_and_clears_a_list)):
        TABLE.clear()
        ITEMS.clear()
        states = []
        for n, outside in [(0, None), (0, None), (6, None), (6, None), (6, "clear"), (6, "add"), (6, None)]:
            if outside == "clear":
                TABLE.clear()
            elif outside == "add":
                ITEMS.append(5)
                TABLE[1] = 1
            fn(tf.constant([1.0]), n)
            states.append((dict(TABLE), list(ITEMS)))
        runs.append(states)
    assert runs[0] == runs[1]


class Items:
    def __init__(self):
        self.items = []


def appends_a_sum_over_a_varying_range(x, n, box):
    t = x * 1.0
    k = n
    for i in range(abs(n) % 4):
        t = t + x
        k = k + i
    box.items.append(k)
    return t, k


def test_range_of_a_varying_python_int_yields_python_ints():
    """Found after 5,300 programs: `range(abs(n) % 4)` with n fed as a tensor yielded int32
    tensors, so `k + i` made k a tensor and an eager tensor was appended where eager appends 1."""
    runs = []
    for fn in (appends_a_sum_over_a_varying_range, janus.speculate(appends_a_sum_over_a_varying_range)):
        box = Items()
        out = [fn(tf.constant([-2.0, -2.0]), n, box)[1] for n in (1, 1, 1, 0, 1, 2, 3, 5, 6)]
        runs.append(([(v, type(v)) for v in out], [(v, type(v)) for v in box.items]))
    assert runs[0] == runs[1]


def unused_failing_gather(x, n):
    t = x * 1.0
    t = t + tf.gather(x, n % 4)
    return n, 0.5


def unused_failing_gather_in_a_loop(x, n, v):
    t = x * 1.0
    v.assign_add(1.0)
    j = tf.constant(0)
    while j < tf.constant(abs(n) % 3 + 1):
        t = t + tf.gather(x, n % 4)
        j = j + 1
    return n


def test_an_op_whose_value_is_unused_still_raises_as_eager():
    """Found by the fuzzer: `t = t + tf.gather(x, k % 4)` with t never used again was pruned
    from the graph, so janus returned where eager raised InvalidArgumentError."""
    x = tf.constant([-2.0, -2.0])
    differential(unused_failing_gather, [(x, n) for n in (0, 0, 0, -1, 1, 3)])
    eager_v, spec_v = tf.Variable(0.0), tf.Variable(0.0)
    spec = janus.speculate(unused_failing_gather_in_a_loop)
    for n in (0, 0, 0, -1, 1, 3, 0):
        outcomes = []
        for fn, v in ((unused_failing_gather_in_a_loop, eager_v), (spec, spec_v)):
            try:
                outcomes.append(fn(x, n, v))
            except tf.errors.InvalidArgumentError as exc:
                outcomes.append(type(exc))
        assert outcomes[0] == outcomes[1] and float(eager_v.numpy()) == float(spec_v.numpy())


REC_COUNT = 0


def counting_rec(v, m):
    global REC_COUNT
    if m <= 0:
        return v
    REC_COUNT += 1
    return counting_rec(v * 0.5, m - 1) + 1.0


def calls_counting_rec_in_a_loop(x, n):
    t = x * 1.0
    for _ in [1, 2]:
        t = counting_rec(t, tf.constant(abs(n) % 3))
    return t


def test_a_global_written_in_a_recursion_called_in_a_loop_counts_every_call():
    """Found by the fuzzer's recursion rule: the machine's blocks kept `COUNT` (declared global)
    in a frame table, so its writes were lost (janus 2, eager 18)."""
    global REC_COUNT
    counts = []
    for fn in (calls_counting_rec_in_a_loop, janus.speculate(calls_counting_rec_in_a_loop)):
        REC_COUNT = 0
        for n in (24, 33, -1, 35, 2, 2, 2):
            fn(tf.constant([1.0, 2.0]), n)
        counts.append(REC_COUNT)
    assert counts[0] == counts[1]


GROWING = []


def unused_gathers_before_a_relaxed_length_test(x, n):
    t = x * 1.0
    k = n
    for i in range(3):
        for i in range(3):
            t = t + tf.gather(x, k % 4)
            k = k + i
        k = k + i
    if len(GROWING) > 2:
        t = t + x
    return k, len(GROWING)


def test_unused_values_carried_through_a_cond_still_run():
    """Found after 5,900 programs: once len(GROWING) was fed, `t` left a tf.cond through an
    Identity that nothing used and the failing gathers before it were pruned."""
    x = tf.constant([-2.0, -2.0])
    spec = janus.speculate(unused_gathers_before_a_relaxed_length_test)
    for i in range(7):
        if i == 4:
            GROWING.append(5)
        for fn in (unused_gathers_before_a_relaxed_length_test, spec):
            try:
                fn(x, 0)
                raise AssertionError(f"call {i}: {fn} returned where eager raises")
            except tf.errors.InvalidArgumentError:
                pass


def writes_in_an_unrolled_tensor_loop(x, n, v):
    t = x * 1.0
    j = tf.constant(0)
    while j < tf.constant(abs(n) % 3 + 1):
        v.assign_add(tf.reduce_sum(t))
        j = j + 1
    return t


def test_a_trip_count_guard_after_variable_writes_leaves_them_written_once():
    """Found by the fuzzer after about 2,900 programs: the loop was unrolled once (three calls
    with n = 0), its trip-count guard runs after the unrolled write, and the run that broke it
    was not undone before the call ran in Python, so the write happened twice (eager -20, janus
    -24).  A guard counts as an op that may fail when a write does not wait for it."""
    x = tf.constant([-2.0, -2.0])
    eager_v, spec_v = tf.Variable(0.0), tf.Variable(0.0)
    spec = janus.speculate(writes_in_an_unrolled_tensor_loop)
    for n in (0, 0, 0, 1, 0, 2, 0, 0):
        writes_in_an_unrolled_tensor_loop(x, n, eager_v)
        spec(x, n, spec_v)
        assert float(eager_v.numpy()) == float(spec_v.numpy()), n
    assert spec.stats()["graph_runs"] >= 2, spec.report()


def dtype_by_branch(x):
    t = x * 1.0
    if tf.reduce_sum(x) > -1.0:
        t = tf.cast(t, tf.float64)
    else:
        t = t + x
    return t


def test_a_tensor_whose_dtype_depends_on_the_branch_follows_eager():
    """Found by the fuzzer (3,000-program run, the `tf.cast(t, tf.float64)` rule): once the branch
    was a general tf.cond, both sides were cast to one dtype, so the float64 side came back
    float32.  Eager's dtype is the taken side's; the build now stops (`cond-dtype`) and the
    function runs in Python."""
    xs = [tf.constant([1.0, 2.0])] * 3 + [tf.constant([-2.0, -2.0]), tf.constant([-0.5, 0.0]),
                                          tf.constant([-3.0, -1.0]), tf.constant([2.0, 2.0])]
    differential(dtype_by_branch, [(x,) for x in xs], profile_runs=1)


def loop_target_read_after_a_split(x, n):
    t = x * 1.0
    k = n
    s = 0.5
    for i in range(3):
        for i in range(abs(n) % 4):
            t = t + x
            k = k + i
        s = s + float(tf.reduce_sum(t))
        k = k + i
    return t, k, s


def test_a_name_an_empty_loop_in_a_segment_leaves_as_it_was_is_handed_in():
    """Found by the fuzzer (3,000-program run): the segment holding the inner loop returned `i`,
    which only its loop assigns; with n = 0 the loop ran no iteration and the segment raised
    UnboundLocalError where eager kept the outer loop's `i`.  A name a run may leave unassigned
    is now also an input of its segment."""
    from codegen.syntax import split
    saved, split.MIN_WORK = split.MIN_WORK, 1
    try:
        calls = [(tf.constant([1.0, 2.0]), n) for n in (2, 1, 3, 0, 0, 2, 5, 0)]
        differential(loop_target_read_after_a_split, calls, profile_runs=1)
    finally:
        split.MIN_WORK = saved


def scaled_sum(x, scale):
    return tf.reduce_sum(x) * scale


def test_a_float_after_an_int_argument_was_relaxed_to_a_tensor():
    """Found by a hand-written adversarial program: `scale` varied between ints (1, 3), so it was fed
    as an int64 tensor; a later float (2.5) was then fed as int64 too and the entry guard raised
    TypeError where eager returns 2.5.  A number of the other type stays a constant."""
    differential(scaled_sum, [(tf.constant([1.0]), s) for s in [1, 2.5, True, 3, 0.5, 1, 2.5, True, 3, 0.5]])


def evens(m):
    if m <= 0:
        return 1
    return odds(m - 1)


def odds(m):
    if m <= 0:
        return 0
    return evens(m - 1) + 1


def test_a_root_that_tail_calls_another_function_returns_that_functions_value():
    """Found by the benchmark's correctness check (prime counting): in the chain machine a tail
    call replaces the caller's frame, so the root row may hold another function when it returns;
    the machine's result was taken from the entry function's returns only and stayed 0."""
    differential(evens, [(tf.constant(m),) for m in (4, 7, 0, 12, 1, 9)], profile_runs=1)


def fpow(v, m):
    if m == 0:
        return tf.ones_like(v)
    return v * fpow(v, m - 1)


def gradient_through_fpow(t, k):
    with tf.GradientTape() as tape:
        tape.watch(t)
        p = fpow(t, tf.constant(k % 2))
    return tape.gradient(p, t)


def test_a_gradient_through_a_recursion_whose_root_is_its_base_case_is_none():
    """The recursion's loops gave zeros where no call connected the source, eager None."""
    differential(gradient_through_fpow, [(tf.constant([1.5, 0.5]), k) for k in (1, 3, 0, 1, 2, 5)],
                 profile_runs=1)


def prints_mixed(n):
    print("mixed", mixed(tf.constant(n % 4)))
    return n


def test_a_recursion_whose_result_kind_depends_on_the_path_follows_eager():
    """mixed(odd) is the int 7, mixed(even) a tensor; the machine's result was always a tensor,
    and the profile's type conversion then made every later result the profiled kind."""
    for order in ((3, 2, 0, 5, 1, 4), (2, 3, 1, 0, 6, 7)):
        differential(prints_mixed, [(n,) for n in order], profile_runs=1)


COUNTER_V = tf.Variable(0.0)


def append_in_a_tensor_if_after_a_write(x):
    COUNTER_V.assign_add(1.0)
    r = []
    if x > 0:
        r.append(1)
    r.append(2)
    return r


def test_a_local_list_appended_in_a_tensor_if_is_not_appended_on_the_other_side():
    """After a variable write the `if` cannot be speculated and becomes a tf.cond, whose branches
    are both traced: the append, on a list only the branch mutates (no state variable of the
    cond), happened at trace time and so on every call."""
    differential(append_in_a_tensor_if_after_a_write, [(tf.constant(v),) for v in (1, 2, -1, 3, -2)],
                 profile_runs=1)


class WNode:
    def __init__(self, w, left=None, right=None, tv=0.5):
        self.w, self.left, self.right = w, left, right
        self.tv = tf.constant(tv)


def leftmost_w(node):
    if node.left is None:
        return node.w
    return leftmost_w(node.left)


def leftmost_tv(node):
    if node.left is None:
        return node.tv
    return leftmost_tv(node.left) * 0.5 + node.tv


def test_a_tree_attribute_whose_type_varies_by_node_comes_back_as_eagers():
    """`w` is an int on some nodes and a float on others: the leftmost leaf's decides what eager
    returns.  The graph read the column as a tensor, and the profile's type conversion then
    turned a later 2.5 into the int 2 (and 7 into 7.0)."""
    trees = [WNode(1.5, WNode(2), WNode(3)), WNode(1, WNode(2), WNode(3)), WNode(0.5, WNode(2.5), None),
             WNode(1, WNode(2, WNode(4)), WNode(3)), WNode(2, None, WNode(1.5))]
    differential(leftmost_w, [(t,) for t in trees * 2], profile_runs=1)
    differential(leftmost_w, [(t,) for t in trees[::-1] * 2], profile_runs=2)


def test_a_tensor_attribute_of_tree_nodes_stays_a_tensor_in_the_graph():
    """A tensor attribute reads as the tensor it is (it read as a number of unknown Python type,
    which a fix for the test above would otherwise have sent to Python); a tensor of another
    dtype on a later tree is a new graph, not a cast."""
    trees = [WNode(1, WNode(2, tv=1.5), WNode(3)), WNode(1, WNode(2, WNode(3, tv=2.0)), None)]
    spec = differential(leftmost_tv, [(t,) for t in trees * 3], profile_runs=1)
    assert spec.stats()["graph_runs"] >= 4, spec.report()
    wide = WNode(1, WNode(2, tv=1.5))
    wide.tv, wide.left.tv = tf.constant(0.5, tf.float64), tf.constant(1.5, tf.float64)
    differential(leftmost_tv, [(trees[0],), (trees[1],), (wide,), (trees[0],)], profile_runs=1)


def total_w(node):
    if node is None:
        return 0.0
    return node.w + total_w(node.left) + total_w(node.right)


def halves_w(node):
    if node.left is None:
        return node.w / 2
    return halves_w(node.left) + node.w / 2


def test_a_sum_over_a_numpy_scalar_on_one_node_is_eagers_numpy_scalar():
    """A Python float on most nodes, an np.float32 on one: eager's sum becomes an np.float32 from
    that node on; the graph's sum was a tensor that the profile's conversion made a Python float."""
    trees = [WNode(1.5, WNode(2.0), WNode(3.0)), WNode(1.5, WNode(np.float32(2.0)), WNode(3.0)),
             WNode(0.5, WNode(2.5), None), WNode(np.float32(1), None, WNode(2.0))]
    differential(total_w, [(t,) for t in trees * 2], profile_runs=1)


def test_dividing_an_int_or_float_attribute_stays_in_the_graph():
    """`w / 2` is a Python float whether `w` is an int or a float on a node, so a column of both
    still gives the graph a Python float, while `w + 1` would not."""
    trees = [WNode(1, WNode(2.5), WNode(3)), WNode(2.0, WNode(4, WNode(1)), None)]
    spec = differential(halves_w, [(t,) for t in trees * 3], profile_runs=1)
    assert spec.stats()["graph_runs"] >= 4, spec.report()


def unused_values_below_a_used_one(x, k):
    y = x * 2.0                         # used
    g = tf.gather(x, k)                 # may fail; read only by values nothing uses
    a = g * 2.0                         # noqa: F841
    b = g + y                           # noqa: F841
    c = tf.gather(y, k + 1) * 3.0       # noqa: F841  (may fail, unused)
    loss = y / tf.cast(k + 1, tf.float32)
    return loss


def test_unused_values_keep_exactly_the_failures_eager_would_raise():
    """Unused values are kept as outputs only where an op that may fail would otherwise be pruned:
    each gather above still fails the call where eager's does, while the unused arithmetic below
    a used value needs no output."""
    calls = [(tf.constant([1.0, 2.0]), k) for k in (0, 1, 0, 5, 0, -3, 1)]
    differential(unused_values_below_a_used_one, calls, profile_runs=1)


def bigmul(m, j):
    if m == 0:
        return j * 100000
    return bigmul(m - 1, 50000)


def printed_bigmul(n):
    print("bigmul", bigmul(tf.constant(abs(n) % 3), tf.constant(3)))
    return n


def test_a_python_int_a_recursion_multiplies_past_int32_prints_eagers_int():
    """`bigmul(tensor 1, 3)` passes the Python int 50000 to a frame that multiplies it by 100000:
    eager prints 5000000000; the machine held it in int32 and printed 705032704."""
    differential(printed_bigmul, [(n,) for n in (0, 1, 2, 1, 0, 2, 1)], profile_runs=1)


LOGGED = []


def appended(a):
    LOGGED.append(-1)
    return a * 2


def length_after_numpy_function(x):
    x = tf.numpy_function(appended, [x], x.dtype)
    return x, len(LOGGED)


def test_state_read_after_a_numpy_function_sees_what_its_python_changed():
    """`len(LOG)` after a `tf.numpy_function` whose Python appends to LOG: eager reads the length
    after the append; the graph used the length the call started with."""
    LOGGED.clear()
    spec = janus.speculate(length_after_numpy_function)
    e, j = [], []
    for _ in range(5):
        e.append(length_after_numpy_function(tf.constant([1.0]))[1])
    LOGGED.clear()
    for _ in range(5):
        j.append(spec(tf.constant([1.0]))[1])
    assert e == j, (e, j)
    assert "python-state" in spec.report(), spec.report()


COUNTED = [0]


def counted(a):
    COUNTED[0] += 1
    return a


def read_before_numpy_function_in_a_loop(x, n):
    s = tf.constant(0)
    for _ in tf.range(n):
        s += COUNTED[0]
        x = tf.numpy_function(counted, [x], tf.float32)
    return s


def test_state_read_before_a_numpy_function_in_a_tensor_loop_sees_each_iterations_change():
    """Found by adversarial programs: the loop body reads COUNTED[0] before the call whose Python
    increments it; eager's second iteration sees the change, the graph read it once."""
    def run(fn):
        out = []
        for n in (2, 3, 2, 3, 4, 2):
            COUNTED[0] = 0
            out.append(int(fn(tf.constant([1.0]), tf.constant(n))))
        return out
    spec = janus.speculate(read_before_numpy_function_in_a_loop)
    assert run(read_before_numpy_function_in_a_loop) == run(spec)


def two_reads_of_a_kept_buffer(x, buf):
    ba = buf.get()
    bb = buf.get()
    return x + float(ba[0]) + float(bb[0])


def test_a_buffer_a_library_returns_at_two_sites_reads_as_eagers():
    """Found by the fuzzer: `BUF.get()` returns the array it keeps and changes on every call; with
    one profiled call the first site ran in the graph and read its copy, one step stale."""
    eager_buf, janus_buf = toyenv.Buffer(), toyenv.Buffer()
    spec = janus.speculate(two_reads_of_a_kept_buffer, profile_runs=1)
    for _ in range(4):
        x = tf.constant([-2.0, -2.0])
        np.testing.assert_array_equal(two_reads_of_a_kept_buffer(x, eager_buf).numpy(),
                                      spec(x, janus_buf).numpy())


def printed_ack(x, n, k):
    print("ack", ack(tf.constant(abs(n) % 3), tf.constant(abs(k) % 3)))
    return x + 1.0


def test_printing_a_recursion_result_whose_kind_the_run_decides_prints_as_eager():
    """Once the kind check of `ack`'s result had failed often, the graph carried the result as
    either kind and printed it after the run, where it could not be told: janus raised RuntimeError."""
    x = tf.constant([1.0])
    differential(printed_ack, [(x, n, k) for n, k in [(1, 1), (4, 2), (7, 0), (3, 1), (6, 2), (9, 0)] * 4])


class PlusDict(dict):
    """A node's __dict__ whose reads by key differ from Python's attribute reads."""
    def __getitem__(self, k):
        return dict.__getitem__(self, k) + 1000 if k == "w" else dict.__getitem__(self, k)


def capped_sum(node, cap):
    if node.left is None or node.w < cap:
        return node.tv
    return capped_sum(node.left, cap) + capped_sum(node.right, cap)


def test_a_str_in_a_dict_subclass_a_node_holds_is_read_as_python_reads_it():
    """A node's `__dict__` a dict subclass whose `__getitem__` adds 1000, then its `w` a str: the
    tables read the column through that `__getitem__` (Python's attribute read does not), which
    raised TypeError at the user where eager raises its own error."""
    def tree():
        t = WNode(1, WNode(2.5), WNode(3, WNode(4), WNode(5)))
        t.left.__dict__ = PlusDict(vars(t.left))
        return t

    odd = tree()
    odd.left.w = "label"
    differential(capped_sum, [(tree(), 2), (tree(), 0), (tree(), 9), (tree(), 1), (odd, 0), (odd, 9), (tree(), 0)])


def test_a_comprehension_variable_named_like_a_with_target_after_a_graph_break():
    """Found by a random fuzzer run: janus raised NameError("name 'q' is not defined") where eager
    returns.  The split took `q`, stored by `with Scope(k) as q:` (a graph break), for the target of
    a later comprehension `[... for q in ...]` only, so the segment of the `with`'s body did not
    receive it."""
    found = json.loads((Path(__file__).parent / "data" / "with_target_and_comprehension.json").read_text())
    runner.run(found["source"], [tuple(c) if not isinstance(c[2], list) else (c[0], c[1], tuple(c[2]), *c[3:])
                                 for c in found["calls"]])
