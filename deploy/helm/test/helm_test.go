// Package helmtest lints and renders the nicflow Helm chart
// (deploy/helm/nicflow) with helm's own Go packages, as `helm lint` and
// `helm template` do, and checks the manifests: the kinds, a non-root
// security context everywhere, and every nicflow command line accepted by
// the real nicflow flag parser (a binary built from this checkout). It is
// a module of its own so that the main module does not depend on helm;
// run it with `make helm-test`.
package helmtest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	dynfake "k8s.io/client-go/dynamic/fake"
	"sigs.k8s.io/yaml"
)

const (
	chartDir  = "../nicflow"
	repoRoot  = "../../.."
	namespace = "analytics"
	release   = "nf"
	binary    = "/usr/local/bin/nicflow"
)

func readValues(t *testing.T, files ...string) map[string]any {
	t.Helper()
	vals := map[string]any{}
	for _, f := range files {
		v, err := chartutil.ReadValuesFile(f)
		if err != nil {
			t.Fatal(err)
		}
		vals = chartutil.CoalesceTables(v.AsMap(), vals)
	}
	return vals
}

// TestLint is `helm lint --strict` with the default and the DPU values.
func TestLint(t *testing.T) {
	for _, vf := range [][]string{nil, {filepath.Join(chartDir, "values-dpu.yaml")}} {
		l := lint.All(chartDir, readValues(t, vf...), namespace, false)
		for _, m := range l.Messages {
			// helm lint --strict fails on warnings too.
			if m.Severity >= support.WarningSev {
				t.Errorf("helm lint (values %v): %s", vf, m)
			} else {
				t.Logf("helm lint (values %v): %s", vf, m)
			}
		}
	}
}

// manifests is a rendering of the chart, decoded.
type manifests struct {
	files map[string]string
	objs  []*unstructured.Unstructured
}

func (m *manifests) find(kind, nameSuffix string) *unstructured.Unstructured {
	for _, o := range m.objs {
		if o.GetKind() == kind && strings.HasSuffix(o.GetName(), nameSuffix) {
			return o
		}
	}
	return nil
}

func (m *manifests) kinds() []string {
	var ks []string
	for _, o := range m.objs {
		ks = append(ks, o.GetKind()+"/"+o.GetName())
	}
	sort.Strings(ks)
	return ks
}

// secretsProvider answers helm's lookup function from a fake API server
// holding the given Secrets.
type secretsProvider struct{ c dynamic.Interface }

func (p secretsProvider) GetClientFor(apiVersion, kind string) (dynamic.NamespaceableResourceInterface, bool, error) {
	if apiVersion != "v1" || kind != "Secret" {
		return nil, false, fmt.Errorf("lookup of %s %s: the test only serves Secrets", apiVersion, kind)
	}
	return p.c.Resource(schema.GroupVersionResource{Version: "v1", Resource: "secrets"}), true, nil
}

// render is `helm template` with values over the chart's defaults; with
// existing Secrets, lookup sees them as a cluster would.
func render(t *testing.T, vals map[string]any, existing ...string) *manifests {
	t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	rv, err := chartutil.ToRenderValues(ch, vals, chartutil.ReleaseOptions{Name: release, Namespace: namespace, IsInstall: true}, chartutil.DefaultCapabilities)
	if err != nil {
		t.Fatal(err)
	}
	var files map[string]string
	if existing != nil {
		var objs []runtime.Object
		for _, name := range existing {
			objs = append(objs, &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": name, "namespace": namespace}}})
		}
		c := dynfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
			map[schema.GroupVersionResource]string{{Version: "v1", Resource: "secrets"}: "SecretList"}, objs...)
		files, err = engine.RenderWithClientProvider(ch, rv, secretsProvider{c})
	} else {
		files, err = engine.Render(ch, rv)
	}
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	m := &manifests{files: files}
	for name, text := range files {
		if !strings.HasSuffix(name, ".yaml") {
			continue
		}
		for _, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(text, -1) {
			if strings.TrimSpace(doc) == "" || strings.TrimSpace(regexp.MustCompile(`(?m)^#.*$`).ReplaceAllString(doc, "")) == "" {
				continue
			}
			var o map[string]any
			if err := yaml.UnmarshalStrict([]byte(doc), &o); err != nil {
				t.Fatalf("%s: not YAML: %v\n%s", name, err, doc)
			}
			m.objs = append(m.objs, &unstructured.Unstructured{Object: o})
		}
	}
	return m
}

