#!/usr/bin/env python3
"""Dispatch of `noop` runs: hpcai500 against Slurm's sbatch and srun.

Run by bench/dispatch.sh, which sets up the private Slurm, hpcai500d and one
agent, and passes where they are. Three sides run the same worker binary
(`hpcai500-worker --workload noop --config noop`, one rank):

- hpcai500: `hpcai500 submit SPEC` (one CLI process per run), the agent
  starts the worker;
- sbatch: `sbatch --wrap "exec hpcai500-worker ..."`, one job per run;
- srun: `srun hpcai500-worker ...`, one job per run (srun waits for it).

Phases (a warm-up of --warmup-runs runs per side, not counted, first):

1. latency: --latency-runs runs per side one after the other (the next is
   submitted once the last one's worker wrote run_stop), the sides taking
   turns run by run: submit -> start, where submit is the moment the client
   process is spawned and start is the time_ms of the worker's first event
   line (its own clock, the same host), so the worker's start-up counts on
   every side alike.
2. throughput: --runs runs per side submitted by --clients client processes
   at once, in chunks of --chunk runs that the sides take in turn (so a
   change of the machine's load hits every side alike); runs/s = runs /
   the sum over chunks of (the chunk's last run_stop - its first submit),
   and the submit -> start latency under that load.

hpcai500's phases come from its database (runs.created_ms: the submission
stored; attempts.started_ms: the run placed) and Slurm's from a timestamp the
job's shell writes before it execs the worker (sbatch only), to show where
the time goes. Prints one RESULT line of JSON per side and phase, then a
Markdown table with ratios and the issue's goals.
"""

import argparse
import concurrent.futures
import json
import os
import re
import sqlite3
import statistics
import subprocess
import sys
import time

SPEC = """name: dispatch-noop
workload: noop
config: noop
level: system
nodes: 1
ranks_per_node: 1
device: cpu
batch_size: 1
precision: fp32
seed: 0
max_retries: 0
system: dispatch-bench
"""

FINAL_STATES = (4, 5, 6)  # RUN_STATE_SUCCEEDED, _FAILED, _CANCELLED
SUCCEEDED = 4
TIME_MS = re.compile(r'"time_ms": *([0-9]+)')
POLL_S = 0.005


def now_ms():
    return time.time() * 1000.0


