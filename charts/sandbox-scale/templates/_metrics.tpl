{{/*
The apps that serve /metrics, with where: a list of dicts {app, enabled, port, scheme}. Plain
HTTP on ports.metrics for the controllers and the publisher; sandbox-apiserver on its secure port.
*/}}
{{- define "sandbox-scale.metricsApps" -}}
{{- $v := .Values -}}
{{- $apps := list
  (dict "app" "claim-controller" "enabled" $v.claimController.enabled "port" $v.ports.metrics "targetPort" "metrics" "scheme" "http")
  (dict "app" "warmpool-driver" "enabled" $v.warmpoolDriver.enabled "port" $v.ports.metrics "targetPort" "metrics" "scheme" "http")
  (dict "app" "inventory-publisher" "enabled" $v.inventoryPublisher.enabled "port" $v.ports.metrics "targetPort" "metrics" "scheme" "http")
  (dict "app" "sandbox-apiserver" "enabled" $v.sandboxApiserver.enabled "port" $v.sandboxApiserver.securePort "targetPort" "https" "scheme" "https")
-}}
{{- toJson $apps -}}
{{- end -}}
