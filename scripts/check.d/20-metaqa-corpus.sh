#!/usr/bin/env bash
# The MetaQA text corpus builder (scripts/metaqa-corpus, used to evaluate the text
# retriever on documents written from the KB) checks itself on a tiny built-in KB:
# every triple stated, titles and objects verbatim, deterministic output.
set -euo pipefail
cd "$(dirname "$0")/../.."
python3 scripts/metaqa-corpus --self-check
