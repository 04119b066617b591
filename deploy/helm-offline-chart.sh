#!/usr/bin/env bash
# Copies helm/kgmesh into OUT_DIR/kgmesh and adds an empty placeholder chart for every
# dependency in Chart.yaml that is not vendored in charts/, so that `helm lint --strict`
# and `helm template` work with no network (helm refuses to render a chart whose
# dependencies are missing, even when their conditions are false). The placeholders
# render nothing: use this to check kgmesh's own templates, never to install.
# To install with the real dependencies: `helm dependency update helm/kgmesh`.
#
#   deploy/helm-offline-chart.sh OUT_DIR    # prints OUT_DIR/kgmesh
set -euo pipefail
out="${1:?usage: deploy/helm-offline-chart.sh OUT_DIR}"
src="$(cd "$(dirname "$0")/../helm/kgmesh" && pwd)"

mkdir -p "$out"
rm -rf "$out/kgmesh"
cp -R "$src" "$out/kgmesh"
mkdir -p "$out/kgmesh/charts"

# Dependency names: the `- name:` entries of the `dependencies:` list in Chart.yaml.
names="$(awk '
    /^dependencies:/ { in_deps = 1; next }
    /^[^[:space:]#-]/ { in_deps = 0 }
    in_deps && $1 == "-" && $2 == "name:" { print $3 }
' "$src/Chart.yaml" | tr -d "\"'")"

for name in $names; do
    if [ -e "$out/kgmesh/charts/$name" ] || compgen -G "$out/kgmesh/charts/$name-*.tgz" >/dev/null; then
        continue
    fi
    mkdir -p "$out/kgmesh/charts/$name"
    cat >"$out/kgmesh/charts/$name/Chart.yaml" <<CHART
apiVersion: v2
name: $name
version: 0.0.0
description: Offline placeholder for the $name dependency (renders nothing).
CHART
done
echo "$out/kgmesh"
