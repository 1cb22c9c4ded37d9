// Package localcluster runs a whole Kubernetes cluster on the local machine from the binaries that
// make tools builds into bin/: etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok.
// kwok plays the kubelet for every Node annotated kwok.x-k8s.io/node=fake, so pods scheduled onto such
// nodes become Running without containers, and keeps each such Node's Lease renewed as a kubelet does
// (stages/kwok-configuration.yaml). It is what make run and the end-to-end tests run Lathe against.
//
// # Processes
//
// Every component listens on free loopback ports only and keeps its data in its own folder under
// Options.WorkDir, so any number of clusters can run side by side. Each child process is put in its own
// process group; Stop sends SIGTERM to the group, then SIGKILL after a grace period, and waits until the
// process is reaped. On Linux the children are also killed if the launching process dies.
//
// # Usage
//
//	c, err := localcluster.Start(ctx, localcluster.Options{BinDir: "bin", WorkDir: ".lathe", Logs: logFile})
//	if err != nil {
//		return err // Start has stopped whatever it had started
//	}
//	defer c.Stop()
//	a, err := localcluster.NewApplier(c.RESTConfig())
//	...
//	err = a.InstallCRDs(ctx) // NodePool, NodeClaim, EC2NodeClass, waited for until Established
//	_, err = a.Apply(ctx, manifest, map[string]string{"CLUSTER_NAME": "lathe-local"})
//	...
//	<-c.Failed() // closed if a component exits by itself; c.Err() says which and why
//
// StartLathe runs the Lathe controller binary against a started cluster, supervised the same way.
package localcluster
