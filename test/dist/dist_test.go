// Package dist checks what dist/ ships beside the binary and no test
// here can run: the Kubernetes manifest, decoded against the fields
// Kubernetes defines for those objects (an unknown or misplaced field
// fails, as `kubectl apply --validate=strict` would), and the container
// image's definition against the repository. Neither is run against a
// cluster or a container engine here.
package dist

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// The subset of the Kubernetes API the manifest uses, field names as the
// API spells them (k8s.io/api: core/v1, apps/v1). Decoding with
// KnownFields rejects any field not declared here.
type (
	objectMeta struct {
		Name      string            `yaml:"name"`
		Namespace string            `yaml:"namespace"`
		Labels    map[string]string `yaml:"labels"`
	}
	object struct {
		APIVersion string     `yaml:"apiVersion"`
		Kind       string     `yaml:"kind"`
		Metadata   objectMeta `yaml:"metadata"`
		Spec       yaml.Node  `yaml:"spec"`
	}
	daemonSetSpec struct {
		Selector struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"selector"`
		UpdateStrategy struct {
			Type string `yaml:"type"`
		} `yaml:"updateStrategy"`
		Template struct {
			Metadata objectMeta `yaml:"metadata"`
			Spec     podSpec    `yaml:"spec"`
		} `yaml:"template"`
	}
	podSpec struct {
		HostPID                       bool         `yaml:"hostPID"`
		TerminationGracePeriodSeconds *int         `yaml:"terminationGracePeriodSeconds"`
		Tolerations                   []toleration `yaml:"tolerations"`
		Containers                    []container  `yaml:"containers"`
		Volumes                       []volume     `yaml:"volumes"`
	}
	toleration struct {
		Key      string `yaml:"key"`
		Operator string `yaml:"operator"`
		Effect   string `yaml:"effect"`
	}
	container struct {
		Name            string   `yaml:"name"`
		Image           string   `yaml:"image"`
		ImagePullPolicy string   `yaml:"imagePullPolicy"`
		Command         []string `yaml:"command"`
		Args            []string `yaml:"args"`
		Env             []struct {
			Name  string `yaml:"name"`
			Value string `yaml:"value"`
		} `yaml:"env"`
		SecurityContext struct {
			Privileged *bool `yaml:"privileged"`
		} `yaml:"securityContext"`
		Resources struct {
			Requests map[string]string `yaml:"requests"`
			Limits   map[string]string `yaml:"limits"`
		} `yaml:"resources"`
		VolumeMounts []struct {
			Name      string `yaml:"name"`
			MountPath string `yaml:"mountPath"`
			ReadOnly  bool   `yaml:"readOnly"`
		} `yaml:"volumeMounts"`
	}
	volume struct {
		Name     string `yaml:"name"`
		HostPath *struct {
			Path string `yaml:"path"`
			Type string `yaml:"type"`
		} `yaml:"hostPath"`
	}
)

func repo(t *testing.T, rel string) string {
	t.Helper()
	return filepath.Join("..", "..", rel)
}

// strict decodes n into v, refusing fields v does not declare.
func strict(n *yaml.Node, v any) error {
	b, err := yaml.Marshal(n)
	if err != nil {
		return err
	}
	d := yaml.NewDecoder(bytes.NewReader(b))
	d.KnownFields(true)
	return d.Decode(v)
}

func TestDaemonSet(t *testing.T) {
	f, err := os.Open(repo(t, "dist/k8s/daemonset.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := yaml.NewDecoder(f)
	dec.KnownFields(true)
	var ds *daemonSetSpec
	var dsMeta objectMeta
	namespaces := map[string]bool{}
	for {
		var o object
		err := dec.Decode(&o)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("daemonset.yaml: %v", err)
		}
		if o.Metadata.Name == "" {
			t.Errorf("a %s without metadata.name", o.Kind)
		}
		switch o.APIVersion + " " + o.Kind {
		case "v1 Namespace":
			namespaces[o.Metadata.Name] = true
		case "apps/v1 DaemonSet":
			ds, dsMeta = &daemonSetSpec{}, o.Metadata
			if err := strict(&o.Spec, ds); err != nil {
				t.Fatalf("DaemonSet spec: %v", err)
			}
		default:
			t.Errorf("unexpected object %s %s", o.APIVersion, o.Kind)
		}
	}
	if ds == nil {
		t.Fatal("no apps/v1 DaemonSet")
	}
	if !namespaces[dsMeta.Namespace] {
		t.Errorf("the DaemonSet's namespace %q is not created beside it", dsMeta.Namespace)
	}
	// The selector must match the pods it makes, or the API refuses it.
	if len(ds.Selector.MatchLabels) == 0 {
		t.Error("no selector")
	}
	for k, v := range ds.Selector.MatchLabels {
		if ds.Template.Metadata.Labels[k] != v {
			t.Errorf("selector %s=%s does not match the template's labels %v", k, v, ds.Template.Metadata.Labels)
		}
	}
	pod := ds.Template.Spec
	if !pod.HostPID {
		t.Error("hostPID is off: watch would not see the node's processes")
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("want one container, got %d", len(pod.Containers))
	}
	c := pod.Containers[0]
	if c.Name == "" || c.Image == "" {
		t.Errorf("container name %q, image %q", c.Name, c.Image)
	}
	if c.SecurityContext.Privileged == nil || !*c.SecurityContext.Privileged {
		t.Error("the container is not privileged: it cannot load BPF programs nor enter the host's mount namespace")
	}
	vols := map[string]volume{}
	for _, v := range pod.Volumes {
		if v.HostPath == nil || !filepath.IsAbs(v.HostPath.Path) {
			t.Errorf("volume %s: want a hostPath with an absolute path", v.Name)
			continue
		}
		vols[v.Name] = v
	}
	var mounted []string
	for _, m := range c.VolumeMounts {
		v, ok := vols[m.Name]
		switch {
		case !ok:
			t.Errorf("volumeMount %s names no volume", m.Name)
		case m.MountPath != v.HostPath.Path:
			// entrypoint.sh copies the binary into the state volume and
			// runs it in the host's mount namespace at the same path.
			t.Errorf("volume %s: mounted at %s, the node's %s: the paths must be the same", m.Name, m.MountPath, v.HostPath.Path)
		}
		mounted = append(mounted, m.MountPath)
	}
	if !slices.Contains(mounted, "/var/lib/polygraph") {
		t.Error("the state directory /var/lib/polygraph is not mounted: entrypoint.sh has nowhere to put the binary")
	}
	// It runs what the systemd unit runs.
	unit := unitExecStart(t)
	if !slices.Equal(c.Args, unit) {
		t.Errorf("args %q, the unit's ExecStart runs %q", c.Args, unit)
	}
	if grace := pod.TerminationGracePeriodSeconds; grace == nil || *grace < 30 {
		t.Error("terminationGracePeriodSeconds below the unit's TimeoutStopSec=30: sessions may not close")
	}
}

// unitExecStart returns the arguments the systemd unit gives polygraph.
func unitExecStart(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(repo(t, "dist/polygraph-watch.service"))
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "ExecStart=/usr/bin/polygraph "); ok {
			return strings.Fields(rest)
		}
	}
	t.Fatal("the unit has no ExecStart=/usr/bin/polygraph")
	return nil
}

// TestContainerfile: every file the image copies from the repository
// exists, the entry point is an executable, valid shell script that
// enters the host's mount namespace, and CMD runs what the unit runs.
func TestContainerfile(t *testing.T) {
	b, err := os.ReadFile(repo(t, "dist/container/Containerfile"))
	if err != nil {
		t.Fatal(err)
	}
	var froms int
	var entry, cmd string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		switch strings.ToUpper(f[0]) {
		case "FROM":
			froms++
		case "COPY":
			if strings.HasPrefix(f[1], "--from=") || len(f) != 3 {
				continue
			}
			if _, err := os.Stat(repo(t, f[1])); err != nil && f[1] != "." {
				t.Errorf("COPY %s: %v", f[1], err)
			}
		case "ENTRYPOINT":
			entry = strings.Join(f[1:], " ")
		case "CMD":
			cmd = strings.Join(f[1:], " ")
		case "WORKDIR", "RUN", "ENV", "ARG", "LABEL":
		default:
			t.Errorf("unexpected instruction %s", f[0])
		}
	}
	if froms != 2 {
		t.Errorf("want a build stage and a runtime stage, got %d FROM", froms)
	}
	if entry != `["/usr/bin/polygraph-host"]` {
		t.Errorf("ENTRYPOINT %s", entry)
	}
	var cmdArgs []string
	if err := yaml.Unmarshal([]byte(cmd), &cmdArgs); err != nil || !slices.Equal(cmdArgs, unitExecStart(t)) {
		t.Errorf("CMD %s (%v): want the unit's arguments %q", cmd, err, unitExecStart(t))
	}
	script := repo(t, "dist/container/entrypoint.sh")
	st, err := os.Stat(script)
	if err != nil || st.Mode()&0o111 == 0 {
		t.Fatalf("entrypoint.sh is not executable: %v", err)
	}
	if out, err := exec.Command("sh", "-n", script).CombinedOutput(); err != nil {
		t.Errorf("sh -n entrypoint.sh: %v\n%s", err, out)
	}
	s, _ := os.ReadFile(script)
	if !bytes.Contains(s, []byte("exec nsenter --target 1 --mount ")) {
		t.Error("entrypoint.sh does not exec polygraph in the host's mount namespace")
	}
}

// TestStrictRejectsMisspelling: the check above would catch a field the
// API does not know, such as a miscased hostPID, which Kubernetes would
// otherwise drop (and run the pod without the host's processes).
func TestStrictRejectsMisspelling(t *testing.T) {
	var n yaml.Node
	if err := yaml.Unmarshal([]byte("template:\n  spec:\n    hostPid: true\n"), &n); err != nil {
		t.Fatal(err)
	}
	var ds daemonSetSpec
	if err := strict(n.Content[0], &ds); err == nil || !strings.Contains(err.Error(), "hostPid") {
		t.Errorf("a misspelt field decoded: %v", err)
	}
}
