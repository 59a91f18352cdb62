package unjson

import (
	"encoding/json"
	"io"

	kjson "sigs.k8s.io/json"
)

// Unmarshal decodes one JSON value.
func Unmarshal(data []byte) (any, error) {
	var v any
	if err := kjson.UnmarshalCaseSensitivePreserveInts(data, &v); err != nil {
		return nil, err
	}
	return v, nil
}

// Decoder reads a stream of JSON values, such as a watch stream's events.
type Decoder struct {
	dec *json.Decoder
}

// NewDecoder reads values from r.
func NewDecoder(r io.Reader) *Decoder {
	return &Decoder{dec: json.NewDecoder(r)}
}

// Decode returns the next value; io.EOF at a clean end of the stream.
func (d *Decoder) Decode() (any, error) {
	var raw json.RawMessage
	if err := d.dec.Decode(&raw); err != nil {
		return nil, err
	}
	return Unmarshal(raw)
}
