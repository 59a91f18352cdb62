package cli

import (
	"bytes"
	"io"
	"log/slog"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kopfgo/kopfgo/internal/logging"
)

func ptr[T any](v T) *T { return &v }

func parse(args []string, env map[string]string) (*RunFlags, *pflag.FlagSet, error) {
	f := &RunFlags{}
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f.Bind(fs)
	if err := fs.Parse(args); err != nil {
		return f, fs, err
	}
	return f, fs, f.Complete(fs, func(k string) (string, bool) { v, ok := env[k]; return v, ok })
}

var defaults = RunFlags{LogFormat: "full"}

// (compat: cli-flags): every flag, its short form, its environment variable.
func TestRunFlags(t *testing.T) {
	with := func(change func(f *RunFlags)) RunFlags { f := defaults; change(&f); return f }
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want RunFlags
	}{
		{"defaults", nil, nil, defaults},
		{"-n", []string{"-n", "a", "--namespace=b", "-n", "c-*,!c-pr-*"}, nil,
			with(func(f *RunFlags) { f.Namespaces = []string{"a", "b", "c-*,!c-pr-*"} })},
		{"-A", []string{"-A"}, nil, with(func(f *RunFlags) { f.AllNamespaces = true })},
		{"--all-namespaces", []string{"--all-namespaces"}, nil, with(func(f *RunFlags) { f.AllNamespaces = true })},
		{"--standalone", []string{"--standalone"}, nil, with(func(f *RunFlags) { f.Standalone = true })},
		{"-v -d -q", []string{"-v", "-d", "-q"}, nil, with(func(f *RunFlags) { f.Verbose, f.Debug, f.Quiet = true, true, true })},
		{"long verbosity", []string{"--verbose", "--debug", "--quiet"}, nil, with(func(f *RunFlags) { f.Verbose, f.Debug, f.Quiet = true, true, true })},
		{"--log-format", []string{"--log-format", "json"}, nil, with(func(f *RunFlags) { f.LogFormat = "json" })},
		{"--log-format=plain", []string{"--log-format=plain"}, nil, with(func(f *RunFlags) { f.LogFormat = "plain" })},
		{"--log-prefix", []string{"--log-prefix"}, nil, with(func(f *RunFlags) { f.LogPrefix = ptr(true) })},
		{"--no-log-prefix", []string{"--no-log-prefix"}, nil, with(func(f *RunFlags) { f.LogPrefix = ptr(false) })},
		{"last prefix wins", []string{"--no-log-prefix", "--log-prefix"}, nil, with(func(f *RunFlags) { f.LogPrefix = ptr(true) })},
		{"last prefix wins 2", []string{"--log-prefix", "--no-log-prefix"}, nil, with(func(f *RunFlags) { f.LogPrefix = ptr(false) })},
		{"--log-prefix=false", []string{"--log-prefix=false"}, nil, with(func(f *RunFlags) { f.LogPrefix = ptr(false) })},
		{"--log-refkey", []string{"--log-refkey", "k8s-obj"}, nil, with(func(f *RunFlags) { f.LogRefKey = "k8s-obj" })},
		{"--kubeconfig --context", []string{"--kubeconfig", "/k", "--context", "kind"}, nil,
			with(func(f *RunFlags) { f.Kubeconfig, f.Context = "/k", "kind" })},

		{"env namespaces split on whitespace", nil, map[string]string{"KOPF_RUN_NAMESPACES": " a  b\tc "},
			with(func(f *RunFlags) { f.Namespaces = []string{"a", "b", "c"} })},
		{"command line beats env", []string{"-n", "x"}, map[string]string{"KOPF_RUN_NAMESPACES": "a b"},
			with(func(f *RunFlags) { f.Namespaces = []string{"x"} })},
		{"legacy namespace is appended", []string{"-n", "x"}, map[string]string{"KOPF_RUN_NAMESPACE": "legacy"},
			with(func(f *RunFlags) { f.Namespaces = []string{"x", "legacy"} })},
		{"env clusterwide", nil, map[string]string{"KOPF_RUN_CLUSTERWIDE": "yes"}, with(func(f *RunFlags) { f.AllNamespaces = true })},
		{"env standalone", nil, map[string]string{"KOPF_RUN_STANDALONE": "1"}, with(func(f *RunFlags) { f.Standalone = true })},
		{"peering, priority, dev", []string{"-P", "team", "-p", "10", "--dev"}, nil, with(func(f *RunFlags) {
			f.Peering, f.Priority, f.Dev = "team", ptr(10), true
		})},
		{"priority 0 is given", []string{"--priority=0"}, nil, with(func(f *RunFlags) { f.Priority = ptr(0) })},
		{"--memory-limit-ratio", []string{"--memory-limit-ratio", "0.75"}, nil, with(func(f *RunFlags) { f.MemoryLimitRatio = 0.75 })},
		{"--memory-limit-ratio off", []string{"--memory-limit-ratio=off"}, nil, with(func(f *RunFlags) { f.MemoryLimitRatio = -1 })},
		{"--memory-limit-ratio 0 is off", []string{"--memory-limit-ratio=0"}, nil, with(func(f *RunFlags) { f.MemoryLimitRatio = -1 })},
		{"flow control flags", []string{"--max-requests-in-flight", "8", "--no-flow-control"}, nil,
			with(func(f *RunFlags) { f.MaxRequestsInFlight, f.NoFlowControl = 8, true })},
		{"env flow control", nil, map[string]string{"KOPFGO_MAX_REQUESTS_IN_FLIGHT": "32", "KOPFGO_NO_FLOW_CONTROL": "true"},
			with(func(f *RunFlags) { f.MaxRequestsInFlight, f.NoFlowControl = 32, true })},
		{"--no-conditions", []string{"--no-conditions"}, nil, with(func(f *RunFlags) { f.NoConditions = true })},
		{"--conditions-every-pass", []string{"--conditions-every-pass"}, nil, with(func(f *RunFlags) { f.ConditionsEveryPass = true })},
		{"env no conditions", nil, map[string]string{"KOPFGO_NO_CONDITIONS": "1"}, with(func(f *RunFlags) { f.NoConditions = true })},
		{"typo flags", []string{"--strict", "--ready-while-unresolved"}, nil,
			with(func(f *RunFlags) { f.Strict, f.ReadyWhileUnresolved = true, true })},
		{"env typo flags", nil, map[string]string{"KOPFGO_STRICT": "yes", "KOPFGO_READY_WHILE_UNRESOLVED": "1"},
			with(func(f *RunFlags) { f.Strict, f.ReadyWhileUnresolved = true, true })},
		{"env memory limit ratio", nil, map[string]string{"KOPFGO_MEMORY_LIMIT_RATIO": "0.5"}, with(func(f *RunFlags) { f.MemoryLimitRatio = 0.5 })},
		{"--webhook-goaway-chance", []string{"--webhook-goaway-chance", "0.1"}, nil, with(func(f *RunFlags) { f.WebhookGoawayChance = 0.1 })},
		{"--webhook-goaway-chance off", []string{"--webhook-goaway-chance=off"}, nil, with(func(f *RunFlags) { f.WebhookGoawayChance = -1 })},
		{"env webhook goaway chance", nil, map[string]string{"KOPFGO_WEBHOOK_GOAWAY_CHANCE": "1"}, with(func(f *RunFlags) { f.WebhookGoawayChance = 1 })},
		{"pass caps", []string{"--max-workers", "16", "--resource-rate", "2.5", "--resource-burst", "10", "--object-interval", "3s"}, nil,
			with(func(f *RunFlags) { f.MaxWorkers, f.ResourceRate, f.ResourceBurst, f.ObjectInterval = 16, 2.5, 10, 3e9 })},
		{"env pass caps", nil, map[string]string{"KOPFGO_MAX_WORKERS": "4", "KOPFGO_RESOURCE_RATE": "1", "KOPFGO_OBJECT_INTERVAL": "1s"},
			with(func(f *RunFlags) { f.MaxWorkers, f.ResourceRate, f.ObjectInterval = 4, 1, 1e9 })},
		{"env peering and priority", nil, map[string]string{"KOPF_RUN_PEERING": "team", "KOPF_RUN_PRIORITY": "-5", "KOPF_RUN_DEV": "true"}, with(func(f *RunFlags) {
			f.Peering, f.Priority, f.Dev = "team", ptr(-5), true
		})},
		{"env verbosity", nil, map[string]string{"KOPF_RUN_VERBOSE": "true", "KOPF_RUN_DEBUG": "on", "KOPF_RUN_QUIET": "T"},
			with(func(f *RunFlags) { f.Verbose, f.Debug, f.Quiet = true, true, true })},
		{"env false", nil, map[string]string{"KOPF_RUN_VERBOSE": "off", "KOPF_RUN_DEBUG": "0"}, defaults},
		{"env empty is unset", nil, map[string]string{"KOPF_RUN_VERBOSE": "", "KOPF_RUN_LOG_FORMAT": ""}, defaults},
		{"env log format", nil, map[string]string{"KOPF_RUN_LOG_FORMAT": "json"}, with(func(f *RunFlags) { f.LogFormat = "json" })},
		{"env log prefix", nil, map[string]string{"KOPF_RUN_LOG_PREFIX": "false"}, with(func(f *RunFlags) { f.LogPrefix = ptr(false) })},
		{"command line prefix beats env", []string{"--no-log-prefix"}, map[string]string{"KOPF_RUN_LOG_PREFIX": "true"},
			with(func(f *RunFlags) { f.LogPrefix = ptr(false) })},
		{"env refkey, kubeconfig, context", nil,
			map[string]string{"KOPF_RUN_LOG_REFKEY": "ref", "KOPF_RUN_KUBECONFIG": "/k", "KOPF_RUN_CONTEXT": "c"},
			with(func(f *RunFlags) { f.LogRefKey, f.Kubeconfig, f.Context = "ref", "/k", "c" })},
		{"--shards", []string{"--shards", "8", "--shards-name", "op", "--shards-namespace", "ops", "--shards-lease-duration", "6s",
			"--shards-renew-deadline", "4s", "--shards-retry-period", "1s"}, nil, with(func(f *RunFlags) {
			f.Shards, f.ShardsName, f.ShardsNamespace = 8, "op", "ops"
			f.ShardsLeaseDuration, f.ShardsRenewDeadline, f.ShardsRetryPeriod = 6e9, 4e9, 1e9
		})},
		{"env shards", nil, map[string]string{"KOPFGO_SHARDS": "12", "KOPFGO_SHARDS_NAME": "op", "KOPFGO_SHARDS_RETRY_PERIOD": "3s"},
			with(func(f *RunFlags) { f.Shards, f.ShardsName, f.ShardsRetryPeriod = 12, "op", 3e9 })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _, err := parse(tt.args, tt.env)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", *got, tt.want)
			}
		})
	}
}

func TestRunFlagsErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"-n with -A", []string{"-n", "a", "-A"}, nil, "either --namespace or --all-namespaces can be used, not both"},
		{"env -n with -A", []string{"-A"}, map[string]string{"KOPF_RUN_NAMESPACES": "a"}, "not both"},
		{"legacy env -n with -A", []string{"-A"}, map[string]string{"KOPF_RUN_NAMESPACE": "a"}, "not both"},
		{"-n with env -A", []string{"-n", "a"}, map[string]string{"KOPF_RUN_CLUSTERWIDE": "1"}, "not both"},
		{"bad format", []string{"--log-format", "xml"}, nil, `invalid --log-format "xml"`},
		{"empty format", []string{"--log-format="}, nil, `invalid --log-format ""`},
		{"bad env format", nil, map[string]string{"KOPF_RUN_LOG_FORMAT": "xml"}, `invalid --log-format "xml"`},
		{"bad env bool", nil, map[string]string{"KOPF_RUN_VERBOSE": "maybe"}, `invalid value "maybe" for $KOPF_RUN_VERBOSE`},
		{"empty namespace", []string{"-n", ""}, nil, "--namespace must not be empty"},
		{"unknown flag", []string{"--peers", "x"}, nil, "unknown flag: --peers"},
		{"priority not a number", []string{"--priority", "high"}, nil, `not an integer: "high"`},
		{"memory limit ratio above 1", []string{"--memory-limit-ratio", "1.5"}, nil, `not a share of the memory limit between 0 and 1, nor off: "1.5"`},
		{"webhook goaway chance above 1", []string{"--webhook-goaway-chance", "2"}, nil, `not a chance between 0 and 1, nor off: "2"`},
		{"env memory limit ratio", nil, map[string]string{"KOPFGO_MEMORY_LIMIT_RATIO": "most"}, `invalid value "most" for $KOPFGO_MEMORY_LIMIT_RATIO`},
		{"unknown shorthand", []string{"-x"}, nil, "unknown shorthand flag: 'x' in -x"},
		{"missing value", []string{"-n"}, nil, "flag needs an argument: 'n' in -n"},
		{"bad bool", []string{"--verbose=maybe"}, nil, `invalid argument "maybe" for "-v, --verbose"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := parse(tt.args, tt.env)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// (compat: logging-levels): the verbosity flags set the level; -v and -d win over -q.
func TestLevel(t *testing.T) {
	for _, tt := range []struct {
		f    RunFlags
		want slog.Level
	}{
		{RunFlags{}, slog.LevelInfo},
		{RunFlags{Verbose: true}, slog.LevelDebug},
		{RunFlags{Debug: true}, slog.LevelDebug},
		{RunFlags{Quiet: true}, slog.LevelWarn},
		{RunFlags{Quiet: true, Verbose: true}, slog.LevelDebug},
	} {
		if got := tt.f.Level(); got != tt.want {
			t.Errorf("%+v: level %v, want %v", tt.f, got, tt.want)
		}
	}
	f := RunFlags{LogFormat: "json", LogPrefix: ptr(true), LogRefKey: "k", Quiet: true}
	var w bytes.Buffer
	want := logging.Config{Format: logging.FormatJSON, Level: slog.LevelWarn, Prefix: f.LogPrefix, RefKey: "k", Writer: &w}
	if got := f.Logging(&w); !reflect.DeepEqual(got, want) {
		t.Errorf("Logging: got %+v, want %+v", got, want)
	}
}

// Args passes the command line's flags on; parsed again, they give the same
// flags. The environment is left to the other command.
func TestArgs(t *testing.T) {
	for _, tt := range []struct {
		args []string
		env  map[string]string
		want []string
	}{
		{nil, nil, nil},
		{[]string{"-n", "a", "-n", "b,c", "-v", "--log-format", "json", "--no-log-prefix", "--log-prefix"}, nil,
			[]string{"--namespace=a", "--namespace=b,c", "--verbose=true", "--log-format=json", "--log-prefix=true"}},
		{[]string{"-A", "--standalone", "-d", "-q", "--no-log-prefix", "--log-refkey=r", "--kubeconfig=/k", "--context=c"}, nil,
			[]string{"--all-namespaces=true", "--standalone=true", "--debug=true", "--quiet=true", "--log-prefix=false",
				"--log-refkey=r", "--kubeconfig=/k", "--context=c"}},
		{[]string{"-v"}, map[string]string{"KOPF_RUN_NAMESPACES": "a", "KOPF_RUN_LOG_FORMAT": "plain"}, []string{"--verbose=true"}},
	} {
		orig, fs, err := parse(tt.args, tt.env)
		if err != nil {
			t.Fatal(err)
		}
		got := Args(fs)
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Args(%q) = %q, want %q", tt.args, got, tt.want)
		}
		again, _, err := parse(got, tt.env)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(again, orig) {
			t.Errorf("%q parsed again: %+v, want %+v", got, again, orig)
		}
	}
}

// Execute: usage errors exit 2 with click's message; *ExitCodeError gives
// its code silently; success is 0.
func TestExecute(t *testing.T) {
	var ran *RunFlags
	newRoot := func(result error) *cobra.Command {
		root := NewRunCommand("op", "runs", cobra.NoArgs, func(_ *cobra.Command, _ []string, f *RunFlags) error { ran = f; return result })
		root.AddCommand(NewRunCommand("run", "runs", cobra.NoArgs, func(_ *cobra.Command, _ []string, f *RunFlags) error { ran = f; return result }))
		return root
	}
	for _, tt := range []struct {
		name   string
		args   []string
		result error
		code   int
		stderr string
	}{
		{"ok", []string{"run", "-n", "a"}, nil, 0, ""},
		{"root runs too", []string{"-A"}, nil, 0, ""},
		{"exit code", []string{"run"}, &ExitCodeError{Code: 3}, 3, ""},
		{"unknown flag", []string{"run", "--bogus"}, nil, 2, "Usage: op run [flags]\nTry 'op run --help' for help.\n\nError: unknown flag: --bogus\n"},
		{"mutual exclusion", []string{"run", "-n", "a", "-A"}, nil, 2, "Error: either --namespace or --all-namespaces can be used, not both\n"},
		{"unknown command", []string{"walk"}, nil, 2, "Usage: op [flags]\nTry 'op --help' for help.\n\nError: unknown command \"walk\" for \"op\"\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ran = nil
			var stderr bytes.Buffer
			code := Execute(newRoot(tt.result), tt.args, &stderr)
			if code != tt.code {
				t.Errorf("code %d, want %d", code, tt.code)
			}
			if !strings.HasSuffix(stderr.String(), tt.stderr) || (tt.stderr == "" && stderr.Len() > 0) {
				t.Errorf("stderr %q, want it to end with %q", stderr.String(), tt.stderr)
			}
			if (ran != nil) != (tt.code != ExitUsage) {
				t.Errorf("ran: %v", ran != nil)
			}
		})
	}
}

// The help lists every flag with its environment variable.
func TestHelp(t *testing.T) {
	cmd := NewRunCommand("run", "runs", cobra.NoArgs, nil)
	var out bytes.Buffer
	cmd.SetOut(&out)
	if code := Execute(cmd, []string{"--help"}, io.Discard); code != 0 {
		t.Fatalf("code %d", code)
	}
	for _, want := range []string{
		"-n, --namespace stringArray", "[$KOPF_RUN_NAMESPACES]", "-A, --all-namespaces", "[$KOPF_RUN_CLUSTERWIDE]",
		"--standalone", "-P, --peering string", "[$KOPF_RUN_PEERING]", "-p, --priority int", "--dev", "-v, --verbose", "-d, --debug", "-q, --quiet", `--log-format string`, `(default "full")`,
		"--log-prefix ", "--no-log-prefix ", "--log-refkey string", "--kubeconfig string", "--context string",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("help lacks %q:\n%s", want, out.String())
		}
	}
	t.Log(out.String())
}
