package config

// Handling chooses, where Kopf's code and Kopf's manual disagree on which
// changing handlers a change runs, the manual's reading. The zero value is
// Kopf's code (what a Kopf operator did on the same objects), so that an
// operator ported from Kopf, or taking over a Kopf operator's objects,
// behaves as it did; docs/kopf-compatibility.md records both readings.
type Handling struct {
	// FieldHandlersOnUpdatesOnly runs On.Field handlers on updates only, as
	// the manual says. Default (false): as Kopf's code, a field handler
	// serves every cause in which its field changes: also the creation of
	// an object with the field set (reason "create"), and a deletion when
	// the field changed since the object was last handled.
	FieldHandlersOnUpdatesOnly bool
	// FieldFiltersOnExistingStates makes the field value filters (Field with
	// Value) of changing handlers check only the states the object has.
	// Default (false): as Kopf's code, the missing old state of an object
	// never handled counts as the field being absent, so that Absent (or a
	// callback that accepts nil) matches every creation.
	FieldFiltersOnExistingStates bool
}
