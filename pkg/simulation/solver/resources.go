package solver

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// resourceDims maps resource names to positions in a vec. cpu is in millicores; everything else in its
// base unit (bytes, counts).
type resourceDims struct {
	names []corev1.ResourceName
	index map[corev1.ResourceName]int
}

const (
	dimCPU    = 0
	dimMemory = 1
	dimPods   = 2
)

func newResourceDims(lists []corev1.ResourceList) *resourceDims {
	d := &resourceDims{index: map[corev1.ResourceName]int{}}
	for _, n := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods, corev1.ResourceEphemeralStorage} {
		d.add(n)
	}
	var extra []corev1.ResourceName
	for _, l := range lists {
		for n := range l {
			if _, ok := d.index[n]; !ok {
				extra = append(extra, n)
			}
		}
	}
	slices.Sort(extra)
	for _, n := range slices.Compact(extra) {
		d.add(n)
	}
	return d
}

func (d *resourceDims) add(n corev1.ResourceName) {
	d.index[n] = len(d.names)
	d.names = append(d.names, n)
}

// vec is a resource amount per dimension of a resourceDims.
type vec []int64

func (d *resourceDims) vec(l corev1.ResourceList) vec {
	v, _ := d.vecInto(make(vec, len(d.names)), l)
	return v
}

// vecInto is vec written into v, which has a zero per dimension; untracked reports whether l names a
// resource d does not track.
func (d *resourceDims) vecInto(v vec, l corev1.ResourceList) (out vec, untracked bool) {
	if len(d.names) <= 2*len(l) {
		// Looking up each dimension's name costs less than iterating the map, with the same result.
		found := 0
		for i, n := range d.names {
			q, ok := l[n]
			if !ok {
				continue
			}
			found++
			if i == dimCPU {
				v[i] = q.MilliValue()
			} else {
				v[i] = q.Value()
			}
		}
		return v, found < len(l)
	}
	for n, q := range l {
		i, ok := d.index[n]
		if !ok {
			untracked = true
			continue
		}
		if i == dimCPU {
			v[i] = q.MilliValue()
		} else {
			v[i] = q.Value()
		}
	}
	return v, untracked
}

func (d *resourceDims) list(v vec) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i, n := range d.names {
		if v[i] == 0 {
			continue
		}
		if i == dimCPU {
			out[n] = *resource.NewMilliQuantity(v[i], resource.DecimalSI)
		} else if i == dimMemory || n == corev1.ResourceEphemeralStorage {
			out[n] = *resource.NewQuantity(v[i], resource.BinarySI)
		} else {
			out[n] = *resource.NewQuantity(v[i], resource.DecimalSI)
		}
	}
	return out
}

// format renders an amount of one dimension with its name: "1.2 cpu", "3.5Gi memory", "4 pods".
func (d *resourceDims) format(i int, amount int64) string {
	return d.amount(i, amount) + " " + string(d.names[i])
}

// amount renders an amount of one dimension without its name: "1.2", "3.5Gi", "4".
func (d *resourceDims) amount(i int, amount int64) string {
	switch {
	case i == dimCPU:
		return trimFloat(float64(amount) / 1000)
	case i == dimMemory || d.names[i] == corev1.ResourceEphemeralStorage:
		return trimFloat(float64(amount)/(1<<30)) + "Gi"
	}
	return strconv.FormatInt(amount, 10)
}

func trimFloat(f float64) string {
	return fmt.Sprintf("%.*f", decimals(f), f)
}

func decimals(f float64) int {
	for n := 0; n < 3; n++ {
		scaled := f * math.Pow10(n)
		if math.Abs(scaled-math.Round(scaled)) < 1e-9 {
			return n
		}
	}
	return 3
}

func (v vec) clone() vec { return slices.Clone(v) }

func (v vec) addInPlace(o vec) {
	for i := range v {
		v[i] += o[i]
	}
}

// fitsWith reports whether v + extra fits within limit in every dimension.
func (v vec) fitsWith(extra, limit vec) bool {
	for i := range v {
		if v[i]+extra[i] > limit[i] {
			return false
		}
	}
	return true
}

// firstExceeded returns the first dimension in which v exceeds limit, or -1.
func (v vec) firstExceeded(limit vec) int {
	for i := range v {
		if v[i] > limit[i] {
			return i
		}
	}
	return -1
}

func maxVec(a, b vec) vec {
	out := a.clone()
	for i := range out {
		out[i] = max(out[i], b[i])
	}
	return out
}
