#!/usr/bin/env python3
"""The picture of hpcai500's components in docs/design.md, made from the code.

Reads every CMakeLists.txt outside tests/, bench/ and build folders: each
add_library / add_executable named hpcai500* is a component, its folder is
where it is defined, and its arrows are the hpcai500 targets it links
(target_link_libraries, any scope). Components are drawn on floors: a
component stands one floor above the highest one it links, so every arrow
points down, and a cycle is refused.

    scripts/components.py                 print the picture
    scripts/components.py --write FILE    put it into FILE between the markers
    scripts/components.py --check FILE    exit 1 when FILE's picture is stale

The test `design_components` (label unit) runs --check on docs/design.md, so
the picture is kept current with the code: after a change of shape, run
`scripts/components.py --write docs/design.md`.
"""

import argparse
import os
import re
import sys

BEGIN = "<!-- components: made by scripts/components.py; do not edit by hand -->"
END = "<!-- end of components -->"
SKIP = {"tests", "bench", "build", ".git", ".venv", "web", "deploy", "docs"}
PREFIX = "hpcai500"


def cmake_files(root):
    for folder, dirs, files in os.walk(root):
        rel = os.path.relpath(folder, root)
        top = rel.split(os.sep)[0]
        if top in SKIP or top.startswith("build") or top.startswith("."):
            if rel != ".":
                dirs[:] = []
                continue
        dirs[:] = sorted(d for d in dirs
                         if d not in SKIP and not d.startswith((".", "build")))
        if "CMakeLists.txt" in files:
            yield rel, os.path.join(folder, "CMakeLists.txt")


def commands(text, name):
    """The argument lists of every `name(...)` call, comments removed."""
    text = re.sub(r"#[^\n]*", "", text)
    for match in re.finditer(r"\b%s\s*\(([^)]*)\)" % name, text):
        yield match.group(1).split()


def read_components(root):
    components = {}  # name -> {"folder", "kind", "links"}
    aliases = {}
    for rel, path in cmake_files(root):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        folder = "" if rel == "." else rel.replace(os.sep, "/")
        for kind in ("add_library", "add_executable"):
            for args in commands(text, kind):
                if not args or not args[0].startswith(PREFIX):
                    continue
                if len(args) >= 3 and args[1] == "ALIAS":
                    aliases[args[0]] = args[2]
                    continue
                if "::" in args[0]:
                    continue
                sources = [a for a in args[1:] if re.search(r"\.(cc|cu)$", a)]
                if folder == "" and sources:
                    # Defined at the top from one folder's files.
                    home = os.path.dirname(sources[0])
                else:
                    home = folder
                components[args[0]] = {
                    "folder": home or ".",
                    "kind": "binary" if kind == "add_executable" else "library",
                    "links": set(),
                }
        for args in commands(text, "target_link_libraries"):
            if not args:
                continue
            target = args[0]
            for item in args[1:]:
                if item.startswith(PREFIX):
                    components.setdefault(target, {
                        "folder": folder or ".", "kind": "library",
                        "links": set()})["links"].add(item)
    for component in components.values():
        component["links"] = {aliases.get(link, link)
                              for link in component["links"]}
        component["links"] = {link for link in component["links"]
                              if link in components}
    return components


def floors(components):
    floor = {}

    def place(name, path):
        if name in floor:
            return floor[name]
        if name in path:
            cycle = " -> ".join(path[path.index(name):] + [name])
            raise SystemExit("components.py: a cycle: " + cycle)
        below = [place(link, path + [name])
                 for link in components[name]["links"]]
        floor[name] = 1 + max(below, default=0)
        return floor[name]

    for name in components:
        place(name, [])
    return floor


def short(name):
    name = name[len(PREFIX):].lstrip("_")
    return name or PREFIX


def picture(components):
    floor = floors(components)
    names = sorted(components, key=lambda n: (-floor[n], components[n]["folder"], n))
    label = {n: (n if components[n]["kind"] == "binary" else short(n))
             for n in names}
    width = max(len(label[n]) for n in names) + 2
    folder_width = max(len(components[n]["folder"]) for n in names) + 2
    lines = ["floor  component" + " " * (width - 9) +
             "folder" + " " * (folder_width - 6) + "links"]
    for n in names:
        links = sorted(components[n]["links"], key=lambda l: (-floor[l], l))
        lines.append("%5d  %s%s%s" % (
            floor[n], label[n].ljust(width),
            components[n]["folder"].ljust(folder_width),
            ", ".join(label[l] for l in links) or "-"))
    arrows = sum(len(c["links"]) for c in components.values())
    lines.append("")
    lines.append("%d components (%d binaries) on %d floors, %d arrows, all "
                 "pointing down" % (
                     len(names),
                     sum(1 for c in components.values() if c["kind"] == "binary"),
                     max(floor.values()), arrows))
    return "\n".join(lines)


def block(root):
    return "%s\n```\n%s\n```\n%s" % (BEGIN, picture(read_components(root)), END)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), ".."))
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--write", metavar="FILE")
    group.add_argument("--check", metavar="FILE")
    options = parser.parse_args()
    made = block(options.root)
    target = options.write or options.check
    if target is None:
        print(made)
        return 0
    with open(target, encoding="utf-8") as f:
        text = f.read()
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        print("components.py: %s has no components markers (%s ... %s)" % (
            target, BEGIN, END), file=sys.stderr)
        return 2
    current = text[start:end + len(END)]
    if options.check:
        if current != made:
            print("components.py: the picture in %s is not the code's; run "
                  "scripts/components.py --write %s" % (target, target),
                  file=sys.stderr)
            return 1
        print("components.py: %s is current" % target)
        return 0
    with open(target, "w", encoding="utf-8") as f:
        f.write(text[:start] + made + text[end + len(END):])
    return 0


if __name__ == "__main__":
    sys.exit(main())
