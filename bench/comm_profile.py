#!/usr/bin/python3
"""Bytes communicated per sample and the compute / communication split of an
epoch, image classification and extreme weather side by side.

  bench/comm_profile.py [--worker PATH] [--ewa-worker PATH] [--ranks 2]
      [--steps 3] [--ic-batch 4] [--ewa-batch 2] [--ewa-data DIR]
      [--only ic|ewa] [--work-dir DIR] [--timeout S]

For each workload it starts --ranks worker processes on this machine
(torchrun's environment: RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
MASTER_ADDR=127.0.0.1, MASTER_PORT=a free port; --threads 1 each) for one
epoch of --steps steps, reads every rank's `hpcai500_epoch_stats` event from
its --events-file (docs/events.md) and prints a Markdown table.

  - IC: `--workload image_classification --config synthetic_resnet50
    --data synthetic` (ResNet-50, 224 x 224, the reference model).
  - EWA: `--workload extreme_weather --config ewa_smoke --data DIR
    --model faster_rcnn_resnet50` (the reference backbone on the reduced
    96 x 144 grid; DIR holds climo_YYYY.h5, written by the worker on first
    use). `--ewa-model` picks another backbone.

Columns: bytes per step = comm_bytes / steps of one rank (the gradient
all-reduce payload plus the 8-byte sample count; independent of the batch),
gradient values = (bytes per step - 8) / 4 (fp32, no compression: the
trainable parameters the reducer all-reduces), bytes per sample =
comm_bytes / samples of that rank, and the shares of the epoch's `seconds`
spent in compute (forward, backward, optimiser), blocked on all-reduces
(`comm_wait_seconds`: what backward did not hide) and waiting for input.
Values are the mean over ranks. `--reference-ic-batch` (128, the imagenet
config) and `--reference-ewa-batch` (2, the ewa config) give bytes per
sample at the reference per-rank batches: bytes per step / batch.
"""
import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
COUNT_BYTES = 8  # the float64 sample count all-reduced every step


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def read_epoch_stats(path):
    """The value of the last hpcai500_epoch_stats event in an event file."""
    stats = None
    with open(path) as f:
        for line in f:
            if "hpcai500_epoch_stats" not in line or "{" not in line:
                continue
            event = json.loads(line[line.index("{"):])
            if event.get("key") == "hpcai500_epoch_stats":
                stats = event["value"]
    if stats is None:
        raise ValueError(f"{path}: no hpcai500_epoch_stats event")
    for key in ("samples", "seconds", "comm_bytes", "comm_wait_seconds",
                "compute_seconds", "input_wait_seconds"):
        if key not in stats:
            raise ValueError(f"{path}: hpcai500_epoch_stats has no '{key}' "
                             f"(got {sorted(stats)})")
    return stats


def run_ranks(worker, args, ranks, work_dir, name, timeout):
    """Starts `ranks` processes of `worker args`; returns each rank's
    epoch stats."""
    port = free_port()
    procs = []
    for rank in range(ranks):
        events = os.path.join(work_dir, f"{name}.rank{rank}.events")
        if os.path.exists(events):
            os.remove(events)
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(ranks),
                   LOCAL_RANK=str(rank), LOCAL_WORLD_SIZE=str(ranks),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        cmd = [worker] + args + ["--events-file", events]
        if rank == 0:
            print(f"$ RANK=0..{ranks - 1} WORLD_SIZE={ranks} "
                  f"MASTER_PORT={port} " + " ".join(cmd), file=sys.stderr,
                  flush=True)
        log = open(os.path.join(work_dir, f"{name}.rank{rank}.log"), "w")
        procs.append((subprocess.Popen(cmd, env=env, stdout=log,
                                       stderr=subprocess.STDOUT), events,
                      log))
    deadline = time.monotonic() + timeout
    failed = []
    for rank, (proc, _, log) in enumerate(procs):
        try:
            rc = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            for p, _, _ in procs:
                if p.poll() is None:
                    p.kill()
            for p, _, _ in procs:
                p.wait()
            rc = "timeout"
        log.close()
        if rc != 0:
            failed.append((rank, rc))
    if failed:
        rank, rc = failed[0]
        with open(os.path.join(work_dir, f"{name}.rank{rank}.log")) as f:
            tail = f.read()[-3000:]
        sys.exit(f"comm_profile.py: {name} rank {rank} failed ({rc}); its "
                 f"output ends:\n{tail}")
    return [read_epoch_stats(events) for _, events, _ in procs]


def summarize(name, model, batch, steps, ref_batch, ranks, stats):
    mean = lambda key: statistics.mean(float(s[key]) for s in stats)
    samples = mean("samples")
    comm_bytes = mean("comm_bytes")
    seconds = mean("seconds")
    per_step = comm_bytes / steps
    return {
        "workload": name, "model": model, "ranks": ranks, "batch": batch,
        "steps": steps, "gradient_values": (per_step - COUNT_BYTES) / 4,
        "bytes_per_step": per_step,
        "bytes_per_sample": comm_bytes / samples if samples else 0.0,
        "ref_batch": ref_batch, "ref_bytes_per_sample": per_step / ref_batch,
        "seconds": seconds,
        "compute_share": mean("compute_seconds") / seconds,
        "comm_share": mean("comm_wait_seconds") / seconds,
        "input_share": mean("input_wait_seconds") / seconds,
        "samples_per_s": samples / seconds,
    }


