#!/usr/bin/env python3
"""Turns the last `cargo bench -p meshcast-coding --bench coding` run into the markdown table
of docs/coding.md: median throughput (GB/s of source data) per implementation and shape, and
meshcast's ratio to the `rlnc` crate.

Usage: python3 crates/meshcast-coding/benches/table.py [target/criterion]
"""
import json
import pathlib
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "target/criterion")
IMPLS = ["meshcast", "meshcast-zerocopy", "rlnc", "reed-solomon-simd", "reed-solomon-erasure"]
rates = {}
for bench in root.glob("*/*/new/benchmark.json"):
    meta = json.loads(bench.read_text())
    est = json.loads((bench.parent / "estimates.json").read_text())
    bytes_ = meta.get("throughput", {}) or {}
    n_bytes = bytes_.get("BytesDecimal") or bytes_.get("Bytes")
    if n_bytes is None:
        continue
    # bytes per nanosecond = GB/s
    rates[meta["full_id"]] = n_bytes / est["median"]["point_estimate"]

shapes = sorted({tuple(k.split("/")[2:]) for k in rates if k.count("/") == 3},
                key=lambda s: (int(s[0][1:]), int(s[1][1:])))
if not shapes:
    sys.exit(f"no coding benchmarks under {root}: run `cargo bench -p meshcast-coding --bench coding` first")
print("| operation | shape | " + " | ".join(IMPLS) + " | meshcast ÷ rlnc | zero-copy ÷ rlnc |")
print("|---|---|" + "---|" * (len(IMPLS) + 2))
for op in ["encode", "decode", "recode"]:
    for n, k in shapes:
        row = [rates.get(f"{imp}/{op}/{n}/{k}") for imp in IMPLS]
        if all(r is None for r in row):
            continue
        cells = [f"{r:.2f}" if r is not None else "–" for r in row]
        ratios = [f"{m / row[2]:.1f}×" if m and row[2] else "–" for m in row[:2]]
        print(f"| {op} | {n} {k} | " + " | ".join(cells) + " | " + " | ".join(ratios) + " |")
for key in sorted(k for k in rates if k.startswith("xor/")):
    print(f"\nmemory limit {key}: {rates[key]:.1f} GB/s")
