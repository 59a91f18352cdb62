package cli

import "testing"

func TestParseWebhookService(t *testing.T) {
	for _, tc := range []struct {
		in       string
		ns, name string
		port     int
		bad      bool
	}{
		{in: "hooks", name: "hooks"},
		{in: "ops/hooks", ns: "ops", name: "hooks"},
		{in: "hooks:8443", name: "hooks", port: 8443},
		{in: "ops/hooks:443", ns: "ops", name: "hooks", port: 443},
		{in: "hooks:", bad: true},
		{in: "hooks:0", bad: true},
		{in: "hooks:https", bad: true},
		{in: "/hooks", bad: true},
		{in: "ops/", bad: true},
		{in: "a/b/c", bad: true},
	} {
		ns, name, port, err := ParseWebhookService(tc.in)
		if (err != nil) != tc.bad || !tc.bad && (ns != tc.ns || name != tc.name || port != tc.port) {
			t.Errorf("%q: %q %q %d %v", tc.in, ns, name, port, err)
		}
	}
}