// typed converts a rendered object to its API type, failing on fields the
// type does not have (a misspelt or misplaced field).
func typed[T any](t *testing.T, o *unstructured.Unstructured) *T {
	t.Helper()
	b, err := o.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	var v T
	if err := yaml.UnmarshalStrict(b, &v); err != nil {
		t.Fatalf("%s %s: %v", o.GetKind(), o.GetName(), err)
	}
	return &v
}

var (
	buildOnce sync.Once
	nicflow   string
	buildErr  error
)

// nicflowBinary builds nicflow from this checkout once.
func nicflowBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "nicflow-helm-test-")
		if err != nil {
			buildErr = err
			return
		}
		nicflow = filepath.Join(dir, "nicflow")
		cmd := exec.Command("go", "build", "-o", nicflow, "./cmd/nicflow")
		cmd.Dir = repoRoot
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/nicflow: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return nicflow
}

func TestMain(m *testing.M) {
	code := m.Run()
	if nicflow != "" {
		os.RemoveAll(filepath.Dir(nicflow))
	}
	os.Exit(code)
}

// argsError gives a container's nicflow command line to the real flag
// parser (with --help, so nothing runs), $(VAR) replaced by a value of the
// kind Kubernetes puts there; it also fails when the command resolved is
// not the one args name.
func argsError(exe string, args []string) error {
	env := map[string]string{"POD_NAME": "nf-nicflow-storage-0", "POD_IP": "10.1.2.3", "PG_USER": "alice"}
	var a []string
	var unknown []string
	for _, s := range args {
		a = append(a, regexp.MustCompile(`\$\(([A-Z_]+)\)`).ReplaceAllStringFunc(s, func(v string) string {
			r, ok := env[v[2:len(v)-1]]
			if !ok {
				unknown = append(unknown, v)
			}
			return r
		}))
	}
	if unknown != nil {
		return fmt.Errorf("%v name no variable the container defines", unknown)
	}
	var path []string
	for _, s := range a {
		if strings.HasPrefix(s, "-") {
			break
		}
		path = append(path, s)
	}
	out, err := exec.Command(exe, append(a, "--help")...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("nicflow %s: %v\n%s", strings.Join(a, " "), err, out)
	}
	if want := "Usage:\n  nicflow " + strings.Join(path, " "); !bytes.Contains(out, []byte(want)) {
		return fmt.Errorf("nicflow %s is not `nicflow %s`:\n%s", strings.Join(a, " "), strings.Join(path, " "), out)
	}
	return nil
}

func checkArgs(t *testing.T, where string, args []string) {
	t.Helper()
	if err := argsError(nicflowBinary(t), args); err != nil {
		t.Errorf("%s: %v", where, err)
	}
}

func flagValue(args []string, name string) string {
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v
		}
		if a == "--"+name && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

