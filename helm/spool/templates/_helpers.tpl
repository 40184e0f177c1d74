{{/*
Names, labels and addresses shared by the templates. Every define is namespaced "spool.".
*/}}

{{/* The chart name, or nameOverride. */}}
{{- define "spool.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 40 | trimSuffix "-" -}}
{{- end -}}

{{/*
The prefix of every resource name: "<release>-spool", or the release name alone when it already
contains the chart name. Kept to 40 characters so "<prefix>-storage-headless" and pod names with
an ordinal stay within Kubernetes' 63-character DNS label limit.
*/}}
{{- define "spool.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "spool.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* "name-version" of the chart, for the helm.sh/chart label. */}}
{{- define "spool.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels that select one component's pods. Call with (dict "root" $ "component" "gateway"). */}}
{{- define "spool.selectorLabels" -}}
app.kubernetes.io/name: {{ include "spool.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* Every label of one component's resources. Call with (dict "root" $ "component" "gateway"). */}}
{{- define "spool.labels" -}}
{{ include "spool.selectorLabels" . }}
app.kubernetes.io/part-of: spool
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
helm.sh/chart: {{ include "spool.chart" .root }}
{{- end -}}

{{/* The Spool image reference. */}}
{{- define "spool.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* The ServiceAccount Spool's pods run as. */}}
{{- define "spool.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "spool.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* Ports each service listens on; containers, Services and probes all read them from here. */}}
{{- define "spool.ports" -}}
{{- $ports := dict
  "controller" (dict "grpc" 9093 "metrics" 9193)
  "storage-node" (dict "grpc" 9092 "metrics" 9192 "data" 9292)
  "coordinator" (dict "grpc" 9094 "metrics" 9194)
  "gateway" (dict "grpc" 9090 "metrics" 9190 "kafka" 9092)
-}}
{{- toJson $ports -}}
{{- end -}}

{{/* One service's port: (dict "root" $ "component" "controller" "port" "grpc"). */}}
{{- define "spool.port" -}}
{{- $ports := include "spool.ports" .root | fromJson -}}
{{- index (index $ports .component) .port | int -}}
{{- end -}}

{{/* The DNS suffix of this release's Services: "<namespace>.svc.<cluster domain>". */}}
{{- define "spool.serviceDomain" -}}
{{- printf "%s.svc.%s" .Release.Namespace .Values.clusterDomain -}}
{{- end -}}

{{/* The headless Service that gives each storage node its stable name. */}}
{{- define "spool.storageHeadlessServiceName" -}}
{{- printf "%s-storage-headless" (include "spool.fullname" .) -}}
{{- end -}}

{{/* The headless Service of the chart's etcd members. */}}
{{- define "spool.etcdHeadlessServiceName" -}}
{{- printf "%s-etcd-headless" (include "spool.fullname" .) -}}
{{- end -}}

{{/* Controller addresses given to the other services: the controller Service; any controller
answers with the active one's address, which the services then follow. */}}
{{- define "spool.controllerAddresses" -}}
{{- printf "%s-controller.%s:%d" (include "spool.fullname" .) (include "spool.serviceDomain" .) (include "spool.port" (dict "root" . "component" "controller" "port" "grpc") | int) -}}
{{- end -}}

{{/* The gateway's address inside the cluster, for the helm test Pod and NOTES.txt. */}}
{{- define "spool.gatewayAddress" -}}
{{- printf "%s-gateway.%s:%d" (include "spool.fullname" .) (include "spool.serviceDomain" .) (.Values.gateway.service.port | int) -}}
{{- end -}}

{{/* etcd client endpoints: the external ones, or every member of the chart's StatefulSet. */}}
{{- define "spool.etcdEndpoints" -}}
{{- if .Values.etcd.external.endpoints -}}
{{- join "," .Values.etcd.external.endpoints -}}
{{- else -}}
{{- $fullname := include "spool.fullname" . -}}
{{- $headless := include "spool.etcdHeadlessServiceName" . -}}
{{- $domain := include "spool.serviceDomain" . -}}
{{- $endpoints := list -}}
{{- range $ordinal := until (.Values.etcd.replicas | int) -}}
{{- $endpoints = append $endpoints (printf "%s://%s-etcd-%d.%s.%s:2379" (ternary "https" "http" $.Values.tls.enabled) $fullname $ordinal $headless $domain) -}}
{{- end -}}
{{- join "," $endpoints -}}
{{- end -}}
{{- end -}}

{{/*
Pod affinity keeping one component's pods apart: (dict "root" $ "component" "gateway" "mode"
"soft"). soft prefers other Kubernetes nodes, hard requires them, none says nothing.
*/}}
{{- define "spool.antiAffinity" -}}
{{- if eq .mode "hard" }}
podAntiAffinity:
  requiredDuringSchedulingIgnoredDuringExecution:
    - topologyKey: kubernetes.io/hostname
      labelSelector:
        matchLabels:
          {{- include "spool.selectorLabels" (dict "root" .root "component" .component) | nindent 10 }}
{{- else if eq .mode "soft" }}
podAntiAffinity:
  preferredDuringSchedulingIgnoredDuringExecution:
    - weight: 100
      podAffinityTerm:
        topologyKey: kubernetes.io/hostname
        labelSelector:
          matchLabels:
            {{- include "spool.selectorLabels" (dict "root" .root "component" .component) | nindent 12 }}
{{- end }}
{{- end -}}

{{/* Prometheus scrape annotations of a pod: (dict "root" $ "component" "gateway"). */}}
{{- define "spool.scrapeAnnotations" -}}
{{- if .root.Values.metrics.scrapeAnnotations }}
prometheus.io/scrape: "true"
prometheus.io/port: {{ include "spool.port" (dict "root" .root "component" .component "port" "metrics") | quote }}
prometheus.io/path: /metrics
{{- end }}
{{- end -}}

{{/*
Environment every Spool container gets: bind all interfaces, the listener ports the container
declares, the log level, and the pod's identity from the downward API.
Call with (dict "root" $ "component" "gateway").
*/}}
{{- define "spool.commonEnv" -}}
- name: POD_NAME
  valueFrom:
    fieldRef:
      fieldPath: metadata.name
- name: POD_NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
- name: POD_IP
  valueFrom:
    fieldRef:
      fieldPath: status.podIP
- name: SPOOL_HOST
  value: 0.0.0.0
- name: SPOOL_GRPC_PORT
  value: {{ include "spool.port" (dict "root" .root "component" .component "port" "grpc") | quote }}
- name: SPOOL_METRICS_PORT
  value: {{ include "spool.port" (dict "root" .root "component" .component "port" "metrics") | quote }}
- name: SPOOL_LOG_LEVEL
  value: {{ .root.Values.logLevel | quote }}
{{- include "spool.tlsEnv" . }}
{{- end -}}

{{/* The container ports of one component: (dict "root" $ "component" "gateway"). */}}
{{- define "spool.containerPorts" -}}
{{- $ports := include "spool.ports" .root | fromJson -}}
{{- range $name, $port := index $ports .component }}
- name: {{ $name }}
  containerPort: {{ $port | int }}
  protocol: TCP
{{- end }}
{{- end -}}

{{/* Readiness and liveness probes on the operations port: (dict "root" $ "component" "gateway"). */}}
{{- define "spool.probes" -}}
readinessProbe:
  httpGet:
    path: /readyz
    port: metrics
  periodSeconds: 5
  timeoutSeconds: 3
  failureThreshold: 3
livenessProbe:
  httpGet:
    path: /healthz
    port: metrics
  initialDelaySeconds: 10
  periodSeconds: 10
  timeoutSeconds: 5
  failureThreshold: 6
{{- end -}}

{{/* Checks across values that the schema cannot express; a failure stops the install. */}}
{{- define "spool.validateValues" -}}
{{- if gt (.Values.controller.defaultReplicationFactor | int) (.Values.storageNode.replicas | int) -}}
{{- fail (printf "controller.defaultReplicationFactor (%d) is larger than storageNode.replicas (%d): topics created without a replication factor could not be placed" (.Values.controller.defaultReplicationFactor | int) (.Values.storageNode.replicas | int)) -}}
{{- end -}}
{{- if and .Values.rackAwareness.topologyKey (not .Values.serviceAccount.create) (not .Values.serviceAccount.name) -}}
{{- fail "rackAwareness.topologyKey needs a ServiceAccount that may get nodes: set serviceAccount.create or serviceAccount.name" -}}
{{- end -}}
{{- if and .Values.authentication.enabled (not .Values.tls.enabled) -}}
{{- fail "authentication.enabled needs tls.enabled: passwords and SCRAM exchanges travel over TLS only (set tls.enabled=true, or authentication.enabled=false for an open cluster)" -}}
{{- end -}}
{{- if and (ne .Values.gateway.kafka.sslClientAuth "none") (not .Values.tls.enabled) -}}
{{- fail (printf "gateway.kafka.sslClientAuth=%s needs tls.enabled: client certificates are asked for in the TLS handshake" .Values.gateway.kafka.sslClientAuth) -}}
{{- end -}}
{{- if and .Values.tls.enabled (eq .Values.tls.issuer "cert-manager") (not (.Capabilities.APIVersions.Has "cert-manager.io/v1")) -}}
{{- fail "tls.issuer=cert-manager, but this cluster serves no cert-manager.io/v1: install cert-manager first, or set tls.issuer=chart (or auto)" -}}
{{- end -}}
{{- if and .Values.tls.enabled (ge (.Values.tls.renewBeforeDays | int) (.Values.tls.certificateValidityDays | int)) -}}
{{- fail (printf "tls.renewBeforeDays (%d) must be less than tls.certificateValidityDays (%d), or every upgrade would issue new certificates" (.Values.tls.renewBeforeDays | int) (.Values.tls.certificateValidityDays | int)) -}}
{{- end -}}
{{- if .Values.storageNode.scaleInGuard.enabled -}}
{{- if not (semverCompare ">=1.30.0-0" .Capabilities.KubeVersion.Version) -}}
{{- fail (printf "storageNode.scaleInGuard.enabled needs ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1, Kubernetes 1.30 or later, this is %s); on an older cluster set it to false and decommission brokers by hand before scaling in" .Capabilities.KubeVersion.Version) -}}
{{- end -}}
{{- if and (not .Values.serviceAccount.create) (not .Values.serviceAccount.name) -}}
{{- fail "storageNode.scaleInGuard.enabled needs a ServiceAccount the controller may update the guard's ConfigMap with: set serviceAccount.create or serviceAccount.name" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
The scale-in guard (storageNode.scaleInGuard): the ConfigMap in which the active controller
writes which storage ordinals hold nothing, and the cluster-scoped name of the admission policy
and binding that read it (the namespace is in it, so two releases never share one).
*/}}
{{- define "spool.scaleInGuardConfigMapName" -}}
{{- printf "%s-storage-scale-in" (include "spool.fullname" .) -}}
{{- end -}}

{{- define "spool.scaleInGuardPolicyName" -}}
{{- printf "%s-%s-storage-scale-in" .Release.Namespace (include "spool.fullname" .) | trunc 253 | trimSuffix "-" -}}
{{- end -}}

{{/* The host Kafka clients are told to connect to: gateway.kafka.advertisedHost, else the
gateway Service's name inside the cluster. */}}
{{- define "spool.kafkaAdvertisedHost" -}}
{{- if .Values.gateway.kafka.advertisedHost -}}
{{- .Values.gateway.kafka.advertisedHost -}}
{{- else -}}
{{- printf "%s-gateway.%s" (include "spool.fullname" .) (include "spool.serviceDomain" .) -}}
{{- end -}}
{{- end -}}

{{/* The port base Kafka clients are told storage broker N is at (base + N):
gateway.kafka.advertisedBrokerPortBase, else the Service's broker node port base when it has
one, else gateway.kafka.brokerPortBase (the Service's ports are the pods' ports). */}}
{{- define "spool.kafkaAdvertisedBrokerPortBase" -}}
{{- $service := .Values.gateway.service -}}
{{- if .Values.gateway.kafka.advertisedBrokerPortBase -}}
{{- .Values.gateway.kafka.advertisedBrokerPortBase -}}
{{- else if and (ne $service.type "ClusterIP") $service.kafkaBrokerNodePortBase -}}
{{- $service.kafkaBrokerNodePortBase -}}
{{- else -}}
{{- .Values.gateway.kafka.brokerPortBase -}}
{{- end -}}
{{- end -}}

{{/*
TLS (values tls.*). "spool.certManager" is "true" when cert-manager issues the certificates:
tls.issuer=cert-manager, or auto on a cluster that serves cert-manager.io/v1.
*/}}
{{- define "spool.certManager" -}}
{{- if .Values.tls.enabled -}}
{{- if or (eq .Values.tls.issuer "cert-manager") (and (eq .Values.tls.issuer "auto") (.Capabilities.APIVersions.Has "cert-manager.io/v1")) -}}
true
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The chart's etcd is installed (no etcd.external.endpoints). */}}
{{- define "spool.chartEtcd" -}}
{{- if not .Values.etcd.external.endpoints -}}
true
{{- end -}}
{{- end -}}

{{- define "spool.clusterCaSecretName" -}}
{{- printf "%s-cluster-ca" (include "spool.fullname" .) -}}
{{- end -}}

{{/* The Secret of one holder's certificate: (dict "root" $ "component" "gateway"). */}}
{{- define "spool.tlsSecretName" -}}
{{- printf "%s-%s-tls" (include "spool.fullname" .root) .component -}}
{{- end -}}

{{/* Where each pod mounts its certificate, key and the CA. */}}
{{- define "spool.tlsDirectory" -}}
/etc/spool/tls
{{- end -}}

{{/*
The names a holder's certificate carries, as a JSON list: (dict "root" $ "component" "gateway").
Services verify each other by the role URI, so these are the names clients and probes dial:
the Service's names for the controller, coordinator and gateway (the gateway's also localhost for
kubectl port-forward, the Kafka advertised host and tls.gatewayAlternativeNames); a storage node
and an etcd member by their names under the headless Service.
*/}}
{{- define "spool.tlsHosts" -}}
{{- $root := .root -}}
{{- $namespace := $root.Release.Namespace -}}
{{- $domain := $root.Values.clusterDomain -}}
{{- $fullname := include "spool.fullname" $root -}}
{{- $hosts := list -}}
{{- $service := "" -}}
{{- $wildcard := false -}}
{{- if eq .component "storage-node" -}}
{{- $service = include "spool.storageHeadlessServiceName" $root -}}
{{- $wildcard = true -}}
{{- else if eq .component "etcd" -}}
{{- $service = include "spool.etcdHeadlessServiceName" $root -}}
{{- $wildcard = true -}}
{{- else -}}
{{- $service = printf "%s-%s" $fullname .component -}}
{{- end -}}
{{- range $suffix := list "" (printf ".%s" $namespace) (printf ".%s.svc" $namespace) (printf ".%s.svc.%s" $namespace $domain) -}}
{{- if $wildcard -}}
{{- $hosts = append $hosts (printf "*.%s%s" $service $suffix) -}}
{{- else -}}
{{- $hosts = append $hosts (printf "%s%s" $service $suffix) -}}
{{- end -}}
{{- end -}}
{{- if eq .component "gateway" -}}
{{- $hosts = append $hosts "localhost" -}}
{{- $hosts = append $hosts (include "spool.kafkaAdvertisedHost" $root) -}}
{{- $hosts = concat $hosts $root.Values.tls.gatewayAlternativeNames -}}
{{- end -}}
{{- toJson (uniq $hosts) -}}
{{- end -}}

{{/* The holders of certificates: the four services and, when the chart installs it, etcd. */}}
{{- define "spool.tlsHolders" -}}
{{- $holders := list "controller" "storage-node" "coordinator" "gateway" -}}
{{- if include "spool.chartEtcd" . -}}
{{- $holders = append $holders "etcd" -}}
{{- end -}}
{{- toJson $holders -}}
{{- end -}}

{{/* A Spool container's TLS settings (environment): (dict "root" $ "component" "gateway"). */}}
{{- define "spool.tlsEnv" -}}
{{- if .root.Values.tls.enabled }}
- name: SPOOL_SECURITY_PROTOCOL
  value: SSL
- name: SPOOL_SSL_CERTIFICATE_LOCATION
  value: {{ include "spool.tlsDirectory" . }}/tls.crt
- name: SPOOL_SSL_KEY_LOCATION
  value: {{ include "spool.tlsDirectory" . }}/tls.key
- name: SPOOL_SSL_CA_LOCATION
  value: {{ include "spool.tlsDirectory" . }}/ca.crt
{{- end }}
{{- end -}}

{{/* The certificate's volume (pod) and mount (container): (dict "root" $ "component" ...). */}}
{{- define "spool.tlsVolume" -}}
{{- if .root.Values.tls.enabled }}
- name: tls
  secret:
    secretName: {{ include "spool.tlsSecretName" . }}
    # The pod's group (fsGroup) reads the key; nobody else.
    defaultMode: 288 # 0440
{{- end }}
{{- end -}}

{{- define "spool.tlsVolumeMount" -}}
{{- if .root.Values.tls.enabled }}
- name: tls
  mountPath: {{ include "spool.tlsDirectory" . }}
  readOnly: true
{{- end }}
{{- end -}}

{{/* The Secret holding the admin's password (key "password"). */}}
{{- define "spool.adminSecretName" -}}
{{- default (printf "%s-admin" (include "spool.fullname" .)) .Values.authentication.admin.existingSecret -}}
{{- end -}}
