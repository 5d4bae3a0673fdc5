"""Reads a server's `/metrics` with the Prometheus project's own parser (`prometheus_client`).

Usage: python prometheus_samples.py http://127.0.0.1:PORT

Prints one JSON object: `families`, each metric family's type by name, and `samples`, every
sample as `[name, labels, value]` (a whole number as an integer). A text the parser refuses
fails the script.
"""

import json
import sys
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

with urllib.request.urlopen(f"{sys.argv[1]}/metrics") as response:
    assert response.status == 200, response.status
    kind = response.headers["content-type"]
    assert kind.startswith("text/plain") or kind.startswith("application/openmetrics-text"), kind
    text = response.read().decode()

families = {}
samples = []
for family in text_string_to_metric_families(text):
    families[family.name] = family.type
    for sample in family.samples:
        value = int(sample.value) if float(sample.value).is_integer() else sample.value
        samples.append([sample.name, sample.labels, value])
print(json.dumps({"families": families, "samples": samples}))
