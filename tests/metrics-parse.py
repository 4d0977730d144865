#!/usr/bin/python3
"""Parse Prometheus text with the reference client's parser
(python3-prometheus-client) and check what tests/daemon-metrics.sh asks:
  metrics-parse.py FILE NAME=VALUE|NAME>=VALUE|NAME<=VALUE|NAME{label=x}=VALUE ...
Exits 1 with the reason on a parse error, a missing metric or a wrong value;
a counter must be named *_total (the naming guide)."""
import re
import sys

from prometheus_client.parser import text_string_to_metric_families

text = open(sys.argv[1]).read()
samples = {}
try:
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            if fam.type == "counter" and not s.name.endswith(("_total", "_created")):
                sys.exit(f"counter sample {s.name} does not end in _total")
            key = s.name + ("{" + ",".join(f"{k}={v}" for k, v in sorted(s.labels.items())) + "}" if s.labels else "")
            samples[key] = s.value
except ValueError as e:
    sys.exit(f"not valid Prometheus text: {e}")
for want in sys.argv[2:]:
    m = re.fullmatch(r"(.+?)(>=|<=|=)(-?[0-9.]+(?:[eE][-+]?[0-9]+)?)", want)
    if not m:
        sys.exit(f"cannot read the check {want!r}")
    name, op, val = m.group(1), m.group(2), float(m.group(3))
    if name not in samples:
        sys.exit(f"no sample {name} (have: {', '.join(sorted(samples))})")
    got = samples[name]
    if (op == "=" and got != val) or (op == ">=" and got < val) or (op == "<=" and got > val):
        sys.exit(f"{name} is {got}, want {op} {val}")
print(f"ok: {len(samples)} samples parsed")
