// Package leases holds what leader election and sharding share about
// holding coordination.k8s.io/v1 Leases: the three durations that pace a
// holder (Timing), their defaults and the rule between them, and a
// replica's identity as a holder. One place, so that both modes keep the
// same defaults and the same checks.
package leases
