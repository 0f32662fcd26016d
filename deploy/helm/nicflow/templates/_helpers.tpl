{{/* Chart name, truncated to a DNS label. */}}
{{- define "nicflow.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Release-qualified name: the release name when it already holds the chart's. */}}
{{- define "nicflow.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "nicflow.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "nicflow.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* Selector labels of one component: (dict "ctx" $ "component" "worker") */}}
{{- define "nicflow.selectorLabels" -}}
app.kubernetes.io/name: {{ include "nicflow.name" .ctx }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "nicflow.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{- define "nicflow.keysSecret" -}}
{{- .Values.keys.existingSecret | default (printf "%s-keys" (include "nicflow.fullname" .)) -}}
{{- end -}}

{{/* The coordinator's gossip address, which the other nodes join. */}}
{{- define "nicflow.join" -}}
{{ include "nicflow.fullname" . }}-gossip:{{ .Values.coordinator.ports.gossip }}
{{- end -}}

{{/* The key directory of a role, from the keys Secret: (dict "ctx" $ "role" "worker") */}}
{{- define "nicflow.keysVolume" -}}
- name: keys
  secret:
    secretName: {{ include "nicflow.keysSecret" .ctx }}
    # Readable by the Pod's fsGroup (the nicflow user), not by others.
    defaultMode: 0440
    items:
      - {key: cluster.key, path: cluster.key}
      - {key: ca.crt, path: ca.crt}
      - {key: {{ .role }}.crt, path: node.crt}
      - {key: {{ .role }}.key, path: node.key}
{{- end -}}

{{/* What every nicflow container has: image, security context, the Pod's
     name and address for --node-id and --advertise. */}}
{{- define "nicflow.container" -}}
image: {{ include "nicflow.image" . }}
imagePullPolicy: {{ .Values.image.pullPolicy }}
securityContext:
  {{- toYaml .Values.securityContext | nindent 2 }}
env:
  - name: POD_NAME
    valueFrom: {fieldRef: {fieldPath: metadata.name}}
  - name: POD_IP
    valueFrom: {fieldRef: {fieldPath: status.podIP}}
{{- end -}}

{{/* A probe running `nicflow health` against a node's admin port:
     (dict "port" 7481 "minMembers" 2) */}}
{{- define "nicflow.healthProbe" -}}
exec:
  command: ["/usr/local/bin/nicflow", "health", "--admin", "127.0.0.1:{{ .port }}"{{ if .minMembers }}, "--min-members", "{{ .minMembers }}"{{ end }}]
timeoutSeconds: 4
periodSeconds: 10
failureThreshold: 3
{{- end -}}

{{- define "nicflow.podSpecCommon" -}}
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}
