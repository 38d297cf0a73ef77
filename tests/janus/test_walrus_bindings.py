"""`:=` binds a name of the function wherever it stands: in a comparison, a boolean operator, a
conditional expression, a comprehension, a `while` test or a `match` pattern's case.  The graph's
code must bind the same name (not a name of a lambda janus made), or the call runs in Python."""
import pytest
import tensorflow as tf

from tests.harness import differential


def in_is_not(x):
    m = x
    if (m := x * 2.0) is not None and x is not None:
        pass
    return m


def in_a_chain(x, n):
    m = x
    ok = 0 < (m := n + 1) < 10
    return m, ok


def in_an_if_expression_test(x):
    m = x
    y = x + 1.0 if (m := x * 3.0) is not None else x
    return m, y


def in_a_later_operand(x, n):
    m = 0
    if n > 2 and (m := n * 2) > 5:
        return x * m
    return x + m


def in_an_if_expression_side(x, n):
    w = 0.0
    y = (w := x * 0.5) + w if n > 2 else x
    return y, w


def in_a_tensor_test(x):
    if (s := tf.reduce_sum(x)) > 1.0:
        return x * s
    return x - s


def in_a_comprehension(xs, n):
    ys = [(last := x * float(i)) + 1.0 for i, x in enumerate(xs) if i < n]
    return ys, last


def in_a_while_test(x, n):
    k = n
    r = x
    while (k := k - 1) > 0:
        r = r + x
    return r, k


def in_a_tensor_while_test(x, n):
    k = n
    r = x
    while (k := k - 1) > 0 and tf.reduce_sum(r) < 100.0:
        r = r + x
    return r, k


def in_a_match_case(x, item):
    y = tf.reduce_sum(x) * 1.0
    match item:
        case [a, b, *rest]:
            y = y + a * b + len(rest)
        case _:
            y = y - 1.0
    return y * 2.0


C = tf.constant
_CASES = {
    in_is_not: [(C(1.0),), (C(2.0),)] * 4,
    in_a_chain: [(C(1.0), n) for n in (1, 2, 3, 12, 3, 20, 4, 5)],
    in_an_if_expression_test: [(C(1.0),), (C(-2.0),)] * 4,
    in_a_later_operand: [(C(1.0), n) for n in (1, 3, 4, 5, 2, 6, 3, 8)],
    in_an_if_expression_side: [(C(1.0), n) for n in (1, 3, 4, 5, 2, 6, 3, 8)],
    in_a_tensor_test: [(C([v, 1.0]),) for v in (0.5, -2.0, 3.0, 1.0, 0.0, 2.0, -1.0, 4.0)],
    in_a_comprehension: [([C(1.0), C(2.0)], n) for n in (1, 2, 2, 0, 1, 2, 2, 2)],
    in_a_while_test: [(C(1.0), n) for n in (3, 3, 3, 4, 4, 4, 0, 3)],
    in_a_tensor_while_test: [(C(v), 4) for v in (1.0, 1.0, 50.0, 1.0, 2.0, 60.0, 1.0, 1.0)],
    in_a_match_case: [(C([1.0, 2.0]), it) for it in ([1.0, 2.0], [3.0, 4.0, 5.0], 7, [1.0, 5.0], [2.0, 2.0],
                                                     "s", [1.0, 1.0, 1.0, 1.0], [0.5, 4.0])],
}


@pytest.mark.parametrize("fn", list(_CASES), ids=lambda f: f.__name__)
def test_a_walrus_binds_the_functions_name(fn):
    differential(fn, _CASES[fn])