// checkPod checks a Pod template: non-root, every container locked down,
// every nicflow command line and probe accepted by nicflow, the keys of
// role mounted where --keys points.
func checkPod(t *testing.T, where, role string, spec corev1.PodSpec) (args []string) {
	t.Helper()
	psc := spec.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 {
		t.Errorf("%s: Pod securityContext %+v: want runAsNonRoot and a non-zero runAsUser", where, psc)
	}
	var keySecret *corev1.SecretVolumeSource
	for _, v := range spec.Volumes {
		if v.Name == "keys" && v.Secret != nil {
			keySecret = v.Secret
		}
	}
	for _, c := range slices.Concat(spec.InitContainers, spec.Containers) {
		cw := where + " container " + c.Name
		sc := c.SecurityContext
		if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
			sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
			sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
			t.Errorf("%s: securityContext %+v: want no privilege escalation, a read-only root and all capabilities dropped", cw, sc)
		}
		if !strings.HasPrefix(c.Image, "nicflow:") {
			continue
		}
		if len(c.Command) != 0 {
			t.Errorf("%s: command %v overrides the image's entrypoint", cw, c.Command)
		}
		checkArgs(t, cw, c.Args)
		for _, p := range []*corev1.Probe{c.ReadinessProbe, c.LivenessProbe} {
			if p == nil || p.Exec == nil {
				continue
			}
			if p.Exec.Command[0] != binary {
				t.Errorf("%s: probe runs %s, the image's nicflow is %s", cw, p.Exec.Command[0], binary)
			}
			checkArgs(t, cw+" probe", p.Exec.Command[1:])
			if admin := flagValue(p.Exec.Command, "admin"); admin != "" && flagValue(c.Args, "admin") != admin && !strings.HasSuffix(flagValue(c.Args, "admin"), admin[strings.LastIndex(admin, ":"):]) {
				t.Errorf("%s: probe asks %s, the node serves admin on %s", cw, admin, flagValue(c.Args, "admin"))
			}
		}
		if keys := flagValue(c.Args, "keys"); keys != "" {
			mounted := false
			for _, m := range c.VolumeMounts {
				if m.Name == "keys" && m.MountPath == keys && m.ReadOnly {
					mounted = true
				}
			}
			if !mounted || keySecret == nil {
				t.Errorf("%s: --keys %s is not the keys Secret mounted read-only", cw, keys)
			} else {
				// The files belong to root and the Pod's fsGroup: the
				// non-root user reads them through the group.
				var fsGroup *int64
				if psc != nil {
					fsGroup = psc.FSGroup
				}
				if m := keySecret.DefaultMode; m == nil || *m&0o040 == 0 || *m&0o007 != 0 || fsGroup == nil {
					t.Errorf("%s: key files mode %v with fsGroup %v: want group-readable, nothing for others, and an fsGroup", cw, m, fsGroup)
				}
				items := map[string]string{}
				for _, it := range keySecret.Items {
					items[it.Path] = it.Key
				}
				want := map[string]string{"cluster.key": "cluster.key", "ca.crt": "ca.crt", "node.crt": role + ".crt", "node.key": role + ".key"}
				if fmt.Sprint(items) != fmt.Sprint(want) {
					t.Errorf("%s: key directory %v, want %v (the %s certificate, no CA key)", cw, items, want, role)
				}
			}
		}
		if c.Name == role {
			args = c.Args
		}
	}
	if args == nil {
		t.Errorf("%s: no container named %s", where, role)
	}
	return args
}

