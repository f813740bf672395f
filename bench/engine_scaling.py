#!/usr/bin/python3
"""Training-engine benchmark: scaling 1 -> 2 ranks and each compression mode.

Runs hpcai500-worker side by side in one run on this machine: one rank, then
two ranks over Gloo on loopback (one thread per rank, so the comparison is
ranks, not threads), for every compression mode. Prints a table of epoch time,
throughput, bytes sent per step and parallel efficiency, read from the
workers' own event lines (hpcai500_epoch_stats). Standard library only.

usage: bench/engine_scaling.py [--build build] [--config fashion_mnist_smoke]
                               [--steps 40] [--epochs 1]
"""
import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile

PREFIX = ":::MLLOG "


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def read_events(path):
    events = []
    with open(path) as f:
        for line in f:
            if line.startswith(PREFIX):
                events.append(json.loads(line[len(PREFIX):]))
    return events


def run(worker, config, ranks, compression, steps, epochs, workdir):
    port = free_port()
    procs = []
    for rank in range(ranks):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(ranks),
                   LOCAL_RANK=str(rank), LOCAL_WORLD_SIZE=str(ranks),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        events = os.path.join(workdir, f"{compression}-{ranks}-rank{rank}.events")
        args = [worker, "--workload", "image_classification", "--config", config,
                "--epochs", str(epochs), "--steps-per-epoch", str(steps),
                "--threads", "1", "--compression", compression,
                "--events-file", events]
        procs.append((subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL,
                                       stderr=subprocess.PIPE, text=True), events))
    stats = []
    for proc, events in procs:
        _, err = proc.communicate()
        if proc.returncode != 0:
            sys.exit(f"worker failed ({compression}, {ranks} ranks): {err[-2000:]}")
        stats.append([e["value"] for e in read_events(events)
                      if e["key"] == "hpcai500_epoch_stats"][-1])
    samples = sum(s["samples"] for s in stats)
    seconds = max(s["seconds"] for s in stats)
    comm_bytes = stats[0].get("comm_bytes", 0)
    return {"samples": samples, "seconds": seconds,
            "throughput": samples / seconds if seconds else 0.0,
            "bytes_per_step": comm_bytes / steps if steps else 0,
            "comm_wait": stats[0].get("comm_wait_seconds", 0.0)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default="build")
    parser.add_argument("--config", default="fashion_mnist_smoke")
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--epochs", type=int, default=1)
    args = parser.parse_args()
    worker = os.path.join(args.build, "bin", "hpcai500-worker")
    with tempfile.TemporaryDirectory() as workdir:
        one = run(worker, args.config, 1, "none", args.steps, args.epochs, workdir)
        rows = [("1 rank", "none", one, None)]
        for compression in ("none", "fp16", "powersgd"):
            two = run(worker, args.config, 2, compression, args.steps, args.epochs,
                      workdir)
            # Weak scaling: the same per-rank batch, so ideal is 2x throughput.
            efficiency = two["throughput"] / (2 * one["throughput"])
            rows.append(("2 ranks", compression, two, efficiency))
    print(f"config {args.config}, {args.steps} steps/epoch, 1 thread per rank")
    print(f"{'ranks':8} {'compression':12} {'epoch s':>8} {'samples/s':>10} "
          f"{'bytes/step':>12} {'comm wait s':>12} {'efficiency':>10}")
    for ranks, compression, r, eff in rows:
        print(f"{ranks:8} {compression:12} {r['seconds']:8.2f} "
              f"{r['throughput']:10.1f} {r['bytes_per_step']:12.0f} "
              f"{r['comm_wait']:12.3f} "
              f"{'' if eff is None else f'{eff:10.2f}'}")
    none_bytes = rows[1][2]["bytes_per_step"]
    for _, compression, r, _ in rows[2:]:
        if none_bytes:
            print(f"bytes ratio {compression}/none: "
                  f"{r['bytes_per_step'] / none_bytes:.3f}")


if __name__ == "__main__":
    main()
