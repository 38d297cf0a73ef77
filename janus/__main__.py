"""`python -m janus [--json PATH] script.py [args...]`: run a script, then report on janus.

The script runs as `__main__` (via `runpy`) with `sys.argv` set to its own
arguments, exactly as `python script.py args...` would run it.  Afterwards
the combined `janus.report()` of every speculated function is printed to
stdout, most time spent first, and `--json PATH` also writes
`janus.report(format="json")` there.  The exit status is the script's.
"""
from __future__ import annotations

import argparse
import json
import os
import runpy
import sys
import traceback


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m janus",
                                     description="Run a script whose functions use @janus.speculate, "
                                                 "then print janus's report.")
    parser.add_argument("--json", metavar="PATH", help="also write the report as JSON to PATH")
    parser.add_argument("--no-report", action="store_true", help="do not print the text report")
    parser.add_argument("script", help="the Python script to run")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="arguments passed to the script")
    opts = parser.parse_args(argv)
    if not os.path.isfile(opts.script):
        parser.error(f"no such script: {opts.script}")

    import janus

    status = 0
    saved_argv, saved_path0 = sys.argv[:], sys.path[0] if sys.path else None
    sys.argv = [opts.script, *opts.args]
    script_dir = os.path.dirname(os.path.abspath(opts.script))
    if sys.path:
        sys.path[0] = script_dir
    else:
        sys.path.insert(0, script_dir)
    try:
        runpy.run_path(opts.script, run_name="__main__")
    except SystemExit as exc:
        code = exc.code
        status = code if isinstance(code, int) else (0 if code is None else 1)
        if code is not None and not isinstance(code, int):
            print(code, file=sys.stderr)
    except BaseException:                       # noqa: BLE001 - the user's error, shown as Python would
        traceback.print_exc()
        status = 1
    finally:
        sys.argv = saved_argv
        if saved_path0 is not None:
            sys.path[0] = saved_path0

    sys.stdout.flush()
    if not opts.no_report:
        print("\n" + "=" * 30 + " janus report " + "=" * 30)
        print(janus.report())
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump(janus.report(format="json"), f, indent=2)
            f.write("\n")
        print(f"janus: JSON report written to {opts.json}", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
