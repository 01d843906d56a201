{{/* Every app: DNS, and kube-apiserver (its address is the cluster's, so by port, or the CIDRs given). */}}
{{- define "sandbox-scale.npCommonEgress" -}}
- ports:
    - { protocol: UDP, port: 53 }
    - { protocol: TCP, port: 53 }
- ports:
    {{- range .Values.networkPolicy.kubeApiServer.ports }}
    - { protocol: TCP, port: {{ . }} }
    {{- end -}}
  {{- with .Values.networkPolicy.kubeApiServer.cidrs }}
  to:
    {{- range . }}
    - ipBlock: { cidr: {{ . | quote }} }
    {{- end -}}
  {{- end -}}
{{- end -}}
{{/* Each node's sandboxd, on the nodes' addresses. */}}
{{- define "sandbox-scale.npSandboxdEgress" -}}
- ports:
    - { protocol: TCP, port: {{ .Values.networkPolicy.sandboxdPort }} }
{{- end -}}
{{/* metrics scrapes (by token) and the kubelet's probes. */}}
{{- define "sandbox-scale.npMetricsIngress" -}}
- ports:
    - { protocol: TCP, port: {{ .Values.ports.metrics }} }
    - { protocol: TCP, port: {{ .Values.ports.health }} }
{{- end -}}
