"""`print` of a list, tuple, dict or set prints it as it was at the `print`, with the numbers
and tensors the graph holds in it as eager prints them.  The print is replayed after the run:
it printed the container as the function left it (`print(l); l.append(2)` printed `[1, 2]`),
and a fed number inside it (`print([x])`) raised RuntimeError after the build."""
import collections
import contextlib
import io
import sys

import numpy as np
import tensorflow as tf

import janus
from tests.harness import assert_same_outcome, differential, run_capturing


def changed_after_print(x):
    items, table = [1], {"a": 1}
    print(items, ("t", items), {2, 3})
    items.append(2)
    print("table", table, [items])
    table["b"] = x * 2.0
    return x * 2.0, items, table


def numbers_in_containers(x, s):
    print([s], (s, s + 1), {"k": s}, [x * 2.0])
    return x * s


def test_a_container_printed_then_changed_prints_as_it_was():
    differential(changed_after_print, [(tf.constant(float(i)),) for i in range(6)])


def test_fed_numbers_and_tensors_inside_printed_containers_print_as_eager():
    x = tf.constant([1.0, 2.0])
    differential(numbers_in_containers, [(x, v) for v in (0.5, 1.5, 2.5, 3.5, 0.25, 4.0)])
    differential(numbers_in_containers, [(x, np.float32(v)) for v in (0.5, 1.5, 2.5, 3.5, 0.25, 4.0)])


Pair = collections.namedtuple("Pair", "a b")


def odd_containers(x, s):
    small = set(range(40))
    small.intersection_update({1, 8})
    print(small, Pair(s, x * 2.0))
    print(collections.deque([s]))
    items = [1, 2]
    tf.print(items, x)
    items.append(3)
    return x * 2.0


def test_sets_named_tuples_deques_and_tf_print_print_as_eager():
    """A set rebuilt after the run iterated in another order ({8, 1} for {1, 8}); a named tuple
    or a deque holding a fed number raised RuntimeError at the user; `tf.print` of a list changed
    after it raised ValueError (its structure was read after the run)."""
    differential(odd_containers, [(tf.constant(float(i)), 0.5 * i) for i in range(7)])


def to_stderr(x):
    print("value", x.shape, file=sys.stderr)
    return x * 2.0


def test_a_print_to_sys_stderr_writes_to_the_stream_current_at_the_call():
    """`sys.stderr` is read when the call runs: under `contextlib.redirect_stderr` with a fresh
    stream per call, each call's text lands in its own stream (a graph wrote to the stream
    current when it was built)."""
    fn = janus.speculate(to_stderr)
    x = tf.constant([1.0, 2.0])
    for i in range(7):
        stream = io.StringIO()
        with contextlib.redirect_stderr(stream):
            result = fn(x)
        assert stream.getvalue() == "value (2,)\n", i
        np.testing.assert_array_equal(result.numpy(), [2.0, 4.0])
    stream = io.StringIO()
    with contextlib.redirect_stderr(stream):
        for _ in range(4):
            fn(x)
    assert stream.getvalue() == "value (2,)\n" * 4
    assert fn.stats()["graph_runs"] > 0


class Box:
    def __init__(self):
        self.v, self.items = 1, [1]

    def __repr__(self):
        return f"Box({self.v}, {self.items})"


def box_changed_after_print(x, box):
    print(box)
    box.v = x * 2.0
    return x * 2.0


def held_box_changed_after_print(x, box):
    print({"b": [box]})
    box.items.append(2)
    return x * 2.0


def made_box_changed_after_print(x):
    box = Box()
    print(box)
    box.v = 7
    print(box)
    return x * 2.0


def box_changed_before_print(x, box):
    box.v = 3
    print(box)
    return x * 2.0


def variable_changed_after_print(x, v):
    print(v, [v])
    v.assign_add(x)
    print(v)
    return x * 2.0


def _each_call_fresh(fn, make, calls=6):
    """Eager and janus each get their own objects, made alike per call."""
    spec = janus.speculate(fn)
    for i in range(calls):
        assert_same_outcome(run_capturing(fn, make(i)), run_capturing(spec, make(i)))
    return spec


class Plain:
    """Printed by object's own text (its address), which no state changes."""

    def __init__(self):
        self.v = 1


def plain_changed_after_print(x, obj):
    print(obj is not None, [obj] if obj is None else "obj")
    obj.v = x * 2.0
    return x * 2.0


def test_an_object_printed_then_changed_prints_as_it_was():
    """The replay printed the object as the run left it (`Box(6.0)` for eager's `Box(1)`): an
    object whose text your code gives now runs the function in Python, whether it changes after
    the print or not (its __repr__ may read anything)."""
    for fn in (box_changed_after_print, held_box_changed_after_print, box_changed_before_print):
        _each_call_fresh(fn, lambda i: (tf.constant(float(i)), Box()))
    _each_call_fresh(made_box_changed_after_print, lambda i: (tf.constant(float(i)),))
    spec = _each_call_fresh(plain_changed_after_print, lambda i: (tf.constant(float(i)), Plain()))
    assert spec.stats()["graph_runs"] > 0, spec.report()


class Counted:
    count = 0

    def __repr__(self):
        return f"Counted({Counted.count})"


def text_read_elsewhere(x):
    c = Counted()
    print(c)
    Counted.count += 1
    return x * 2.0