def percentile(values, p):
    """The p-th percentile (nearest rank) of values; None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    # ceil(p% of n), in integers: round(x + 0.5) rounds half to even, so it
    # took the max for p99 of 100 runs.
    rank = max(1, -(-p * len(ordered) // 100))
    return ordered[min(rank, len(ordered)) - 1]


def event_times(lines):
    """(first time_ms, run_stop's time_ms or None) of a worker's event lines."""
    first, stop = None, None
    for line in lines:
        match = TIME_MS.search(line)
        if not match:
            continue
        t = int(match.group(1))
        first = t if first is None else min(first, t)
        if '"key": "run_stop"' in line:
            stop = t
    return first, stop


def read_lines(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read().splitlines()
    except FileNotFoundError:
        return []


class Hpcai500Side:
    name = "hpcai500"

    def __init__(self, args, scratch):
        self.cli = os.path.join(args.bin_dir, "hpcai500")
        self.coordinator = args.coordinator
        self.db = sqlite3.connect(f"file:{args.db}?mode=ro", uri=True,
                                  check_same_thread=False)
        self.spec = os.path.join(scratch, "noop.yaml")
        with open(self.spec, "w", encoding="utf-8") as f:
            f.write(SPEC)

    def submit(self, _index):
        t0 = now_ms()
        out = subprocess.run(
            [self.cli, "--coordinator", self.coordinator, "submit", self.spec],
            check=True, capture_output=True, text=True).stdout.split()
        return {"id": int(out[-1]), "submit_ms": t0}

    def wait(self, runs, timeout_s):
        """Waits until every run ended; fills in its times."""
        pending = {run["id"]: run for run in runs}
        deadline = time.time() + timeout_s
        while pending and time.time() < deadline:
            ids = ",".join(str(i) for i in pending)
            rows = self.db.execute(
                f"SELECT id, state, created_ms, finished_ms FROM runs "
                f"WHERE id IN ({ids})").fetchall()
            for run_id, state, created_ms, finished_ms in rows:
                if state in FINAL_STATES:
                    run = pending.pop(run_id)
                    run.update(state=state, created_ms=created_ms,
                               finished_ms=finished_ms)
            if pending:
                time.sleep(POLL_S if len(runs) == 1 else 0.2)
        if pending:
            raise SystemExit(f"hpcai500: {len(pending)} run(s) did not end "
                             f"within {timeout_s} s")
        for run in runs:
            (placed,) = self.db.execute(
                "SELECT started_ms FROM attempts WHERE run_id = ? AND "
                "number = 1", (run["id"],)).fetchone() or (None,)
            lines = [line for (line,) in self.db.execute(
                "SELECT line FROM events WHERE run_id = ? AND attempt = 1 "
                "AND rank = 0 ORDER BY seq", (run["id"],))]
            run["placed_ms"] = placed
            run["start_ms"], run["stop_ms"] = event_times(lines)
            run["ok"] = run["state"] == SUCCEEDED and run["start_ms"]

    def phases(self, runs):
        return {
            "submit->stored": [r["created_ms"] - r["submit_ms"] for r in runs],
            "stored->placed": [r["placed_ms"] - r["created_ms"] for r in runs],
            "placed->worker's first event":
                [r["start_ms"] - r["placed_ms"] for r in runs],
            "run_stop->recorded": [r["finished_ms"] - r["stop_ms"]
                                   for r in runs if r["stop_ms"]],
        }


class SlurmSide:
    """One Slurm job per run, sbatch or srun, running the worker itself."""

    def __init__(self, args, scratch, mode):
        self.name = mode
        self.mode = mode
        self.worker = os.path.join(args.bin_dir, "hpcai500-worker")
        self.dir = os.path.join(scratch, mode)
        os.makedirs(self.dir, exist_ok=True)
        # A rendezvous port per run (no two jobs share one, even in
        # TIME_WAIT): runs are numbered 0..latency-runs + runs - 1.
        self.port_base = args.port_base + (0 if mode == "sbatch" else 5000)

    def worker_argv(self, index):
        # What hpcai500's agent passes for SPEC (WorkerArgs::ToArgv).
        return [self.worker, "--workload", "noop", "--config", "noop",
                "--batch-size", "1", "--precision", "fp32", "--device", "cpu",
                "--seed", "0", "--threads", "1",
                "--events-file", os.path.join(self.dir, f"{index}.events"),
                "--checkpoint-dir", os.path.join(self.dir, f"{index}.ckpt")]

    def env(self, index):
        """The rank layout hpcai500's agent gives a one-rank run."""
        env = dict(os.environ)
        env.update(RANK="0", WORLD_SIZE="1", LOCAL_RANK="0",
                   LOCAL_WORLD_SIZE="1", MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(self.port_base + index))
        return env

    def submit(self, index):
        name = f"{index}"
        argv = self.worker_argv(name)
        env = self.env(index)
        t0 = now_ms()
        if self.mode == "sbatch":
            begin = os.path.join(self.dir, f"{name}.begin")
            wrap = f"date +%s%3N >{begin}; exec " + " ".join(argv)
            subprocess.run(
                ["sbatch", "--parsable", "--quiet", "-n1", "-c1",
                 "--output=/dev/null", "--wrap", wrap],
                check=True, capture_output=True, env=env)
        else:
            subprocess.run(["srun", "--quiet", "-n1", "-c1"] + argv,
                           check=True, capture_output=True, env=env)
        return {"id": name, "submit_ms": t0,
                "events": os.path.join(self.dir, f"{name}.events"),
                "begin": os.path.join(self.dir, f"{name}.begin")}

    def wait(self, runs, timeout_s):
        pending = list(runs)
        deadline = time.time() + timeout_s
        while pending and time.time() < deadline:
            still = []
            for run in pending:
                run["start_ms"], run["stop_ms"] = event_times(
                    read_lines(run["events"]))
                if run["stop_ms"] is None:
                    still.append(run)
            pending = still
            if pending:
                time.sleep(POLL_S if len(runs) == 1 else 0.2)
        if pending:
            raise SystemExit(f"{self.mode}: {len(pending)} job(s) did not "
                             f"finish within {timeout_s} s")
        for run in runs:
            begin = read_lines(run["begin"])
            run["begin_ms"] = int(begin[0]) if begin else None
            run["ok"] = run["start_ms"] is not None

    def phases(self, runs):
        if self.mode != "sbatch":
            return {}
        return {
            "submit->job shell": [r["begin_ms"] - r["submit_ms"]
                                  for r in runs if r["begin_ms"]],
            "job shell->worker's first event":
                [r["start_ms"] - r["begin_ms"] for r in runs if r["begin_ms"]],
        }


def one_at_a_time(sides, first, count, timeout_s):
    """Runs `count` runs per side one after the other, interleaved (run i of
    every side before run i + 1 of any), so a side does not gain or lose by
    when it ran (page cache, daemons settling, other load). Returns each
    side's runs."""
    runs = {side.name: [] for side in sides}
    for i in range(first, first + count):
        for side in sides:
            run = side.submit(i)
            side.wait([run], timeout_s)
            runs[side.name].append(run)
    return runs


def throughput_phase(side, first, count, clients, timeout_s):
    with concurrent.futures.ThreadPoolExecutor(clients) as pool:
        runs = list(pool.map(side.submit, range(first, first + count)))
    side.wait(runs, timeout_s)
    return runs


def wall_s(runs):
    """From the first submit to the last worker's run_stop."""
    return (max(r["stop_ms"] for r in runs) -
            min(r["submit_ms"] for r in runs)) / 1000.0


def summarize(side, phase, chunks):
    """One RESULT line for a side's phase; `chunks` are lists of runs, and
    runs/s is all runs over the sum of each chunk's wall time."""
    runs = [r for chunk in chunks for r in chunk]
    bad = [r for r in runs if not r["ok"]]
    if bad:
        raise SystemExit(f"{side.name} {phase}: {len(bad)} run(s) failed, "
                         f"e.g. {bad[0]}")
    latencies = [r["start_ms"] - r["submit_ms"] for r in runs]
    wall = sum(wall_s(chunk) for chunk in chunks)
    result = {
        "side": side.name, "phase": phase, "runs": len(runs),
        "p50_ms": round(percentile(latencies, 50), 1),
        "p99_ms": round(percentile(latencies, 99), 1),
        "mean_ms": round(statistics.mean(latencies), 1),
        "wall_s": round(wall, 2),
        "runs_per_s": round(len(runs) / wall, 2),
        "phases_p50_ms": {name: round(percentile(values, 50), 1)
                          for name, values in side.phases(runs).items()
                          if values},
    }
    print("RESULT " + json.dumps(result), flush=True)
    return result


def ratio(ours, theirs):
    return f"{ours / theirs:.2f}x" if theirs else "-"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--coordinator", required=True)
    parser.add_argument("--db", required=True)
    parser.add_argument("--scratch", required=True)
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--latency-runs", type=int, default=100)
    parser.add_argument("--warmup-runs", type=int, default=5)
    parser.add_argument("--chunk", type=int, default=100)
    parser.add_argument("--slots", type=int, default=8)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--sides", default="hpcai500,sbatch,srun")
    parser.add_argument("--port-base", type=int, default=31000)
    parser.add_argument("--timeout-s", type=int, default=1800)
    args = parser.parse_args()

    sides = []
    for name in args.sides.split(","):
        if name == "hpcai500":
            sides.append(Hpcai500Side(args, args.scratch))
        elif name in ("sbatch", "srun"):
            sides.append(SlurmSide(args, args.scratch, name))
        else:
            raise SystemExit(f"--sides: unknown side {name!r}")

    # Run numbers: warm-up, then one at a time, then the loaded chunks; a
    # Slurm side derives its files and MASTER_PORT from them.
    warm_first = 0
    latency_first = warm_first + args.warmup_runs
    load_first = latency_first + args.latency_runs
    print(f"# warm-up: {args.warmup_runs} runs per side, not counted",
          file=sys.stderr, flush=True)
    one_at_a_time(sides, warm_first, args.warmup_runs, args.timeout_s)
    print(f"# one at a time: {args.latency_runs} runs per side, interleaved",
          file=sys.stderr, flush=True)
    latency_runs = one_at_a_time(sides, latency_first, args.latency_runs,
                                 args.timeout_s)
    latencies = {side.name: summarize(side, "latency",
                                      [latency_runs[side.name]])
                 for side in sides}
    chunk = max(1, min(args.chunk, args.runs))
    print(f"# under load: {args.runs} runs per side from {args.clients} "
          f"clients, in chunks of {chunk} taken by the sides in turn",
          file=sys.stderr, flush=True)
    chunks = {side.name: [] for side in sides}
    for first in range(load_first, load_first + args.runs, chunk):
        count = min(chunk, load_first + args.runs - first)
        for side in sides:
            chunks[side.name].append(throughput_phase(
                side, first, count, args.clients, args.timeout_s))
    results = {side.name: (latencies[side.name],
                           summarize(side, "throughput", chunks[side.name]))
               for side in sides}

    print()
    print("| side | submit->start p50 / p99 (one at a time) | "
          f"p50 / p99 with {args.clients} clients | runs/s ({args.runs} runs, "
          f"chunks of {chunk}) "
          "| where the time goes (p50, one at a time) |")
    print("|---|---:|---:|---:|---|")
    for name, (latency, load) in results.items():
        phases = ", ".join(f"{k} {v} ms"
                           for k, v in latency["phases_p50_ms"].items())
        print(f"| {name} | {latency['p50_ms']} / {latency['p99_ms']} ms | "
              f"{load['p50_ms']} / {load['p99_ms']} ms | "
              f"{load['runs_per_s']} | {phases or '-'} |")
    if "hpcai500" in results:
        ours_latency, ours_load = results["hpcai500"]
        for name, (latency, load) in results.items():
            if name == "hpcai500":
                continue
            print(f"\nhpcai500 / {name}: runs/s "
                  f"{ratio(ours_load['runs_per_s'], load['runs_per_s'])} "
                  f"(goal >= 1), p50 one at a time "
                  f"{ratio(ours_latency['p50_ms'], latency['p50_ms'])} "
                  f"({ours_latency['p50_ms']} vs {latency['p50_ms']} ms"
                  f"{'; goal <= 1 against srun' if name == 'srun' else ''})")


if __name__ == "__main__":
    main()
