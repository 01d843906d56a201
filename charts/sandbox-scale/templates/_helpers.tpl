{{/* Chart name, overridable. */}}
{{- define "sandbox-scale.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
Prefix of every object name. Cluster-scoped objects carry it too, so two releases
(tests, or a canary beside production) never collide.
*/}}
{{- define "sandbox-scale.fullname" -}}
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

{{/* Name of one app's objects: <fullname>-<app>; 63 characters at most. */}}
{{- define "sandbox-scale.appName" -}}
{{- printf "%s-%s" (include "sandbox-scale.fullname" .root) .app | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "sandbox-scale.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/part-of: sandbox-scale
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Labels of one app's objects; call with (dict "root" $ "app" "<app>"). */}}
{{- define "sandbox-scale.appLabels" -}}
{{ include "sandbox-scale.labels" .root }}
app.kubernetes.io/name: {{ include "sandbox-scale.name" .root }}
app.kubernetes.io/component: {{ .app }}
{{- end -}}

{{- define "sandbox-scale.selectorLabels" -}}
app.kubernetes.io/name: {{ include "sandbox-scale.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .app }}
{{- end -}}

{{- define "sandbox-scale.serviceAccountName" -}}
{{- include "sandbox-scale.appName" . -}}
{{- end -}}

{{/* Image of one app, by digest when one is pinned, else by tag: (dict "root" $ "image" .Values.<app>.image). */}}
{{- define "sandbox-scale.image" -}}
{{- if .image.digest -}}
{{- printf "%s/%s@%s" .root.Values.image.registry .image.repository .image.digest -}}
{{- else -}}
{{- $tag := .image.tag | default .root.Values.image.tag | default .root.Chart.AppVersion -}}
{{- printf "%s/%s:%s" .root.Values.image.registry .image.repository $tag -}}
{{- end -}}
{{- end -}}

{{/* In-cluster DNS name of the sandbox-apiserver Service; the aggregator verifies the certificate against it. */}}
{{- define "sandbox-scale.apiserverServiceName" -}}
{{- include "sandbox-scale.appName" (dict "root" . "app" "sandbox-apiserver") -}}
{{- end -}}

{{/* The router's Service: callers in Direct mode name it, so sandbox-apiserver's serving certificate names it too. */}}
{{- define "sandbox-scale.routerServiceName" -}}
{{- .Values.router.serviceName | default (printf "%s-router" (include "sandbox-scale.fullname" .)) -}}
{{- end -}}

{{/* Every in-cluster DNS name of a Service: (dict "root" $ "service" "<name>"), one per line. */}}
{{- define "sandbox-scale.serviceDnsNames" -}}
{{- $ns := .root.Release.Namespace -}}
{{ .service }}
{{ printf "%s.%s" .service $ns }}
{{ printf "%s.%s.svc" .service $ns }}
{{ printf "%s.%s.svc.cluster.local" .service $ns }}
{{- end -}}

{{/*
The names sandbox-apiserver's serving certificate holds: its own Service's, and the router's and
e2b's Services' when they serve HTTPS (every listener presents the one certificate).
*/}}
{{- define "sandbox-scale.apiserverDnsNames" -}}
{{- include "sandbox-scale.serviceDnsNames" (dict "root" . "service" (include "sandbox-scale.apiserverServiceName" .)) }}
{{- if and .Values.router.enabled .Values.router.tls }}
{{ include "sandbox-scale.serviceDnsNames" (dict "root" . "service" (include "sandbox-scale.routerServiceName" .)) }}
{{- end -}}
{{- if and .Values.e2b.enabled .Values.e2b.tls }}
{{ include "sandbox-scale.serviceDnsNames" (dict "root" . "service" (include "sandbox-scale.e2bServiceName" .)) }}
{{- end -}}
{{- end -}}

{{/* e2b's Service: E2B_API_URL names it, so sandbox-apiserver's serving certificate names it too. */}}
{{- define "sandbox-scale.e2bServiceName" -}}
{{- printf "%s-e2b" (include "sandbox-scale.fullname" .) -}}
{{- end -}}

{{- define "sandbox-scale.fastPathServiceName" -}}
{{- include "sandbox-scale.appName" (dict "root" . "app" "claim-controller") -}}
{{- end -}}

{{- define "sandbox-scale.fleetTokenMountPath" -}}/var/run/sandbox-scale/fleet-token{{- end -}}

{{/* The flags every app shares (kube-runtime's manager flags). */}}
{{- define "sandbox-scale.commonArgs" -}}
- --metrics-bind-address=:{{ .Values.ports.metrics }}
- --health-probe-bind-address=:{{ .Values.ports.health }}
{{- /* /metrics over HTTPS for a token allowed get on /metrics (the metrics-reader ClusterRole); the probes stay plain HTTP on ports.health */}}
- --metrics-auth=delegated
{{- end -}}

{{/* The fleet token of the apps that call every node, and how each node's root token is made from it. */}}
{{- define "sandbox-scale.fleetTokenArg" -}}
- --fleet-token-file={{ include "sandbox-scale.fleetTokenMountPath" . }}/{{ .Values.fleetToken.key }}
- --sandboxd-tokens={{ ternary "per-node" "fleet" .Values.fleetToken.perNode }}
{{- end -}}

{{- define "sandbox-scale.nodeTokenMountPath" -}}/var/run/sandbox-scale/node-token{{- end -}}

{{- define "sandbox-scale.leaderArgs" -}}
{{- if .component.leaderElect }}
{{- $le := .root.Values.leaderElection }}
{{- $lease := include "sandbox-scale.durationMs" (dict "value" $le.leaseDuration "field" "leaderElection.leaseDuration") | atoi }}
{{- $renew := include "sandbox-scale.durationMs" (dict "value" $le.renewDeadline "field" "leaderElection.renewDeadline") | atoi }}
{{- $retry := include "sandbox-scale.durationMs" (dict "value" $le.retryPeriod "field" "leaderElection.retryPeriod") | atoi }}
{{- if ge $renew $lease }}
{{- fail (printf "leaderElection.renewDeadline (%s) must be shorter than leaderElection.leaseDuration (%s): a leader must stop leading before a standby may take over" $le.renewDeadline $le.leaseDuration) }}
{{- end }}
{{- if ge (mul $retry 6) (mul $renew 5) }}
{{- fail (printf "leaderElection.retryPeriod (%s) x 1.2 must be shorter than leaderElection.renewDeadline (%s): the leader needs room for a retry" $le.retryPeriod $le.renewDeadline) }}
{{- end }}
{{- if lt $lease 1000 }}
{{- fail (printf "leaderElection.leaseDuration (%s) must be at least 1s: a Lease counts whole seconds" $le.leaseDuration) }}
{{- end }}
- --leader-elect=true
- --leader-election-namespace={{ .root.Release.Namespace }}
- --leader-elect-lease-duration={{ $le.leaseDuration }}
- --leader-elect-renew-deadline={{ $le.renewDeadline }}
- --leader-elect-retry-period={{ $le.retryPeriod }}
{{- end }}
{{- end -}}

{{/*
A duration as the apps' flags read it (1h30m, 15s, 500ms) in whole milliseconds; fails naming
the field when it is not one.
*/}}
{{- define "sandbox-scale.durationMs" -}}
{{- $v := toString .value }}
{{- if not (regexMatch "^([0-9]+(ms|s|m|h))+$" $v) }}
{{- fail (printf "%s: %q is not a duration (500ms, 15s, 1m, 1h30m)" .field $v) }}
{{- end }}
{{- $ms := 0 }}
{{- range regexFindAll "[0-9]+(ms|s|m|h)" $v -1 }}
{{- $n := regexFind "^[0-9]+" . | atoi }}
{{- $unit := trimPrefix (regexFind "^[0-9]+" .) . }}
{{- $ms = add $ms (mul $n (get (dict "ms" 1 "s" 1000 "m" 60000 "h" 3600000) $unit)) }}
{{- end }}
{{- $ms -}}
{{- end -}}

{{- define "sandbox-scale.env" -}}
- name: LOG_LEVEL
  value: {{ .Values.logLevel | quote }}
- name: POD_NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
- name: POD_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
{{- end -}}

{{- define "sandbox-scale.ports" -}}
- name: metrics
  containerPort: {{ .Values.ports.metrics }}
  protocol: TCP
- name: health
  containerPort: {{ .Values.ports.health }}
  protocol: TCP
{{- end -}}

{{/*
Probes on the health port, timed by the app's livenessProbe and readinessProbe values:
(dict "component" .Values.<app>), plus "port" "https" "scheme" "HTTPS" for a server that serves them itself.
*/}}
{{- define "sandbox-scale.probes" -}}
{{- $port := .port | default "health" -}}
{{- $scheme := .scheme | default "HTTP" -}}
{{- $live := .component.livenessProbe | default dict -}}
{{- $ready := .component.readinessProbe | default dict -}}
livenessProbe:
  httpGet:
    path: /healthz
    port: {{ $port }}
    scheme: {{ $scheme }}
  timeoutSeconds: {{ $live.timeoutSeconds | default 1 }}
  periodSeconds: {{ $live.periodSeconds | default 10 }}
  failureThreshold: {{ $live.failureThreshold | default 3 }}
readinessProbe:
  httpGet:
    path: /readyz
    port: {{ $port }}
    scheme: {{ $scheme }}
  timeoutSeconds: {{ $ready.timeoutSeconds | default 1 }}
  periodSeconds: {{ $ready.periodSeconds | default 5 }}
  failureThreshold: {{ $ready.failureThreshold | default 3 }}
startupProbe:
  httpGet:
    path: /healthz
    port: {{ $port }}
    scheme: {{ $scheme }}
  periodSeconds: 2
  failureThreshold: 30
{{- end -}}

{{- define "sandbox-scale.fleetTokenVolumeMount" -}}
- name: fleet-token
  mountPath: {{ include "sandbox-scale.fleetTokenMountPath" . }}
  readOnly: true
{{- end -}}

{{- define "sandbox-scale.fleetTokenVolume" -}}
- name: fleet-token
  secret:
    secretName: {{ .Values.fleetToken.existingSecret }}
    defaultMode: 0440
    items:
      - key: {{ .Values.fleetToken.key }}
        path: {{ .Values.fleetToken.key }}
{{- end -}}

{{/*
A pod template's metadata: the app's labels over its podLabels over the top-level podLabels (the
chart's own keys always win), and its podAnnotations over the top-level ones:
(dict "root" $ "app" "<app>" "component" .Values.<app>).
*/}}
{{- define "sandbox-scale.podMetadata" -}}
{{- $labels := merge (fromYaml (include "sandbox-scale.appLabels" .)) (deepCopy (.component.podLabels | default dict)) (deepCopy (.root.Values.podLabels | default dict)) -}}
{{- $annotations := merge (deepCopy (.component.podAnnotations | default dict)) (deepCopy (.root.Values.podAnnotations | default dict)) -}}
labels:
  {{- toYaml $labels | nindent 2 }}
{{- with $annotations }}
annotations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* Pod-level settings shared by every workload: (dict "root" $ "app" "<app>" "component" .Values.<app>). */}}
{{- define "sandbox-scale.podCommon" -}}
{{- with .root.Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
securityContext:
  {{- toYaml .root.Values.podSecurityContext | nindent 2 }}
automountServiceAccountToken: true
enableServiceLinks: false
{{- with .component.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .component.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- $selector := fromYaml (include "sandbox-scale.selectorLabels" .) }}
{{- with .component.topologySpreadConstraints }}
topologySpreadConstraints:
  {{- range . }}
  {{- $c := deepCopy . }}
  {{- if not (hasKey $c "labelSelector") }}
  {{- $_ := set $c "labelSelector" (dict "matchLabels" $selector) }}
  {{- end }}
  {{- toYaml (list $c) | nindent 2 }}
  {{- end }}
{{- end }}
{{- end -}}

{{/* Validates combinations the schema cannot express. */}}
{{- define "sandbox-scale.validate" -}}
{{- if and (include "sandbox-scale.keptObjects" .) (not .Values.warmpoolDriver.enabled) -}}
{{- fail "warmpool-driver's leader creates and renews the certificates and the claim-reference key: set warmpoolDriver.enabled=true, or certificates.existingSecrets=true with Secrets of your own (docs/operations.md, Certificates)" -}}
{{- end -}}
{{- if and .Values.certManager.enabled (or (include "sandbox-scale.servesApiserver" .) (include "sandbox-scale.servesFastPath" .)) (not (.Capabilities.APIVersions.Has "cert-manager.io/v1/Certificate")) -}}
{{- fail "certManager.enabled=true needs cert-manager's CRDs (cert-manager.io/v1 Certificate and Issuer), which this cluster does not serve: install cert-manager first, or leave certManager.enabled=false" -}}
{{- end -}}
{{- if and .Values.certificates.existingSecrets .Values.apiService.enabled (not .Values.apiService.caBundle) (not .Values.apiService.insecureSkipTLSVerify) (not .Values.certManager.enabled) -}}
{{- fail "certificates.existingSecrets=true: set apiService.caBundle to the base64 PEM of the CA that signed <fullname>-sandbox-apiserver-serving" -}}
{{- end -}}
{{- if and .Values.apiService.caBundle .Values.apiService.insecureSkipTLSVerify -}}
{{- fail "apiService.caBundle and apiService.insecureSkipTLSVerify are exclusive: kube-apiserver rejects an APIService with both" -}}
{{- end -}}
{{- if and (include "sandbox-scale.publisherApart" .) .Values.inventoryPublisher.enabled .Values.inventoryPublisher.notices.enabled (or (not .Values.apiService.enabled) .Values.apiService.insecureSkipTLSVerify) -}}
{{- fail "inventoryPublisher.namespace: a publisher in a namespace of its own reads the CA for node notices from the APIService's caBundle; set apiService.enabled=true without insecureSkipTLSVerify, or inventoryPublisher.notices.enabled=false" -}}
{{- end -}}
{{- if and .Values.apiService.external.host .Values.sandboxApiserver.enabled .Values.workloads -}}
{{- fail "apiService.external.host points the APIService outside the cluster: set sandboxApiserver.enabled=false (or workloads=false) as well" -}}
{{- end -}}
{{- end -}}

{{/*
The namespace of the node DaemonSet, its ServiceAccount and its metrics Service: the release's
unless inventoryPublisher.namespace names one of its own (its hostPath mount of the node's token
needs Pod Security "privileged", which the rest of the control plane should not share).
*/}}
{{- define "sandbox-scale.publisherNamespace" -}}
{{- .Values.inventoryPublisher.namespace | default .Release.Namespace -}}
{{- end -}}
{{/* True when the publisher lives in a namespace of its own, so it cannot mount the serving Secret's CA. */}}
{{- define "sandbox-scale.publisherApart" -}}
{{- if ne (include "sandbox-scale.publisherNamespace" .) .Release.Namespace }}true{{ end -}}
{{- end -}}
{{/* The APIService's fixed name (<version>.<group>). */}}
{{- define "sandbox-scale.apiServiceName" -}}v1beta1.agents.x-k8s.io{{- end -}}

{{/* Which of the chart's servers run in the cluster, and so need a serving certificate. */}}
{{- define "sandbox-scale.servesApiserver" -}}
{{- if and .Values.workloads .Values.sandboxApiserver.enabled (not .Values.apiService.external.host) }}true{{ end -}}
{{- end -}}
{{- define "sandbox-scale.servesFastPath" -}}
{{- if and .Values.workloads .Values.claimController.enabled .Values.claimController.fastPath.enabled }}true{{ end -}}
{{- end -}}
{{- define "sandbox-scale.usesClaimRefKey" -}}
{{- if and .Values.workloads (or .Values.claimController.enabled .Values.sandboxApiserver.enabled) }}true{{ end -}}
{{- end -}}

{{/*
What warmpool-driver's leader keeps (its --keep-certificates), as JSON; empty when it keeps
nothing. By default: the CA, the serving certificates it signs, the claim-reference key and the
APIService caBundle. Under cert-manager the claim-reference key only (cert-manager issues
certificates, not MAC keys); with certificates.existingSecrets nothing.
*/}}
{{- define "sandbox-scale.keptObjects" -}}
{{- if not .Values.certificates.existingSecrets -}}
{{- $fullname := include "sandbox-scale.fullname" . -}}
{{- $kept := dict "namespace" .Release.Namespace -}}
{{- if include "sandbox-scale.usesClaimRefKey" . -}}
{{- $_ := set $kept "claimRefKeySecret" (include "sandbox-scale.claimRefKeySecretName" .) -}}
{{- end -}}
{{- $serving := list -}}
{{- if include "sandbox-scale.servesApiserver" . -}}
{{- $serving = append $serving (dict "secret" (printf "%s-serving" (include "sandbox-scale.apiserverServiceName" .)) "dnsNames" (splitList "\n" (include "sandbox-scale.apiserverDnsNames" .))) -}}
{{- end -}}
{{- if include "sandbox-scale.servesFastPath" . -}}
{{- $svc := include "sandbox-scale.fastPathServiceName" . -}}
{{- $serving = append $serving (dict "secret" (printf "%s-serving" $svc) "dnsNames" (splitList "\n" (include "sandbox-scale.serviceDnsNames" (dict "root" . "service" $svc)))) -}}
{{- end -}}
{{- if and $serving (not .Values.certManager.enabled) -}}
{{- $_ := set $kept "caSecret" (printf "%s-ca" $fullname) -}}
{{- $_ := set $kept "serving" $serving -}}
{{- if and .Values.apiService.enabled (include "sandbox-scale.servesApiserver" .) (not .Values.apiService.insecureSkipTLSVerify) -}}
{{- $_ := set $kept "apiService" "v1beta1.agents.x-k8s.io" -}}
{{- end -}}
{{- end -}}
{{- if or (hasKey $kept "claimRefKeySecret") (hasKey $kept "caSecret") -}}
{{- toJson $kept -}}
{{- end -}}
{{- end -}}
{{- end -}}
