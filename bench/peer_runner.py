"""The child side of a measurement: ``python -m bench.peer_runner`` reads a JSON spec on stdin
({"task": "module:function", "system", "data", "params", "repeat", "warmup"}), runs the task
in this fresh interpreter and prints one JSON record on stdout (everything else goes to stderr).

The record adds ``process_peak_rss`` (this process's ru_maxrss, bytes: interpreter, data and
everything the task did), ``peak_rss`` (the same, unless the task reported its own: the
high-water mark of the work it measures, before instrumentation that follows it, such as
c_grid's floor product) and ``data_rss`` (the resident size once the data was loaded, before
the work)."""
import json
import resource
import sys


def _rss():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def main():
    spec = json.loads(sys.stdin.read())
    stdout, sys.stdout = sys.stdout, sys.stderr  # the task's prints must not reach the JSON
    from bench.harness import jsonable, load_data, run_task
    data = load_data(spec["data"])
    params = {**spec["params"], "system": spec["system"]}
    data_rss = _rss()
    rec = run_task(spec["task"], data, params, spec.get("repeat", 1),
                   spec.get("warmup", False))
    rec["process_peak_rss"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    rec.setdefault("peak_rss", rec["process_peak_rss"])
    rec["data_rss"] = data_rss
    rec.setdefault("score", None)
    stdout.write(json.dumps(jsonable(rec)) + "\n")
    stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
