#!/usr/bin/env python3
"""Replays tests/hostile/corpus.jsonl against a tpusim binary.

usage: replay.py TPUSIM [--jobs N] [--timeout S] [--markdown]

Each case runs in a fresh scratch folder. Outcomes:
  clean error    exit 2, a message on stderr, no "internal error"
  ok             exit 0 where the case expects success
  crash          a signal, another exit code, or "internal error"
  hang           no exit within the timeout
  silent accept  exit 0 where the case expects an error
  false reject   exit 2 where the case expects success
Prints a table per category; exits 1 if any crash, hang, silent accept or
false reject occurred (and lists them).
"""
import argparse
import collections
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))  # {repo} in a case's args


def run_case(tpusim, case, timeout, root):
    d = os.path.join(root, case["id"])
    os.makedirs(d)
    for name, text in case["files"].items():
        p = os.path.join(d, name)
        if text is None:
            os.mkfifo(p)
        else:
            with open(p, "w") as f:
                f.write(text)
    args = [a.replace("{d}", d).replace("{repo}", REPO) for a in case["args"]]
    try:
        r = subprocess.run([tpusim] + args, cwd=d, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "hang", ""
    finally:
        pass
    err = r.stderr.decode(errors="replace")
    shutil.rmtree(d, ignore_errors=True)
    if r.returncode < 0 or r.returncode not in (0, 2) or "internal error" in err:
        return "crash", "rc %d: %s" % (r.returncode, err.strip()[-300:])
    if r.returncode == 2:
        if not err.strip():
            return "crash", "exit 2 without a message"
        return ("false reject", err.strip()[-300:]) if case["expect"] == "ok" else ("clean error", "")
    return ("silent accept", "") if case["expect"] == "error" else ("ok", "")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tpusim")
    ap.add_argument("--jobs", type=int, default=4)
    ap.add_argument("--timeout", type=float, default=60)
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args()
    cases = [json.loads(l) for l in open(os.path.join(HERE, "corpus.jsonl"))]
    root = tempfile.mkdtemp(prefix="tpusim_hostile_")
    results = {}
    try:
        with concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
            futs = {ex.submit(run_case, os.path.abspath(a.tpusim), c, a.timeout, root): c for c in cases}
            for f in concurrent.futures.as_completed(futs):
                results[futs[f]["id"]] = f.result()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    cols = ["clean error", "ok", "crash", "hang", "silent accept", "false reject"]
    table = collections.OrderedDict()
    for c in cases:
        row = table.setdefault(c["category"], collections.Counter())
        row["cases"] += 1
        row[results[c["id"]][0]] += 1
    total = collections.Counter()
    for row in table.values():
        total.update(row)
    print("| category | cases | " + " | ".join(cols) + " |")
    print("|---|---:|" + "---:|" * len(cols))
    for cat, row in list(table.items()) + [("**total**", total)]:
        print("| %s | %d | %s |" % (cat, row["cases"], " | ".join(str(row[k]) for k in cols)))
    bad = [(c, results[c["id"]]) for c in cases if results[c["id"]][0] in ("crash", "hang", "silent accept", "false reject")]
    for c, (kind, detail) in bad:
        print("%s: %s %s: %s" % (kind, c["id"], json.dumps(c["args"])[:200], detail), file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
