#!/usr/bin/env bash
# Seeds corpus/check, corpus/yaml_fast, corpus/format and corpus/ide from every fixtures/**/workbench.yml. The ide seeds start
# with a 2-byte little-endian offset (spread over the file), as the ide target reads them.
set -euo pipefail
cd "$(dirname "$0")"
mkdir -p corpus/check corpus/ide corpus/yaml_fast corpus/format
i=0
while IFS= read -r f; do
  i=$((i + 1))
  cp "$f" "corpus/check/seed-$i"
  cp "$f" "corpus/yaml_fast/seed-$i"
  cp "$f" "corpus/format/seed-$i"
  size=$(wc -c < "$f")
  off=$(( (i * 37) % (size + 1) ))
  { printf "\\x$(printf %02x $((off & 255)))\\x$(printf %02x $(((off >> 8) & 127)))"; cat "$f"; } > "corpus/ide/seed-$i"
done < <(find ../fixtures -name workbench.yml | sort)
# The transport seeds: a buffer-size byte, then frames a client sends (a request, a notification, a malformed one).
mkdir -p corpus/transport
frame() { printf 'Content-Length: %d\r\n\r\n%s' "${#1}" "$1"; }
{ printf '\x07'; frame '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}'; frame '{"jsonrpc":"2.0","method":"initialized","params":{}}'; } > corpus/transport/seed-1
{ printf '\x00'; frame '{not json'; printf 'Content-Type: x\r\n\r\n'; frame '[1]'; frame '{"jsonrpc":"2.0","id":"a","method":"shutdown"}'; } > corpus/transport/seed-2
# The connect seeds: a chunk-size byte, then envd's Start stream (start, data, keepalive, end, end-of-stream).
mkdir -p corpus/connect
envelope() { printf "\\x$(printf %02x "$1")"; printf '%08x' "${#2}" | sed 's/../\\x&/g' | xargs -0 printf; printf '%s' "$2"; }
{ printf '\x02'; envelope 0 '{"event":{"start":{"pid":7}}}'; envelope 0 '{"event":{"data":{"stdout":"aGk="}}}'; envelope 0 '{"event":{"keepalive":{}}}'; envelope 0 '{"event":{"end":{"exitCode":3}}}'; envelope 2 '{}'; } > corpus/connect/seed-1
{ printf '\x00'; envelope 2 '{"error":{"code":"deadline_exceeded","message":"late"}}'; } > corpus/connect/seed-2
# The unpack seeds: a flags byte (bit 0: replace parents), then tars as a sandbox's GNU tar makes them: files,
# a directory, a symlink, a long name, a sparse file, and a link followed by a file below it.
mkdir -p corpus/unpack
seed_tar() {
  local name=$1 scratch
  scratch=$(mktemp -d)
  mkdir -p "$scratch/src/dir/sub" && printf 'hello\n' > "$scratch/src/dir/a.txt" && ln -s a.txt "$scratch/src/dir/link"
  long=$(printf 'n%.0s' $(seq 120)); printf 'x' > "$scratch/src/dir/sub/$long"
  truncate -s 40960 "$scratch/src/sparse" && printf 'middle' | dd of="$scratch/src/sparse" bs=1 seek=20000 conv=notrunc 2>/dev/null
  ln -s .. "$scratch/src/up"
  { printf "\\x0$2"; tar -C "$scratch/src" "${@:3}" -cf - .; } > "corpus/unpack/$name"
  rm -rf "$scratch"
}
seed_tar seed-1 0 --format=gnu
seed_tar seed-2 1 --format=gnu --sparse
seed_tar seed-3 0 --format=posix
echo "seeded $i manifests into corpus/check and corpus/ide, 2 client streams into corpus/transport 2 envd streams into corpus/connect and 3 tars into corpus/unpack"
