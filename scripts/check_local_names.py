#!/usr/bin/env python3
"""File-local names that two files of one target share.

The build compiles each target's files eight to a translation unit (TRAFO_UNITY_BUILD): there, the
anonymous namespaces of the files of one batch are one, so two files that each define a file-local
helper of one name compile alone and clash once a batch holds both, which depends on how the files
fall into batches. Each target's files (an area's src/AREA/*.cpp, and tests/*.cpp) must give their
file-local functions, types and constants names of their own.

Usage: scripts/check_local_names.py [ROOT]   (exit 1 and a line per clash when two files share one)
A `using` alias may be declared again (to the same type) and PrintTo overloads by type: neither counts.
"""
import collections
import pathlib
import re
import sys

DEFINITION = re.compile(
    r"^(?:(?:inline|static|constexpr|const|template\s*<[^>]*>)\s+)*"
    r"(?:(?:struct|class|enum(?:\s+class)?)\s+(?P<type>\w+)\s*(?:final\s*)?(?::[^;{]*)?\{"
    r"|[\w:<>,\s\*&]+?[\s\*&](?P<function>\w+)\s*\([^;]*\)\s*(?:const\s*)?(?:noexcept\s*)?\{"
    r"|[\w:<>,\s]+?\s(?P<constant>k[A-Z]\w*)\s*(?:\[[^\]]*\])*\s*=)")


def local_names(path):
    """The names defined at the top level of the file's anonymous namespaces, or `static` at file scope."""
    names = set()
    depth_in_anonymous = None  # the brace depth at which the current anonymous namespace opened
    depth = 0
    for line in path.read_text(errors="replace").splitlines():
        stripped = line.strip()
        if stripped.startswith("//") or stripped.startswith("#"):
            continue
        if depth_in_anonymous is None and re.match(r"^namespace\s*\{", stripped):
            depth_in_anonymous = depth
        at_top = depth_in_anonymous is not None and depth == depth_in_anonymous + 1
        at_file_scope_static = depth_in_anonymous is None and line.startswith("static ")
        if (at_top and not line.startswith(" ")) or at_file_scope_static:
            match = DEFINITION.match(line)
            if match:
                name = match.group("type") or match.group("function") or match.group("constant")
                # GoogleTest finds PrintTo by its name: its overloads print different types.
                if name and name not in ("main", "operator", "PrintTo"):
                    names.add(name)
        code = re.sub(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'|//.*', "", line)
        depth += code.count("{") - code.count("}")
        if depth_in_anonymous is not None and depth <= depth_in_anonymous:
            depth_in_anonymous = None
    return names


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent)
    targets = [sorted((root / "src" / area.name).glob("*.cpp")) for area in sorted((root / "src").iterdir()) if area.is_dir()]
    # dist_test.cpp is an executable of its own (tests/CMakeLists.txt), never batched with the others.
    targets.append(sorted(p for p in (root / "tests").glob("*_test.cpp") if p.name != "dist_test.cpp"))
    clashes = 0
    for files in targets:
        owners = collections.defaultdict(list)
        for path in files:
            for name in local_names(path):
                owners[name].append(path.relative_to(root).as_posix())
        for name, paths in sorted(owners.items()):
            if len(paths) > 1:
                clashes += 1
                print("check_local_names: %s is file-local in %s: one batch of the build may hold both"
                      % (name, ", ".join(paths)))
    print("check_local_names: %d clashes in %d targets" % (clashes, len(targets)))
    return 1 if clashes else 0


if __name__ == "__main__":
    sys.exit(main())
