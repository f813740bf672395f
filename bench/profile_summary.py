#!/usr/bin/python3
"""Sums a chrome trace of complete ("ph": "X") events by name: total and
self time (minus the time of events nested inside), top N by self time.

  bench/profile_summary.py TRACE.json [--top 25]

TRACE.json: `hpcai500-train-step-bench ... --profile TRACE.json`
(LibTorch's legacy profiler) or torch.autograd.profiler's export_chrome_trace.
"""
import argparse
import collections
import json
import sys


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("trace")
    p.add_argument("--top", type=int, default=25)
    a = p.parse_args()
    with open(a.trace) as f:
        data = json.load(f)
    events = data["traceEvents"] if isinstance(data, dict) else data
    by_thread = collections.defaultdict(list)
    for e in events:
        if e.get("ph") == "X" and "dur" in e:
            by_thread[(e.get("pid"), e.get("tid"))].append(e)
    if not by_thread:
        sys.exit(f"profile_summary.py: {a.trace} holds no complete events")
    total = collections.Counter()
    self_time = collections.Counter()
    calls = collections.Counter()
    for evs in by_thread.values():
        evs.sort(key=lambda e: (float(e["ts"]), -float(e["dur"])))
        stack = []  # [end, name, child time]
        def close(frame):
            self_time[frame[1]] += frame[3] - frame[2]
        for e in evs:
            start, dur = float(e["ts"]), float(e["dur"])
            while stack and stack[-1][0] <= start:
                close(stack.pop())
            if stack:
                stack[-1][2] += dur
            total[e["name"]] += dur
            calls[e["name"]] += 1
            stack.append([start + dur, e["name"], 0.0, dur])
        while stack:
            close(stack.pop())
    wall = sum(self_time.values())
    print(f"| op | calls | self ms | self % | total ms |")
    print("|---|---:|---:|---:|---:|")
    for name, t in self_time.most_common(a.top):
        print(f"| {name} | {calls[name]} | {t / 1e3:.1f} | "
              f"{100 * t / wall:.1f}% | {total[name] / 1e3:.1f} |")


if __name__ == "__main__":
    main()
