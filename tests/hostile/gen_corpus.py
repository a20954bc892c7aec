#!/usr/bin/env python3
"""Writes tests/hostile/corpus.jsonl: the hostile-input corpus of issue 17.

Each line is one case: {"id", "category", "args", "files", "expect"}.
  args   the tpusim command line; {d} is the case's scratch folder,
         {name} a file of `files` written there first and {repo} the
         checkout's root (replay.py's, not the generating machine's).
  files  {name: text} written into the scratch folder.
  expect "error": exit 2 with a message and no "internal error";
         "ok": exit 0.
The cases are hand-written families expanded over values (configs,
workloads, SCALE-Sim CSV, model files, sweep specs and expressions, CLI
flags) plus deterministic mutations of shipped files. Regenerate with
`python3 tests/hostile/gen_corpus.py` and commit the result; replay.py
runs it.
"""
import json
import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
cases = []


def add(category, args, expect, files=None):
    cases.append({"id": "%s-%03d" % (category, sum(c["category"] == category for c in cases)),
                  "category": category, "args": args, "files": files or {}, "expect": expect})


# ---- configs: --set values out of range, wrong type, huge, NaN --------------
# (key, bad values, good values)
bounded = [
    ("chip.tensorcores", ["0", "-1", "65", "1000000", "2147483648", "1.5", "x"], ["1", "2"]),
    ("chip.clock", ["0", "-1GHz", "3THz", "1e30Hz", "1e-6Hz", "1e-300Hz", "nan", "inf", "1.5", "1 GB/s"], []),
    ("mxu.count", ["0", "65", "1000000"], ["1", "8"]),
    ("mxu.rows", ["0", "4097", "1000000"], ["64", "256"]),
    ("mxu.cols", ["0", "4097"], ["64"]),
    ("mxu.weight_load_cycles", ["-1", "2000000"], ["0"]),
    ("vpu.lanes", ["0", "4097"], ["256"]),
    ("vpu.sublanes", ["0", "1025"], ["16"]),
    ("vpu.alus_per_lane", ["0", "65"], ["2"]),
    ("vpu.vregs", ["0", "65537"], []),
    ("vpu.transcendental_rate", ["0", "-1", "65", "nan"], []),
    ("xlu.count", ["-1", "65"], ["0", "4"]),
    ("xlu.vregs_per_cycle", ["0", "65"], []),
    ("vmem.size", ["2TiB", "-1 MiB", "1.5 B"], []),
    ("vmem.ports", ["0", "65"], []),
    ("vmem.bandwidth", ["1e20 B/s", "-1 GB/s"], []),
    ("vmem.granule", ["1GiB"], []),
    ("dma.engines", ["0", "1025", "1000000"], ["8"]),
    ("dma.issue_per_cycle", ["0", "65"], []),
    ("dma.max_outstanding", ["0", "65537"], []),
    ("dma.request_bytes", ["0", "2 MiB"], []),
    ("hbm.stacks", ["0", "65", "100000"], ["2"]),
    ("hbm.channels", ["0", "65"], []),
    ("hbm.pseudo_channels", ["0", "9"], []),
    ("hbm.bank_groups", ["0", "65"], []),
    ("hbm.banks_per_group", ["0", "65", "1000000"], []),
    ("hbm.row_size", ["0", "2 MiB", "1000 B"], []),
    ("hbm.data_rate", ["0", "1e12 GT/s"], []),
    ("hbm.bus_width_bits", ["0", "4097", "12"], []),
    ("hbm.burst_length", ["0", "65"], []),
    ("hbm.capacity", ["0", "2 PiB"], []),
    ("hbm.queue_depth", ["0", "65537"], []),
    ("hbm.refresh_postpone", ["-1", "9", "100"], ["0", "8"]),
    ("hbm.timings.tRFC", ["5 us", "1 s"], []),
    ("hbm.timings.tREFI", ["1 s", "-1 ns"], []),
    ("hbm.timings.tCK", ["0", "1 s"], []),
    ("ici.ports", ["-1", "65"], []),
    ("ici.link_bandwidth", ["1e30 B/s"], []),
    ("ici.max_chips", ["0", "1048577"], []),
    ("ici.axis_split", ["both", "", "1", "[tori]"], ["never", "always"]),
    ("sparsecores", ["-1", "65"], []),
    ("power.tdp", ["2 MW"], []),
    ("hbm.model", ["fluid", "1"], ["detailed"]),
    ("mxu.accumulator", ["f64"], []),
    ("mxu.throughput", ["{bf16: 0}", "{f64: 1}", "[]"], []),
    ("mxu.rowz", ["128"], []),
    ("extends", ["v4"], []),
]
for key, bad, good in bounded:
    for v in bad:
        add("config-set", ["config", "check", "v5e", "--set", "%s=%s" % (key, v)], "error")
    for v in good:
        add("config-set", ["config", "check", "v5e", "--set", "%s=%s" % (key, v), "--set", "published.peak_tflops=~",
                           "--set", "published.hbm_bandwidth=~"], "ok")
