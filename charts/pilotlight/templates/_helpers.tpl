{{/* The release's base name: the release name, or "<release>-pilotlight"
when the release name does not already say pilotlight. */}}
{{- define "pilotlight.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "pilotlight.commonLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: pilotlight
{{- end -}}

{{- define "pilotlight.labels" -}}
{{ include "pilotlight.commonLabels" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* Per component: pass (dict "root" $ "component" "controller"). The
controller's pods carry app.kubernetes.io/name=pilotlight-controller, which
the activator finds them by. */}}
{{- define "pilotlight.selectorLabels" -}}
app.kubernetes.io/name: pilotlight-{{ .component }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
{{- end -}}

{{- define "pilotlight.componentLabels" -}}
{{ include "pilotlight.commonLabels" .root }}
{{ include "pilotlight.selectorLabels" . }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "pilotlight.serviceAccountName" -}}
{{- $c := index .root.Values .component -}}
{{- if $c.serviceAccount.create -}}
{{- default (printf "%s-%s" (include "pilotlight.fullname" .root) .component) $c.serviceAccount.name -}}
{{- else -}}
{{- default "default" $c.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "pilotlight.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* The host part of every listen address: all addresses, or the pod's own
IP where pods share one network namespace (the local test cluster). */}}
{{- define "pilotlight.listenHost" -}}
{{- if .Values.bindPodIP -}}$(POD_IP){{- else -}}0.0.0.0{{- end -}}
{{- end -}}

{{/* Labels and the keep annotation for a CustomResourceDefinition, inserted
under the CRD file's `metadata:` line (the files keep their comments). */}}
{{- define "pilotlight.crdMetadata" -}}
labels:
{{ include "pilotlight.labels" . | indent 2 }}
{{- if .Values.crds.keep }}
annotations:
  helm.sh/resource-policy: keep
{{- end }}
{{- end -}}

{{/* Pod-level settings both Deployments share: pass (dict "root" $
"component" "controller"). */}}
{{- define "pilotlight.podScheduling" -}}
{{- $c := index .root.Values .component -}}
{{- with .root.Values.imagePullSecrets }}
imagePullSecrets:
{{ toYaml . | indent 2 }}
{{- end }}
{{- with $c.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- if .root.Values.hostNetwork }}
hostNetwork: true
dnsPolicy: ClusterFirstWithHostNet
{{- end }}
{{- with $c.nodeSelector }}
nodeSelector:
{{ toYaml . | indent 2 }}
{{- end }}
{{- with $c.tolerations }}
tolerations:
{{ toYaml . | indent 2 }}
{{- end }}
{{- with $c.affinity }}
affinity:
{{ toYaml . | indent 2 }}
{{- end }}
{{- with $c.topologySpreadConstraints }}
topologySpreadConstraints:
{{ toYaml . | indent 2 }}
{{- end }}
securityContext:
{{ toYaml .root.Values.podSecurityContext | indent 2 }}
{{- end -}}

{{/* Pod annotations: Prometheus scrape hints (pass "port") and the user's. */}}
{{- define "pilotlight.podAnnotations" -}}
{{- $c := index .root.Values .component -}}
{{- if or .root.Values.metrics.scrapeAnnotations $c.podAnnotations }}
annotations:
{{- if .root.Values.metrics.scrapeAnnotations }}
  prometheus.io/scrape: "true"
  prometheus.io/port: {{ .port | quote }}
  prometheus.io/path: /metrics
{{- end }}
{{- with $c.podAnnotations }}
{{ toYaml . | indent 2 }}
{{- end }}
{{- end }}
{{- end -}}

{{/* The downward-API environment every pilotlight container gets. */}}
{{- define "pilotlight.podEnv" -}}
- name: POD_NAME
  valueFrom: {fieldRef: {fieldPath: metadata.name}}
- name: POD_NAMESPACE
  valueFrom: {fieldRef: {fieldPath: metadata.namespace}}
- name: POD_IP
  valueFrom: {fieldRef: {fieldPath: status.podIP}}
{{- end -}}
