package conventions

import (
	"encoding/base64"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/crypto/blake2b"
)

// MaxNameLength is the Kubernetes limit on the name part of an annotation key.
const MaxNameLength = 63

// MaxPrefixLength is the longest prefix whose keys stay within Kubernetes'
// 253-character key limit with a full 63-character name (253 - 63 - 1).
const MaxPrefixLength = 253 - MaxNameLength - 1

// ManagedMarker is the annotation name that marks a prefix as owned by a
// Kopf-style operator; it is written for prefixes not starting with "kopf.".
const ManagedMarker = "kopf-managed"

// KnownPrefix is Kopf's own default prefix, always treated as Kopf-managed.
const KnownPrefix = "kopf.zalando.org"

// Keys forms annotation keys under one prefix, the way Kopf's
// StorageKeyFormingConvention does: V2 keys limit only the name part to 63
// characters; V1 keys (written too while V1 is set, for rollbacks to older
// Kopf versions) limit the whole key.
type Keys struct {
	Prefix string
	V1     bool
}

// Make returns the keys under which the record named name is stored: the V2
// key first, then the V1 key when enabled and different. The owner-aware mark
// (see Mark) must already be applied to name. The slice is shared: callers
// must not change it.
//
// The keys are formed once per prefix and name: storages ask for them on
// every pass over every object, and the names are mostly few (handler ids
// and the storages' own keys). Sub-handlers' ids may be made from data, so
// only the first maxMade are kept.
func (k Keys) Make(name string) []string {
	at := madeKey{k, name}
	if keys, ok := made.Load(at); ok {
		return keys.([]string)
	}
	keys := k.make(name)
	if madeCount.Add(1) <= maxMade {
		made.Store(at, keys)
	}
	return keys
}

// made holds the keys that Make has formed, madeCount how many it tried to
// keep there.
var (
	made      sync.Map // madeKey → []string
	madeCount atomic.Int64
)

const maxMade = 4096

type madeKey struct {
	k    Keys
	name string
}

func (k Keys) make(name string) []string {
	v2 := k.V2(name)
	if !k.V1 {
		return []string{v2}
	}
	v1 := k.V1Key(name)
	if v1 == v2 {
		return []string{v2}
	}
	return []string{v2, v1}
}

// V2 returns the V2 key for name.
func (k Keys) V2(name string) string {
	suffix := ""
	if len(name) > MaxNameLength {
		suffix = Suffix(name)
	}
	limit := max(0, MaxNameLength-len(suffix))
	safe := SafeName(name)
	return k.prefix() + cut(safe, limit) + suffix
}

// V1Key returns the V1 key for name: the limit applies to prefix and name.
func (k Keys) V1Key(name string) string {
	safe := SafeName(name)
	prefix := k.prefix()
	suffix := ""
	if len(safe) > MaxNameLength-len(prefix) {
		suffix = Suffix(safe)
	}
	return prefix + cut(safe, max(0, MaxNameLength-len(prefix)-len(suffix))) + suffix
}

func (k Keys) prefix() string {
	if k.Prefix == "" {
		return ""
	}
	return k.Prefix + "/"
}

// Marker returns the key of the kopf-managed marker for this prefix, or ""
// when the prefix needs none (it starts with "kopf.", or is empty).
func (k Keys) Marker() string {
	if k.Prefix == "" || strings.HasPrefix(k.Prefix, "kopf.") {
		return ""
	}
	return k.Prefix + "/" + ManagedMarker
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// SafeName replaces the characters that handler ids may contain but
// annotation names may not: "/" (sub-handlers) and "<", ">".
func SafeName(name string) string { return safeNames.Replace(name) }

var safeNames = strings.NewReplacer("/", ".", "<", "_", ">", "_")

// Suffix is Kopf's hash suffix for over-long names: "-" and the base64
// (alphabet with "-" and "." as the two extra characters) of a 4-byte
// BLAKE2b digest, with trailing "=", "-" and "." stripped so that the key
// ends in an alphanumeric character as Kubernetes requires.
func Suffix(s string) string {
	h, err := blake2b.New(4, nil)
	if err != nil {
		panic(err) // a size of 4 with no key is always valid
	}
	h.Write([]byte(s))
	enc := base64.StdEncoding.EncodeToString(h.Sum(nil))
	enc = strings.NewReplacer("+", "-", "/", ".").Replace(enc)
	return strings.TrimRight("-"+enc, "=-.")
}

// Mark applies Kopf's collision-evading suffix: annotations of a Deployment
// are copied by Kubernetes onto its ReplicaSets, so a ReplicaSet owned by a
// Deployment stores its state under "-ofDRS" names.
func Mark(name string, body map[string]any) string {
	if body["kind"] != "ReplicaSet" {
		return name
	}
	meta, _ := body["metadata"].(map[string]any)
	owners, _ := meta["ownerReferences"].([]any)
	for _, o := range owners {
		if om, ok := o.(map[string]any); ok && om["kind"] == "Deployment" {
			return name + "-ofDRS"
		}
	}
	return name
}

// ManagedPrefixes returns the prefixes among the annotation keys that belong
// to Kopf-style operators: those with a kopf-managed marker, Kopf's own
// prefix, and its subdomains.
func ManagedPrefixes(annotations map[string]any) map[string]bool {
	var out map[string]bool
	for key := range annotations {
		prefix, name, ok := strings.Cut(key, "/")
		if !ok {
			continue
		}
		if name == ManagedMarker || prefix == KnownPrefix || strings.HasSuffix(prefix, "."+KnownPrefix) {
			if out == nil {
				out = map[string]bool{}
			}
			out[prefix] = true
		}
	}
	return out
}