def mb(x):
    return f"{x / 1e6:.2f} MB"


def print_table(rows):
    print("\n| workload | model | ranks x batch | gradient values | bytes/step "
          "| bytes/sample | bytes/sample at reference batch | epoch s "
          "| compute | comm wait | input wait |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['workload']} | {r['model']} | {r['ranks']} x "
              f"{r['batch']} | {r['gradient_values'] / 1e6:.2f} M | "
              f"{mb(r['bytes_per_step'])} | {mb(r['bytes_per_sample'])} | "
              f"{mb(r['ref_bytes_per_sample'])} (batch {r['ref_batch']}) | "
              f"{r['seconds']:.1f} | {100 * r['compute_share']:.0f}% | "
              f"{100 * r['comm_share']:.0f}% | "
              f"{100 * r['input_share']:.0f}% |")
    print()
    for r in rows:
        print("RESULT " + json.dumps(r))
    sys.stdout.flush()


def main():
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    default_worker = os.path.join(ROOT, "build", "bin", "hpcai500-worker")
    p.add_argument("--worker", default=default_worker,
                   help="worker binary for IC (default build/bin)")
    p.add_argument("--ewa-worker", default=None,
                   help="worker binary for EWA (default: --worker)")
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--ic-batch", type=int, default=4)
    p.add_argument("--ic-model", default="resnet50")
    p.add_argument("--ewa-batch", type=int, default=2)
    p.add_argument("--ewa-model", default="faster_rcnn_resnet50")
    p.add_argument("--ewa-config", default="ewa_smoke")
    p.add_argument("--ewa-data", default=None,
                   help="folder of climo_YYYY.h5 (default: WORK_DIR/ewa)")
    p.add_argument("--reference-ic-batch", type=int, default=128)
    p.add_argument("--reference-ewa-batch", type=int, default=2)
    p.add_argument("--only", choices=["ic", "ewa"], default=None)
    p.add_argument("--work-dir", default=None,
                   help="event files and logs (default: a temporary folder)")
    p.add_argument("--timeout", type=float, default=1200,
                   help="seconds per workload before the ranks are killed")
    a = p.parse_args()
    if a.ranks < 2:
        sys.exit("comm_profile.py: --ranks must be >= 2 (one rank "
                 "communicates nothing)")
    for flag in ("steps", "ic_batch", "ewa_batch", "threads",
                 "reference_ic_batch", "reference_ewa_batch"):
        if getattr(a, flag) < 1:
            sys.exit(f"comm_profile.py: --{flag.replace('_', '-')} must be "
                     ">= 1")
    work_dir = a.work_dir or tempfile.mkdtemp(prefix="hpcai500-comm-")
    os.makedirs(work_dir, exist_ok=True)
    ewa_worker = a.ewa_worker or a.worker
    rows = []
    if a.only in (None, "ic"):
        if not os.access(a.worker, os.X_OK):
            sys.exit(f"comm_profile.py: {a.worker} is not an executable "
                     "worker (--worker)")
        args = ["--workload", "image_classification", "--config",
                "synthetic_resnet50", "--data", "synthetic", "--model",
                a.ic_model, "--batch-size", str(a.ic_batch), "--epochs", "1",
                "--steps-per-epoch", str(a.steps), "--threads",
                str(a.threads)]
        stats = run_ranks(a.worker, args, a.ranks, work_dir, "ic", a.timeout)
        rows.append(summarize("image_classification", a.ic_model, a.ic_batch,
                              a.steps, a.reference_ic_batch, a.ranks, stats))
    if a.only in (None, "ewa"):
        if not os.access(ewa_worker, os.X_OK):
            sys.exit(f"comm_profile.py: {ewa_worker} is not an executable "
                     "worker (--ewa-worker)")
        data = a.ewa_data or os.path.join(work_dir, "ewa")
        os.makedirs(data, exist_ok=True)
        args = ["--workload", "extreme_weather", "--config", a.ewa_config,
                "--data", data, "--model", a.ewa_model, "--batch-size",
                str(a.ewa_batch), "--epochs", "1", "--steps-per-epoch",
                str(a.steps), "--threads", str(a.threads)]
        stats = run_ranks(ewa_worker, args, a.ranks, work_dir, "ewa",
                          a.timeout)
        rows.append(summarize("extreme_weather", a.ewa_model, a.ewa_batch,
                              a.steps, a.reference_ewa_batch, a.ranks, stats))
    print(f"work dir: {work_dir}", file=sys.stderr)
    print_table(rows)


if __name__ == "__main__":
    main()
