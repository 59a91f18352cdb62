package admission

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kopfgo/kopfgo/internal/kube"
	"github.com/kopfgo/kopfgo/internal/resources"
)

// Secrets is the resource the certificates are kept in.
var Secrets = resources.Resource{Version: "v1", Plural: "secrets", Kind: "Secret", Namespaced: true, Preferred: true}

// The Secret's keys: ca.crt, tls.crt and tls.key as cert-manager and the
// kubernetes.io/tls type name them, so that other tools can read it.
const (
	keyBundle   = "ca.crt"
	keyCAKey    = "ca.key"
	keyCert     = "tls.crt"
	keyKey      = "tls.key"
	keyNextCert = "next.crt"
	keyNextKey  = "next.key"
	keyNextAt   = "next.at"
	keyRetireAt = "retire.at"
)

// kubeSecrets is the Secret in the cluster.
type kubeSecrets struct {
	client          *kube.Client
	namespace, name string
}

func (k *kubeSecrets) get(ctx context.Context) (*certState, error) {
	obj, err := k.client.Get(ctx, Secrets, k.namespace, k.name)
	if errors.Is(err, kube.ErrGone) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	data, _, _ := unstructured.NestedStringMap(obj.Object, "data")
	field := func(key string) []byte {
		b, err := base64.StdEncoding.DecodeString(data[key])
		if err != nil {
			return nil
		}
		return b
	}
	when := func(key string) time.Time {
		t, _ := time.Parse(time.RFC3339Nano, string(field(key)))
		return t
	}
	s := &certState{
		Bundle: field(keyBundle), CAKey: field(keyCAKey),
		Serving:  keyPair{Cert: field(keyCert), Key: field(keyKey)},
		NextAt:   when(keyNextAt),
		RetireAt: when(keyRetireAt),

		resourceVersion: obj.GetResourceVersion(),
	}
	if c, key := field(keyNextCert), field(keyNextKey); len(c) > 0 && len(key) > 0 {
		s.Next = &keyPair{Cert: c, Key: key}
	}
	return s, nil
}

func (k *kubeSecrets) object(s *certState) *unstructured.Unstructured {
	data := map[string]any{}
	put := func(key string, b []byte) {
		if len(b) > 0 {
			data[key] = base64.StdEncoding.EncodeToString(b)
		}
	}
	put(keyBundle, s.Bundle)
	put(keyCAKey, s.CAKey)
	put(keyCert, s.Serving.Cert)
	put(keyKey, s.Serving.Key)
	if s.Next != nil {
		put(keyNextCert, s.Next.Cert)
		put(keyNextKey, s.Next.Key)
		put(keyNextAt, []byte(s.NextAt.UTC().Format(time.RFC3339Nano)))
	}
	if !s.RetireAt.IsZero() {
		put(keyRetireAt, []byte(s.RetireAt.UTC().Format(time.RFC3339Nano)))
	}
	meta := map[string]any{"name": k.name, "namespace": k.namespace,
		"labels": map[string]any{"app.kubernetes.io/managed-by": "kopfgo"}}
	if s.resourceVersion != "" {
		meta["resourceVersion"] = s.resourceVersion
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret", "type": "Opaque", "metadata": meta, "data": data,
	}}
}

func (k *kubeSecrets) create(ctx context.Context, s *certState) error {
	_, err := k.client.Create(ctx, Secrets, k.namespace, k.object(s))
	if apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("%w: %w", errStale, err)
	}
	return err
}

func (k *kubeSecrets) update(ctx context.Context, s *certState) error {
	_, err := k.client.Update(ctx, Secrets, k.namespace, k.object(s))
	if apierrors.IsConflict(err) {
		return fmt.Errorf("%w: %w", errStale, err)
	}
	return err
}
