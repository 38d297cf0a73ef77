"""`max(a, b)` / `min(a, b)` of two scalar tensors is Python's: the first unless the second is
greater (less), so a NaN second loses and a tie keeps the first; compared with eager."""
import tensorflow as tf

from tests.harness import differential

NAN = float("nan")


def larger(a, b):
    return max(a, b), min(a, b)


def test_max_and_min_of_tensors_keep_the_first_unless_the_second_wins():
    calls = [(tf.constant(1.), tf.constant(2.))] * 4 + [(tf.constant(2.), tf.constant(NAN)), (tf.constant(NAN), tf.constant(2.)),
                                                       (tf.constant(-0.), tf.constant(0.)), (tf.constant(0.), tf.constant(-0.))]
    spec = differential(larger, calls)
    assert spec.stats()["graph_runs"] > 0, spec.report()


def test_max_of_tensors_of_two_dtypes_raises_as_eager():
    differential(larger, [(tf.constant(1), tf.constant(2))] * 4 + [(tf.constant(1), tf.constant(2.))])
