// Package config holds the operator's settings tree, Kopf's OperatorSettings
// in Go: one struct per area, every field's zero value meaning Kopf's
// default, so that users only set what they change. The root package
// re-exports it as kopfgo.Settings.
//
// It sits above the storages because it holds storage values: the settings
// choose which progress and diff-base storages the operator uses.
package config
