package kube

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// eventsGVR is core v1 Events, the ones `kubectl describe` shows; Kopf posts
// these, not events.k8s.io.
var eventsGVR = schema.GroupVersionResource{Version: "v1", Resource: "events"}

// PostEvent creates a core v1 Event in namespace from body.
func (c *Client) PostEvent(ctx context.Context, namespace string, body map[string]any) error {
	obj := &unstructured.Unstructured{Object: body}
	obj.SetAPIVersion("v1")
	obj.SetKind("Event")
	if _, err := c.Dynamic.Resource(eventsGVR).Namespace(namespace).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating an event in namespace %s: %w", namespace, err)
	}
	return nil
}
