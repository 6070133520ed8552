#!/usr/bin/env bash
# Seeds corpus/check and corpus/ide from every fixtures/**/workbench.yml. The ide seeds start with a 2-byte
# little-endian offset (spread over the file), as the ide target reads them.
set -euo pipefail
cd "$(dirname "$0")"
mkdir -p corpus/check corpus/ide
i=0
while IFS= read -r f; do
  i=$((i + 1))
  cp "$f" "corpus/check/seed-$i"
  size=$(wc -c < "$f")
  off=$(( (i * 37) % (size + 1) ))
  { printf "\\x$(printf %02x $((off & 255)))\\x$(printf %02x $(((off >> 8) & 127)))"; cat "$f"; } > "corpus/ide/seed-$i"
done < <(find ../fixtures -name workbench.yml | sort)
echo "seeded $i manifests into corpus/check and corpus/ide"
