{{/* Lease-based leader election in the release namespace: (dict "root" $ "app" "<app>"). */}}
{{- define "sandbox-scale.leaderElectionRbac" -}}
{{- $name := include "sandbox-scale.appName" . -}}
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: {{ $name }}-leader-election
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "sandbox-scale.appLabels" . | nindent 4 }}
rules:
  - apiGroups: ["coordination.k8s.io"]
    resources: ["leases"]
    verbs: ["get", "list", "watch", "create", "update", "patch"]
  - apiGroups: [""]
    resources: ["events"]
    verbs: ["create", "patch"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: {{ $name }}-leader-election
  namespace: {{ .root.Release.Namespace }}
  labels:
    {{- include "sandbox-scale.appLabels" . | nindent 4 }}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: {{ $name }}-leader-election
subjects:
  - kind: ServiceAccount
    name: {{ include "sandbox-scale.serviceAccountName" . }}
    namespace: {{ .root.Release.Namespace }}
{{- end -}}
