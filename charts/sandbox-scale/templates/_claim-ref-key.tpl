{{- /*
The key claim-controller and sandbox-apiserver prove their claim references with (a keyed MAC
on every claim_ref they write on a node, see docs/security.md): 32 random bytes, base64, in the
Secret <fullname>-claim-ref-key. No template makes it: warmpool-driver's leader creates it once
when absent and never replaces it (or you provide it, certificates.existingSecrets), so a render
never changes it and references written before an upgrade stay proven. Mounted as a file
(--claim-ref-key-file); neither app reads Secrets through the API for it.
*/ -}}
{{- define "sandbox-scale.claimRefKeySecretName" -}}{{ include "sandbox-scale.fullname" . }}-claim-ref-key{{- end -}}
{{- define "sandbox-scale.claimRefKeyMountPath" -}}/var/run/sandbox-scale/claim-ref-key{{- end -}}

{{- define "sandbox-scale.claimRefKeyArg" -}}
- --claim-ref-key-file={{ include "sandbox-scale.claimRefKeyMountPath" . }}/key
{{- end -}}

{{- define "sandbox-scale.claimRefKeyVolumeMount" -}}
- name: claim-ref-key
  mountPath: {{ include "sandbox-scale.claimRefKeyMountPath" . }}
  readOnly: true
{{- end -}}

{{- define "sandbox-scale.claimRefKeyVolume" -}}
- name: claim-ref-key
  secret:
    secretName: {{ include "sandbox-scale.claimRefKeySecretName" . }}
    defaultMode: 0440
    items:
      - key: key
        path: key
{{- end -}}
