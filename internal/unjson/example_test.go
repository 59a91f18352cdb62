package unjson

import (
	"bytes"
	"fmt"
)

// exampleTemplate is a KopfExample object as an API server sends it after
// Kopf-style handling: labels, annotations with the last-handled
// configuration (JSON in a string), managed fields of two managers,
// a finalizer, a spec with nested fields and numbers, and a status.
// %[1]d makes each copy distinct where real objects differ.
const exampleTemplate = `{"apiVersion":"kopf.dev/v1","kind":"KopfExample",` +
	`"metadata":{"annotations":{"kopf.zalando.org/last-handled-configuration":` +
	`"{\"spec\":{\"duration\":\"1m\",\"field\":\"value\",\"items\":[\"item1\",\"item2\"],` +
	`\"replicas\":3,\"resources\":{\"limits\":{\"cpu\":\"500m\",\"memory\":\"128Mi\"}},\"threshold\":0.75},` +
	`\"metadata\":{\"labels\":{\"app.kubernetes.io/name\":\"kopfexample\",\"somelabel\":\"somevalue\"},` +
	`\"annotations\":{\"someannotation\":\"somevalue\"}}}\n",` +
	`"someannotation":"somevalue","kopf.zalando.org/create_fn":"{\"started\":\"2025-01-15T10:20:30.123456+00:00\",` +
	`\"stopped\":\"2025-01-15T10:20:31.234567+00:00\",\"purpose\":\"create\",\"retries\":1,\"success\":true,\"failure\":false}"},` +
	`"creationTimestamp":"2025-01-15T10:20:30Z","finalizers":["kopf.zalando.org/KopfFinalizerMarker"],` +
	`"generation":%[1]d,"labels":{"app.kubernetes.io/name":"kopfexample","app.kubernetes.io/part-of":"kopfgo-examples",` +
	`"somelabel":"somevalue","shard":"shard-%[2]d"},` +
	`"managedFields":[{"apiVersion":"kopf.dev/v1","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:annotations":` +
	`{".":{},"f:someannotation":{}},"f:labels":{".":{},"f:app.kubernetes.io/name":{},"f:app.kubernetes.io/part-of":{},` +
	`"f:somelabel":{},"f:shard":{}}},"f:spec":{".":{},"f:duration":{},"f:field":{},"f:items":{},"f:replicas":{},` +
	`"f:resources":{".":{},"f:limits":{".":{},"f:cpu":{},"f:memory":{}}},"f:threshold":{}}},` +
	`"manager":"kubectl-client-side-apply","operation":"Update","time":"2025-01-15T10:20:30Z"},` +
	`{"apiVersion":"kopf.dev/v1","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:annotations":{` +
	`"f:kopf.zalando.org/last-handled-configuration":{},"f:kopf.zalando.org/create_fn":{}},"f:finalizers":{".":{},` +
	`"v:\"kopf.zalando.org/KopfFinalizerMarker\"":{}}},"f:status":{".":{},"f:create_fn":{".":{},"f:message":{},` +
	`"f:conditions":{}}}},"manager":"kopf","operation":"Update","time":"2025-01-15T10:20:31Z"}],` +
	`"name":"kopf-example-%[1]d","namespace":"default","resourceVersion":"%[3]d",` +
	`"uid":"5b9f3a6e-%04[2]x-4c1d-9e2f-%012[1]x"},` +
	`"spec":{"duration":"1m","field":"value","items":["item1","item2"],"replicas":3,"threshold":0.75,` +
	`"resources":{"limits":{"cpu":"500m","memory":"128Mi"},"requests":{"cpu":"100m","memory":"64Mi"}},` +
	`"template":{"containers":[{"name":"main","image":"nginx:1.27","ports":[{"containerPort":8080,"protocol":"TCP"}],` +
	`"env":[{"name":"LOG_LEVEL","value":"debug"},{"name":"WORKERS","value":"4"}]}]},"ratio":-1.5e-3,"big":12345678901},` +
	`"status":{"create_fn":{"message":"created the child resources","conditions":[{"type":"Ready","status":"True",` +
	`"lastTransitionTime":"2025-01-15T10:20:31Z","reason":"Created","observedGeneration":%[1]d}]},` +
	`"observedGeneration":%[1]d,"replicas":3}}`

// exampleN is the i-th distinct copy of the example object.
func exampleN(i int) []byte {
	return []byte(fmt.Sprintf(exampleTemplate, i+1, i%16, 100000+i))
}

func exampleObject() []byte { return exampleN(0) }

// exampleList is a list response of n objects.
func exampleList(n int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"apiVersion":"kopf.dev/v1","kind":"KopfExampleList","metadata":{"continue":"","resourceVersion":"200000"},"items":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(exampleN(i))
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

// exampleStream is a watch stream of n events, as the API server frames
// them: one object a line.
func exampleStream(n int) []byte {
	var b bytes.Buffer
	for i := range n {
		b.WriteString(`{"type":"MODIFIED","object":`)
		b.Write(exampleN(i))
		b.WriteString("}\n")
	}
	return b.Bytes()
}
