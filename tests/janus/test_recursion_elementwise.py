"""Blocks of arithmetic on scalar frame variables run on all frames at once without
tf.vectorized_map: literals broadcast over the frames, mixed dtypes convert as eager's do, and a
block that reads anything else (a global tensor, a call, a vector) keeps the general path."""
import tensorflow as tf

from tests.harness import differential

SCALE = tf.constant([1.0, 2.0, 3.0])


def halves(x, n):
    """A float and an int frame variable, a float literal, a true division and a unary minus."""
    if n <= 0:
        return -x
    return halves(x / 2.0 + 0.25, n - 1) * 1.5


def steps(n):
    """A literal result in the base case and a literal call argument (both broadcast)."""
    if n < 1:
        return 7
    if n % 3 == 0:
        return steps(n // 3) + 1
    return steps(n - 1) + steps(n - 2) * 0


def divides(n, d):
    """`n // d` with d reaching zero: eager's integer division by zero error, from the graph too."""
    if n < 1:
        return n
    return divides(n - 1, d - 1) + n // d


def scaled(x, n):
    """A global vector read in a block next to scalar frame variables: broadcast as eager does."""
    if n == 0:
        return x * SCALE
    return scaled(x + 1.0, n - 1)


def flags(n):
    """Comparisons carried as booleans and returned."""
    if n <= 0:
        return n == 0
    return flags(n - 2)


def test_float_and_int_frames_with_literals():
    spec = differential(halves, [(tf.constant(3.0), tf.constant(k)) for k in (4, 0, 9, 1)], profile_runs=1)
    assert spec.stats()["graph_runs"] >= 2, spec.report()
    assert spec.graphs[0].recursion


def test_literal_results_and_arguments_broadcast_over_frames():
    spec = differential(steps, [(tf.constant(k),) for k in (9, 0, 14, 27, 5)], profile_runs=1)
    assert spec.stats()["graph_runs"] >= 3, spec.report()


def test_integer_division_by_zero_raises_as_eager():
    spec = differential(divides, [(tf.constant(3), tf.constant(9)), (tf.constant(2), tf.constant(5)),
                                  (tf.constant(4), tf.constant(8)), (tf.constant(3), tf.constant(2)),
                                  (tf.constant(2), tf.constant(7))], profile_runs=1)
    assert spec.stats()["graph_runs"] >= 1, spec.report()


def test_global_vector_keeps_the_general_path():
    spec = differential(scaled, [(tf.constant(1.0), tf.constant(k)) for k in (3, 0, 5)], profile_runs=1)
    assert spec.stats()["graph_runs"] >= 1, spec.report()


def test_boolean_results():
    spec = differential(flags, [(tf.constant(k),) for k in (6, 7, 0, 11)], profile_runs=1)
    assert spec.stats()["graph_runs"] >= 2, spec.report()


def test_loop_body_has_one_constant_per_value():
    """Every op of the machine's loop body runs on every step: its blocks make no value twice
    (tf.while_loop's own step counter, added after the body, is not the machine's)."""
    from tests.janus.test_recursion import tak
    spec = differential(tak, [(tf.constant(6), tf.constant(3), tf.constant(1))] * 2, profile_runs=1)
    library = spec.graphs[0].concrete.graph.as_graph_def().library.function
    body = max((fn for fn in library if "while_body" in fn.signature.name), key=lambda fn: len(fn.node_def))
    used = {i.lstrip("^").split(":")[0] for n in body.node_def for i in n.input}
    seen = {}
    for n in body.node_def:
        if n.op == "Const" and n.name in used and "/segment" in n.name:
            key = (n.attr["value"].SerializeToString(deterministic=True), tuple(sorted(n.input)))
            assert key not in seen, f"{n.name} repeats {seen[key]}"
            seen[key] = n.name
    assert len(seen) < 40, len(seen)
