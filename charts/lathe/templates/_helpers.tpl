{{/* The chart name, or nameOverride; at most 63 characters. */}}
{{- define "lathe.name" -}}
{{- .Values.nameOverride | default .Chart.Name | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The name of the release's objects: fullnameOverride, else the release name when it already contains the
chart name, else <release>-<chart>; at most 63 characters. */}}
{{- define "lathe.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := .Values.nameOverride | default .Chart.Name }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* The labels that select the controller pods. */}}
{{- define "lathe.selectorLabels" -}}
app.kubernetes.io/name: {{ include "lathe.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* The labels of every object. */}}
{{- define "lathe.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "lathe.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.additionalLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* metadata.annotations of every object, or nothing. */}}
{{- define "lathe.annotations" -}}
{{- with .Values.additionalAnnotations }}
annotations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* The ServiceAccount the controller runs as. */}}
{{- define "lathe.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- .Values.serviceAccount.name | default (include "lathe.fullname" .) }}
{{- else }}
{{- .Values.serviceAccount.name | default "default" }}
{{- end }}
{{- end }}

{{/* The controller image: repository:tag (tag defaults to appVersion), pinned with @digest when one is given. */}}
{{- define "lathe.image" -}}
{{- $image := printf "%s:%s" .Values.controller.image.repository (.Values.controller.image.tag | default .Chart.AppVersion | toString) }}
{{- with .Values.controller.image.digest }}
{{- $image = printf "%s@%s" $image . }}
{{- end }}
{{- $image }}
{{- end }}

{{/* The controller container's name. */}}
{{- define "lathe.containerName" -}}
{{- .Values.controller.containerName | default "controller" }}
{{- end }}

{{/* A setting as an environment variable: name, and the value rendered with tpl; nothing when the value is
empty (Lathe's default applies). false is a value (written), unlike in Karpenter's chart where false is
dropped; either way Lathe ends up with false. */}}
{{- define "lathe.env" -}}
{{- $value := index . 1 }}
{{- if not (or (kindIs "invalid" $value) (eq (toString $value) "")) }}
- name: {{ index . 0 }}
  value: {{ tpl (toString $value) (index . 2) | quote }}
{{- end }}
{{- end }}

{{/* Adds labelSelector: {matchLabels: <selector labels>} to each term (a map) of .terms without one.
Values are maps shared by reference, so the caller's affinity/constraints change in place; deepCopy first. */}}
{{- define "lathe.defaultSelectors" -}}
{{- $selector := dict "matchLabels" (include "lathe.selectorLabels" .root | fromYaml) }}
{{- range .terms }}
{{- if not (hasKey . "labelSelector") }}
{{- $_ := set . "labelSelector" $selector }}
{{- end }}
{{- end }}
{{- end }}

{{/* The pods' affinity with default label selectors on pod (anti-)affinity terms. */}}
{{- define "lathe.affinity" -}}
{{- $affinity := deepCopy .Values.affinity }}
{{- range $kind := list "podAffinity" "podAntiAffinity" }}
{{- with get $affinity $kind }}
{{- include "lathe.defaultSelectors" (dict "root" $ "terms" (.requiredDuringSchedulingIgnoredDuringExecution | default list)) }}
{{- $weighted := list }}
{{- range (.preferredDuringSchedulingIgnoredDuringExecution | default list) }}
{{- $weighted = append $weighted .podAffinityTerm }}
{{- end }}
{{- include "lathe.defaultSelectors" (dict "root" $ "terms" $weighted) }}
{{- end }}
{{- end }}
{{- toYaml $affinity }}
{{- end }}

{{/* The pods' topology spread constraints with default label selectors. */}}
{{- define "lathe.topologySpreadConstraints" -}}
{{- $constraints := deepCopy .Values.topologySpreadConstraints }}
{{- include "lathe.defaultSelectors" (dict "root" . "terms" $constraints) }}
{{- toYaml $constraints }}
{{- end }}

{{/* Whether the cluster serves the Prometheus Operator's API (helm template: --api-versions monitoring.coreos.com/v1). */}}
{{- define "lathe.hasPrometheusOperator" -}}
{{- if .Capabilities.APIVersions.Has "monitoring.coreos.com/v1" }}true{{ end }}
{{- end }}
