package leaderelection

import (
	"strings"
	"testing"
	"time"
)

func TestValidateNamesWhatIsWrong(t *testing.T) {
	cases := []struct {
		name string
		cfg  Config
		want []string // substrings of the error; none: valid
	}{
		{"defaults", Config{Name: "op", Namespace: "ns"}, nil},
		{"no name", Config{Namespace: "ns"}, []string{"--leader-elect-lease"}},
		{"no namespace", Config{Name: "op"}, []string{"--leader-elect-namespace"}},
		{"renew deadline not shorter than the lease", Config{Name: "op", Namespace: "ns", LeaseDuration: 10 * time.Second}, []string{"lease duration (10s) must be longer than the renew deadline (10s)"}},
		{"retry period too long", Config{Name: "op", Namespace: "ns", RetryPeriod: 9 * time.Second}, []string{"renew deadline (10s) must be longer than 1.2 times the retry period (9s)"}},
		{"short ones for tests", Config{Name: "op", Namespace: "ns", LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 500 * time.Millisecond}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.cfg.Validate()
			if len(c.want) == 0 {
				if err != nil {
					t.Fatalf("Validate: %v, want none", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate: nil, want an error with %q", c.want)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate: %v, want it to say %q", err, w)
				}
			}
		})
	}
}

func TestIdentityIsThePodOrHostWithARandomSuffix(t *testing.T) {
	t.Setenv("POD_NAME", "op-7d9c-x2")
	a, b := Identity(), Identity()
	if !strings.HasPrefix(a, "op-7d9c-x2_") || a == b {
		t.Errorf("identities %q and %q: want the pod's name, a suffix, and two different ones", a, b)
	}
}
