package sim

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// offeringKey names one offering: an instance type in a zone with a capacity type. As an injection pattern
// any field may be "*".
type offeringKey struct {
	instanceType, zone, capacityType string
}

func (k offeringKey) matches(o offeringKey) bool {
	field := func(pattern, value string) bool { return pattern == insufficientCapacityAnywhere || pattern == value }
	return field(k.instanceType, o.instanceType) && field(k.zone, o.zone) && field(k.capacityType, o.capacityType)
}

// capacity is what the simulated cloud has run out of (injected) and what Lathe has learnt it ran out of
// (unavailable, until a deadline). The provider's mu guards it.
type capacity struct {
	injected    map[offeringKey]bool
	unavailable map[offeringKey]time.Time // until
}

func newCapacity() *capacity {
	return &capacity{injected: map[offeringKey]bool{}, unavailable: map[offeringKey]time.Time{}}
}

func (c *capacity) markUnavailable(k offeringKey, until time.Time) { c.unavailable[k] = until }

// isUnavailable reports whether the offering failed recently, forgetting entries that have expired.
func (c *capacity) isUnavailable(k offeringKey, now time.Time) bool {
	until, ok := c.unavailable[k]
	if ok && !now.Before(until) {
		delete(c.unavailable, k)
		return false
	}
	return ok
}

// injection is the set of offering patterns that have no capacity right now.
type injection []offeringKey

func (in injection) has(k offeringKey) bool {
	for _, pattern := range in {
		if pattern.matches(k) {
			return true
		}
	}
	return false
}

// SetInsufficientCapacity makes the simulated cloud run out of (on) or regain (off) capacity for an
// offering. Any argument may be "*" to match every value.
func (c *CloudProvider) SetInsufficientCapacity(instanceType, zone, capacityType string, on bool) {
	k := offeringKey{instanceType: instanceType, zone: zone, capacityType: capacityType}
	c.mu.Lock()
	defer c.mu.Unlock()
	if on {
		c.capacity.injected[k] = true
		return
	}
	delete(c.capacity.injected, k)
}

// injectedCapacity returns the offerings without capacity: those set through SetInsufficientCapacity plus
// those listed in the lathe-sim ConfigMap.
func (c *CloudProvider) injectedCapacity(ctx context.Context) (injection, error) {
	fromConfig, err := c.configuredInsufficientCapacity(ctx)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	out := fromConfig
	for k := range c.capacity.injected {
		out = append(out, k)
	}
	return out, nil
}

// configuredInsufficientCapacity returns what the lathe-sim ConfigMap injects (readConfiguredCapacity). A
// caller that finds a read of the ConfigMap in flight takes that read's result instead of sending its own:
// every launch and every instance-type listing asks, a pass of a hundred NodeClaims asks hundreds of times
// within a second, and each read goes to etcd (the ConfigMap is read uncached, see Deps.Reader).
func (c *CloudProvider) configuredInsufficientCapacity(ctx context.Context) (injection, error) {
	shared := context.WithoutCancel(ctx) // a waiter giving up must not fail the read for the others
	result := c.configReads.DoChan("", func() (any, error) { return c.readConfiguredCapacity(shared) })
	select {
	case r := <-result:
		if r.Err != nil {
			return nil, r.Err
		}
		return r.Val.(injection), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// readConfiguredCapacity reads the ConfigMap and parses its insufficientCapacity key: one
// "<instance type>/<zone>/<capacity type>" per line; blank lines and text after "#" are ignored. A missing
// ConfigMap, or one Lathe may not read, means none; malformed lines are logged and skipped.
func (c *CloudProvider) readConfiguredCapacity(ctx context.Context) (injection, error) {
	cm := &corev1.ConfigMap{}
	if err := c.reader.Get(ctx, client.ObjectKey{Namespace: ConfigMapNamespace, Name: ConfigMapName}, cm); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		if apierrors.IsForbidden(err) {
			// Without RBAC for the ConfigMap the simulation still runs, with API-injected capacity only.
			log.FromContext(ctx).V(1).Info("not allowed to read the sim configmap, ignoring it", "error", err.Error())
			return nil, nil
		}
		return nil, fmt.Errorf("getting configmap %s/%s, %w", ConfigMapNamespace, ConfigMapName, err)
	}
	out, malformed := parseInsufficientCapacity(cm.Data[InsufficientCapacityMapKey])
	for _, line := range malformed {
		log.FromContext(ctx).Info("ignoring malformed insufficient capacity line", "line", line)
	}
	return out, nil
}

func parseInsufficientCapacity(text string) (injection, []string) {
	var out injection
	var malformed []string
	for _, line := range strings.Split(text, "\n") {
		line, _, _ = strings.Cut(line, "#")
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		parts := strings.Split(line, "/")
		if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
			malformed = append(malformed, line)
			continue
		}
		out = append(out, offeringKey{instanceType: parts[0], zone: parts[1], capacityType: parts[2]})
	}
	return out, malformed
}