for v in ["hbm.stacks=64 --set hbm.channels=64 --set hbm.pseudo_channels=8",
          "hbm.bank_groups=64 --set hbm.banks_per_group=64 --set hbm.stacks=8"]:
    add("config-set", ["config", "check", "v5e", "--set"] + v.split(" "), "error")

# ---- config files: syntax, duplicates, documents, types --------------------
cfg_files = [
    "extends: v5e\nmxu:\n  rows: 128\n  rows: 256\n",
    "extends: v5e\n---\nmxu: {rows: 8}\n",
    "extends: v5e\nmxu: [1, 2]\n",
    "extends: v5e\nmxu: {rows: {a: 1}}\n",
    "extends: nowhere\n",
    "extends: ./self.yaml\n",
    "extends: v5e\nhbm:\n  timings: {tRFC: 5 us}\n",
    "extends: v5e\nhbm:\n  row_size: 1000 B\n",
    "extends: v5e\nhbm:\n  refresh_postpone: 9\n",
    "extends: v5e\nchip: {clock: 1e-300 Hz}\n",
    "extends: v5e\nchip: {clock: 3 THz}\n",
    "extends: v5e\ncmem: {size: 0 B}\n",
    "extends: v5e\nvmem: {granule: 1 GiB}\n",
    "{\"extends\": \"v5e\", \"mxu\": {\"rows\": 1}, \"mxu\": {\"rows\": 2}}\n",
    "{\"extends\": \"v5e\"}{\"mxu\": {}}\n",
    "extends: v5e\n\t- broken\n",
    "",
    "- a\n- b\n",
    "extends: v5e\nmxu: &a {rows: *a}\n",
    "extends: v5e\nmxu: &a [*a]\n",
    "extends: v5e\nx: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\ny: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
    "z: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nw: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
    "v: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\nu: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n"
    "t: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]\ns: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g, *g]\n",
    "extends: v5e\n" + "x:\n" + "  " * 1 + "y: " + "[" * 3000 + "]" * 3000 + "\n",
]
for text in cfg_files:
    add("config-file", ["config", "check", "{d}/self.yaml"], "error", {"self.yaml": text})

# ---- workloads ----------------------------------------------------------------
HDR = "tpusim_workload: 1\nname: h\n"


def wl(tensors, ops, extra=""):
    return HDR + extra + "tensors:\n" + "".join("  - %s\n" % t for t in tensors) + "ops:\n" + "".join(
        "  - %s\n" % o for o in ops)


RUN = ["run", "--workload", "{d}/w.yaml", "--quiet", "--max-sim-time", "0.01", "--out", "{d}/out"]
dims = ["0", "-1", "2147483648", "4294967296", "4611686018427387904", "9223372036854775807",
        "9223372036854775808", "1e9", "x", "[]", "1.5"]
for d in dims:
    add("workload-shape", RUN, "error",
        {"w.yaml": wl(["{name: x, shape: [%s, %s, %s], dtype: bf16}" % (d, d, d)], ["{name: r, op: relu, inputs: [x]}"])})
    add("workload-shape", RUN, "error",
        {"w.yaml": wl(["{name: x, shape: [8, %s], dtype: bf16}" % d, "{name: w, shape: [%s, 8], dtype: bf16, kind: weight}" % d],
                      ["{name: m, op: matmul, inputs: [x, w]}"])})
