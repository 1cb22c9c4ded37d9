package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/provisioning"
	eventsfake "github.com/lathe-autoscaler/lathe/pkg/events/fake"
	"github.com/lathe-autoscaler/lathe/pkg/providers/sim"
	"github.com/lathe-autoscaler/lathe/pkg/test/informed"
)

// killLathe ends the lathe process with SIGKILL, as a crash or an OOM kill would: no cleanup runs.
func killLathe(t testing.TB) {
	t.Helper()
	if err := syscall.Kill(s.lathe.PID(), syscall.SIGKILL); err != nil {
		t.Fatalf("killing lathe: %v", err)
	}
	<-s.lathe.Done()
	// A test that fails before restarting lathe must not leave the next test without one.
	t.Cleanup(func() {
		select {
		case <-s.lathe.Done():
			restartLathe(t)
		default:
		}
	})
}

// restartLathe starts a new lathe process.
func restartLathe(t testing.TB) {
	t.Helper()
	if err := startLathe(context.Background()); err != nil {
		t.Fatalf("restarting lathe: %v", err)
	}
}

// instancesPerClaim counts the simulated instances (Nodes the sim provider launched) of each NodeClaim,
// and the instances no NodeClaim owns.
func instancesPerClaim(ctx context.Context) (map[string]int, int, error) {
	var claims v1.NodeClaimList
	if err := s.kubeClient.List(ctx, &claims); err != nil {
		return nil, 0, err
	}
	var nodes corev1.NodeList
	if err := s.kubeClient.List(ctx, &nodes, client.HasLabels{sim.NodeClaimLabelKey}); err != nil {
		return nil, 0, err
	}
	counts := map[string]int{}
	for _, c := range claims.Items {
		counts[c.Name] = 0
	}
	orphans := 0
	for _, n := range nodes.Items {
		name := n.Labels[sim.NodeClaimLabelKey]
		if _, ok := counts[name]; ok {
			counts[name]++
		} else {
			orphans++
		}
	}
	return counts, orphans, nil
}

// exactlyOneInstanceEach waits until every NodeClaim is Ready and has exactly one instance, and fails if any
// NodeClaim ever has two or an instance belongs to no NodeClaim.
func exactlyOneInstanceEach(t testing.TB) {
	t.Helper()
	eventually(t, 2*time.Minute, "one instance per nodeclaim", func(ctx context.Context) (bool, error) {
		counts, orphans, err := instancesPerClaim(ctx)
		if err != nil {
			return false, err
		}
		for name, n := range counts {
			if n > 1 {
				return false, fmt.Errorf("nodeclaim %s has %d instances", name, n)
			}
			if n == 0 {
				return false, nil
			}
		}
		if orphans > 0 {
			return false, fmt.Errorf("%d instances belong to no nodeclaim", orphans)
		}
		return len(counts) > 0, nil
	})
	readyNodeClaims(t)
}

// provisionInProcess runs one provisioning pass of the real provisioner from the test, against the cluster:
// it leaves exactly the state a lathe that crashed right after creating its NodeClaims leaves.
func provisionInProcess(t testing.TB, cloud *sim.CloudProvider) {
	t.Helper()
	view, err := informed.Start(s.cluster.RESTConfig(), s.kubeClient.Scheme())
	if err != nil {
		t.Fatal(err)
	}
	defer view.Stop()
	p := provisioning.NewProvisioner(provisioning.Deps{
		Client: view.Client, Cluster: view.State, CloudProvider: cloud, Clock: clock.RealClock{}, Recorder: &eventsfake.Recorder{},
		Registerer: prometheus.NewRegistry(), BatchIdleDuration: time.Second, BatchMaxDuration: 10 * time.Second,
	})
	eventually(t, time.Minute, "a provisioning pass with the cluster state synced", func(ctx context.Context) (bool, error) {
		plan, err := p.Provision(ctx)
		if errors.Is(err, provisioning.ErrNotSynced) {
			return false, nil
		}
		return err == nil && len(plan.NodeClaims) > 0, err
	})
}

func newSimCloud(t testing.TB) *sim.CloudProvider {
	t.Helper()
	cloud, err := sim.New(sim.Deps{Client: s.kubeClient})
	if err != nil {
		t.Fatal(err)
	}
	return cloud
}

// pendingMarked waits until the kube-scheduler has marked want pods of the app unschedulable.
func pendingMarked(t testing.TB, ns, app string, want int) {
	t.Helper()
	eventually(t, time.Minute, "pods marked unschedulable", func(ctx context.Context) (bool, error) {
		var pods corev1.PodList
		if err := s.kubeClient.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"app": app}); err != nil {
			return false, err
		}
		n := 0
		for i := range pods.Items {
			if ok, _ := provisioning.Provisionable(&pods.Items[i]); ok {
				n++
			}
		}
		return n == want, nil
	})
}

// TestCrashBetweenCreationAndLaunch leaves NodeClaims created but never launched, as a lathe killed right
// after creating them would, then starts lathe: each claim must get exactly one instance, and no claim may
// be added for pods the existing claims already hold.
func TestCrashBetweenCreationAndLaunch(t *testing.T) {
	ns := namespace(t, "crash-launch")
	killLathe(t)
	deployment(t, ns, "web", 3, "1", nil)
	pendingMarked(t, ns, "web", 3)
	provisionInProcess(t, newSimCloud(t))
	before, _, err := instancesPerClaim(context.Background())
	if err != nil || len(before) == 0 {
		t.Fatalf("no nodeclaims were created before the crash (%v)", err)
	}
	restartLathe(t)
	exactlyOneInstanceEach(t)
	runningPods(t, ns, "web", 3, 2*time.Minute)
	after, _, err := instancesPerClaim(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) {
		t.Errorf("lathe created %d nodeclaims after the restart, want the %d that existed", len(after), len(before))
	}
}

// TestCrashBetweenLaunchAndRegistration launches the instances of fresh NodeClaims without recording the
// launch on the claims (lathe killed after the cloud call, before its status write), then starts lathe:
// it must adopt the running instances, not launch second ones.
func TestCrashBetweenLaunchAndRegistration(t *testing.T) {
	ns := namespace(t, "crash-register")
	killLathe(t)
	deployment(t, ns, "web", 3, "1", nil)
	pendingMarked(t, ns, "web", 3)
	cloud := newSimCloud(t)
	provisionInProcess(t, cloud)
	ctx := context.Background()
	var claims v1.NodeClaimList
	if err := s.kubeClient.List(ctx, &claims); err != nil {
		t.Fatal(err)
	}
	for i := range claims.Items {
		if _, err := cloud.Create(ctx, &claims.Items[i]); err != nil {
			t.Fatalf("launching %s: %v", claims.Items[i].Name, err)
		}
	}
	restartLathe(t)
	exactlyOneInstanceEach(t)
	runningPods(t, ns, "web", 3, 2*time.Minute)
}

// TestKilledWhileProvisioning kills lathe with SIGKILL at several moments while it scales a deployment out,
// restarting it each time; every NodeClaim must end with exactly one instance and every pod must run.
func TestKilledWhileProvisioning(t *testing.T) {
	ns := namespace(t, "crash-random")
	deployment(t, ns, "web", 12, "1", nil)
	for _, after := range []time.Duration{1500 * time.Millisecond, 300 * time.Millisecond, 2500 * time.Millisecond} {
		time.Sleep(after) // a point in real time at which the process dies, not a wait for a result
		killLathe(t)
		restartLathe(t)
	}
	runningPods(t, ns, "web", 12, 3*time.Minute)
	exactlyOneInstanceEach(t)
}
