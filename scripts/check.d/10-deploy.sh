#!/usr/bin/env bash
# Deployment checks: Dockerfile lint, yamllint, the compose file, and the Helm chart
# rendered for its default values and every file in helm/kgmesh/ci/, each validated
# (helm lint --strict, kubernetes-validate --strict, security defaults, NetworkPolicies,
# the API's token and certificate Secrets wired by reference) and its ConfigMap parsed
# by the binary's own loader (`kgmesh config check`).
# Tools: scripts/setup.d/40-helm.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."

# The Kubernetes version manifests are validated against (kubernetes-validate ships its
# schemas offline); the chart supports >= 1.25.
KUBE_VERSION="${KGMESH_KUBE_VERSION:-1.33.0}"

fail() {
    echo "10-deploy: $*" >&2
    exit 1
}

if [ -x .tools/bin/helm ]; then
    HELM="$PWD/.tools/bin/helm"
elif command -v helm >/dev/null 2>&1; then
    HELM="$(command -v helm)"
else
    fail "helm is missing: run scripts/setup.d/40-helm.sh"
fi
"$HELM" version --template '{{.Version}}' | grep -q '^v4\.' ||
    fail "$HELM is not helm v4: run scripts/setup.d/40-helm.sh"
for tool in kubernetes-validate yamllint hadolint; do
    command -v "$tool" >/dev/null 2>&1 || fail "$tool is missing: run scripts/setup.d/40-helm.sh"
done

# The binary the tests just built (KGMESH_BIN picks another one).
KGMESH="${KGMESH_BIN:-${CARGO_TARGET_DIR:-$PWD/target}/debug/kgmesh}"
if [ ! -x "$KGMESH" ]; then
    cargo build --quiet -p kgmesh
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

echo "--> hadolint deploy/Dockerfile"
hadolint deploy/Dockerfile

echo "--> yamllint (compose file, chart values; templates are checked once rendered)"
yamllint --strict -c deploy/yamllint.yaml \
    deploy/compose.yaml helm/kgmesh/Chart.yaml helm/kgmesh/values.yaml helm/kgmesh/ci/

echo "--> kgmesh config check deploy/kgmesh.toml"
"$KGMESH" config check --config deploy/kgmesh.toml

echo "--> compose file: every role of the chart runs, hardened"
python3 - deploy/compose.yaml helm/kgmesh/values.yaml <<'PY'
import sys, yaml

compose = yaml.safe_load(open(sys.argv[1]))
values = yaml.safe_load(open(sys.argv[2]))
problems = []
services = compose["services"]
compose_roles = {}
for name, service in services.items():
    command = service.get("command") or []
    if command[:2] == ["agent", "--role"]:
        compose_roles[command[2]] = name
    if "kgmesh" not in str(service.get("image", "")) and "build" not in service:
        continue
    if not service.get("read_only"):
        problems.append(f"{name}: read_only is not set")
    if service.get("cap_drop") != ["ALL"]:
        problems.append(f"{name}: cap_drop is not [ALL]")
    env = service.get("environment") or {}
    if env.get("KGMESH_CONFIG") != "/etc/kgmesh/kgmesh.toml":
        problems.append(f"{name}: KGMESH_CONFIG is not /etc/kgmesh/kgmesh.toml")
chart_roles = {
    role for role, overrides in values["roles"].items()
    if (overrides or {}).get("enabled", True)
}
for role in sorted(chart_roles - set(compose_roles)):
    problems.append(f"role {role} runs in the chart but has no compose service")
for role in sorted(set(compose_roles) - chart_roles):
    problems.append(f"role {role} runs in compose but not in the chart")
for role, name in compose_roles.items():
    if "replicas" not in (services[name].get("deploy") or {}):
        problems.append(f"{name}: no deploy.replicas")
for needed in ("nats", "neo4j", "qdrant", "jaeger", "kgmesh-serve", "loader"):
    if needed not in services:
        problems.append(f"service {needed} is missing")
if problems:
    sys.exit("compose: " + "\n  ".join(problems))
print(f"compose: {len(compose_roles)} agent roles, {len(services)} services")
PY

echo "--> helm chart (offline: dependency charts replaced by empty placeholders)"
chart="$(deploy/helm-offline-chart.sh "$work/chart")"