for big in ["262144, 4194304", "1073741824, 1048576", "2147483648, 2147483648"]:
    add("workload-shape", RUN, "error",
        {"w.yaml": wl(["{name: x, shape: [%s], dtype: f32}" % big], ["{name: r, op: relu, inputs: [x]}"])})
conv_t = ["{name: x, shape: [1, 8, 8, 4], dtype: bf16}", "{name: w, shape: [3, 3, 4, 8], dtype: bf16, kind: weight}"]
for attr in ["stride: [4611686018427387904, 1]", "dilation: [4611686018427387904, 1]", "padding: [[4611686018427387904, 0], [0, 0]]",
             "stride: [0, 1]", "dilation: [-1, 1]", "groups: 0", "groups: 3", "stride: 2097152", "padding: weird"]:
    add("workload-attr", RUN, "error", {"w.yaml": wl(conv_t, ["{name: c, op: conv2d, inputs: [x, w], %s}" % attr])})
att_t = ["{name: q, shape: [2, 1, 8, 576], dtype: bf16}", "{name: c, shape: [2, 256, 1, 576], dtype: bf16, kind: kv_cache}"]
for attr in ["value_dim: -1", "value_dim: 577", "value_dim: 9223372036854775807", "value_dim: wide",
             "value_dim: 512, pass: grad_kv", "value_dim: [512]"]:
    add("workload-attr", RUN, "error", {"w.yaml": wl(att_t, ["{name: a, op: attention, inputs: [q, c, c], %s}" % attr])})
add("workload-attr", RUN, "ok", {"w.yaml": wl(att_t, ["{name: a, op: attention, inputs: [q, c, c], value_dim: 512}"])})
mat_t = ["{name: x, shape: [8, 16], dtype: bf16}", "{name: w, shape: [16, 8], dtype: bf16, kind: weight}"]
for op in ["{name: m, op: matmul, inputs: [x, w], equation: 'ab,bc->ac,'}", "{name: m, op: matmul, inputs: [x]}",
           "{name: m, op: matmul, inputs: [x, w, x]}", "{name: m, op: matmul, inputs: [x, nope]}",
           "{name: m, op: frobnicate, inputs: [x, w]}", "{name: m, op: matmul, inputs: [x, w], equation: 'aa,ab->b'}",
           "{name: m, op: reshape, inputs: [x], shape: [4611686018427387904, 4]}",
           "{name: m, op: reshape, inputs: [x], shape: [-1, -1]}",
           "{name: m, op: slice, inputs: [x], start: [0, 0], limit: [9, 16]}",
           "{name: m, op: softmax, inputs: [x], axis: 5}", "{name: m, op: transpose, inputs: [x], perm: [0, 0]}",
           "{name: m, op: all_gather, inputs: [x], mesh_axes: [nope], dim: 0}",
           "{name: m, op: concat, inputs: [x, w], axis: 0}", "{name: m, op: cast, inputs: [x]}",
           "{name: m, op: relu, inputs: [x], outputs: [x]}", "{name: m, op: relu, inputs: [x], output: w}"]:
    add("workload-op", RUN, "error", {"w.yaml": wl(mat_t, [op])})
add("workload-graph", RUN, "error", {"w.yaml": wl(["{name: x, shape: [8, 16], dtype: bf16, space: cmem}"],
                                                  ["{name: r, op: relu, inputs: [x]}"])})
add("workload-graph", RUN, "error", {"w.yaml": wl(mat_t, ["{name: a, op: relu, inputs: [b]}", "{name: b, op: relu, inputs: [a]}"])})
add("workload-graph", RUN, "error", {"w.yaml": wl(mat_t, ["{name: a, op: relu, inputs: [x]}", "{name: a, op: relu, inputs: [x]}"])})
add("workload-graph", RUN, "error",
    {"w.yaml": HDR + "mesh: {data: 4611686018427387904}\ntensors:\n  - {name: x, shape: [8], dtype: bf16}\nops:\n  - {name: r, op: relu, inputs: [x]}\n"})
for order in [["{name: act, op: relu, inputs: [mm]}", "{name: mm, op: matmul, inputs: [x, w]}"],
              ["{name: c, op: exp, inputs: [b]}", "{name: b, op: relu, inputs: [a]}", "{name: a, op: matmul, inputs: [x, w]}"],
              ["{name: s, op: add, inputs: [a, b]}", "{name: b, op: relu, inputs: [x]}", "{name: a, op: exp, inputs: [x]}"]]:
    add("workload-order", RUN, "ok", {"w.yaml": wl(mat_t, order)})
