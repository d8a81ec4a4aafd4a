{{/* Generated (controller/install/chart.go): do not edit. */}}

{{/* The controller's image: image.repository with image.digest, else image.tag (default the chart's appVersion). */}}
{{- define "nap.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end }}

{{/* admission.mode, auto resolved as napctl install --admission auto does: the
MutatingAdmissionPolicy where the API server serves it, unless what the values ask needs
the webhook (a policy that reads Services, delivery auto, cert-manager). */}}
{{- define "nap.admission" -}}
{{- if ne .Values.admission.mode "auto" -}}
{{ .Values.admission.mode }}
{{- else if and (or [[ has .PolicyAPIV1 ]] [[ has .PolicyAPIV1beta ]]) (not (has .Values.[[ .ScopeFlag ]] (list [[ .ByServiceScopes ]]))) (ne .Values.delivery.mode "[[ .DeliveryAuto ]]") (not .Values.certManager.enabled) -}}
policy
{{- else -}}
webhook
{{- end -}}
{{- end }}

{{/* A duration of the values in whole ms or s ("0", "1500ms", "2s"): nanoseconds, and as the hook's argument (wait.Arg). */}}
{{- define "nap.ns" -}}
{{- if eq . "0" -}}
0
{{- else if hasSuffix "ms" . -}}
{{ mul (trimSuffix "ms" .) 1000000 }}
{{- else -}}
{{ mul (trimSuffix "s" .) 1000000000 }}
{{- end -}}
{{- end }}

{{- define "nap.arg" -}}
{{- $ns := include "nap.ns" . | int64 -}}
{{- if eq (mod $ns 1000000000) 0 -}}
{{ div $ns 1000000000 }}s
{{- else -}}
{{ div $ns 1000000 }}ms
{{- end -}}
{{- end }}

{{/* The MutatingAdmissionPolicy's API: admission.policyAPIVersion, else the one the API server serves (v1 first). */}}
{{- define "nap.policyAPIVersion" -}}
{{- if .Values.admission.policyAPIVersion -}}
{{ .Values.admission.policyAPIVersion }}
{{- else if [[ has .PolicyAPIV1 ]] -}}
[[ .PolicyAPIV1 ]]
{{- else if [[ has .PolicyAPIV1beta ]] -}}
[[ .PolicyAPIV1beta ]]
{{- else -}}
[[ .PolicyAPIV1 ]]
{{- end -}}
{{- end }}