render() { # NAME EXPECT [helm args...]: lint, render, validate one set of values;
    # EXPECT lists what the values turn on: tokens, tls (at the listener), nats (the
    # chart's NATS, and its NetworkPolicy).
    local label="$1" expect="$2"
    shift 2
    local out="$work/$label.yaml"
    echo "    [$label] helm lint --strict"
    "$HELM" lint --strict "$chart" "$@" >"$work/$label.lint" 2>&1 ||
        { cat "$work/$label.lint" >&2; fail "helm lint failed for $label"; }
    echo "    [$label] helm template --kube-version $KUBE_VERSION"
    "$HELM" template kgmesh "$chart" --namespace kgmesh --kube-version "$KUBE_VERSION" "$@" >"$out"
    echo "    [$label] kubernetes-validate --strict -k $KUBE_VERSION"
    # Custom resources (ServiceMonitor) have no built-in schema: the warning for them is
    # expected, any other warning or failure is not.
    kubernetes-validate --strict --quiet -k "$KUBE_VERSION" "$out" >"$work/$label.validate" 2>&1 ||
        { cat "$work/$label.validate" >&2; fail "kubernetes-validate failed for $label"; }
    if grep -v "Couldn't find schema for kind ServiceMonitor with api version monitoring.coreos.com/v1" \
        "$work/$label.validate" | grep -q .; then
        cat "$work/$label.validate" >&2
        fail "kubernetes-validate reported problems for $label"
    fi
    echo "    [$label] security defaults, probes, secrets by reference, network policies"
    python3 - "$out" "$work/$label.toml" "$expect" <<'PY'
import sys, tomllib, yaml

docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
expect = set(sys.argv[3].split())
problems = []
kinds = {}
for doc in docs:
    kinds[doc["kind"]] = kinds.get(doc["kind"], 0) + 1
    name = f'{doc["kind"]}/{doc["metadata"]["name"]}'
    if doc["kind"] == "Secret":
        problems.append(f"{name}: the chart must reference Secrets, never render them")
    if doc["kind"] == "ConfigMap":
        open(sys.argv[2], "w").write(doc["data"]["kgmesh.toml"])
    if doc["kind"] == "ServiceMonitor":
        ports = {e.get("port") for e in doc["spec"].get("endpoints", [])}
        if not {"http", "metrics"} <= ports or not doc["spec"].get("selector"):
            problems.append(f"{name}: must scrape the http and metrics ports of a selected Service")
    if doc["kind"] not in ("Deployment", "Job"):
        continue
    pod = doc["spec"]["template"]["spec"]
    if not pod.get("securityContext", {}).get("runAsNonRoot"):
        problems.append(f"{name}: pod runAsNonRoot is not true")
    for container in pod["containers"]:
        sc = container.get("securityContext", {})
        where = f'{name} container {container["name"]}'
        if sc.get("readOnlyRootFilesystem") is not True:
            problems.append(f"{where}: readOnlyRootFilesystem is not true")
        if sc.get("allowPrivilegeEscalation") is not False:
            problems.append(f"{where}: allowPrivilegeEscalation is not false")
        if "ALL" not in sc.get("capabilities", {}).get("drop", []):
            problems.append(f"{where}: capabilities do not drop ALL")
        if not container.get("resources", {}).get("requests"):
            problems.append(f"{where}: no resource requests")
        env = {e["name"]: e for e in container.get("env", [])}
        if env.get("KGMESH_CONFIG", {}).get("value") != "/etc/kgmesh/kgmesh.toml":
            problems.append(f"{where}: KGMESH_CONFIG does not point at the mounted config")
        for var in env.values():
            if any(word in var["name"] for word in ("KEY", "PASSWORD", "CREDENTIALS", "TOKEN")):
                if "valueFrom" not in var:
                    problems.append(f"{where}: {var['name']} is inlined, not taken from a Secret")
        # An agent from outside kgmesh (its own image) may serve no HTTP probes.
        external = "/kgmesh/kgmesh:" not in container.get("image", "")
        if doc["kind"] == "Deployment" and not external:
            paths = (
                container.get("livenessProbe", {}).get("httpGet", {}).get("path"),
                container.get("readinessProbe", {}).get("httpGet", {}).get("path"),
            )
            if paths != ("/healthz", "/readyz"):
                problems.append(f"{where}: probes are {paths}, not /healthz and /readyz")

# The API's front door: NetworkPolicies, the tokens and certificate Secrets by reference.
config = tomllib.load(open(sys.argv[2], "rb"))
http = config.get("http", {})
policies = {d["metadata"]["name"]: d for d in docs if d["kind"] == "NetworkPolicy"}
deployments = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Deployment"}
coordinator = next((d for n, d in deployments.items() if n.endswith("-coordinator")), None)
def component(doc):
    return doc["spec"]["template"]["metadata"]["labels"].get("app.kubernetes.io/component")
def secret_mounts(doc):
    pod = doc["spec"]["template"]["spec"]
    secrets = {v["name"]: v["secret"]["secretName"] for v in pod.get("volumes", []) if "secret" in v}
    return {m["mountPath"]: secrets[m["name"]]
            for c in pod["containers"] for m in c.get("volumeMounts", []) if m["name"] in secrets}
api_policy = next((p for n, p in policies.items() if n.endswith("-coordinator")), None)
if api_policy is None:
    problems.append("no NetworkPolicy for the coordinator")
else:
    spec = api_policy["spec"]
    if spec["podSelector"]["matchLabels"].get("app.kubernetes.io/component") != "coordinator":
        problems.append("the coordinator's NetworkPolicy does not select the coordinator")
    rules = spec.get("ingress", [])
    if not rules or any(not r.get("from") for r in rules):
        problems.append("the coordinator's NetworkPolicy lets anyone in (a rule without `from`)")
    if any(p.get("port") != "http" for r in rules for p in r.get("ports", [{}])):
        problems.append("the coordinator's NetworkPolicy opens a port other than http")
agents_policy = next((p for n, p in policies.items() if n.endswith("-agents")), None)
if agents_policy is None:
    problems.append("no NetworkPolicy for the agents")
else:
    spec = agents_policy["spec"]
    if "Ingress" not in spec.get("policyTypes", []):
        problems.append("the agents' NetworkPolicy does not restrict ingress")
    excluded = [e for e in spec["podSelector"].get("matchExpressions", [])
                if e["key"] == "app.kubernetes.io/component" and e["operator"] == "NotIn"]
    if not excluded or "coordinator" not in excluded[0]["values"]:
        problems.append("the agents' NetworkPolicy does not leave the coordinator out")
    for rule in spec.get("ingress", []):
        if not rule.get("from") or any(p.get("port") != "metrics" for p in rule.get("ports", [{}])):
            problems.append("the agents' NetworkPolicy lets in more than scrapers of the metrics port")
nats_policy = next((p for n, p in policies.items() if n.endswith("-nats")), None)
if ("nats" in expect) != (nats_policy is not None):
    problems.append(f"NATS NetworkPolicy rendered: {nats_policy is not None}, expected: {'nats' in expect}")
if coordinator is None:
    problems.append("no coordinator Deployment")
else:
    mounts = secret_mounts(coordinator)
    for agent in (d for d in deployments.values() if d is not coordinator):
        for path in secret_mounts(agent):
            if path.startswith("/etc/kgmesh/"):
                problems.append(f"{agent['metadata']['name']} mounts the API's Secret at {path}")
    tokens_file = http.get("tokens_file")
    if ("tokens" in expect) != bool(tokens_file):
        problems.append(f"http.tokens_file = {tokens_file!r}, tokens expected: {'tokens' in expect}")
    if tokens_file and not any(tokens_file.startswith(path + "/") for path in mounts):
        problems.append(f"http.tokens_file {tokens_file} is not on a mounted Secret ({mounts})")
    cert = http.get("tls_cert_file")
    if ("tls" in expect) != bool(cert):
        problems.append(f"http.tls_cert_file = {cert!r}, TLS at the listener expected: {'tls' in expect}")
    container = coordinator["spec"]["template"]["spec"]["containers"][0]
    schemes = {container[p]["httpGet"].get("scheme", "HTTP")
               for p in ("livenessProbe", "readinessProbe", "startupProbe")}
    if cert:
        for key in ("tls_cert_file", "tls_key_file"):
            if not any(http[key].startswith(path + "/") for path in mounts):
                problems.append(f"http.{key} {http[key]} is not on a mounted Secret ({mounts})")
    if schemes != ({"HTTPS"} if cert else {"HTTP"}):
        problems.append(f"the coordinator's probes use {schemes} with TLS at the listener {bool(cert)}")
if problems:
    sys.exit("manifests:\n  " + "\n  ".join(problems))
print("      " + ", ".join(f"{count} {kind}" for kind, count in sorted(kinds.items())))
PY
    echo "    [$label] kgmesh config check on the rendered ConfigMap"
    "$KGMESH" config check --config "$work/$label.toml"
}

