"""Adversarial programs for the choice between TensorFlow's default and single-threaded executors:
every call equals eager (bit for bit, as janus promises), and no call hangs.  A body whose ops a
body run on its own computes with other kernels (oneDNN's `MatMul`) keeps the default executor."""
import numpy as np
import pytest
import tensorflow as tf

import janus
from codegen.graph import executors
from tests.harness import run_script

_W = tf.Variable(tf.ones([4, 4]) * 0.1)


@pytest.fixture
def single_wins(monkeypatch):
    monkeypatch.setattr(executors, "MARGIN", 1e9)


def matvec_in_a_branch(x):
    if tf.reduce_sum(x) > 0:
        y = tf.linalg.matvec(_W, x)
    else:
        y = x - 1.0
    return y


def matvec_in_a_loop(x, n):
    i = tf.constant(0)
    while i < n:
        x = tf.linalg.matvec(_W, x) + 0.3
        i += 1
    return x


@pytest.mark.parametrize("fn, calls", [
    (matvec_in_a_branch, [(tf.constant([1.0 * k, -2.0, 0.5, 1.0]),) for k in range(30)]),
    (matvec_in_a_loop, [(tf.constant([1.0 * k, -2.0, 0.5, 1.0]), tf.constant(1 + k % 3)) for k in range(30)]),
])
def test_a_matvec_inside_control_flow_equals_eager_bit_for_bit_on_the_single_threaded_executor(single_wins, fn, calls):
    """`tf.linalg.matvec` of a 4x4 variable inside a tensor `if` (or a tensor `while`), 30 calls
    with x = [k, -2, 0.5, 1].  Eager gives, e.g. for k = 21, 2.0500002 in every row; the graph
    run on the default executor gives the same bits, while its single-threaded copy (functional
    `If`/`While`) gives 2.05 (one ulp off), on its trial runs and on every run after the switch."""
    spec = janus.speculate(fn)
    differing = []
    for k, args in enumerate(calls):
        want, got = fn(*args).numpy(), spec(*args).numpy()
        if not np.array_equal(want, got):
            differing.append((k, want.tolist(), got.tolist()))
    assert spec.stats()["graph_runs"] >= 20, spec.report()
    assert "computes with another kernel" in spec.graphs[0].executor, spec.graphs[0].executor
    assert not differing, differing[:3]


def tanh_in_a_loop(x, n):
    i = tf.constant(0)
    while i < n:
        x = tf.tanh(x * 1.7) + 0.3
        i += 1
    return x


def test_elementwise_math_inside_a_loop_equals_eager_bit_for_bit_on_the_single_threaded_executor(single_wins):
    """A loop body of element-wise math runs on the single-threaded executor with eager's bits."""
    spec = janus.speculate(tanh_in_a_loop)
    for k in range(30):
        args = (tf.constant([0.37 * k, -2.0, 0.5, 1.0]), tf.constant(1 + k % 3))
        np.testing.assert_array_equal(tanh_in_a_loop(*args).numpy(), spec(*args).numpy())
    assert spec.graphs[0].executor.startswith("single-threaded executor"), spec.graphs[0].executor


def test_a_tensor_if_finishes_when_the_environment_gives_the_thread_pool_one_thread(tmp_path, monkeypatch):
    """A function with one tensor `if`, called 12 times, in a process started with
    TF_NUM_INTEROP_THREADS=1 (TensorFlow's inter-op pool then has one thread, though
    `tf.config.threading.get_inter_op_parallelism_threads()` answers 0).  Eager returns on every
    call; the first single-threaded trial run must not wait forever for a pool thread."""
    monkeypatch.setenv("TF_NUM_INTEROP_THREADS", "1")
    source = (
        "import tensorflow as tf\n"
        "import janus\n"
        "def branchy(x):\n"
        "    if tf.reduce_sum(x) > 0:\n"
        "        x = x * 2.0\n"
        "    else:\n"
        "        x = x - 1.0\n"
        "    return x\n"
        "spec = janus.speculate(branchy)\n"
        "for k in range(12):\n"
        "    x = tf.constant([1.0, -0.5 * k])\n"
        "    assert spec(x).numpy().tolist() == branchy(x).numpy().tolist()\n"
        "assert spec.stats()['graph_runs'] >= 8, spec.report()\n"
        "print('done')\n")
    proc = run_script(tmp_path, source, timeout=25)
    assert "done" in proc.stdout


def fresh_table(x):
    table = tf.lookup.experimental.MutableHashTable(tf.int32, tf.float32, -1.0)
    before = table.lookup(x)
    table.insert(x, tf.cast(x, tf.float32) * 2.0)
    return before


def test_a_mutable_hash_table_made_in_the_call_is_empty_on_every_call():
    """Each call makes a new, empty `MutableHashTable`, looks key 2 up (the default, -1.0), then
    inserts it.  Eager gives [-1.0] on every call; a graph whose table outlived its previous run
    would find the key inserted then (4.0)."""
    spec = janus.speculate(fresh_table)
    x = tf.constant([2])
    got = [spec(x).numpy().tolist() for _ in range(8)]
    assert [fresh_table(x).numpy().tolist() for _ in range(8)] == [[-1.0]] * 8
    assert got == [[-1.0]] * 8, (got, spec.report())
