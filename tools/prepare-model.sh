#!/usr/bin/env bash
# Puts the default model (stories260K.gguf) in models/: from ../shared/models when present,
# else downloaded from its public home (ggml-org/models on Hugging Face). Never committed.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p models
target=models/stories260K.gguf
[ -s "$target" ] && exit 0
for src in "${WICK_SHARED:-../shared}/models/stories260K.gguf"; do
  if [ -s "$src" ]; then cp "$src" "$target.part" && mv "$target.part" "$target"; echo "model: $target from $src"; exit 0; fi
done
url=https://huggingface.co/ggml-org/models/resolve/main/tinyllamas/stories260K.gguf
echo "model: downloading $url"
if command -v curl >/dev/null; then curl -fL --retry 3 -o "$target.part" "$url"
else node -e 'fetch(process.argv[1]).then(r=>{if(!r.ok)throw new Error(r.status);return r.arrayBuffer()}).then(b=>require("fs").writeFileSync(process.argv[2],Buffer.from(b)))' "$url" "$target.part"; fi
head -c 4 "$target.part" | grep -q GGUF || { echo "model: the download is not a GGUF file" >&2; rm -f "$target.part"; exit 1; }
mv "$target.part" "$target"
