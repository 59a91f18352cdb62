package admission

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/kopfgo/kopfgo/internal/handlers"
	"github.com/kopfgo/kopfgo/internal/handling"
	"github.com/kopfgo/kopfgo/internal/resources"
)

// The configuration resources the operator manages (compat: admission-managed).
var (
	ValidatingConfigs = resources.Resource{
		Group: "admissionregistration.k8s.io", Version: "v1", Plural: "validatingwebhookconfigurations",
		Kind: "ValidatingWebhookConfiguration", Preferred: true,
	}
	MutatingConfigs = resources.Resource{
		Group: "admissionregistration.k8s.io", Version: "v1", Plural: "mutatingwebhookconfigurations",
		Kind: "MutatingWebhookConfiguration", Preferred: true,
	}
)

// BuildWebhooks is the webhooks list of a managed configuration, one webhook
// per handler of the kind, as Kopf's build_webhooks makes it: named after
// the handler id and the suffix, its URL ending with the id, rules for
// every served resource its selector matches, the label filters as the
// objectSelector, sideEffects and failurePolicy from the options.
// persistentOnly keeps only the Persistent handlers (what stays at exit).
func BuildWebhooks(hs []*handling.AdmissionHandler, kind handlers.AdmissionKind, served []resources.Resource, suffix string, cc ClientConfig, persistentOnly bool) []any {
	hooks := []any{}
	for _, h := range hs {
		if h.Kind != kind || (persistentOnly && !h.Persistent) {
			continue
		}
		rules := []any{}
		for _, res := range served {
			if !h.Selector.Matches(res) {
				continue
			}
			plural := res.Plural
			if h.SubResource != nil {
				plural += "/" + *h.SubResource
			}
			ops := []any{"*"}
			if len(h.Operations) > 0 {
				ops = ops[:0]
				for _, op := range h.Operations {
					ops = append(ops, op)
				}
			}
			rules = append(rules, map[string]any{
				"apiGroups": []any{res.Group}, "apiVersions": []any{res.Version},
				"resources": []any{plural}, "operations": ops, "scope": "*",
			})
		}
		sideEffects, failurePolicy := "None", "Fail"
		if h.SideEffects {
			sideEffects = "NoneOnDryRun"
		}
		if h.IgnoreFailures {
			failurePolicy = "Ignore"
		}
		// The handler id is the path's last segment, as Kopf injects it into
		// the URL or the Service's path.
		var client map[string]any
		if svc := cc.Service; svc != nil {
			port := svc.Port
			if port == 0 {
				port = 443
			}
			client = map[string]any{"service": map[string]any{
				"name": svc.Name, "namespace": svc.Namespace, "port": port,
				"path": strings.TrimRight(cc.Path, "/") + "/" + url.PathEscape(h.ID),
			}}
		} else {
			client = map[string]any{"url": strings.TrimRight(cc.URL, "/") + "/" + url.PathEscape(h.ID)}
		}
		if len(cc.CABundle) > 0 {
			client["caBundle"] = base64.StdEncoding.EncodeToString(cc.CABundle)
		}
		hook := map[string]any{
			"name":                    WebhookName(h.ID, suffix),
			"sideEffects":             sideEffects,
			"failurePolicy":           failurePolicy,
			"matchPolicy":             "Equivalent",
			"rules":                   rules,
			"clientConfig":            client,
			"timeoutSeconds":          30, // the permitted maximum
			"admissionReviewVersions": []any{"v1", "v1beta1"},
		}
		if sel := labelSelector(h.Filters.Labels); sel != nil {
			hook["objectSelector"] = sel
		}
		hooks = append(hooks, hook)
	}
	return hooks
}

// labelSelector turns the label filters into an objectSelector, so that the
// API server does not even call for objects the handler would skip; the
// callbacks cannot be said there and are checked by the handler's filters
// only (Kopf's _build_labels_selector).
func labelSelector(checks []handling.MetaCheck) map[string]any {
	var exprs []any
	for _, c := range checks {
		marker, value, exact := c.Check.Describe()
		switch {
		case marker == handlers.Present:
			exprs = append(exprs, map[string]any{"key": c.Key, "operator": "Exists"})
		case marker == handlers.Absent:
			exprs = append(exprs, map[string]any{"key": c.Key, "operator": "DoesNotExist"})
		case exact:
			exprs = append(exprs, map[string]any{"key": c.Key, "operator": "In", "values": []any{fmt.Sprint(value)}})
		}
	}
	if len(exprs) == 0 {
		return nil
	}
	return map[string]any{"matchExpressions": exprs}
}

var badWebhookName = regexp.MustCompile(`[^a-z0-9.-]`)

// WebhookName makes a handler id a webhook name Kubernetes accepts (a
// lowercase RFC 1123 subdomain): "/" becomes ".", "_" becomes "-", as in
// Kopf; Go ids are lowercased first (Kopf's are snake_case already), and
// any other character is hex-coded; the suffix follows after a dot.
func WebhookName(id, suffix string) string {
	name := strings.NewReplacer("/", ".", "_", "-").Replace(strings.ToLower(id))
	name = badWebhookName.ReplaceAllStringFunc(name, func(s string) string { return fmt.Sprintf("%x", s) })
	if suffix == "" {
		return name
	}
	return name + "." + suffix
}
