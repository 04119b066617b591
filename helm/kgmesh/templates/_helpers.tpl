{{/* ---- names and labels ------------------------------------------------ */}}

{{- define "kgmesh.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "kgmesh.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Name of a per-component object: "<fullname>-<component>". */}}
{{- define "kgmesh.componentName" -}}
{{- printf "%s-%s" (include "kgmesh.fullname" .root) .component | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "kgmesh.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "kgmesh.selectorLabels" -}}
app.kubernetes.io/name: {{ include "kgmesh.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "kgmesh.labels" -}}
helm.sh/chart: {{ include "kgmesh.chart" . }}
{{ include "kgmesh.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: kgmesh
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Selector labels of one component (the coordinator or an agent role). */}}
{{- define "kgmesh.componentSelectorLabels" -}}
{{ include "kgmesh.selectorLabels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "kgmesh.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "kgmesh.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "kgmesh.image" -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository $tag -}}
{{- end -}}
{{- end -}}

{{/* ---- addresses of the backing services --------------------------------
     An explicit address in `connections` wins; otherwise the service of the chart
     dependency when it is enabled (named like every chart's default fullname). */}}

{{- define "kgmesh.dependencyFullname" -}}
{{- if contains .name .root.Release.Name -}}
{{- .root.Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .root.Release.Name .name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "kgmesh.natsUrl" -}}
{{- if .Values.connections.nats.url -}}
{{- .Values.connections.nats.url -}}
{{- else if .Values.nats.enabled -}}
{{- printf "nats://%s:4222" (include "kgmesh.dependencyFullname" (dict "root" . "name" "nats")) -}}
{{- else -}}
{{- fail "set connections.nats.url to your NATS server (nats://host:4222), or nats.enabled=true to install NATS with kgmesh" -}}
{{- end -}}
{{- end -}}

{{- define "kgmesh.boltUri" -}}
{{- if .Values.connections.neo4j.uri -}}
{{- .Values.connections.neo4j.uri -}}
{{- else if .Values.neo4j.enabled -}}
{{- printf "bolt://%s:7687" (include "kgmesh.dependencyFullname" (dict "root" . "name" "neo4j")) -}}
{{- end -}}
{{- end -}}

{{- define "kgmesh.qdrantUrl" -}}
{{- if .Values.connections.qdrant.url -}}
{{- .Values.connections.qdrant.url -}}
{{- else if .Values.qdrant.enabled -}}
{{- printf "http://%s:6334" (include "kgmesh.dependencyFullname" (dict "root" . "name" "qdrant")) -}}
{{- end -}}
{{- end -}}

{{- define "kgmesh.otlpEndpoint" -}}
{{- if .Values.connections.otlp.endpoint -}}
{{- .Values.connections.otlp.endpoint -}}
{{- else if .Values.jaeger.enabled -}}
{{- printf "http://%s-collector:4317" (include "kgmesh.dependencyFullname" (dict "root" . "name" "jaeger")) -}}
{{- end -}}
{{- end -}}

{{/* ---- the configuration file ----------------------------------------------
     `.Values.config` is the same tree as the TOML file the binary reads; the chart
     fills in what it owns (addresses, listen ports, names of secret variables). */}}

{{/* Deep merge of .src into .dst (mutates .dst). Unlike sprig's merge, a false or 0
     in .src does override .dst. */}}
{{- define "kgmesh.deepMerge" -}}
{{- $dst := .dst -}}
{{- range $key, $value := .src -}}
{{- if and (kindIs "map" $value) (kindIs "map" (get $dst $key)) -}}
{{- include "kgmesh.deepMerge" (dict "dst" (get $dst $key) "src" $value) -}}
{{- else if kindIs "invalid" $value -}}
{{- /* null: the key is left out (a probe an agent does not serve) */ -}}
{{- $_ := unset $dst $key -}}
{{- else -}}
{{- $_ := set $dst $key (deepCopy $value) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Where the coordinator finds the API tokens and its TLS certificate (mounted Secrets). */}}
{{- define "kgmesh.apiTokensDir" -}}/etc/kgmesh/api-tokens{{- end -}}
{{- define "kgmesh.apiTlsDir" -}}/etc/kgmesh/tls{{- end -}}

{{- define "kgmesh.configTree" -}}
{{- $config := deepCopy (default dict .Values.config) -}}
{{- $owned := dict
  "bus" (dict "kind" "nats" "nats_url" (include "kgmesh.natsUrl" .))
  "http" (dict "listen" (printf "0.0.0.0:%d" (int .Values.coordinator.port)))
  "telemetry" (dict "metrics_listen" (printf "0.0.0.0:%d" (int .Values.agentDefaults.metricsPort)))
  "llm" (dict "api_key_env" .Values.secrets.llmApiKey.envVar)
-}}
{{- if .Values.secrets.natsCredentials.existingSecret -}}
{{- $_ := set $owned.bus "nats_credentials_env" .Values.secrets.natsCredentials.envVar -}}
{{- end -}}
{{- /* The API's front door (docs/security.md): tokens from a mounted Secret, the open
       declaration, and the listener's certificate when TLS ends at the coordinator. */ -}}
{{- if .Values.api.tokens.existingSecret -}}
{{- $_ := set $owned.http "tokens_file" (printf "%s/%s" (include "kgmesh.apiTokensDir" .) .Values.api.tokens.key) -}}
{{- end -}}
{{- if .Values.api.open -}}
{{- $_ := set $owned.http "open" true -}}
{{- end -}}
{{- if eq .Values.api.tls.termination "listener" -}}
{{- $_ := set $owned.http "tls_cert_file" (printf "%s/tls.crt" (include "kgmesh.apiTlsDir" .)) -}}
{{- $_ := set $owned.http "tls_key_file" (printf "%s/tls.key" (include "kgmesh.apiTlsDir" .)) -}}
{{- end -}}
{{- /* Roles of the chart that kgmesh does not build in (agents from outside it) are
       allowed, so that one `roles` entry is all an external agent needs. Every name
       here must be a role kgmesh registers (agents/src/lib.rs); a test of the kgmesh
       crate (cli/src/cmd/agent.rs) fails when one is not. A built-in role missing
       here is only allowed twice over. */ -}}
{{- $builtIn := list "kg-linker" "entity-linker" "path-follower" "query-executor" "agentic-traverser" "scoring-retriever" "pattern-matcher" "text-retriever" "judge" "summarizer" "cache-manager" "echo" -}}
{{- $allowed := list -}}
{{- with $config.bus -}}{{- $allowed = default list .allowed_roles -}}{{- end -}}
{{- range $role, $overrides := .Values.roles -}}
{{- if and (not (has $role $builtIn)) (or (not (kindIs "map" $overrides)) (not (hasKey $overrides "enabled")) $overrides.enabled) -}}
{{- $allowed = append $allowed $role -}}
{{- end -}}
{{- end -}}
{{- if $allowed -}}
{{- $_ := set $owned.bus "allowed_roles" (uniq $allowed) -}}
{{- end -}}
{{- $boltUri := include "kgmesh.boltUri" . -}}
{{- if $boltUri -}}
{{- $graph := dict "backend" "bolt" "bolt_uri" $boltUri "bolt_user" .Values.connections.neo4j.user "bolt_password_env" .Values.secrets.neo4jPassword.envVar -}}
{{- with .Values.connections.neo4j.database -}}
{{- $_ := set $graph "bolt_database" . -}}
{{- end -}}
{{- $_ := set $owned "graph" $graph -}}
{{- end -}}
{{- include "kgmesh.deepMerge" (dict "dst" $config "src" $owned) -}}
{{- toJson $config -}}
{{- end -}}

{{/* TOML rendering. Helm reads YAML numbers as float64, and toToml would write
     `rounds = 2.0`, which the binary rightly rejects for an integer key: whole
     numbers are written as integers here. null values are left out (the binary's
     default applies). */}}
{{- define "kgmesh.toml.key" -}}
{{- if regexMatch "^[A-Za-z0-9_-]+$" . -}}{{ . }}{{- else -}}{{ toJson . }}{{- end -}}
{{- end -}}

{{- define "kgmesh.toml.value" -}}
{{- if kindIs "string" . -}}
{{- toJson . -}}
{{- else if kindIs "bool" . -}}
{{- ternary "true" "false" . -}}
{{- else if or (kindIs "float64" .) (kindIs "float32" .) -}}
{{- if eq (float64 .) (floor .) -}}{{ int64 . }}{{- else -}}{{ . }}{{- end -}}
{{- else if or (kindIs "int" .) (kindIs "int64" .) (kindIs "uint64" .) -}}
{{- . -}}
{{- else if kindIs "slice" . -}}
[{{- range $index, $item := . -}}{{ if $index }}, {{ end }}{{ include "kgmesh.toml.value" $item }}{{- end -}}]
{{- else -}}
{{- fail (printf "config: cannot write a %s as a TOML value" (kindOf .)) -}}
{{- end -}}
{{- end -}}

{{- define "kgmesh.toml.table" -}}
{{- $prefix := .prefix -}}
{{- if $prefix }}
[{{ $prefix }}]
{{- end }}
{{- range $key, $value := .table }}
{{- if not (or (kindIs "map" $value) (kindIs "invalid" $value)) }}
{{ include "kgmesh.toml.key" $key }} = {{ include "kgmesh.toml.value" $value }}
{{- end }}
{{- end }}
{{- range $key, $value := .table }}
{{- if kindIs "map" $value }}
{{- $name := include "kgmesh.toml.key" $key }}
{{ include "kgmesh.toml.table" (dict "prefix" (ternary (printf "%s.%s" $prefix $name) $name (ne $prefix "")) "table" $value) }}
{{- end }}
{{- end }}
{{- end -}}

{{- define "kgmesh.configToml" -}}
# kgmesh configuration rendered by the Helm chart from .Values.config.
# Check it with: kgmesh config check --config kgmesh.toml
{{- include "kgmesh.toml.table" (dict "prefix" "" "table" (include "kgmesh.configTree" . | fromJson)) }}
{{ end -}}

{{/* ---- pod parts shared by the coordinator and every agent role ---------- */}}

{{/* Environment of every kgmesh container: config file, secrets by reference, OTLP.
     Takes (dict "root" $ "component" "<role>"). */}}
{{- define "kgmesh.env" -}}
{{- $root := .root -}}
- name: KGMESH_CONFIG
  value: /etc/kgmesh/kgmesh.toml
- name: POD_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
- name: POD_NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
{{- range $name, $secret := $root.Values.secrets }}
{{- if $secret.existingSecret }}
- name: {{ $secret.envVar }}
  valueFrom:
    secretKeyRef:
      name: {{ $secret.existingSecret }}
      key: {{ $secret.key }}
{{- end }}
{{- end }}
{{- with include "kgmesh.qdrantUrl" $root }}
- name: QDRANT_URL
  value: {{ . | quote }}
{{- end }}
- name: OTEL_SERVICE_NAME
  value: {{ printf "kgmesh-%s" .component | quote }}
- name: OTEL_RESOURCE_ATTRIBUTES
  value: {{ printf "service.namespace=%s,service.instance.id=$(POD_NAME),k8s.namespace.name=$(POD_NAMESPACE),k8s.pod.name=$(POD_NAME),kgmesh.role=%s" (include "kgmesh.fullname" $root) .component }}{{ with $root.Values.connections.otlp.resourceAttributes }},{{ . }}{{ end }}
{{- with include "kgmesh.otlpEndpoint" $root }}
- name: OTEL_EXPORTER_OTLP_ENDPOINT
  value: {{ . | quote }}
- name: OTEL_EXPORTER_OTLP_PROTOCOL
  value: {{ $root.Values.connections.otlp.protocol | quote }}
{{- end }}
{{- with $root.Values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "kgmesh.volumeMounts" -}}
- name: config
  mountPath: /etc/kgmesh
  readOnly: true
- name: tmp
  mountPath: /tmp
{{- with .Values.extraVolumeMounts }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "kgmesh.volumes" -}}
- name: config
  configMap:
    name: {{ include "kgmesh.componentName" (dict "root" . "component" "config") }}
- name: tmp
  emptyDir:
    sizeLimit: {{ .Values.tmpSizeLimit }}
{{- with .Values.extraVolumes }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Pod annotations that roll every pod when the configuration changes. */}}
{{- define "kgmesh.configChecksum" -}}
checksum/config: {{ include "kgmesh.configToml" . | sha256sum }}
{{- end -}}
