package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"path"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	jsonserializer "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/kopfgo/kopfgo/internal/resources"
)

// rawPatcher sends merge patches and reads back only the resourceVersion of
// the result. The dynamic client decodes every response into a whole
// unstructured object, which the operator never looks at: for the two
// patches of a handling cycle that was most of the operator's own garbage.
type rawPatcher struct {
	rest rest.Interface
}

func newRawPatcher(cfg *rest.Config) (*rawPatcher, error) {
	rc, err := newRawREST(cfg)
	if err != nil {
		return nil, fmt.Errorf("cannot create the patching client: %w", err)
	}
	return &rawPatcher{rest: rc}, nil
}

// newRawREST builds a REST client that hands back response bodies as they
// are, always JSON. Only metav1.Status needs decoding (for API errors, which
// come out as the dynamic client's would): a scheme of its own keeps the typed
// API groups out of the operator's binary.
func newRawREST(cfg *rest.Config) (rest.Interface, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.AcceptContentTypes = "application/json"
	cfg.ContentType = "application/json"
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	// The bare JSON serializer, without a codec factory's versioning, leaves
	// the Status's kind and apiVersion in place, as the dynamic client does.
	cfg.NegotiatedSerializer = runtime.NewSimpleNegotiatedSerializer(runtime.SerializerInfo{
		MediaType: "application/json", MediaTypeType: "application", MediaTypeSubType: "json", EncodesAsText: true,
		Serializer: jsonserializer.NewSerializerWithOptions(jsonserializer.DefaultMetaFactory, s, s, jsonserializer.SerializerOptions{}),
	})
	cfg.GroupVersion = &schema.GroupVersion{}
	cfg.APIPath = "/"
	return rest.UnversionedRESTClientFor(cfg)
}

// resourcePath is the URL path of a resource's collection (name ""), of an
// object, or of an object's subresource.
func resourcePath(res resources.Resource, namespace, name, sub string) string {
	p := "/apis/" + res.Group + "/" + res.Version
	if res.Group == "" {
		p = "/api/" + res.Version
	}
	if res.Namespaced && namespace != "" {
		p = path.Join(p, "namespaces", namespace)
	}
	return path.Join(p, res.Plural, name, sub)
}

// metadataOnly asks the API server to answer with the patched object's
// metadata only (a PartialObjectMetadata), or with the whole object where
// that form is not served: the operator reads only the resourceVersion, and
// encoding, sending and scanning the rest cost both sides CPU for nothing.
const metadataOnly = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1, application/json"

// patch sends one merge patch (to the status subresource when sub is
// "status") and returns the resulting resourceVersion.
func (r *rawPatcher) patch(ctx context.Context, res resources.Resource, namespace, name string, data []byte, sub string) (string, error) {
	p := resourcePath(res, namespace, name, sub)
	result := r.rest.Patch(types.MergePatchType).AbsPath(p).Body(data).
		SetHeader("Accept", metadataOnly).Do(ctx)
	if err := result.Error(); err != nil {
		return "", err // Error, unlike Raw, reads the API server's Status
	}
	body, err := result.Raw()
	if err != nil {
		return "", err
	}
	var head struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(body, &head); err != nil {
		return "", fmt.Errorf("cannot read the patched object: %w", err)
	}
	return head.Metadata.ResourceVersion, nil
}
