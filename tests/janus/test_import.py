"""Importing janus leaves TensorFlow's runtime uninitialised: a user configures devices after
`import janus` as after `import tensorflow` (tf.distribute needs logical devices set first)."""
import os
import subprocess
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SCRIPT = textwrap.dedent('''\
    import tensorflow as tf
    import janus

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    print(len(tf.config.list_logical_devices("CPU")))

    @janus.speculate
    def f(x):
        return x * 2.0
    print([float(f(tf.constant(float(i)))) for i in range(5)])
''')


def test_devices_can_be_configured_after_import_janus():
    env = dict(os.environ, PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="2")
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split("\n")[:2] == ["2", "[0.0, 2.0, 4.0, 6.0, 8.0]"]