// checkChart checks one rendering of the whole chart.
func checkChart(t *testing.T, m *manifests, workerKind string, wantJob bool) {
	t.Helper()
	for _, want := range []string{"ConfigMap/nf-nicflow-config", "Deployment/nf-nicflow-coordinator", "PersistentVolumeClaim/nf-nicflow-coordinator",
		"Service/nf-nicflow-coordinator", "Service/nf-nicflow-gossip", "Service/nf-nicflow-storage", "StatefulSet/nf-nicflow-storage", workerKind + "/nf-nicflow-worker"} {
		if !slices.Contains(m.kinds(), want) {
			t.Errorf("no %s among %v", want, m.kinds())
		}
	}
	if _, ok := m.files["nicflow/templates/NOTES.txt"]; !ok {
		t.Error("no NOTES.txt")
	}

	coord := typed[appsv1.Deployment](t, m.find("Deployment", "-coordinator"))
	if *coord.Spec.Replicas != 1 || coord.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("coordinator: %d replicas, strategy %s: want 1 and Recreate (it holds the catalog lock)", *coord.Spec.Replicas, coord.Spec.Strategy.Type)
	}
	cargs := checkPod(t, "coordinator", "coordinator", coord.Spec.Template.Spec)
	if flagValue(cargs, "dir") != "/var/lib/nicflow/db" {
		t.Errorf("coordinator --dir %q", flagValue(cargs, "dir"))
	}
	// Everyone joins the gossip Service, which selects the coordinator.
	gossip := typed[corev1.Service](t, m.find("Service", "-gossip"))
	if gossip.Spec.ClusterIP != "None" || fmt.Sprint(gossip.Spec.Selector) != fmt.Sprint(coord.Spec.Selector.MatchLabels) {
		t.Errorf("gossip Service %+v: want headless, selecting the coordinator %v", gossip.Spec, coord.Spec.Selector.MatchLabels)
	}
	join := fmt.Sprintf("%s:%d", gossip.Name, gossip.Spec.Ports[0].Port)
	if g := flagValue(cargs, "gossip"); !strings.HasSuffix(g, fmt.Sprintf(":%d", gossip.Spec.Ports[0].Port)) {
		t.Errorf("coordinator gossips on %s, the gossip Service forwards to %d", g, gossip.Spec.Ports[0].Port)
	}

	var wspec corev1.PodSpec
	switch workerKind {
	case "Deployment":
		wspec = typed[appsv1.Deployment](t, m.find("Deployment", "-worker")).Spec.Template.Spec
	case "DaemonSet":
		wspec = typed[appsv1.DaemonSet](t, m.find("DaemonSet", "-worker")).Spec.Template.Spec
	}
	wargs := checkPod(t, "worker", "worker", wspec)
	if j := flagValue(wargs, "join"); j != join {
		t.Errorf("worker --join %s, want %s", j, join)
	}

	st := typed[appsv1.StatefulSet](t, m.find("StatefulSet", "-storage"))
	sargs := checkPod(t, "storage", "storage", st.Spec.Template.Spec)
	if j := flagValue(sargs, "join"); j != join {
		t.Errorf("storage --join %s, want %s", j, join)
	}
	if flagValue(sargs, "node-id") != "$(POD_NAME)" {
		t.Errorf("storage --node-id %q: want the Pod's stable name", flagValue(sargs, "node-id"))
	}
	if len(st.Spec.VolumeClaimTemplates) != 1 || st.Spec.VolumeClaimTemplates[0].Name != "data" {
		t.Errorf("storage: volumeClaimTemplates %v, want one named data", st.Spec.VolumeClaimTemplates)
	}

	// The config file is a nicflow config file.
	cm := typed[corev1.ConfigMap](t, m.find("ConfigMap", "-config"))
	p := filepath.Join(t.TempDir(), "nicflow.toml")
	if err := os.WriteFile(p, []byte(cm.Data["nicflow.toml"]), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(nicflowBinary(t), "config", "check", p).CombinedOutput(); err != nil {
		t.Errorf("ConfigMap nicflow.toml %q: %s %v", cm.Data["nicflow.toml"], out, err)
	}

	job := m.find("Job", "-keys")
	if (job != nil) != wantJob {
		t.Fatalf("keys Job rendered: %v, want %v", job != nil, wantJob)
	}
	if job == nil {
		return
	}
	j := typed[batchv1.Job](t, job)
	if j.Annotations["helm.sh/hook"] != "pre-install" {
		t.Errorf("keys Job hook %q, want pre-install", j.Annotations["helm.sh/hook"])
	}
	spec := j.Spec.Template.Spec
	psc := spec.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
		t.Errorf("keys Job: Pod securityContext %+v: want runAsNonRoot", psc)
	}
	for _, c := range spec.InitContainers {
		checkArgs(t, "keys Job init container "+c.Name, c.Args)
	}
	if len(spec.InitContainers) != 5 || !slices.Equal(spec.InitContainers[0].Args[:2], []string{"cluster", "init"}) {
		t.Errorf("keys Job: want cluster init, then a cluster cert per role; got %d init containers", len(spec.InitContainers))
	}
	// kubectl stores exactly what the nodes mount, and never the CA key.
	store := spec.Containers[0].Args
	secretName := store[3]
	for _, o := range []*unstructured.Unstructured{m.find("Deployment", "-coordinator"), m.find("StatefulSet", "-storage")} {
		if !strings.Contains(fmt.Sprint(o.Object), "secretName:"+secretName) {
			t.Errorf("%s does not mount the Secret %s the Job creates", o.GetName(), secretName)
		}
	}
	var keys []string
	for _, a := range store {
		if v, ok := strings.CutPrefix(a, "--from-file="); ok {
			k, src, _ := strings.Cut(v, "=")
			keys = append(keys, k)
			if strings.HasSuffix(src, "ca.key") {
				t.Errorf("keys Job stores the CA's private key (%s)", a)
			}
		}
	}
	sort.Strings(keys)
	want := []string{"ca.crt", "client.crt", "client.key", "cluster.key", "coordinator.crt", "coordinator.key", "storage.crt", "storage.key", "worker.crt", "worker.key"}
	if !slices.Equal(keys, want) {
		t.Errorf("keys Job stores %v, want %v", keys, want)
	}
	for _, kind := range []string{"ServiceAccount", "Role", "RoleBinding"} {
		if o := m.find(kind, "-keys"); o == nil || o.GetAnnotations()["helm.sh/hook"] != "pre-install" {
			t.Errorf("keys Job's %s is missing or not a pre-install hook", kind)
		}
	}
}