render default ""
render bundled-values "tokens nats" -f helm/kgmesh/ci/bundled-values.yaml
render full-values "tokens tls" -f helm/kgmesh/ci/full-values.yaml
for values in helm/kgmesh/ci/*.yaml; do
    case "$(basename "$values")" in
    bundled-values.yaml | full-values.yaml) ;;
    *) fail "$values has no expectations in 10-deploy.sh: add a render line for it" ;;
    esac
done

echo "--> values.schema.json rejects bad values"
reject() { # DESCRIPTION EXPECTED_MESSAGE [helm args...]
    local what="$1" expected="$2"
    shift 2
    if "$HELM" template kgmesh "$chart" "$@" >/dev/null 2>"$work/reject.err"; then
        fail "helm accepted $what"
    fi
    grep -q -- "$expected" "$work/reject.err" ||
        { cat "$work/reject.err" >&2; fail "helm rejected $what, but not for the expected reason"; }
    echo "    rejected: $what"
}
reject "a misspelt agent setting" "'replica' not allowed" --set agentDefaults.replica=3
reject "budget.depth above 3" "/config/budget/depth" --set config.budget.depth=4
reject "an invalid role name" "Bad_Role" --set roles.Bad_Role.replicas=1
reject "an OTLP protocol that does not exist" "/connections/otlp/protocol" --set connections.otlp.protocol=udp
reject "a chart without a NATS address" "set connections.nats.url" --set connections.nats.url=
reject "TLS at the listener without a certificate" "needs api.tls.existingSecret" --set api.tls.termination=listener
reject "TLS ending nowhere known" "/api/tls/termination" --set api.tls.termination=both

echo "10-deploy: all deployment checks passed"
