{{/* Names: the release's, cut to Kubernetes' 63 characters. */}}
{{- define "offsets.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "offsets.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* A component's selector: include with (list $ "web"). */}}
{{- define "offsets.selectorLabels" -}}
{{- $ := index . 0 -}}
app.kubernetes.io/name: {{ $.Chart.Name }}
app.kubernetes.io/instance: {{ $.Release.Name }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end -}}

{{- define "offsets.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{/* The Secret of the environment's secrets: the user's, the chart's, or none. */}}
{{- define "offsets.renderEnvSecret" -}}
{{- if and (not .Values.existingSecret) (or .Values.secretEnv .Values.postgresql.password) -}}
true
{{- end -}}
{{- end -}}

{{- define "offsets.kafkaClientSecretName" -}}
{{- if .Values.kafkaClient.existingSecret -}}
{{ .Values.kafkaClient.existingSecret }}
{{- else if .Values.kafkaClient.files -}}
{{ include "offsets.fullname" . }}-kafka-client
{{- end -}}
{{- end -}}

{{/* Values that contradict each other stop the install with a sentence saying why. */}}
{{- define "offsets.validate" -}}
{{- if and .Values.existingSecret .Values.secretEnv -}}
{{- fail "secretEnv is rendered into a Secret of the chart, which existingSecret replaces: put those keys in your Secret instead" -}}
{{- end -}}
{{- if and .Values.existingSecret .Values.postgresql.password -}}
{{- fail "postgresql.password is rendered into a Secret of the chart, which existingSecret replaces: put PGPASSWORD in your Secret, or name the password's Secret in postgresql.existingSecret" -}}
{{- end -}}
{{- if and .Values.postgresql.existingSecret .Values.postgresql.password -}}
{{- fail "postgresql.password and postgresql.existingSecret both give the password: keep one" -}}
{{- end -}}
{{- if and .Values.kafkaClient.existingSecret .Values.kafkaClient.files -}}
{{- fail "kafkaClient.files is rendered into a Secret of the chart, which kafkaClient.existingSecret replaces: keep one" -}}
{{- end -}}
{{- end -}}

{{/*
The environment of every process: the ConfigMap and the secrets' Secret whole (envFrom), then
the database's address and password. A secret value is only ever referenced, never written.
The migrate Job reads the copies made for it (Helm runs it before the release's own objects
exist); a Secret of the user's is there before either.
*/}}
{{- define "offsets.envFrom" -}}
{{- $ := index . 0 -}}
{{- $copy := ternary "-migrate" "" (index . 1) -}}
envFrom:
  - configMapRef:
      name: {{ include "offsets.fullname" $ }}{{ $copy }}-config
{{- if $.Values.existingSecret }}
  - secretRef:
      name: {{ $.Values.existingSecret }}
{{- else if include "offsets.renderEnvSecret" $ }}
  - secretRef:
      name: {{ include "offsets.fullname" $ }}{{ $copy }}-env
{{- end }}
{{- end -}}

{{/* The ConfigMap's data: the settings, and WEB_BIND from web.port. */}}
{{- define "offsets.configData" -}}
data:
{{- range $key, $value := .Values.config }}
  {{ $key }}: {{ $value | toString | quote }}
{{- end }}
  WEB_BIND: {{ printf "0.0.0.0:%v" .Values.web.port | quote }}
{{- end -}}

{{/* The rendered Secret's data: base64, as Kubernetes stores it. */}}
{{- define "offsets.envSecretData" -}}
type: Opaque
data:
{{- range $key, $value := .Values.secretEnv }}
  {{ $key }}: {{ $value | toString | b64enc | quote }}
{{- end }}
{{- with .Values.postgresql.password }}
  PGPASSWORD: {{ . | toString | b64enc | quote }}
{{- end }}
{{- end -}}

{{/* A copy for the migrate Job: made before it, deleted once the hooks succeed. */}}
{{- define "offsets.hookCopy" -}}
helm.sh/hook: pre-install,pre-upgrade
helm.sh/hook-weight: "-10"
helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded
{{- end -}}

{{- define "offsets.envList" -}}
{{- $pg := .Values.postgresql -}}
{{- /* gunicorn's control socket goes to $XDG_RUNTIME_DIR, else under $HOME, which is the
data volume that web pods share: each pod keeps its own in its /tmp. */}}
- name: XDG_RUNTIME_DIR
  value: /tmp
{{- if $pg.host }}
- name: DATABASE_URL
  value: {{ printf "postgres://%s@%s:%v/%s" $pg.user $pg.host $pg.port $pg.database | quote }}
{{- end }}
{{- if $pg.existingSecret }}
- name: PGPASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ $pg.existingSecret }}
      key: {{ $pg.passwordKey }}
{{- end }}
{{- if $pg.sslMode }}
- name: PGSSLMODE
  value: {{ $pg.sslMode | quote }}
{{- end }}
{{- with .Values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "offsets.env" -}}
{{- with include "offsets.envList" . | trim }}
env:
{{ . | indent 2 }}
{{- end }}
{{- end -}}

{{/* A process's resources, probes' port and security: the parts every container shares. */}}
{{- define "offsets.container" -}}
{{- $ := index . 0 -}}
{{- $component := index . 1 -}}
image: {{ include "offsets.image" $ }}
imagePullPolicy: {{ $.Values.image.pullPolicy }}
args: [{{ $component | quote }}]
securityContext:
{{ toYaml $.Values.securityContext | indent 2 }}
resources:
{{ toYaml (index $.Values $component).resources | indent 2 }}
{{ include "offsets.envFrom" (list $ (eq $component "migrate")) }}
{{- include "offsets.env" $ }}
{{- end -}}

{{- define "offsets.pod" -}}
{{- $ := index . 0 -}}
{{- $component := index . 1 -}}
{{- $values := index $.Values $component -}}
{{- with $.Values.serviceAccountName -}}
serviceAccountName: {{ . }}
{{ end -}}
automountServiceAccountToken: {{ $.Values.automountServiceAccountToken }}
securityContext:
{{ toYaml $.Values.podSecurityContext | indent 2 }}
{{- with $.Values.imagePullSecrets }}
imagePullSecrets:
{{ toYaml . | indent 2 }}
{{- end }}
{{- with $values.nodeSelector }}
nodeSelector:
{{ toYaml . | indent 2 }}
{{- end }}
{{- with $values.tolerations }}
tolerations:
{{ toYaml . | indent 2 }}
{{- end }}
{{- with $values.affinity }}
affinity:
{{ toYaml . | indent 2 }}
{{- end }}
{{- end -}}

{{/* The volumes of web and scheduler: the data, /tmp, and the Kafka client files. */}}
{{- define "offsets.volumes" -}}
volumes:
  - name: data
{{- if not .Values.persistence.enabled }}
    emptyDir: {}
{{- else }}
    persistentVolumeClaim:
      claimName: {{ .Values.persistence.existingClaim | default (printf "%s-data" (include "offsets.fullname" .)) }}
{{- end }}
  - name: tmp
    emptyDir:
{{- if .Values.tmp.sizeLimit }}
      sizeLimit: {{ .Values.tmp.sizeLimit }}
{{- else }} {}
{{- end }}
{{- with include "offsets.kafkaClientSecretName" . }}
  - name: kafka-client
    secret:
      secretName: {{ . }}
      # The owner is root and the group fsGroup (the image's user): readable by the group only.
      defaultMode: 0440
{{- end }}
{{- end -}}

{{- define "offsets.volumeMounts" -}}
volumeMounts:
  - name: data
    mountPath: /var/lib/offsets
  - name: tmp
    mountPath: /tmp
{{- if include "offsets.kafkaClientSecretName" . }}
  - name: kafka-client
    mountPath: {{ .Values.kafkaClient.mountPath }}
    readOnly: true
{{- end }}
{{- end -}}

{{/* Pods roll when their settings change: hashes, never the values. */}}
{{- define "offsets.checksums" -}}
checksum/config: {{ include "offsets.configData" . | sha256sum }}
{{- if include "offsets.renderEnvSecret" . }}
checksum/secret: {{ include "offsets.envSecretData" . | sha256sum }}
{{- end }}
{{- if and .Values.kafkaClient.files (not .Values.kafkaClient.existingSecret) }}
checksum/kafka-client: {{ toJson .Values.kafkaClient.files | sha256sum }}
{{- end }}
{{- end -}}
