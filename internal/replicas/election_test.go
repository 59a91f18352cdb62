package replicas

import (
	"strings"
	"testing"
	"time"
)

func TestElectionConfigValidateNamesWhatIsWrong(t *testing.T) {
	cases := []struct {
		name string
		cfg  ElectionConfig
		want string // a substring of the error; "": valid
	}{
		{"defaults", ElectionConfig{Name: "op", Namespace: "ns"}, ""},
		{"no name", ElectionConfig{Namespace: "ns"}, "--leader-elect-lease"},
		{"no namespace", ElectionConfig{Name: "op"}, "--leader-elect-namespace"},
		// client-go's jitter: Timing's test has the other durations.
		{"retry period too long", ElectionConfig{Name: "op", Namespace: "ns", Timing: Timing{RetryPeriod: 9 * time.Second}}, "renew deadline (10s) must be longer than 1.2 times the retry period (9s)"},
	}
	for _, c := range cases {
		err := c.cfg.Validate()
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: Validate: %v, want %q", c.name, err, c.want)
		}
	}
}