func TestRenderDefault(t *testing.T) {
	m := render(t, map[string]any{})
	checkChart(t, m, "Deployment", true)
	w := typed[appsv1.Deployment](t, m.find("Deployment", "-worker"))
	if *w.Spec.Replicas != 2 {
		t.Errorf("workers: %d replicas, want the default 2", *w.Spec.Replicas)
	}
	if len(w.Spec.Template.Spec.NodeSelector) != 0 || w.Spec.Template.Spec.HostNetwork {
		t.Errorf("default workers have a node selector %v or the host network", w.Spec.Template.Spec.NodeSelector)
	}
	coord := typed[appsv1.Deployment](t, m.find("Deployment", "-coordinator"))
	if a := coord.Spec.Template.Spec.InitContainers[0].Args; a[0] != "tpch" || flagValue(a, "sf") != "0.01" {
		t.Errorf("coordinator init container runs %v, want tpch gen --sf 0.01", a)
	}
}

func TestRenderDPU(t *testing.T) {
	m := render(t, readValues(t, filepath.Join(chartDir, "values-dpu.yaml")))
	checkChart(t, m, "DaemonSet", true)
	if m.find("Deployment", "-worker") != nil {
		t.Error("a worker Deployment besides the DaemonSet")
	}
	ds := typed[appsv1.DaemonSet](t, m.find("DaemonSet", "-worker"))
	spec := ds.Spec.Template.Spec
	if spec.NodeSelector["nicflow.io/dpu"] != "true" || spec.NodeSelector["kubernetes.io/arch"] != "arm64" {
		t.Errorf("DPU workers' node selector %v", spec.NodeSelector)
	}
	if len(spec.Tolerations) != 1 || spec.Tolerations[0].Key != "nicflow.io/dpu" || spec.Tolerations[0].Effect != corev1.TaintEffectNoSchedule {
		t.Errorf("DPU workers' tolerations %v", spec.Tolerations)
	}
	if !spec.HostNetwork || spec.DNSPolicy != corev1.DNSClusterFirstWithHostNet {
		t.Errorf("DPU workers: hostNetwork %v, dnsPolicy %s", spec.HostNetwork, spec.DNSPolicy)
	}
	args := spec.Containers[0].Args
	for f, v := range map[string]string{"cores": "14", "memory": "24GiB", "nic-bandwidth": "200Gbit"} {
		if flagValue(args, f) != v {
			t.Errorf("DPU worker --%s %q, want %q", f, flagValue(args, f), v)
		}
	}
	// The other roles keep off the DPUs.
	if len(typed[appsv1.StatefulSet](t, m.find("StatefulSet", "-storage")).Spec.Template.Spec.NodeSelector) != 0 {
		t.Error("storage nodes got the DPU node selector")
	}
}

