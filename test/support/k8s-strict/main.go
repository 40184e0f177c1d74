// k8s-strict reads Kubernetes objects as YAML documents on stdin and decodes each strictly into
// the Kubernetes API's own Go types (k8s.io/api), the way the API server's strict field
// validation does: a field the type does not have (a misspelt key in a template), a duplicate
// field or a value of the wrong type is reported as "Kind/name: problem", one per line. It exits
// 1 when any object has a problem and 2 on a kind it does not know. Custom resources
// (monitoring.coreos.com, cert-manager.io) are skipped: their CRD schemas are checked by the kubernetes-models
// validators in the chart tests.
package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

func newObject(apiVersion, kind string) (any, bool) {
	switch apiVersion + "/" + kind {
	case "apps/v1/Deployment":
		return &appsv1.Deployment{}, true
	case "apps/v1/StatefulSet":
		return &appsv1.StatefulSet{}, true
	case "v1/Service":
		return &corev1.Service{}, true
	case "v1/Pod":
		return &corev1.Pod{}, true
	case "v1/ConfigMap":
		return &corev1.ConfigMap{}, true
	case "v1/Secret":
		return &corev1.Secret{}, true
	case "batch/v1/Job":
		return &batchv1.Job{}, true
	case "v1/ServiceAccount":
		return &corev1.ServiceAccount{}, true
	case "policy/v1/PodDisruptionBudget":
		return &policyv1.PodDisruptionBudget{}, true
	case "rbac.authorization.k8s.io/v1/ClusterRole":
		return &rbacv1.ClusterRole{}, true
	case "rbac.authorization.k8s.io/v1/ClusterRoleBinding":
		return &rbacv1.ClusterRoleBinding{}, true
	case "rbac.authorization.k8s.io/v1/Role":
		return &rbacv1.Role{}, true
	case "rbac.authorization.k8s.io/v1/RoleBinding":
		return &rbacv1.RoleBinding{}, true
	case "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy":
		return &admissionregistrationv1.ValidatingAdmissionPolicy{}, true
	case "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicyBinding":
		return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}, true
	}
	return nil, false
}

func main() {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(os.Stdin))
	problems, unknown := 0, 0
	for {
		document, err := reader.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			fmt.Printf("reading YAML: %v\n", err)
			os.Exit(2)
		}
		if len(bytes.TrimSpace(document)) == 0 {
			continue
		}
		var meta struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal(document, &meta); err != nil {
			fmt.Printf("?: %v\n", err)
			problems++
			continue
		}
		if meta.APIVersion == "" && meta.Kind == "" {
			continue
		}
		where := meta.Kind + "/" + meta.Metadata.Name
		if meta.APIVersion == "monitoring.coreos.com/v1" || meta.APIVersion == "cert-manager.io/v1" {
			continue
		}
		object, known := newObject(meta.APIVersion, meta.Kind)
		if !known {
			fmt.Printf("%s: no Go type for %s %s\n", where, meta.APIVersion, meta.Kind)
			unknown++
			continue
		}
		if err := yaml.UnmarshalStrict(document, object); err != nil {
			fmt.Printf("%s: %v\n", where, err)
			problems++
		}
	}
	if unknown > 0 {
		os.Exit(2)
	}
	if problems > 0 {
		os.Exit(1)
	}
}
