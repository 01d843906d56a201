{{/*
The apps that serve /metrics, with where and how it is checked: a list of dicts {app, enabled,
port, targetPort, caSecret}. Every one serves it over HTTPS to a bearer token allowed get on
/metrics (the metrics-reader ClusterRole): the controllers and the publisher on ports.metrics
(--metrics-auth=delegated), sandbox-apiserver on its secure port. caSecret names the Secret whose
ca.crt signed the app's certificate (its Service's name is the serverName); empty: the app made
its certificate itself at start, there is no CA to give, and the ServiceMonitor skips verification.
*/}}
{{- define "sandbox-scale.metricsApps" -}}
{{- $v := .Values -}}
{{- $cc := include "sandbox-scale.appName" (dict "root" . "app" "claim-controller") -}}
{{- $api := include "sandbox-scale.appName" (dict "root" . "app" "sandbox-apiserver") -}}
{{- $apps := list
  (dict "app" "claim-controller" "enabled" $v.claimController.enabled "port" $v.ports.metrics "targetPort" "metrics" "caSecret" (ternary (printf "%s-serving" $cc) "" $v.claimController.fastPath.enabled))
  (dict "app" "warmpool-driver" "enabled" $v.warmpoolDriver.enabled "port" $v.ports.metrics "targetPort" "metrics" "caSecret" "")
  (dict "app" "inventory-publisher" "enabled" $v.inventoryPublisher.enabled "port" $v.ports.metrics "targetPort" "metrics" "caSecret" "")
  (dict "app" "sandbox-apiserver" "enabled" $v.sandboxApiserver.enabled "port" $v.sandboxApiserver.securePort "targetPort" "https" "caSecret" (printf "%s-serving" $api))
-}}
{{- toJson $apps -}}
{{- end -}}
