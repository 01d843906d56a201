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
  # the elector reads its Lease, creates it once and renews or takes it with an optimistic
  # update (PUT with the resourceVersion it read); it never lists, watches or patches Leases, and
  # its events go through events.k8s.io under the app's own ClusterRole
  - apiGroups: ["coordination.k8s.io"]
    resources: ["leases"]
    verbs: ["get", "create", "update"]
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
