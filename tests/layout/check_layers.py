#!/usr/bin/env python3
"""Fails when a file under lib/ includes from a layer above its own.

The layers, bottom to top (docs/ARCHITECTURE.md). Folders on one line are
side by side: they may include the lines below, not each other. A folder of
lib/ that is not listed here fails the check, so a new folder must be placed.
"""
import pathlib
import re
import sys

LAYERS = [
    ["base"],
    ["host"],
    ["transport"],
    ["node"],
    ["engine"],
    ["safety", "algos", "cuda"],
    ["model"],
    ["tuning"],
    ["api"],
    ["interpose"],
]
LEVEL = {folder: level for level, folders in enumerate(LAYERS) for folder in folders}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([A-Za-z0-9_]+)/[^"]+"', re.M)


def main(lib: pathlib.Path) -> int:
    problems = []
    checked = 0
    for path in sorted(lib.rglob("*")):
        if path.suffix not in (".cpp", ".hpp", ".cu", ".h") or path.parent == lib:
            if path.suffix in (".cpp", ".hpp", ".cu", ".h"):
                problems.append(f"{path}: a source file directly in lib/, outside every layer")
            continue
        folder = path.relative_to(lib).parts[0]
        if folder not in LEVEL:
            problems.append(f"{path}: folder lib/{folder}/ is on no layer (add it to LAYERS)")
            continue
        checked += 1
        for target in INCLUDE.findall(path.read_text()):
            if target == "tutti" or target == folder:
                continue  # the public header; the file's own folder
            if target not in LEVEL:
                problems.append(f"{path}: includes from {target}/, which is on no layer")
            elif LEVEL[target] >= LEVEL[folder]:
                where = "above" if LEVEL[target] > LEVEL[folder] else "beside"
                problems.append(f"{path}: includes {target}/ ({where} {folder}/)")
    for p in problems:
        print(p)
    print(f"layering: {checked} files checked, {len(problems)} problems")
    return 1 if problems or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main(pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "lib")))