func TestRenderVariants(t *testing.T) {
	t.Run("existing Secret", func(t *testing.T) {
		m := render(t, map[string]any{"keys": map[string]any{"existingSecret": "my-keys"}})
		checkChart(t, m, "Deployment", false)
		if !strings.Contains(fmt.Sprint(m.find("Deployment", "-worker").Object), "secretName:my-keys") {
			t.Error("workers do not mount keys.existingSecret")
		}
	})
	t.Run("Secret left by an earlier install", func(t *testing.T) {
		checkChart(t, render(t, map[string]any{}, "nf-nicflow-keys"), "Deployment", false)
		// Another Secret does not stop the Job.
		checkChart(t, render(t, map[string]any{}, "unrelated"), "Deployment", true)
	})
	t.Run("no TPC-H: an empty database", func(t *testing.T) {
		m := render(t, map[string]any{"coordinator": map[string]any{"tpch": map[string]any{"enabled": false}},
			"config": map[string]any{"worker": map[string]any{"scan-codec": "lz4", "shuffle-codec": "zstd"}}})
		checkChart(t, m, "Deployment", true)
		coord := typed[appsv1.Deployment](t, m.find("Deployment", "-coordinator"))
		if a := coord.Spec.Template.Spec.InitContainers[0].Args; a[0] != "sql" || !slices.Contains(a, "--create") {
			t.Errorf("coordinator init container runs %v, want sql --create", a)
		}
		cm := typed[corev1.ConfigMap](t, m.find("ConfigMap", "-config"))
		p := filepath.Join(t.TempDir(), "nicflow.toml")
		os.WriteFile(p, []byte(cm.Data["nicflow.toml"]), 0o644)
		out, err := exec.Command(nicflowBinary(t), "--config", p, "config", "show", "worker").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "lz4") {
			t.Errorf("nicflow.toml %q: config show worker: %s %v", cm.Data["nicflow.toml"], out, err)
		}
	})
	t.Run("a config key nicflow does not know fails the check", func(t *testing.T) {
		m := render(t, map[string]any{"config": map[string]any{"worker": map[string]any{"scan-codecs": "lz4"}}})
		cm := typed[corev1.ConfigMap](t, m.find("ConfigMap", "-config"))
		p := filepath.Join(t.TempDir(), "nicflow.toml")
		os.WriteFile(p, []byte(cm.Data["nicflow.toml"]), 0o644)
		out, err := exec.Command(nicflowBinary(t), "config", "check", p).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "scan-codecs") {
			t.Errorf("config check accepted an unknown key: %s %v", out, err)
		}
	})
	t.Run("PostgreSQL clients on the coordinator", func(t *testing.T) {
		m := render(t, map[string]any{"coordinator": map[string]any{"postgres": map[string]any{"enabled": true, "userSecret": "pg-user"}}})
		checkChart(t, m, "Deployment", true)
		coord := typed[appsv1.Deployment](t, m.find("Deployment", "-coordinator"))
		ps := coord.Spec.Template.Spec
		users := ps.InitContainers[len(ps.InitContainers)-1]
		if users.Name != "users" || !slices.Equal(users.Args, []string{"user", "add", "--dir", "/var/lib/nicflow/db", "$(PG_USER)"}) ||
			len(users.Env) != 4 || users.Env[3].Name != "NICFLOW_PASSWORD" || users.Env[3].ValueFrom.SecretKeyRef.Name != "pg-user" {
			t.Errorf("users init container: %+v", users)
		}
		if !slices.Contains(ps.Containers[0].Args, "--pg-listen=0.0.0.0:5433") {
			t.Errorf("coordinator args %v lack --pg-listen", ps.Containers[0].Args)
		}
		svc := typed[corev1.Service](t, m.find("Service", "-coordinator"))
		if p := svc.Spec.Ports[len(svc.Spec.Ports)-1]; p.Name != "postgres" || p.Port != 5433 {
			t.Errorf("coordinator Service ports %v", svc.Spec.Ports)
		}
		ch, err := loader.Load(chartDir)
		if err != nil {
			t.Fatal(err)
		}
		rv, err := chartutil.ToRenderValues(ch, map[string]any{"coordinator": map[string]any{"postgres": map[string]any{"enabled": true}}},
			chartutil.ReleaseOptions{Name: release, Namespace: namespace, IsInstall: true}, chartutil.DefaultCapabilities)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := engine.Render(ch, rv); err == nil || !strings.Contains(err.Error(), "no anonymous access") {
			t.Errorf("postgres without a user Secret: %v", err)
		}
	})
	t.Run("a bad worker kind is refused", func(t *testing.T) {
		ch, err := loader.Load(chartDir)
		if err != nil {
			t.Fatal(err)
		}
		rv, err := chartutil.ToRenderValues(ch, map[string]any{"worker": map[string]any{"kind": "ReplicaSet"}},
			chartutil.ReleaseOptions{Name: release, Namespace: namespace, IsInstall: true}, chartutil.DefaultCapabilities)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := engine.Render(ch, rv); err == nil || !strings.Contains(err.Error(), "want Deployment or DaemonSet") {
			t.Errorf("worker.kind ReplicaSet: %v", err)
		}
	})
}

// The check must see a drifted command line.
func TestCheckArgsCatchesDrift(t *testing.T) {
	exe := nicflowBinary(t)
	if err := argsError(exe, []string{"storage", "--keys=/k", "--node-id=$(POD_NAME)", "--advertise=$(POD_IP)"}); err != nil {
		t.Fatalf("a valid command line refused: %v", err)
	}
	for _, args := range [][]string{{"worker", "--keys=/k", "--joinn=x:1"}, {"storage", "--node-id=$(NODE)"}, {"tpch", "gen", "--scale", "1"}, {"wrker", "--keys=/k"}} {
		if err := argsError(exe, args); err == nil {
			t.Errorf("accepted %v", args)
		}
	}
}
