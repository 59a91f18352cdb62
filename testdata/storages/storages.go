// Package storages (built as a module of its own by TestStoragesOutsideTheModule)
// implements a progress storage and a diff-base storage
// outside the kopfgo module, with its public packages only, and plugs them
// into an operator's settings.
package storages

import (
	"encoding/json"
	"fmt"

	"github.com/kopfgo/kopfgo"
	"github.com/kopfgo/kopfgo/diffbase"
	"github.com/kopfgo/kopfgo/persistence"
)

// Progress keeps every handler's record in one annotation per handler,
// under a prefix of its own.
type Progress struct{ Prefix string }

var _ persistence.Storage = Progress{}

func (s Progress) key(id string) string { return s.Prefix + "/progress-" + id }

func annotations(body map[string]any) map[string]any {
	meta, _ := body["metadata"].(map[string]any)
	ann, _ := meta["annotations"].(map[string]any)
	return ann
}

func (s Progress) Fetch(id string, body map[string]any) (*persistence.Record, error) {
	raw, ok := annotations(body)[s.key(id)].(string)
	if !ok {
		return nil, nil
	}
	var r persistence.Record
	if err := json.Unmarshal([]byte(raw), &r); err != nil {
		return nil, &persistence.CorruptError{Key: s.key(id), Err: fmt.Errorf("%w: %w", persistence.ErrCorrupt, err)}
	}
	return &r, nil
}

func (s Progress) Store(id string, r *persistence.Record, body map[string]any, p *kopfgo.Patch) {
	raw, _ := json.Marshal(r)
	p.SetAnnotation(s.key(id), string(raw))
}

func (s Progress) Purge(id string, body map[string]any, p *kopfgo.Patch) {
	if _, ok := annotations(body)[s.key(id)]; ok {
		p.RemoveAnnotation(s.key(id))
	}
}

func (s Progress) Touch(body map[string]any, p *kopfgo.Patch, value *string) {
	if value != nil {
		p.SetAnnotation(s.Prefix+"/touch", *value)
	} else if _, ok := annotations(body)[s.Prefix+"/touch"]; ok {
		p.RemoveAnnotation(s.Prefix + "/touch")
	}
}

func (s Progress) Clear(essence map[string]any) map[string]any { return essence }

// DiffBase keeps the last handled essence in an annotation, as JSON, and
// computes the essence as kopfgo's default storage does.
type DiffBase struct{ Key string }

var _ diffbase.Storage = DiffBase{}

func (s DiffBase) Build(body map[string]any, extraFields [][]string) map[string]any {
	return diffbase.Default().Build(body, extraFields)
}

func (s DiffBase) Fetch(body map[string]any) (map[string]any, error) {
	raw, ok := annotations(body)[s.Key].(string)
	if !ok {
		return nil, nil
	}
	var essence map[string]any
	if err := json.Unmarshal([]byte(raw), &essence); err != nil {
		return nil, err
	}
	return essence, nil
}

func (s DiffBase) Store(body map[string]any, p *kopfgo.Patch, essence map[string]any) {
	raw, _ := json.Marshal(essence)
	p.SetAnnotation(s.Key, string(raw))
}

// Settings are an operator's settings with both storages.
func Settings() kopfgo.Settings {
	var s kopfgo.Settings
	s.Persistence.ProgressStorage = Progress{Prefix: "example.com"}
	s.Persistence.DiffBaseStorage = DiffBase{Key: "example.com/last-handled"}
	return s
}
