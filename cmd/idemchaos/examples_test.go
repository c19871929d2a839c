package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/goccy/go-yaml"

	"github.com/idemchaos/idemchaos/harness/pgtest"
)

// workflow is the part of a GitHub Actions workflow the dry run reads.
type workflow struct {
	Env  map[string]string `yaml:"env"`
	Jobs map[string]struct {
		Needs    string `yaml:"needs"`
		Strategy struct {
			Matrix struct {
				Shard []int `yaml:"shard"`
			} `yaml:"matrix"`
		} `yaml:"strategy"`
		Steps []step `yaml:"steps"`
	} `yaml:"jobs"`
}

// step is one step of a workflow job.
type step struct {
	Name string `yaml:"name"`
	Uses string `yaml:"uses"`
	Run  string `yaml:"run"`
}

// shell runs script with bash -e (as Actions does) in dir, with bin's
// directory first on PATH, and returns its exit code and output.
func shell(t *testing.T, bin, dir, script string, env ...string) (int, string) {
	t.Helper()
	cmd := exec.Command("bash", "-e", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), append(env, "PATH="+filepath.Dir(bin)+":"+os.Getenv("PATH"))...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), out.String()
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, out.String()
}

var actionsExpr = regexp.MustCompile(`\$\{\{\s*([^}]*?)\s*\}\}`)

