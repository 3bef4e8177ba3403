{{/* The image of component `name`: <image.registry>/<name>:<image.tag>. */}}
{{- define "olm-rs.image" -}}
{{ .root.Values.image.registry }}/{{ .name }}:{{ .root.Values.image.tag }}
{{- end -}}

{{/* The pod and container security settings every olm-rs pod has (Pod Security "restricted"). */}}
{{- define "olm-rs.podSecurity" -}}
securityContext:
  runAsNonRoot: true
  seccompProfile:
    type: RuntimeDefault
{{- end -}}
{{- define "olm-rs.containerSecurity" -}}
securityContext:
  allowPrivilegeEscalation: false
  privileged: false
  readOnlyRootFilesystem: true
  capabilities:
    drop: [ALL]
{{- end -}}

{{/* The probes of the three components, on their metrics port. */}}
{{- define "olm-rs.probes" -}}
livenessProbe:
  httpGet:
    path: /healthz
    port: metrics
  periodSeconds: 10
  failureThreshold: 3
readinessProbe:
  httpGet:
    path: /readyz
    port: metrics
  periodSeconds: 2
  failureThreshold: 3
{{- end -}}