for text in [HDR + "name: again\nops: []\n", HDR + "ops: []\n---\nname: b\n", HDR + "tensors:\n  - {name: x, name: y, shape: [1], dtype: bf16}\nops: []\n",
             '{"tpusim_workload": 1, "name": "a", "ops": []}{"name": "b"}', '{"tpusim_workload": 1, "name": "a", "name": "b", "ops": []}',
             "", "[]", "tpusim_workload: 2\nname: a\nops: []\n", "tpusim_workload: 1\nops: []\n", HDR + "ops: {}\n",
             HDR + "ops:\n  - " + "[" * 5000 + "]" * 5000 + "\n", HDR + "tensors: 7\nops: []\n"]:
    add("workload-file", RUN, "error", {"w.yaml": text})
for path in ["/dev/zero", "/dev/null", "/", "{d}/missing.yaml", "{d}/fifo"]:
    add("workload-file", ["run", "--workload", path, "--quiet", "--out", "{d}/out"], "error",
        {"fifo": None} if path.endswith("fifo") else {})

# ---- SCALE-Sim CSV ------------------------------------------------------------
CSV = ["run", "--workload", "{d}/t.csv", "--quiet", "--max-sim-time", "0.01", "--out", "{d}/out"]
for row in ["big, 4294967296, 4294967296, 4294967296,", "big, 9223372036854775807, 1, 1,", "z, 0, 8, 8,", "n, -4, 8, 8,",
            "x, a, b, c,", "x, 8, 8,", "x, 8, 8, 8, 8, 8,", "x, 1e3, 8, 8,", "x, 8, 8, 99999999999999999999,"]:
    add("scalesim", CSV, "error", {"t.csv": "Layer, M, N, K,\n" + row + "\n"})
for row in ["c, 8, 8, 9, 3, 3, 8, 1,", "c, 8, 8, 3, 3, 3, 8, 0,", "c, 8, 8, 3, 3, 3, 8, 4611686018427387904,",
            "c, 4294967296, 4294967296, 3, 3, 4294967296, 8, 1,", "c, 8, 8, 3, 3, 3, 8, 1, 0,"]:
    add("scalesim", CSV, "error",
        {"t.csv": "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,\n" + row + "\n"})
add("scalesim", CSV, "error", {"t.csv": ""})
add("scalesim", CSV, "error", {"t.csv": "Layer, M, N, K,\n"})
add("scalesim", CSV, "ok", {"t.csv": "Layer, M, N, K,\nl, 64, 64, 64,\n"})

# ---- built-in specs and run flags ---------------------------------------------
for spec in ["4294967296,4294967296,4294967296", "2147483648,2147483648,1", "2097152,2097152,2097152", "0,8,8", "-1,8,8",
             "8,8", "8,8,8,8", "a,b,c", "9223372036854775808,1,1", "8,,8", "", "m=8,k=8", "m=8,k=8,n=8,m=9"]:
    add("builtin", ["run", "--gemm", spec, "--quiet", "--out", "{d}/out"], "error")
# A matmul kernel's fixed blocks (bm=, bk=, bn=): off their units, negative,
# huge, or beyond the VMEM budget.
for spec in ["m=64,k=128,n=128,bm=12", "m=64,k=256,n=128,bk=-128", "m=64,k=128,n=128,bn=9223372036854775807",
             "m=64,k=128,n=128,bm=9223372036854775808", "m=8192,k=8192,n=8192,bm=8192,bk=8192,bn=8192"]:
    add("builtin-blocks", ["run", "--gemm", spec, "--quiet", "--out", "{d}/out"], "error")
add("builtin-blocks", ["run", "--gemm", "m=64,k=128,n=128,bm=64,bk=128,bn=1024", "--quiet", "--out", "{d}/out"], "ok")
for spec in ["1,8,8,4,3,3,8,4611686018427387904,0", "1,8,8,4,3,3,8,0,0", "1,8,8,4,9,9,8,1,0", "1,8,8,4,3,3,8,1,-1",
             "4294967296,4294967296,4294967296,4,3,3,8,1,0", "1,8,8"]:
    add("builtin", ["run", "--conv", spec, "--quiet", "--out", "{d}/out"], "error")
