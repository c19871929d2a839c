#!/usr/bin/env python3
# Usage: go build -o /tmp/idemchaos ./cmd/idemchaos && python3 testdata/reliability/probe.py /tmp/idemchaos . 200
# (the last number: how many mutated inputs of each kind). Prints the
# figures of BENCHMARKS.md's "Reliability" section as one JSON line.
# Bad-input probe of issue #22: every input through the built binary under
# ulimit -v 2 GB and a 60 s timeout; counts panics (Go "panic:"/"fatal
# error"), OOMs, hangs (timeout), wrong exit codes (not the expected set),
# and run/partition directories left in TMPDIR.
import os, random, subprocess, sys, json, glob, shutil, tempfile
B = sys.argv[1]; R = sys.argv[2]; W = tempfile.mkdtemp(prefix="idemchaos-probe-")
tmp = os.path.join(W, "tmpdir"); os.mkdir(tmp)
env = dict(os.environ, TMPDIR=tmp)
stats = dict(tried=0, panics=0, ooms=0, hangs=0, wrong_exit=0)
bad = []
def run(args, ok=(3,), stdin=None):
    stats["tried"] += 1
    try:
        p = subprocess.run(["bash", "-c", 'ulimit -v 2000000; exec "$@"', "x", B] + args, cwd=W, env=env,
                           capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        stats["hangs"] += 1; bad.append(("hang", args)); return
    err = p.stderr.decode("utf-8", "replace")
    if "out of memory" in err: stats["ooms"] += 1; bad.append(("oom", args))
    elif "panic:" in err or "fatal error" in err or "goroutine " in err: stats["panics"] += 1; bad.append(("panic", args))
    if p.returncode not in ok: stats["wrong_exit"] += 1; bad.append((p.returncode, args, err[:200]))
def w(name, data):
    p = os.path.join(W, name); open(p, "wb").write(data if isinstance(data, bytes) else data.encode()); return p
# 1. hand-made inputs of the issue
flat = "target: {reference: {}}\nx:\n" + "".join("  k%d: 1\n" % i for i in range(200000))
dc = open(R + "/scenarios/double-click-exactly-once.yaml").read()
yamls = {"deep": "[" * 200000, "flat": flat, "dash": "- " * 100000 + "x", "t0": "target: {reference: {}}\ntraffic: {timeout: 0s}\n",
         "copies": dc.replace("copies: 3", "copies: 1000000000"),
         "ixc": dc.replace("intents: 12", "intents: 1000000\n  max_requests: 100000000").replace("copies: 3", "copies: 100"),
         "laughs": "target: {reference: {}}\na0: &a0 [x,x,x,x,x,x,x,x,x,x]\n" + "".join("a%d: &a%d [%s]\n" % (i, i, ",".join(["*a%d" % (i - 1)] * 10)) for i in range(1, 9))}
for n, d in yamls.items():
    f = w(n + ".yaml", d); run(["validate", f]); run(["plan", "-s", f]); run(["run", "-s", f])
run(["validate", "/dev/zero"]); run(["plan", "-s", "/dev/zero"])
h = R + "/testdata/histories/in-flight-conflict/duplicate-got-500-bad.jsonl"
for a in (["check", "--partition", "1/99999999999", h], ["check", "--partitions", "99999999", h], ["reference", "bogus"], ["completion", "badshell"],
          ["images", "bogus"], ["run", "--reruns", "-1", "-s", R + "/scenarios/key-reuse.yaml"], ["run", "--headers", "Location: x", "-s", R + "/scenarios/key-reuse.yaml"],
          ["run", "--junit", "/proc/self/status", "-s", R + "/scenarios/key-reuse.yaml"], ["run", "--history", "/sys/x.jsonl", "-s", R + "/scenarios/key-reuse.yaml"]):
    run(a)
api = open(R + "/testdata/openapi/stripe-like.yaml").read().replace("\n  /v1/charges:\n", '\n  "/v1/char\\nges":\n')
run(["init", "--openapi", w("nl-api.yaml", api), "--out", os.path.join(W, "init-out")])
# shard and partition reports
names = json.dumps(["s%d" % i for i in range(10000)])
for d in ('{"tool":"idemchaos","version":1,"verdict":"pass","runs":[],"shard":{"index":1,"total":1,"scenarios":%s,"seeds":"1-1000000","pairs":0}}' % names,
          '{"tool":"idemchaos","version":1,"verdict":"pass","runs":[],"shard":{"index":1,"total":99999999999,"scenarios":["a"],"seeds":"1","pairs":0}}',
          '{"tool":"idemchaos","version":1,"verdict":"pass","runs":[{"scenario":"a","seed":1,"verdict":"banana","met":true,"steps":[]}],"shard":{"index":1,"total":1,"scenarios":["a"],"seeds":"1","pairs":1}}'):
    run(["merge", w("r%d.json" % stats["tried"], d)])
share = subprocess.run([B, "check", "--partition", "0/2", "--json", h], capture_output=True, env=env).stdout
sj = json.loads(share)
for mut in ("total", "banana", "step"):
    s2 = json.loads(share)
    if mut == "total": s2["partitions"][0]["total"] = 99999999999
    if mut == "banana": s2["runs"][0]["verdict"] = "banana"
    if mut == "step":
        for r in s2["partitions"][0]["results"]: r["step"] = 99999999999
    run(["merge", w("share-%s.json" % mut, json.dumps(s2))])
# plan files
plan = subprocess.run([B, "plan", "-s", R + "/scenarios/key-reuse.yaml", "--json"], capture_output=True, env=env).stdout
# 2. mutated inputs: random byte edits of every bundled scenario, of the
# golden histories, and of shard/partition reports
rng = random.Random(22)
def mutate(b):
    b = bytearray(b)
    for _ in range(rng.randint(1, 8)):
        i = rng.randrange(len(b)) if b else 0
        op = rng.randrange(4)
        c = rng.choice(b'{}[]":,-0123456789 \n\t\\u&*!#|>\x00\xff\xc3')
        if op == 0 and b: b[i] = c
        elif op == 1 and b: del b[i]
        elif op == 2: b.insert(i, c)
        else: b[i:i] = b[i:i + rng.randint(1, 64)] * rng.randint(1, 200)
    return bytes(b)
scen = sorted(glob.glob(R + "/scenarios/*.yaml"))
for k in range(int(sys.argv[3])):
    f = w("m%d.yaml" % k, mutate(open(rng.choice(scen), "rb").read())); run(["validate", f], ok=(0, 3))
hists = sorted(glob.glob(R + "/testdata/histories/*/*.jsonl"))
for k in range(int(sys.argv[3])):
    f = w("m%d.jsonl" % k, mutate(open(rng.choice(hists), "rb").read())); run(["check", f], ok=(0, 1, 2, 3))
    run(["check", "--partitions", "3", f], ok=(0, 1, 2, 3))
for k in range(int(sys.argv[3]) // 4):
    run(["merge", w("mr%d.json" % k, mutate(share))], ok=(0, 1, 2, 3))
# What commands left in TMPDIR: anything but the empty per-user base
# directory of run directories (internal/runenv's idemchaos-<uid>).
left = []
for d, subdirs, files in os.walk(tmp):
    left += [os.path.join(d, f) for f in files]
    if d != tmp and not subdirs and not files and not os.path.basename(d).startswith("idemchaos-"):
        left.append(d)
    if d != tmp and os.path.dirname(d) != tmp:
        left.append(d)
print(json.dumps(dict(stats, leftovers=len(left), left=left[:5])))
for b_ in bad[:20]: print(b_)
