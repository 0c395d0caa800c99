"""Parses Prometheus text expositions (the files named in argv) with the
reference parser of the Prometheus Python client
(`prometheus_client.parser.text_string_to_metric_families`) and prints
one line per sample: file index, family name, family type, sample name,
labels as k=v joined by ",", value (tab-separated).

Exit 3 when prometheus_client is not installed; non-zero when a file does
not parse.
"""

import sys

try:
    from prometheus_client.parser import text_string_to_metric_families
except ImportError as e:  # pragma: no cover - environment
    print(f"missing python package: {e}")
    sys.exit(3)

for i, path in enumerate(sys.argv[1:]):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            labels = ",".join(f"{k}={v}" for k, v in sorted(s.labels.items()))
            print(f"{i}\t{fam.name}\t{fam.type}\t{s.name}\t{labels}\t{s.value!r}")