for spec in ["b=1,q=8,h=1,d=8,latent=3", "b=1,q=8,h=1,d=8,dv=9", "b=1,q=8,h=1,d=8,dv=-2",
             "b=1,q=8,h=1,d=8,latent=1,dv=9223372036854775808"]:
    add("builtin", ["run", "--attention", spec, "--quiet", "--out", "{d}/out"], "error")
add("builtin", ["run", "--attention", "b=2,q=1,kv=256,h=8,kvh=1,d=576,latent=1,dv=512", "--quiet", "--out", "{d}/out"],
    "ok")
for spec in ["b=1,q=4294967296,kv=4294967296,h=1,kvh=1,d=128,causal=1", "b=0,q=8,kv=8,h=1,kvh=1,d=8,causal=0",
             "b=1,q=8,kv=8,h=3,kvh=2,d=8,causal=0", "b=1,q=8"]:
    add("builtin", ["run", "--attention", spec, "--quiet", "--out", "{d}/out"], "error")
flags = [
    ["run", "--gemm", "64,64,64", "--out", ""], ["run", "--gemm", "64,64,64", "--out", "{d}/file"],
    ["run", "--gemm", "64,64,64", "--out", "/proc/nope/out"], ["run", "--gemm", "64,64,64", "--out", "{d}/o", "--vcd", "/nonexistent/w"],
    ["run", "--gemm", "64,64,64", "--out", "{d}/o", "--vcd", "/proc/nope"],
    ["run", "--model", "llama2-7b", "--image", "0", "--out", "{d}/o"], ["run", "--model", "llama2-7b", "--batch", "0", "--out", "{d}/o"],
    ["run", "--model", "llama2-7b", "--seq", "-1", "--out", "{d}/o"], ["run", "--model", "llama2-7b", "--context", "9223372036854775807", "--out", "{d}/o"],
    ["run", "--model", "nope", "--out", "{d}/o"], ["run", "--model", "llama2-7b", "--phase", "nope", "--out", "{d}/o"],
    ["run", "--gemm", "64,64,64", "--dtype", "f64", "--out", "{d}/o"], ["run", "--gemm", "64,64,64", "--arch", "v99", "--out", "{d}/o"],
    ["run", "--gemm", "64,64,64", "--max-sim-time", "nan", "--out", "{d}/o"], ["run", "--gemm", "64,64,64", "--max-sim-time", "-1", "--out", "{d}/o"],
    ["run", "--gemm", "4096,4096,4096", "--max-sim-time", "1e-6", "--quiet", "--out", "{d}/o"],
    ["run", "--gemm", "64,64,64", "--slice", "0x0", "--out", "{d}/o"], ["run", "--gemm", "64,64,64", "--slice", "100000x100000", "--out", "{d}/o"],
    ["run", "--gemm", "64,64,64", "--mesh", "a=2", "--out", "{d}/o"], ["run", "--gemm", "64,64,64", "--top", "x", "--out", "{d}/o"],
    ["run", "--gemm", "64,64,64", "--workload", "{d}/file", "--out", "{d}/o"], ["run", "--out", "{d}/o"], ["run", "--bogus"],
    ["bogus"], ["config", "check", "/dev/zero"], ["config", "show", "v5e", "--format", "xml"],
    ["sweep", "/dev/zero", "--out", "{d}/s"], ["sweep", "{d}/missing.yaml", "--out", "{d}/s"], ["model", "show", "/dev/zero"],
]
for f in flags:
    add("cli-flag", f, "error", {"file": "x"})
add("cli-flag", ["run", "--gemm", "64,64,64", "--quiet", "--out", "{d}/o"], "ok")
# check point --change on a UNet: a level index past the levels, not a
# number, huge, negative, or a width the model's rules refuse.
UNET_POINT = ["check", "point", "--model", "sdxl-unet", "--arch", "v5e", "--phase", "infer",
              "--out", "{d}/p", "--change"]