def library_containers_changed_after_print(x):
    queue, table = collections.deque([1, 2]), collections.OrderedDict(a=1, b=2)
    counts, lists = collections.Counter("ab"), collections.defaultdict(list)
    print(queue, table, counts, lists)
    queue.appendleft(0)
    queue.rotate(1)
    table.move_to_end("a")
    counts.update("a")
    lists["k"].append(1)
    return x * 2.0


def formatted_variable(x, v):
    print(f"v={v}", str(v))
    return x * 2.0


def test_texts_that_code_or_library_methods_change_after_the_print_print_as_eager():
    """A class attribute a __repr__ reads, `appendleft`/`rotate`/`move_to_end`, `Counter.update`,
    a defaultdict's read: each printed as the run left it; a variable in an f-string printed
    its graph text, with no value."""
    spec = janus.speculate(text_read_elsewhere)
    for i in range(5):
        Counted.count = 0
        eager = run_capturing(text_read_elsewhere, (tf.constant(float(i)),))
        Counted.count = 0
        assert_same_outcome(eager, run_capturing(spec, (tf.constant(float(i)),)))
    spec = differential(library_containers_changed_after_print, [(tf.constant(float(i)),) for i in range(6)])
    assert spec.stats()["graph_runs"] > 0, spec.report()
    _each_call_fresh(formatted_variable, lambda i: (tf.constant(float(i)), tf.Variable([1.0, float(i)])))


def test_a_variable_printed_then_assigned_prints_its_value_at_the_print():
    spec = _each_call_fresh(variable_changed_after_print,
                            lambda i: (tf.constant([float(i), 0.5]), tf.Variable([1.0, 2.0])))
    assert spec.stats()["graph_runs"] > 0, spec.report()


def ordered_and_deque_changed_after_print(x, s):
    table = collections.OrderedDict(a=1)
    queue = collections.deque([1])
    print(table, [queue])
    table["b"] = 2
    queue.append(s)
    print(table, queue)
    return x * 2.0


def test_an_ordered_dict_or_deque_printed_then_changed_prints_as_it_was():
    differential(ordered_and_deque_changed_after_print, [(tf.constant(float(i)), i) for i in range(6)])


class Shown:
    def __init__(self, v):
        self.v = v

    def __repr__(self):
        return f"Shown({self.v})"


SHOWN = Shown(0)


def text_of_a_global(x):
    return x * 2.0, str(SHOWN)


def text_of_a_list_holding_it(x):
    return x * 2.0, repr([SHOWN])


def test_the_text_of_an_object_your_code_gives_is_read_at_each_call():
    """`str(SHOWN)` ran its __repr__ once, when the graph was built: a change between calls was
    not seen (eager 'Shown(1)', janus 'Shown(0)')."""
    for fn in (text_of_a_global, text_of_a_list_holding_it):
        spec = janus.speculate(fn)
        for i in range(7):
            SHOWN.v = i % 3
            assert_same_outcome(run_capturing(fn, (tf.constant(1.0),)), run_capturing(spec, (tf.constant(1.0),)))


def fstring_of_a_global(x):
    return x * 2.0, f"shown: {SHOWN!r} {[SHOWN]}", f"{x.shape}"


def test_an_f_string_of_an_object_your_code_gives_text_is_read_at_each_call():
    """An f-string ran the object's __repr__ once, when the graph was built."""
    spec = janus.speculate(fstring_of_a_global)
    for i in range(7):
        SHOWN.v = i % 3
        assert_same_outcome(run_capturing(fstring_of_a_global, (tf.constant(1.0),)),
                            run_capturing(spec, (tf.constant(1.0),)))


def printed_under_options(x):
    y = x * 2.0
    with np.printoptions(precision=2):
        print(y, np.array([1.23456, 2.0]))
    print("after", y)
    return y


def test_a_print_inside_np_printoptions_prints_with_those_options():
    """The print is replayed after the run: under the function's own options it runs in Python."""
    spec = differential(printed_under_options, [(tf.constant([1.23456, 2.0]),)] * 4)
    report = spec.report()      # (the `with` of NumPy's manager runs in Python: it sets the options per call)
    assert "print-options" in report or "context-manager" in report, report


def test_print_options_the_caller_sets_between_calls_are_used():
    spec = janus.speculate(numbers_in_containers)
    for precision in (8, 8, 8, 3, 8, 2):
        with np.printoptions(precision=precision):
            x = tf.constant([1.23456789, 2.0])
            assert_same_outcome(run_capturing(numbers_in_containers, (x, 3)), run_capturing(spec, (x, 3)))
    assert spec.stats()["graph_runs"] >= 2, spec.report()


def tf_printed_variable(v, x):
    tf.print("v is", v, [v, x], output_stream=sys.stdout)
    v.assign_add(x)
    tf.print("then", v, output_stream=sys.stdout)
    return v * 1.0


def test_tf_print_of_a_variable_prints_its_value_at_the_print(capfd):
    """`tf.print` writes to the process's stdout (not Python's `sys.stdout`): read at the fd."""
    mine, theirs = tf.Variable([1.0, 2.0]), tf.Variable([1.0, 2.0])
    spec = janus.speculate(tf_printed_variable)
    for step in (1.0, 2.0, 3.0, 4.0):
        x = tf.constant([step, step])
        capfd.readouterr()
        want = tf_printed_variable(theirs, x)
        eager_text = capfd.readouterr().out
        got = spec(mine, x)
        assert capfd.readouterr().out == eager_text and "tf.Variable" not in eager_text
        assert got.numpy().tolist() == want.numpy().tolist()
    assert spec.stats()["graph_runs"] >= 1, spec.report()
