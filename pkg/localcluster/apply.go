package localcluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/lathe-autoscaler/lathe/pkg/apis/crds"
)

const (
	// FieldManager owns the fields of everything Applier applies.
	FieldManager = "lathe-local"
	// defaultNamespace is where namespaced objects without a namespace go, as with kubectl.
	defaultNamespace = "default"
	// discoveryTimeout bounds the wait for the API of a just-established CRD to be served.
	discoveryTimeout = 30 * time.Second
	// establishedTimeout bounds the wait for a CRD to become Established.
	establishedTimeout = time.Minute
	applyPollInterval  = 200 * time.Millisecond
)

// Applier server-side applies manifests, as kubectl apply --server-side --force-conflicts does.
type Applier struct {
	client dynamic.Interface
	mapper meta.RESTMapper
}

// NewApplier returns an Applier that talks to the cluster cfg points at.
func NewApplier(cfg *rest.Config) (*Applier, error) {
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("building HTTP client, %w", err)
	}
	mapper, err := apiutil.NewDynamicRESTMapper(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("building REST mapper, %w", err)
	}
	client, err := dynamic.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("building dynamic client, %w", err)
	}
	return &Applier{client: client, mapper: mapper}, nil
}

// Apply applies every object in manifest, a stream of YAML or JSON documents, in order, after
// replacing each ${NAME} with vars[NAME] (see Substitute). Namespaced objects without a namespace go to
// the default namespace. It returns the objects as the API server stored them.
func (a *Applier) Apply(ctx context.Context, manifest []byte, vars map[string]string) ([]*unstructured.Unstructured, error) {
	manifest, err := Substitute(manifest, vars)
	if err != nil {
		return nil, err
	}
	return a.applyManifest(ctx, manifest)
}

// InstallCRDs applies Lathe's CustomResourceDefinitions (NodePool, NodeClaim, EC2NodeClass) and waits
// until each one is Established.
func (a *Applier) InstallCRDs(ctx context.Context) error {
	files, err := crds.Files()
	if err != nil {
		return fmt.Errorf("reading CRDs, %w", err)
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	var applied []*unstructured.Unstructured
	for _, name := range names {
		objs, err := a.applyManifest(ctx, files[name])
		if err != nil {
			return fmt.Errorf("installing %s, %w", name, err)
		}
		applied = append(applied, objs...)
	}
	for _, obj := range applied {
		if err := a.waitEstablished(ctx, obj.GetName()); err != nil {
			return err
		}
	}
	return nil
}

func (a *Applier) applyManifest(ctx context.Context, manifest []byte) ([]*unstructured.Unstructured, error) {
	objs, err := decodeManifest(manifest)
	if err != nil {
		return nil, err
	}
	out := make([]*unstructured.Unstructured, 0, len(objs))
	for _, obj := range objs {
		applied, err := a.applyObject(ctx, obj)
		if err != nil {
			return nil, fmt.Errorf("applying %s %q, %w", obj.GetKind(), obj.GetName(), err)
		}
		out = append(out, applied)
	}
	return out, nil
}

func (a *Applier) applyObject(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	gvk := obj.GroupVersionKind()
	var mapping *meta.RESTMapping
	// A kind whose CRD was just established can take a moment to show up in discovery.
	err := wait.PollUntilContextTimeout(ctx, applyPollInterval, discoveryTimeout, true, func(context.Context) (bool, error) {
		var err error
		mapping, err = a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if meta.IsNoMatchError(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		return nil, fmt.Errorf("finding the API resource of %s, %w", gvk, err)
	}
	var resource dynamic.ResourceInterface = a.client.Resource(mapping.Resource)
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		if obj.GetNamespace() == "" {
			obj.SetNamespace(defaultNamespace)
		}
		resource = a.client.Resource(mapping.Resource).Namespace(obj.GetNamespace())
	}
	if err := recordLastApplied(obj); err != nil {
		return nil, err
	}
	applied, err := resource.Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	if err != nil {
		return nil, fmt.Errorf("server-side applying, %w", err)
	}
	return applied, nil
}

// lastAppliedAnnotation is where `kubectl apply` keeps the configuration it applied last.
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// recordLastApplied stores the object's configuration in the annotation `kubectl apply` keeps, as
// `kubectl apply` itself would, so that a user who later runs `kubectl apply` on the same manifest gets
// a clean three-way merge instead of a warning about the missing annotation.
func recordLastApplied(obj *unstructured.Unstructured) error {
	config := obj.DeepCopy()
	annotations := config.GetAnnotations()
	delete(annotations, lastAppliedAnnotation)
	config.SetAnnotations(annotations)
	data, err := json.Marshal(config.Object)
	if err != nil {
		return fmt.Errorf("encoding the applied configuration of %s %q, %w", obj.GetKind(), obj.GetName(), err)
	}
	annotations = obj.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[lastAppliedAnnotation] = string(data) + "\n"
	obj.SetAnnotations(annotations)
	return nil
}

func (a *Applier) waitEstablished(ctx context.Context, name string) error {
	gvr := apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions")
	err := wait.PollUntilContextTimeout(ctx, applyPollInterval, establishedTimeout, true, func(ctx context.Context) (bool, error) {
		u, err := a.client.Resource(gvr).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, crd); err != nil {
			return false, fmt.Errorf("decoding CRD, %w", err)
		}
		for _, c := range crd.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for CRD %s to be established, %w", name, err)
	}
	return nil
}

// decodeManifest splits a YAML or JSON stream into objects, skipping empty documents.
func decodeManifest(manifest []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(manifest), 4096)
	var objs []*unstructured.Unstructured
	for i := 1; ; i++ {
		var raw runtime.RawExtension
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("decoding document %d, %w", i, err)
		}
		raw.Raw = bytes.TrimSpace(raw.Raw)
		if len(raw.Raw) == 0 || bytes.Equal(raw.Raw, []byte("null")) {
			continue
		}
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(raw.Raw); err != nil {
			return nil, fmt.Errorf("decoding document %d, %w", i, err)
		}
		objs = append(objs, obj)
	}
}