for ch in ["channels[3]=512", "channels[99999999999999999999]=512", "channels[-1]=512", "channels[]=512",
           "channels[0=512", "channels0]=512", "channels[0]=330", "channels[1]=672", "channels[0]=0",
           "channels[0]=99999999999999999999", "head_dim=48"]:
    add("cli-flag", UNET_POINT + [ch], "error")

# ---- model files -------------------------------------------------------------
for text in ["name: a\nname: b\n", "name: a\n---\nname: b\n", "", "- 1\n", "name: m\nfamily: decoder\nhidden: -1\nlayers: 1\nvocab: 8\n",
             "name: m\nfamily: decoder\nhidden: 9223372036854775807\nlayers: 9223372036854775807\nvocab: 9223372036854775807\n"
             "attention: {heads: 1, kv_heads: 1, head_dim: 1}\nffn: {kind: mlp, size: 1}\n",
             "name: m\nfamily: nope\n", "name: m\nfamily: decoder\nhidden: x\n", "{\"name\": \"a\", \"name\": \"b\"}"]:
    add("model-file", ["model", "show", "{d}/m.yaml"], "error", {"m.yaml": text})

# ---- sweep specs and expressions ------------------------------------------------
SPEC = 'name: e\nbase: {arch: v5e, gemm: "128,128,128"}\naxes:\n  grid:\n    arch.mxu.count: [2, 4]\n'
DRY = ["sweep", "{d}/s.yaml", "--dry-run", "--out", "{d}/so"]
exprs_bad = ["(" * 7000 + "1" + ")" * 7000, "+".join(["1"] * 30000), "-" * 30000 + "1", "not " * 30000 + "1",
             "(" * 300 + "1" + ")" * 300, "-" * 300 + "1", "+".join(["1"] * 300), "*".join(["2"] * 300),
             "min(" * 300 + "1" + ",1)" * 300, "1 +", "(1", "1)", "a = 1", "1 & 2", "'unterminated", "1 < 2 < 3",
             "nosuchname > 0", "frob(1) > 0", "min(1)", "abs(1, 2)", "", "'a' + 1 > 0", "1e999999 > 0", "arch.mxu.count >",
             "12abc > 0", "arch.mxu.count.. > 1"]
for e in exprs_bad:
    add("sweep-expr", DRY, "error", {"s.yaml": SPEC + "filters:\n  - " + json.dumps(e) + "\n"})
for e in ["arch.mxu.count > 2", "(" * 100 + "arch.mxu.count" + ")" * 100 + " >= 2", "-" * 100 + "1 < 5",
          "min(arch.mxu.count, 3) == 2 or true", "1 / 0 != 1"]:
    add("sweep-expr", DRY, "ok", {"s.yaml": SPEC + "filters:\n  - " + json.dumps(e) + "\n"})
for text in [SPEC + "name: again\n", SPEC + "---\nname: b\n", 'name: "a\\nrm -rf /"\n' + SPEC[SPEC.index("\n") + 1:],
             SPEC + "derived:\n  x: 1 +\n", SPEC + "derived:\n  status: 1\n", "base: 7\n", "axes: {grid: {arch.mxu.count: []}}\n",
             "base: {arch: v5e, gemm: '8,8,8'}\naxes: {grid: {arch.mxu.rowz: [1]}}\n", "", "[1, 2]\n",
             "base: {arch: v5e, gemm: '8,8,8'}\naxes: {grid: {arch.mxu.count: [1, 1]}}\n",
             "base: {arch: v5e, gemm: '8,8,8'}\naxes: {grid: {model.image: [0]}}\n"]:
    add("sweep-spec", DRY, "error", {"s.yaml": text})
