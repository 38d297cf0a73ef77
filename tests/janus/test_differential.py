"""Every converted construct, eagerly and under janus, on inputs that keep and break assumptions."""
import pytest
import tensorflow as tf

from tests.harness import MODES, differential

W = tf.constant([[1.0, 2.0], [3.0, 4.0]])
SCALE = 3


def helper(x, k=2):
    return x * k + 1.0


def straight_line(x, y):
    a = tf.matmul(x, W)
    b, c = a + y, a - y
    b += 1.0
    return {"sum": b, "diff": [c, c * 2.0], "n": SCALE + 1}


def if_elif_else(x):
    s = tf.reduce_sum(x)
    if s > 10.0:
        y = x * 2.0
    elif s > 0.0:
        y = x + 1.0
    else:
        y = -x
    return y


def python_branch(x, flag, n):
    if flag and n > 2:
        x = x + n
    if not flag:
        x = x * 2.0
    return x


def for_loops(x, xs):
    total = tf.zeros_like(x)
    for i in range(3):
        total = total + x * i
    for v in xs:
        total = total + v
    for row in x:
        total = total + row
    for i, v in enumerate((1.0, 2.0)):
        total = total * v + i
    return total


def tensor_bound_loop(x, n):
    acc = tf.zeros_like(x)
    for i in range(n):
        acc = acc + x
    return acc


def while_loop(x):
    while tf.reduce_sum(x) < 100.0:
        x = x * 2.0
    return x


def break_continue_return(x, n):
    acc = 0.0
    for i in range(n):
        if i == 1:
            continue
        if i > 4:
            break
        acc = acc + tf.reduce_sum(x) * i
    if n == 0:
        return x
    k = 0
    while True:
        k += 1
        if k >= 3:
            break
    return acc + k


def early_return_tensor(x):
    if tf.reduce_sum(x) > 0.0:
        return x * 2.0
    y = x - 1.0
    return y


def calls_and_builtins(x, xs):
    y = helper(x) + helper(x, k=3)
    n = len(xs) + max(1, 2) + min(3, 4) + abs(-2)
    z = [v * 2 for v in xs if v > 1]
    d = {str(i): i * i for i in range(3)}
    return y * n + sum(z) + d["2"], isinstance(x, tf.Tensor)


def expressions(x, a):
    y = x * 2.0 if tf.reduce_mean(x) > 0.0 else x * 3.0
    ok = a > 0 and a < 10
    chain = 0 < a < 5
    t = tf.reduce_sum(x) > 0.0 and tf.reduce_sum(x) < 100.0
    return y, ok, chain, t


def printing(x, label):
    print("label:", label)
    y = x + 1.0
    print(y, "and", tf.reduce_sum(y), sep=" | ")
    return y


def raises(x, n):
    if n > 2:
        raise ValueError(f"n too big: {n}")
    return tf.matmul(x, W)


def gradient_inside(x):
    v = tf.Variable(1.0) if False else None
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(x * x)
        if y > 5.0:
            y = y * 2.0
    return tape.gradient(y, x), v


x22 = tf.constant([[1.0, 2.0], [3.0, 4.0]])
v2 = tf.constant([1.0, -2.0])
CASES = {
    "straight_line": (straight_line, [(x22, 1.0)] * 4 + [(x22 * 2, 1.0), (x22, 2.5)]),
    "if_elif_else": (if_elif_else, [(v2 * 20,)] * 4 + [(v2 * -20,), (-v2 * 3,), (v2 * 20,), (v2 * -20,)]),
    "python_branch": (python_branch, [(v2, True, 3)] * 4 + [(v2, False, 3), (v2, True, 1), (v2, True, 5)]),
    "for_loops": (for_loops, [(v2, [1.0, 2.0])] * 4 + [(v2, [1.0, 2.0, 3.0]), (v2 * 2, [1.0])]),
    "tensor_bound_loop": (tensor_bound_loop, [(v2, tf.constant(3))] * 4
                          + [(v2, tf.constant(5)), (v2, tf.constant(0)), (v2, tf.constant(3))]),
    "while_loop": (while_loop, [(tf.constant([30.0]),)] * 4 + [(tf.constant([1.0]),), (tf.constant([30.0]),),
                                                              (tf.constant([200.0]),)]),
    "break_continue_return": (break_continue_return, [(v2 + 3, 7)] * 4 + [(v2, 3), (v2, 0), (v2, 7)]),
    "early_return_tensor": (early_return_tensor, [(v2 + 5,)] * 4 + [(v2 - 5,), (v2 + 5,), (v2 - 5,)]),
    "calls_and_builtins": (calls_and_builtins, [(v2, [1, 2, 3])] * 4 + [(v2, [5]), (v2 * 2, [1, 2, 3])]),
    "expressions": (expressions, [(v2 + 5, 3)] * 4 + [(v2 - 5, 3), (v2 + 5, 7), (v2 + 500, 12)]),
    "printing": (printing, [(v2, "a")] * 4 + [(v2 * 3, "b"), (v2, "a")]),
    "raises": (raises, [(x22, 1)] * 4 + [(x22, 3), (x22, 1), (tf.ones((3, 3)), 1)]),
    "gradient_inside": (gradient_inside, [(v2,)] * 4 + [(v2 * 0.1,), (v2 * 3,)]),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_eager(name, mode):
    fn, calls = CASES[name]
    spec = differential(fn, calls, mode=mode, profile_runs=2)
    stats = spec.stats()
    assert stats["calls"] == len(calls)
    if mode == "speculative":
        assert not stats["imperative"], spec.report()
        assert stats["graph_runs"] > 0, spec.report()


def list_through_cond(x):
    gs = [x, 2 * x]
    if tf.reduce_sum(x) > 1.0:                 # False while profiling, True later: tf.cond
        gs = [g * 0.5 for g in gs]
    return tf.add_n(gs)


def test_a_list_reassigned_in_a_relaxed_branch_is_a_cond_output():
    spec = differential(list_through_cond, [(tf.constant([0.1 * i] * 2),) for i in range(8)])
    assert spec.stats()["build_failures"] == 0 and spec.stats()["graph_runs"] >= 3, spec.report()
