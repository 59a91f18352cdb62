package config

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*Settings)
		want   string // "" valid; else a part of the message
	}{
		{"defaults", func(*Settings) {}, ""},
		{"caps set", func(s *Settings) {
			s.Execution.MaxWorkers, s.Queueing.ResourceRate, s.Queueing.ResourceBurst, s.Queueing.ObjectInterval = 4, 2.5, 5, time.Second
		}, ""},
		{"negative workers", func(s *Settings) { s.Execution.MaxWorkers = -1 }, "Execution.MaxWorkers is -1"},
		{"negative rate", func(s *Settings) { s.Queueing.ResourceRate = -2 }, "Queueing.ResourceRate is -2"},
		{"negative burst", func(s *Settings) { s.Queueing.ResourceBurst = -3 }, "Queueing.ResourceBurst is -3"},
		{"negative interval", func(s *Settings) { s.Queueing.ObjectInterval = -time.Second }, "Queueing.ObjectInterval is -1s"},
		{"goaway chance of 1", func(s *Settings) { s.Admission.GoawayChance = 1 }, ""},
		{"goaway chance never", func(s *Settings) { s.Admission.GoawayChance = -1 }, ""},
		{"goaway chance above 1", func(s *Settings) { s.Admission.GoawayChance = 2 }, "Admission.GoawayChance is 2"},
		{"goaway chance NaN", func(s *Settings) { s.Admission.GoawayChance = math.NaN() }, "Admission.GoawayChance is NaN"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s Settings
			tc.change(&s)
			err := s.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tc.want != "" && (!errors.Is(err, ErrSettings) || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("Validate() = %v, want ErrSettings naming %q", err, tc.want)
			}
		})
	}
}