for args in [["sweep", "slurm", "{d}/s.yaml", "--shards", "1000000000", "--out", "{d}/c"],
             ["sweep", "slurm", "{d}/s.yaml", "--shards", "0", "--out", "{d}/c"],
             ["sweep", "slurm", "{d}/s.yaml", "--shards", "2", "--job-name", "a\nb", "--out", "{d}/c"],
             ["sweep", "slurm", "{d}/s.yaml", "--shards", "2", "--partition", "p;reboot", "--out", "{d}/c"],
             ["sweep", "slurm", "{d}/s.yaml", "--shards", "2", "--time", "1:00\n#SBATCH --x", "--out", "{d}/c"],
             ["sweep", "slurm", "{d}/s.yaml", "--shards", "2", "--point-timeout", "nan", "--out", "{d}/c"],
             ["sweep", "slurm", "{d}/s.yaml", "--shards", "2", "--out", "{d}/c d"],
             ["sweep", "{d}/s.yaml", "--point-timeout", "nan", "--out", "{d}/so"],
             ["sweep", "{d}/s.yaml", "--shard", "3/2", "--out", "{d}/so"], ["sweep", "{d}/s.yaml", "--jobs", "-1", "--out", "{d}/so"],
             ["sweep", "{d}/s.yaml", "--retry-failed", "--out", "{d}/so"]]:
    add("sweep-cli", args, "error", {"s.yaml": SPEC})
add("sweep-cli", ["sweep", "slurm", "{d}/s.yaml", "--shards", "2", "--out", "{d}/c"], "ok", {"s.yaml": SPEC})

# ---- mutations of shipped files --------------------------------------------------
rng = random.Random(17)


def mutate(text):
    """One deterministic mutation: a number blown up, a line duplicated
    (duplicate key), a line dropped, or a document appended."""
    lines = text.split("\n")
    kind = rng.choice(["number", "dupline", "drop", "doc", "number"])
    idx = [i for i, l in enumerate(lines) if l.strip() and not l.lstrip().startswith("#")]
    i = rng.choice(idx)
    if kind == "number":
        import re
        nums = list(re.finditer(r"\b\d+\b", lines[i]))
        if nums:
            m = rng.choice(nums)
            lines[i] = lines[i][:m.start()] + rng.choice(["0", "-1", "4294967296", "9223372036854775808", "1e400"]) + lines[i][m.end():]
            return "\n".join(lines), "number"
    if kind == "dupline" and ":" in lines[i] and not lines[i].lstrip().startswith("-"):
        lines.insert(i + 1, lines[i])
        return "\n".join(lines), "dupline"
    if kind == "doc":
        return text + "\n---\n" + lines[idx[0]] + "\n", "doc"
    del lines[i]
    return "\n".join(lines), "drop"


shipped_workloads = ["configs/workloads/mlp.yaml", "configs/workloads/tp_mlp.yaml"]
shipped_configs = ["configs/v5e.yaml", "configs/v4.yaml", "configs/v5p.yaml"]
shipped_models = ["models/zoo/llama2-7b.yaml", "models/zoo/bert-base.yaml"]
for n in range(60):
    src = shipped_workloads[n % len(shipped_workloads)]
    text, kind = mutate(open(os.path.join(ROOT, src)).read())
    # Mutations may be harmless (a dropped comment-free line that was
    # optional): "any" accepts exit 0 or a clean error, never a crash/hang.
    add("mutated-workload", ["run", "--workload", "{d}/w.yaml", "--quiet", "--max-sim-time", "0.01", "--out", "{d}/out"],
        "any", {"w.yaml": text})
for n in range(60):
    src = shipped_configs[n % len(shipped_configs)]
    text, kind = mutate(open(os.path.join(ROOT, src)).read())
    add("mutated-config", ["--config-path", "{repo}/configs", "config", "check", "{d}/c.yaml"], "any",
        {"c.yaml": text})
for n in range(40):
    src = shipped_models[n % len(shipped_models)]
    text, kind = mutate(open(os.path.join(ROOT, src)).read())
    add("mutated-model", ["model", "show", "{d}/m.yaml"], "any", {"m.yaml": text})

# ---- ceilings on simulated work; config values that must act (items 4, 9) -----
SOFTMAX = HDR + "tensors:\n  - {name: x, shape: [256, 1024], dtype: bf16}\nops:\n  - {name: sm, op: softmax, inputs: [x]}\n"
run64 = ["run", "--gemm", "64,64,64", "--quiet", "--out", "{d}/o"]
for v in ["-1", "nan", "1.5", "1e30", "x", "1"]:
    add("work-limit", run64 + ["--max-events", v], "error")
add("work-limit", run64 + ["--max-events", "0"], "ok")
add("work-limit", ["run", "--gemm", "4096,4096,4096", "--max-sim-time", "1e-4", "--quiet", "--out", "{d}/o"], "error")
add("work-limit", ["run", "--gemm", "1024,1024,1024", "--set", "vmem.bandwidth=1B/s", "--quiet", "--out", "{d}/o"],
    "error")
