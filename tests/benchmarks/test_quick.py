"""The benchmark suite's smoke run: `python -m benchmarks --quick --json PATH` end to end."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WAYS = {"eager", "janus", "tf_function", "symbolic"}


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench") / "quick.json"
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    # (about 200 s alone on the 2-core machine; the timeout only catches a hang, and a loaded
    # machine took over 300 s)
    proc = subprocess.run([sys.executable, "-m", "benchmarks", "--quick", "--json", str(out)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(out.read_text()), proc.stdout


def test_json_shape(quick_run):
    data, _ = quick_run
    machine = data["machine"]
    for key in ("cpu_count", "platform", "python", "tensorflow"):
        assert key in machine
    names = [w["name"] for w in data["workloads"]]
    for expected in ("cnn-digits", "gan-digits", "lstm-lm", "treernn-infer", "treernn-train", "treelstm-infer",
                     "treelstm-train", "actor-critic", "fib", "ackermann", "takeuchi", "primes",
                     "power-gd-10", "power-gd-100", "power-gd-1000"):
        assert expected in names
    for w in data["workloads"]:
        assert set(w) >= {"name", "unit", "throughput", "correct", "notes"}
        assert set(w["throughput"]) == WAYS and set(w["correct"]) == WAYS
        assert w["unit"].endswith("/s")


def test_every_workload_ran_eager_and_janus(quick_run):
    data, _ = quick_run
    for w in data["workloads"]:
        if w["skipped"]:                    # only for a missing optional dependency of the `bench` extra
            assert "not installed" in w["skipped"]
            continue
        for way in ("eager", "janus"):
            assert isinstance(w["throughput"][way], float) and w["throughput"][way] > 0, (w["name"], way, w)
        assert w["correct"]["eager"] is True
        # janus's correctness is a measured fact, reported not asserted (a DIFF is a janus bug to fix)
        assert w["correct"]["janus"] in (True, False) or str(w["correct"]["janus"]).startswith("error: ")


def test_table_printed(quick_run):
    data, stdout = quick_run
    for w in data["workloads"]:
        assert w["name"] in stdout
    assert "j/eager" in stdout


def test_janus_only_times_the_janus_way(capsys):
    from benchmarks import janus_only
    janus_only.main(["fib", "2"])
    line = capsys.readouterr().out
    assert line.startswith("fib") and "median" in line and "graph runs" in line
    assert int(line.split("graph runs")[1]) >= 2, line


def test_overhead_measures_three_ways():
    from benchmarks import overhead
    rows = overhead.measure(2)
    assert set(rows) == {"trivial", "mlp-step"}
    for row in rows.values():
        assert row["eager"] > 0 and row["tf.function"] > 0 and row["janus"] > 0 and row["janus graph runs"] > 0
