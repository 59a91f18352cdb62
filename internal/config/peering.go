package config

import "time"

// Peering is Kopf's settings.peering (compat: settings-peering): how the
// operator finds its peers and stands by for those of higher priority.
type Peering struct {
	// Name of the peering object; operators in different peering objects
	// do not see each other. Default "default".
	Name string
	// Stealth keeps the keep-alives out of the logs.
	Stealth bool
	// Priority: an operator stands by while a live peer has a higher
	// priority, and all stand by when two have the same. Default 0.
	Priority int
	// Lifetime of the operator's record: peers presume it dead when it is
	// not renewed for this long. Whole seconds, as Kopf keeps it. Default 60s.
	Lifetime time.Duration
	// Mandatory: the operator stands by until the peering object exists
	// (Kopf's --peering NAME). Otherwise, without the object, it serves
	// standalone.
	Mandatory bool
	// Standalone: no peering at all, nothing read or written (--standalone).
	Standalone bool
	// Clusterwide uses the ClusterKopfPeering even for an operator serving
	// namespaces; a cluster-wide operator always does.
	Clusterwide bool
}

func (p Peering) withDefaults() Peering {
	if p.Name == "" {
		p.Name = "default"
	}
	if p.Lifetime <= 0 {
		p.Lifetime = 60 * time.Second
	}
	return p
}
