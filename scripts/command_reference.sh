#!/usr/bin/env bash
# Prints the command reference (docs/commands.md) from the binary's own help: `trafo --help`, then
# `trafo CMD --help` for every subcommand that `trafo --help` lists, each as a markdown section with
# the help text in a code block. The output depends on the help text alone: ANSI escapes and
# trailing spaces are stripped, runs of blank lines become one, and the binary's path never appears.
# Usage: scripts/command_reference.sh [TRAFO_BINARY] > docs/commands.md   (default build/trafo)
# tests/docs_test.cpp checks that docs/commands.md equals this script's output for the binary under test.
set -euo pipefail
export LC_ALL=C
trafo=${1:-build/trafo}
[ -x "$trafo" ] || { echo "command_reference: error: $trafo is not an executable (build it: scripts/build.sh)" >&2; exit 2; }

# The help text of `trafo ARGS... --help`, cleaned up; fails when the command does.
help_text() {
  local text
  text=$("$trafo" "$@" --help) || { echo "command_reference: error: trafo $* --help failed" >&2; exit 1; }
  printf '%s\n' "$text" | sed -e 's/\x1b\[[0-9;?]*[A-Za-z]//g' -e 's/[[:space:]]*$//' | cat -s |
    sed -e '/./,$!d' | sed -e ':a' -e '/^\n*$/{$d;N;ba' -e '}'
}

main_help=$(help_text)
# The subcommands, in the order `trafo --help` lists them: the indented first words of its
# "Subcommands:" section.
mapfile -t commands < <(printf '%s\n' "$main_help" |
  awk '/^Subcommands:/ { in_list = 1; next } in_list && /^[^ ]/ { in_list = 0 } in_list && /^  [a-z]/ { print $1 }')
[ "${#commands[@]}" -gt 0 ] || { echo "command_reference: error: trafo --help lists no subcommands" >&2; exit 1; }

echo "# Command reference"
echo
echo "Every command's \`--help\`, as the binary prints it. This page is generated: run"
echo "\`scripts/command_reference.sh build/trafo > docs/commands.md\` after changing an option"
echo "(\`tests/docs_test.cpp\` fails while the two differ). What every command promises (output"
echo "lines, the option rule, exit codes) is in [contracts.md](contracts.md)."
echo
echo "- [\`trafo\`](#trafo): the subcommands"
for command in "${commands[@]}"; do
  echo "- [\`trafo $command\`](#trafo-$command)"
done

echo
echo "## trafo"
echo
echo '```text'
printf '%s\n' "$main_help"
echo '```'
for command in "${commands[@]}"; do
  echo
  echo "## trafo $command"
  echo
  echo '```text'
  help_text "$command"
  echo '```'
done
