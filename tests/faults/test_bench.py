"""bench/faults_bench.py as the docs show it: one random schedule, its JSON on stdout and
in --out, the checker's counts at zero, each fault applied named with its kind and nodes."""

import json
import subprocess
import sys

from tests.hubprocess import ROOT


def test_the_faults_bench_runs_a_schedule_and_reports_it(tmp_path):
    out = tmp_path / "faults.json"
    command = [sys.executable, "bench/faults_bench.py", "--seed", "5", "--schedules", "1"]
    done = subprocess.run(
        [*command, "--faults-per-schedule", "1", "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(out.read_text())
    assert json.loads(done.stdout) == result
    assert result["schedules"] == 1
    assert result["acked"] > 0
    assert [result[name] for name in ("lost", "duplicated", "reordered", "split_brain")] == [0, 0, 0, 0]
    kinds = {"partition", "pause", "kill", "netem"}
    assert result["faults"]
    assert all(fault["kind"] in kinds and fault["nodes"] for fault in result["faults"])
    (step,) = result["runs"][0]["steps"]
    assert result["stalls_by_fault"][step["fault"]]["count"] == 1
    assert result["unavailable_s"] == step["stall_s"]