// A local dry run of examples/github-actions-sharded.yml: every `run:`
// command that calls idemchaos runs here as written (the installs are
// skipped: the binary under test is on PATH), each matrix shard as its own
// process at once, over a small seed range; the artifacts are laid out as
// download-artifact's merge-multiple does, and the merge job must pass.
func TestExample_GitHubActionsShardedDryRun(t *testing.T) {
	b, err := os.ReadFile("../../examples/github-actions-sharded.yml")
	if err != nil {
		t.Fatal(err)
	}
	var wf workflow
	if err := yaml.Unmarshal(b, &wf); err != nil {
		t.Fatal(err)
	}
	shardJob, mergeJob := wf.Jobs["shard"], wf.Jobs["merge"]
	if n := len(shardJob.Strategy.Matrix.Shard); n == 0 || fmt.Sprint(n) != wf.Env["SHARDS"] {
		t.Fatalf("matrix has %d shards, env SHARDS=%q: they must agree", n, wf.Env["SHARDS"])
	}
	if mergeJob.Needs != "shard" {
		t.Fatalf("merge needs %q, want shard", mergeJob.Needs)
	}
	bin := buildCLI(t)
	work := t.TempDir()
	// The workflow runs idemchaos/*.yaml: here, one bundled scenario
	// against the reference.
	scen, err := os.ReadFile("../../scenarios/key-reuse.yaml")
	if err != nil {
		t.Fatal(err)
	}
	env := []string{"SEEDS=1-3", "SHARDS=" + wf.Env["SHARDS"], "TMPDIR=" + t.TempDir()}
	idemchaosSteps := func(job string, steps []step, shard int) []string {
		var out []string
		for _, s := range steps {
			if !strings.Contains(s.Run, "idemchaos ") || strings.Contains(s.Run, "go install") {
				continue
			}
			run := actionsExpr.ReplaceAllStringFunc(s.Run, func(e string) string {
				switch expr := actionsExpr.FindStringSubmatch(e)[1]; expr {
				case "matrix.shard":
					return fmt.Sprint(shard)
				default:
					t.Fatalf("%s: step %q uses ${{ %s }}, which the dry run does not know", job, s.Name, expr)
					return ""
				}
			})
			out = append(out, run)
		}
		return out
	}
	shards := filepath.Join(work, "shards")
	var wg sync.WaitGroup
	ran := make([]int, len(shardJob.Strategy.Matrix.Shard))
	for i, shard := range shardJob.Strategy.Matrix.Shard {
		dir := filepath.Join(work, fmt.Sprint("runner-", shard))
		if err := os.MkdirAll(filepath.Join(dir, "idemchaos"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "idemchaos", "key-reuse.yaml"), scen, 0o644); err != nil {
			t.Fatal(err)
		}
		steps := idemchaosSteps("shard", shardJob.Steps, shard)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, s := range steps {
				if code, out := shell(t, bin, dir, s, env...); code != 0 {
					t.Errorf("shard %d: %q: exit %d\n%s", shard, s, code, out)
					return
				}
				ran[i]++
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	for i, n := range ran {
		if n != 1 {
			t.Fatalf("shard %d ran %d idemchaos steps, want 1", i+1, n)
		}
	}
	// download-artifact with merge-multiple: every shard's files in one dir.
	for _, shard := range shardJob.Strategy.Matrix.Shard {
		dir := filepath.Join(work, fmt.Sprint("runner-", shard))
		if out, err := exec.Command("sh", "-c", fmt.Sprintf("mkdir -p %[1]s/histories && cp %[2]s/shard-%[3]d.json %[1]s/ && cp -r %[2]s/histories/. %[1]s/histories/", shards, dir, shard)).CombinedOutput(); err != nil {
			t.Fatalf("artifact of shard %d: %v\n%s", shard, err, out)
		}
	}
	merged := 0
	for _, s := range idemchaosSteps("merge", mergeJob.Steps, 0) {
		code, out := shell(t, bin, work, s, env...)
		if code != 0 {
			t.Fatalf("merge: %q: exit %d\n%s", s, code, out)
		}
		if !strings.Contains(out, fmt.Sprintf("merged %d shards: 3 runs", len(shardJob.Strategy.Matrix.Shard))) {
			t.Errorf("merge output:\n%s", out)
		}
		merged++
	}
	if merged != 1 {
		t.Fatalf("%d merge steps ran, want 1", merged)
	}
	for _, f := range []string{"idemchaos.xml", "idemchaos.html"} {
		if _, err := os.Stat(filepath.Join(work, f)); err != nil {
			t.Errorf("the merge job's %s: %v", f, err)
		}
	}
}

// The subset of the Kubernetes API the example uses, decoded strictly: a
// field that is misspelt or misplaced is an error, as kubectl --validate
// would make it.
type k8sDoc struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	Spec k8sSpec `yaml:"spec"`
}

type k8sSpec struct {
	// PersistentVolumeClaim
	AccessModes []string `yaml:"accessModes"`
	Resources   struct {
		Requests map[string]string `yaml:"requests"`
	} `yaml:"resources"`
	// Job
	CompletionMode string `yaml:"completionMode"`
	Completions    *int   `yaml:"completions"`
	Parallelism    *int   `yaml:"parallelism"`
	BackoffLimit   *int   `yaml:"backoffLimit"`
	Template       struct {
		Spec struct {
			RestartPolicy string `yaml:"restartPolicy"`
			Containers    []struct {
				Name            string   `yaml:"name"`
				Image           string   `yaml:"image"`
				ImagePullPolicy string   `yaml:"imagePullPolicy"`
				Command         []string `yaml:"command"`
				Args            []string `yaml:"args"`
				Env             []struct {
					Name      string `yaml:"name"`
					Value     string `yaml:"value"`
					ValueFrom *struct {
						SecretKeyRef struct {
							Name string `yaml:"name"`
							Key  string `yaml:"key"`
						} `yaml:"secretKeyRef"`
					} `yaml:"valueFrom"`
				} `yaml:"env"`
				VolumeMounts []struct {
					Name      string `yaml:"name"`
					MountPath string `yaml:"mountPath"`
					ReadOnly  bool   `yaml:"readOnly"`
				} `yaml:"volumeMounts"`
			} `yaml:"containers"`
			Volumes []struct {
				Name      string `yaml:"name"`
				ConfigMap *struct {
					Name string `yaml:"name"`
				} `yaml:"configMap"`
				PersistentVolumeClaim *struct {
					ClaimName string `yaml:"claimName"`
				} `yaml:"persistentVolumeClaim"`
			} `yaml:"volumes"`
		} `yaml:"spec"`
	} `yaml:"template"`
}

// readManifest decodes every document of the example, strictly.
func readManifest(t *testing.T) []k8sDoc {
	t.Helper()
	f, err := os.Open("../../examples/kubernetes-indexed-job.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := yaml.NewDecoder(f, yaml.Strict())
	var docs []k8sDoc
	for {
		var d k8sDoc
		if err := dec.Decode(&d); err == io.EOF {
			return docs
		} else if err != nil {
			t.Fatalf("manifest: %v", err)
		}
		docs = append(docs, d)
	}
}

// The Indexed Job's structure: known kinds and API versions, the fields a
// Job needs, an Indexed completion mode whose completion count the shards
// are told, and volumes and claims that exist.
func TestExample_KubernetesIndexedJobSchema(t *testing.T) {
	t.Parallel()
	docs := readManifest(t)
	claims := map[string]bool{}
	var jobs int
	for _, d := range docs {
		if d.Metadata.Name == "" {
			t.Errorf("%s without metadata.name", d.Kind)
		}
		switch d.APIVersion + " " + d.Kind {
		case "v1 PersistentVolumeClaim":
			if len(d.Spec.AccessModes) == 0 || d.Spec.Resources.Requests["storage"] == "" {
				t.Errorf("claim %s: accessModes and resources.requests.storage are required", d.Metadata.Name)
			}
			if !slices.Contains(d.Spec.AccessModes, "ReadWriteMany") {
				t.Errorf("claim %s: the shards' pods write it at once: want ReadWriteMany", d.Metadata.Name)
			}
			claims[d.Metadata.Name] = true
		case "batch/v1 Job":
			jobs++
			s := d.Spec
			if s.CompletionMode != "Indexed" || s.Completions == nil || *s.Completions < 1 {
				t.Fatalf("job %s: want completionMode Indexed and completions ≥ 1", d.Metadata.Name)
			}
			if s.Parallelism == nil || *s.Parallelism > *s.Completions {
				t.Errorf("job %s: parallelism should be set, at most completions", d.Metadata.Name)
			}
			ps := s.Template.Spec
			if ps.RestartPolicy != "Never" && ps.RestartPolicy != "OnFailure" {
				t.Errorf("job %s: restartPolicy %q: a Job's pods need Never or OnFailure", d.Metadata.Name, ps.RestartPolicy)
			}
			if len(ps.Containers) != 1 {
				t.Fatalf("job %s: %d containers, want 1", d.Metadata.Name, len(ps.Containers))
			}
			c := ps.Containers[0]
			if c.Name == "" || c.Image == "" || len(c.Command) == 0 {
				t.Errorf("job %s: container needs name, image and command", d.Metadata.Name)
			}
			script := strings.Join(c.Args, " ")
			for _, want := range []string{"idemchaos run", "--shard auto", "--json", "JOB_COMPLETION_INDEX"} {
				if !strings.Contains(script, want) {
					t.Errorf("job %s: the command lacks %q: %s", d.Metadata.Name, want, script)
				}
			}
			total := ""
			for _, e := range c.Env {
				if e.Name == "IDEMCHAOS_SHARD_TOTAL" {
					total = e.Value
				}
				if e.Value == "" && e.ValueFrom == nil {
					t.Errorf("env %s: no value", e.Name)
				}
			}
			if total != fmt.Sprint(*s.Completions) {
				t.Errorf("job %s: IDEMCHAOS_SHARD_TOTAL=%q, completions %d: they must agree", d.Metadata.Name, total, *s.Completions)
			}
			vols := map[string]bool{}
			for _, v := range ps.Volumes {
				vols[v.Name] = true
				if v.PersistentVolumeClaim != nil && !claims[v.PersistentVolumeClaim.ClaimName] {
					t.Errorf("volume %s: claim %s is not in the manifest", v.Name, v.PersistentVolumeClaim.ClaimName)
				}
			}
			for _, m := range c.VolumeMounts {
				if !vols[m.Name] || m.MountPath == "" {
					t.Errorf("mount %s: no such volume, or no path", m.Name)
				}
			}
		default:
			t.Errorf("unknown kind %s %s", d.APIVersion, d.Kind)
		}
	}
	if jobs != 1 {
		t.Errorf("%d Jobs, want 1", jobs)
	}
}

// The Indexed Job's pod command, run here as Kubernetes would run it (its
// $$ escapes reduced, the mounts pointed at temp dirs), once per completion
// index, against a real ordersvc process; merging the shards' reports
// must give one clean verdict over every pair.
func TestExample_KubernetesIndexedJobRunsLocally(t *testing.T) {
	docs := readManifest(t)
	var job *k8sDoc
	for i := range docs {
		if docs[i].Kind == "Job" {
			job = &docs[i]
		}
	}
	if job == nil {
		t.Fatal("no Job")
	}
	c := job.Spec.Template.Spec.Containers[0]
	bin, svc := buildCLI(t), buildOrdersvc(t)
	dsn := pgtest.Database(t)
	url := startOrdersvcProcess(t, svc, dsn, false)
	dir := t.TempDir()
	scenDir, results := filepath.Join(dir, "scenarios"), filepath.Join(dir, "results")
	for _, d := range []string{scenDir, results} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(ordersvcScenario)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(scenDir, "ordersvc.yaml"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	script := strings.ReplaceAll(strings.Join(c.Args, " "), "$$", "$")
	script = strings.NewReplacer("/scenarios/", scenDir+"/", "/results/", results+"/", "/results ", results+" ").Replace(script)
	env := []string{"SEEDS=1-3", "TARGET=" + url, "ORDERSVC_DSN=" + dsn, "TMPDIR=" + t.TempDir()}
	for _, e := range c.Env {
		if e.Name == "IDEMCHAOS_SHARD_TOTAL" {
			env = append(env, e.Name+"="+e.Value)
		}
	}
	n := *job.Spec.Completions
	pods := make([][]byte, n)
	var wg sync.WaitGroup
	for k := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(c.Command[0], append(c.Command[1:], script)...)
			// A fresh slice per pod: appending to the shared env would
			// write every pod's index into one backing array, and under
			// load a pod ran as another's shard.
			pod := append(slices.Clip(env), fmt.Sprint("JOB_COMPLETION_INDEX=", k), "PATH="+filepath.Dir(bin)+":"+os.Getenv("PATH"))
			cmd.Env = append(os.Environ(), pod...)
			out, err := cmd.CombinedOutput()
			pods[k] = out
			if err != nil {
				t.Errorf("pod %d: %v\n%s", k, err, out)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	var files []string
	for k := 1; k <= n; k++ {
		files = append(files, filepath.Join(results, fmt.Sprintf("shard-%d.json", k)))
	}
	code, out, stderr := runCLI(t, bin, dir, nil, append([]string{"merge", "--json", "--histories", filepath.Join(results, "histories")}, files...)...)
	if len(out) == 0 {
		// A pod's script passes any exit ≤ 2, so its own words are
		// what says why a shard's report is missing.
		for k, p := range pods {
			t.Logf("pod %d:\n%s", k, p)
		}
		t.Fatalf("merge: exit %d and no report\n%s", code, stderr)
	}
	rep := decodeReport(t, out)
	if code != ExitClean || len(rep.Runs) != 3 || rep.Verdict != "pass" {
		t.Errorf("merge: exit %d, %d runs, %s; want 0, 3, pass\n%s", code, len(rep.Runs), rep.Verdict, stderr)
	}
}
