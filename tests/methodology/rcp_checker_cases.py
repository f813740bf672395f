"""Runs MLCommons' RCP checker (mlperf_logging.rcp_checker) on every case
folder under argv[1] (each: rcps.json and result_*.txt) with the training
rules 4.1.0 and the full reference set (--rcp_pass full_rcps), and prints one
line per case: NAME PASSED FACTOR. Used by rcp_checker_test.cc."""
import logging
import os
import sys

from mlperf_logging.rcp_checker import rcp_checker

logging.disable(logging.CRITICAL)
root = sys.argv[1]
for name in sorted(os.listdir(root)):
    if not name.startswith('case'):
        continue
    folder = os.path.join(root, name)
    with open(os.path.join(folder, 'rcps.json')) as rcps:
        passed, _, factor = rcp_checker.check_directory(
            folder, 'training', '4.1.0', False, False, rcp_file=rcps,
            rcp_pass='full_rcps')
    print(name, int(bool(passed)), repr(float(factor)))
