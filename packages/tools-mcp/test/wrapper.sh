#!/bin/sh
# Runs its arguments as a child and waits for it, as npx and the package's .bin shim do: the
# server is this shell's child, not the shell itself (the line after "$@" keeps sh from exec-ing it).
"$@"
exit $?