add("work-limit", ["run", "--gemm", "256,256,256", "--set", "kernel.launch_overhead=100us", "--max-sim-time", "1e-5",
                   "--quiet", "--out", "{d}/o"], "error")
for arch in ["v1", "v5e"]:
    add("work-limit", ["run", "--arch", arch, "--workload", "{d}/sm.yaml", "--set", "xlu.count=0", "--quiet", "--out",
                       "{d}/o"], "error", {"sm.yaml": SOFTMAX})
add("work-limit", ["run", "--arch", "v5e", "--workload", "{d}/sm.yaml", "--set", "xlu.count=1", "--quiet", "--out",
                   "{d}/o"], "ok", {"sm.yaml": SOFTMAX})
add("work-limit", run64 + ["--set", "xlu.count=0"], "ok")
add("work-limit", run64 + ["--set", "vmem.granule=64KiB"], "ok")

# ---- serving: step shapes and step-cost cache lines ----------------------------
TINY = ("name: tiny\nfamily: decoder\nhidden: 256\nlayers: 2\nvocab: 1024\nmax_context: 2048\nnorm: rmsnorm\n"
        "position: rotary\ntied_embeddings: false\nattention: {heads: 4, kv_heads: 2, head_dim: 64}\n"
        "ffn: {kind: swiglu, size: 512}\n")
step = ["serve", "step", "--model", "{d}/tiny.yaml"]
for extra in [["--prefill", "16", "--prefix", "-1"], ["--prefill", "16", "--prefix", "x"],
              ["--prefill", "0", "--decode", "1", "--prefix", "8"], ["--prefill", "16", "--prefix", "99999999999"],
              ["--prefill", "16", "--prefix", "1.5"], ["--prefill", "16", "--prefix", "4000", "--decode", "1",
                                                       "--context", "4000"],
              ["--prefill", "16", "--chunks", "17"], ["--prefill", "16", "--chunks", "0"],
              ["--decode", "1", "--chunks", "2"], ["--prefill", "16", "--chunks", "-3"]]:
    add("serve-step", step + extra, "error", {"tiny.yaml": TINY})
add("serve-step", step + ["--prefill", "16", "--prefix", "100"], "ok", {"tiny.yaml": TINY})
add("serve-step", step + ["--prefill", "64", "--prefix", "4000"], "ok", {"tiny.yaml": TINY})  # a probe past max_context
add("serve-step", step + ["--prefill", "1000", "--chunks", "3", "--prefix", "100"], "ok", {"tiny.yaml": TINY})
serve = ["serve", "--model", "{d}/tiny.yaml", "--requests", "2", "--arrival", "offline", "--input", "fixed:8",
         "--output", "fixed:4", "--jobs", "1", "--quiet", "--out", "{d}/o", "--step-cache", "{d}/steps.cache"]
KEY = "0123456789abcdef"
for line in [KEY + " 16 0 0 0.1 0 0", KEY + " 0 4 256 0.1 0 300", KEY + " 16 0 0 0.1 0", KEY + " 16 0 0 0.1 -1 256",
             KEY + " 16 0 0 0.1 0 256 9 1", KEY + " 16 0 0 nan", KEY + " 16 0 0 0.1 1 x", "0123 16 0 0 0.1",
             KEY + " 16 0 0 -0.1 0 256", KEY + " 99999999999999999999 0 0 0.1", KEY + " 16 0 0 0.1 0 0 1",
             KEY + " 16 0 0 0.1 0 0 17", KEY + " 0 1 64 0.1 0 0 2", KEY + " 16 0 0 0.1 0 0 2 5"]:
    add("serve-cache", serve, "error", {"tiny.yaml": TINY, "steps.cache": line + "\n"})
add("serve-cache", serve, "ok", {"tiny.yaml": TINY, "steps.cache": KEY + " 16 0 0 0.1 0 256\n"})

with open(os.path.join(HERE, "corpus.jsonl"), "w") as f:
    for c in cases:
        f.write(json.dumps(c, sort_keys=True) + "\n")
print("%d cases" % len(cases))
