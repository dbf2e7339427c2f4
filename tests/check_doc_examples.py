"""Listings in the documentation cannot drift from code that CI compiles and runs (issue 26).

A fenced block in README.md or any Markdown file under docs/ that follows a line
    <!-- example: examples/NAME.cpp -->
must equal that file, byte for byte. The example is built and run by ctest (examples/), so the
listing on the page is code that works. Prints each mismatch with a diff and exits 1.
Usage: check_doc_examples.py REPOSITORY_ROOT
"""
import difflib
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1])
pages = [root / "README.md", *sorted((root / "docs").rglob("*.md"))]
marker = re.compile(r"<!-- example: (\S+) -->\n```[a-z+]*\n(.*?)```\n", re.S)
checked, bad = 0, 0
for page in pages:
    for m in marker.finditer(page.read_text()):
        source = root / m.group(1)
        checked += 1
        if not source.is_file():
            print(f"{page.relative_to(root)}: the listing names {m.group(1)}, which does not exist")
            bad += 1
            continue
        want = source.read_text()
        if m.group(2) != want:
            bad += 1
            print(f"{page.relative_to(root)}: the listing differs from {m.group(1)}:")
            sys.stdout.writelines(difflib.unified_diff(
                want.splitlines(True), m.group(2).splitlines(True), m.group(1), str(page)))
if checked == 0:
    print("no listing is marked with <!-- example: ... -->")
    bad += 1
print(f"check_doc_examples: {checked} listing(s) checked, {bad} problem(s)")
sys.exit(1 if bad else 0)
