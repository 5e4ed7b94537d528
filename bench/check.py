#!/usr/bin/env python3
"""Compare `chatfsck lint --format json` output with the benchmark manifest.

    check.py OUT_JSON MANIFEST_TSV CORPUS_DIR

Every manifest row (file, rule, line) must be reported by a finding with the
same file, rule and line. A finding in a file that is not in the manifest is
a false positive. Exit 0 when all faults are found and there is no false
positive, 1 otherwise.
"""

import json
import os
import sys


def findings_of(doc):
    """The findings, whatever the exact nesting of the report."""
    if isinstance(doc, list):
        return doc
    if "findings" in doc:
        return doc["findings"]
    out = []
    for f in doc.get("files", []):  # tolerate per-file grouping
        for x in f.get("findings", []):
            x.setdefault("location", {}).setdefault("path", f.get("path"))
            out.append(x)
    return out


def where(f):
    loc = f.get("location") or f.get("loc") or {}
    path = loc.get("path") or f.get("path") or f.get("file")
    line = loc.get("line")
    return path, line


def main():
    out_json, manifest_tsv, corpus = sys.argv[1:4]
    corpus = os.path.realpath(corpus)
    with open(out_json, encoding="utf-8") as fh:
        doc = json.load(fh)
    manifest = []
    for row in open(manifest_tsv, encoding="utf-8"):
        if row.strip():
            name, rule, line = row.rstrip("\n").split("\t")
            manifest.append((name, rule, int(line)))
    faulty_files = {m[0] for m in manifest}

    def rel(p):
        if p is None:
            return None
        return os.path.relpath(os.path.realpath(p), corpus)

    got = set()
    by_file = {}
    fps = []
    extra = []
    findings = findings_of(doc)
    for f in findings:
        path, line = where(f)
        r = rel(path)
        key = (r, f.get("rule"), line)
        got.add(key)
        by_file.setdefault(r, []).append(key)
        if r not in faulty_files:
            fps.append((r, f.get("rule"), line, f.get("summary", "")))
        elif key not in set(manifest):
            extra.append(key)

    missed = [m for m in manifest if m not in got]
    print(f"findings reported: {len(findings)}")
    print(f"faults found: {len(manifest) - len(missed)}/{len(manifest)}")
    for name, rule, line in missed:
        seen = ", ".join(f"{r}@{l}" for _, r, l in by_file.get(name, [])) or "nothing"
        print(f"  MISSED {name}\t{rule}\tline {line}\t(reported in this file: {seen})")
    print(f"false positives: {len(fps)}" + (f" in {len({x[0] for x in fps})} healthy files" if fps else ""))
    for r, rule, line, summary in fps[:10]:
        print(f"  FP {r}\t{rule}\tline {line}\t{summary}")
    if extra:
        print(f"note: {len(extra)} further findings in faulted files (not counted as false positives)")
        for r, rule, line in extra[:5]:
            print(f"  extra {r}\t{rule}\tline {line}")
    incomplete = False
    if isinstance(doc, dict) and isinstance(doc.get("files"), list):
        n_corpus = sum(1 for _, _, fs in os.walk(corpus) for fn in fs if fn.endswith(".jsonl"))
        print(f"files checked: {len(doc['files'])}/{n_corpus}")
        if len(doc["files"]) != n_corpus:
            print("  FAIL: chatfsck did not check every corpus file")
            incomplete = True
    for key in ("errors", "skipped"):
        items = doc.get(key) if isinstance(doc, dict) else None
        if items:
            print(f"note: report lists {len(items)} {key}; first: {json.dumps(items[0])[:200]}")
    sys.exit(1 if missed or fps or incomplete else 0)


if __name__ == "__main__":
    main()
